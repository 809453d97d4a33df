#!/usr/bin/env bash
# v41 final kernels (warp rings on the 32-row portable tile only): STEPS=check: validate on
# both paths and memcheck of the SpGEMM cases (portable module, sm_80, and the Hopper path);
# STEPS=bench: the 16×16 / 32×32 SpGEMM bench and the plain SpMM bench at 16/32 (its portable
# tiles run the refactored block ring), each with main's binary (target/old/xtask) timed first.
# Both by default.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
OLD="${OLD_XTASK:-target/old/xtask}"
STEPS="${STEPS:-check bench}"
if [[ "$STEPS" == *check* ]]; then
    step val_hopper "$XTASK" validate --path hopper --no-examples
    step val_portable "$XTASK" validate --path portable --no-examples
    step memcheck_portable timeout 170 compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path portable --no-examples --filter "spgemm"
    step memcheck_hopper timeout 150 compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path hopper --no-examples --filter "spgemm"
fi
if [[ "$STEPS" == *bench* ]]; then
    step bench_old "$OLD" bench --no-plain --spgemm --spgemm-blocks 16,32 --seed 777 --warmup-ms 2000 --json "$LOGS/bench_old.json"
    step bench_new "$XTASK" bench --no-plain --spgemm --spgemm-blocks 16,32 --seed 777 --warmup-ms 2000 --json "$LOGS/bench_new.json"
    step plain_old "$OLD" bench --blocks 16,32 --seed 777 --warmup-ms 2000 --json "$LOGS/plain_old.json"
    step plain_new "$XTASK" bench --blocks 16,32 --seed 777 --warmup-ms 2000 --json "$LOGS/plain_new.json"
fi
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
for f in bench_old bench_new; do
    [[ -f "$LOGS/$f.log" ]] && { echo "== $f"; grep -E "^(uniform|top16|banded)" "$LOGS/$f.log" | awk '{print $1,$3,$4,$5,$7,$14,$17,$19,$21}'; }
done
for f in plain_old plain_new; do [[ -f "$LOGS/$f.log" ]] && { echo "== $f"; tail -n 8 "$LOGS/$f.log"; }; done
