#!/usr/bin/env bash
# v49 (SpMM and dense × sparse over A re-blocked into 128×128 blocks, `PlanOptions::coarse_a`,
# a candidate of the SpMM planner): the whole validate sweep on each path (the re-blocked cases
# included), the mask families at 16×16 and 32×32 with A as stored and re-blocked
# (`--reblock`) beside the planner's choice, and memcheck of the re-blocked cases on each path.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
validate_both
step bench_masks timeout 200 "$XTASK" bench --masks --blocks 16,32 --reblock --seed 777 --warmup-ms 1000 --json "$LOGS/masks.json"
step memcheck_hopper sanitize memcheck hopper reblocked
step memcheck_portable sanitize memcheck portable reblocked
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E '^FAIL' "$LOGS"/val_*.log | cut -c1-400 | head -20
grep -c "reblocked" "$LOGS"/val_hopper.log
grep -h -E 'ERROR SUMMARY' "$LOGS"/memcheck_*.log
tail -n 60 "$LOGS"/bench_masks.log | cut -c1-190
