#!/usr/bin/env bash
# v46 final binary (the sparsify kernel moving 8 elements per thread, 16-byte accesses).
# STEPS=check: the whole validate sweep on each path and memcheck of the dense-B cases on each
# path; STEPS=bench: 16×16 and 32×32 cases on both routes (`--routes`, C dense and at the
# product's pattern), uniform 25 % and 37.5 % added, 1.5 s warm-ups.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
if [[ "${STEPS:-check}" == check ]]; then
    validate_both
    step memcheck_hopper sanitize memcheck hopper dense-b
    step memcheck_portable sanitize memcheck portable dense-b
else
    step bench "$XTASK" bench --no-plain --spgemm --spgemm-blocks 16,32 --routes --spgemm-uniform 0.25,0.375 --seed 777 --warmup-ms 1500 --json "$LOGS/bench.json"
fi
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E 'FAIL|fail' "$LOGS"/val_*.log 2>/dev/null | head -20
