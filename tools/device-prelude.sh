#!/usr/bin/env bash
# Sourced by every device-side script (tools/device-run.sh, the experiment scripts under
# docs/results/): the environment of one device session and its `step` function.
#   OUT   where the device tool collects files (default device-out); logs are archived into
#         $OUT/logs.tgz after every step (the tool returns at most 8 files, and a run cut short
#         still returns what it had)
#   LOGS  scratch folder of the logs (default /tmp/devlogs)
#   XTASK the xtask binary (default target/release/xtask; unpacked from
#         target/carry/bins.tar.xz, tools/pack-bins.sh, where that was carried)
# step NAME COMMAND...: runs COMMAND with its output in $LOGS/NAME.log, and appends its exit
# status, its time and its last line of results to $LOGS/summary.txt (callers do not `set -e`:
# a failing step is logged and the session goes on).
# From the repository root (relative OUT, LOGS and XTASK are taken from there).
cd "$(dirname "${BASH_SOURCE[0]}")/.." || return 1
OUT="${OUT:-device-out}"
LOGS="${LOGS:-/tmp/devlogs}"
mkdir -p "$OUT" "$LOGS"
OUT="$(cd "$OUT" && pwd)"
XTASK="${XTASK:-target/release/xtask}"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export PATH="$PATH:/usr/local/cuda/bin"
# One JIT of the large modules per machine, shared by every process of the session.
export CUDA_CACHE_MAXSIZE=4294967296
step() { # name, command...
    local name="$1"; shift
    local t0=$SECONDS
    "$@" > "$LOGS/$name.log" 2>&1
    local rc=$?
    printf '%-18s rc=%-3s %4ss  %s\n' "$name" "$rc" "$((SECONDS - t0))" \
        "$(grep -E 'passed|json:|ERROR SUMMARY' "$LOGS/$name.log" | tail -n 1)" | tee -a "$LOGS/summary.txt"
    tar czf "$OUT/logs.tgz" -C "$LOGS" .
}
# sanitize TOOL PATH FILTER: compute-sanitizer's TOOL (memcheck, racecheck, synccheck) over the
# validate cases on PATH whose labels contain FILTER.
sanitize() {
    timeout 170 compute-sanitizer --tool "$1" --print-limit 20 "$XTASK" validate --no-examples --path "$2" --filter "$3"
}
# validate_both: the whole validate sweep on each path (steps val_hopper, val_portable).
validate_both() {
    step val_hopper "$XTASK" validate --path hopper --no-examples
    step val_portable "$XTASK" validate --path portable --no-examples
}
# alternate ROUNDS BENCH-ARGS...: `bench BENCH-ARGS` with main's binary ($OLD, default
# target/old/xtask) and $XTASK in turn, ROUNDS times (steps old1, new1, ...; JSON beside the logs).
OLD="${OLD_XTASK:-target/old/xtask}"
alternate() {
    local rounds="$1"; shift
    for ((r = 1; r <= rounds; r++)); do
        step "old$r" "$OLD" bench "$@" --json "$LOGS/old$r.json"
        step "new$r" "$XTASK" bench "$@" --json "$LOGS/new$r.json"
    done
}
[[ -f target/carry/bins.tar.xz && ! -x "$XTASK" ]] && tar xJf target/carry/bins.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$LOGS/gpu.txt" 2>&1
date >> "$LOGS/gpu.txt"
