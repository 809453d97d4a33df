#!/usr/bin/env bash
# v37: the BSR × BSR suite (issue "BSR × BSR"'s table) with every measurement warmed up for 4 s,
# as the mask table (perf notes v37 item 2). Kernels and plans are v35's.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step spgemm "$XTASK" bench --no-plain --spgemm --seed 777 --warmup-ms 4000 --json "$LOGS/spgemm.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E "^(uniform|top16|banded|targets|  measured)" "$LOGS/spgemm.log" | cut -c1-200
