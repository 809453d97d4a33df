#!/usr/bin/env bash
# v50: the SpMM Hopper kernel whose consumers write the last C chunk of an item under the next
# item's last stage's wgmma ($XTASK) against main's (target/old/xtask), the mask families at
# every block size, alternated three times in one session; per row the median of each.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
alternate 3 --masks --blocks 16,32,64,128 --seed 777 --warmup-ms 1000
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
python3 "$(dirname "${BASH_SOURCE[0]}")/compare.py" "$LOGS" 3
