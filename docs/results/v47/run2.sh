#!/usr/bin/env bash
# v47 second binary (the gather's cost counted on C's blocks): the whole validate sweep on each
# path (plan_rows and the SpMM planner changed for every op), then the 32×32 cases on both routes,
# each also into a causal C.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
validate_both
step bench32 "$XTASK" bench --no-plain --spgemm --spgemm-blocks 32 --routes --spgemm-causal --seed 777 --warmup-ms 1000 --json "$LOGS/bench32.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E '^FAIL|spgemm dense-b: C' "$LOGS"/val_*.log | cut -c1-400
grep -h -E '^(uniform|top16|banded)' "$LOGS"/bench32.log | cut -c1-175
