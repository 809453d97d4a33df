#!/usr/bin/env bash
# v39: BSR × BSR on the portable tiles, the warps passing over the absent B blocks (B marks), and
# each stage's record words read one stage ahead (STAGE_AHEAD)
#
# validate on both paths, memcheck of the SpGEMM cases on the portable module (sm_80 cubin) and
# on the Hopper path (its 16/32-row blocks run the sm_90a portable cubin), and the 16×16 and
# 32×32 SpGEMM bench (2 s warm-ups) with v38's binary (OLD_XTASK) and this one, and plain SpMM on
# the portable tiles, old / new / old.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
OLD="${OLD_XTASK:-target/old/xtask}"
# `run.sh 1` validates, `run.sh 2` times, `run.sh all` both (about 9 minutes).
if [[ "${1:-all}" != 2 ]]; then
step val_hopper "$XTASK" validate --path hopper --no-examples
step val_portable "$XTASK" validate --path portable --no-examples
step memcheck_portable timeout 170 compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path portable --no-examples --filter "spgemm"
fi
if [[ "${1:-all}" != 1 ]]; then
step bench_old "$OLD" bench --no-plain --spgemm --spgemm-blocks 16,32 --seed 777 --warmup-ms 2000 --json "$LOGS/bench_old.json"
step bench_new "$XTASK" bench --no-plain --spgemm --spgemm-blocks 16,32 --seed 777 --warmup-ms 2000 --json "$LOGS/bench_new.json"
# SpMM on the portable tiles (16×16, 32×32 uniform 12.5 %): the skeleton's loop changed shape for
# it too (the same logic, other SASS); old / new / old. (NO_SPMM=1: not timed, ../marks/.)
if [[ -z "${NO_SPMM:-}" ]]; then
step spmm_old "$OLD" bench --blocks 16,32 --seed 777 --warmup-ms 2000 --json "$LOGS/spmm_old.json"
step spmm_new "$XTASK" bench --blocks 16,32 --seed 777 --warmup-ms 2000 --json "$LOGS/spmm_new.json"
step spmm_old2 "$OLD" bench --blocks 16,32 --seed 777 --warmup-ms 2000 --json "$LOGS/spmm_old2.json"
fi
step memcheck_hopper timeout 150 compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path hopper --no-examples --filter "spgemm"
fi
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
[[ -n "${NO_SPMM:-}" ]] || for f in spmm_old spmm_new spmm_old2; do echo "== $f"; grep -E "^spmm " "$LOGS/$f.log" | cut -c1-110; done
for f in bench_old bench_new; do echo "== $f"; grep -E "^(uniform|top16|banded|dense)" "$LOGS/$f.log" | cut -c1-150; done
