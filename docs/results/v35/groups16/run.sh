#!/usr/bin/env bash
# v35 exploration: the 16x16 mask families (and uniform 12.5 %) with the planner's N-tile
# group and with groups 1 and 4 forced, twice in one call (main's binaries).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
for round in 1 2; do
    step "g16_$round" "$XTASK" bench --masks --blocks 16 --groups 1,4 --dtypes f16 --seed 777 --json "$LOGS/g16_$round.json"
done
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E "^spmm" "$LOGS"/g16_?.log | sed -E "s/ +/ /g" | cut -d" " -f1-2,5-9
