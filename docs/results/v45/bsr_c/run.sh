#!/usr/bin/env bash
# v45: BSR × BSR into a block-sparse C with B streamed dense (the SpMM kernels' f32 product,
# then C's blocks gathered by the sparsify kernel). STEPS=check: validate of the SpGEMM cases
# on both paths (every case once more on the dense-B route, block-sparse C included) and
# memcheck of the dense-B cases on each path; STEPS=bench (STEPS=all: both): 16×16 and 32×32
# cases on both routes (`--routes`, C dense and at the product's pattern), uniform 25 % and
# 37.5 % added, 1.5 s warm-ups.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
if [[ "${STEPS:-check}" != bench ]]; then
    step val_hopper "$XTASK" validate --path hopper --no-examples --filter spgemm
    step val_portable "$XTASK" validate --path portable --no-examples --filter spgemm
    step memcheck_hopper sanitize memcheck hopper dense-b
    step memcheck_portable sanitize memcheck portable dense-b
fi
if [[ "${STEPS:-check}" != check ]]; then
    step bench "$XTASK" bench --no-plain --spgemm --spgemm-blocks 16,32 --routes --spgemm-uniform 0.25,0.375 --seed 777 --warmup-ms 1500 --json "$LOGS/bench.json"
fi
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E "^(uniform|top16|banded)" "$LOGS/bench.log" 2>/dev/null | awk '{print $1,$3,$4,$5,$6,$7,$13,$14}'
grep -E 'FAIL|fail' "$LOGS"/val_*.log | head -20
