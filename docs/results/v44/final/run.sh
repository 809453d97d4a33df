#!/usr/bin/env bash
# v44 final binary: the whole validate sweep on each path, then the BSR × BSR bench at 16×16 and
# 32×32 with the planner's route and, for a dense C, both routes (`--routes`), 1.5 s warm-ups.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
validate_both
step bench "$XTASK" bench --no-plain --spgemm --spgemm-blocks 16,32 --routes --seed 777 --warmup-ms 1500 --json "$LOGS/bench.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E "^(uniform|top16|banded)" "$LOGS/bench.log" | cut -c1-150
