#!/usr/bin/env bash
# v35 exploration, second call: uniform 12.5 % at 16x16 with the planner's group (2) and
# groups 1 and 2 forced in alternation (the bench's row-position effect, perf notes v32).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step alt16 "$XTASK" bench --blocks 16 --groups 1,2,1,2,1,2 --dtypes f16 --seed 777 --json "$LOGS/alt16.json"
step alt16_b "$XTASK" bench --blocks 16 --groups 2,1,2,1,2,1 --dtypes f16 --seed 777 --json "$LOGS/alt16_b.json"
tar czf "$OUT/logs2.tgz" -C "$LOGS" .
grep -E "^spmm" "$LOGS"/alt16*.log | sed -E "s/ +/ /g" | cut -d" " -f1-2,5-9
