#!/usr/bin/env bash
# v47, for the next step's estimate (perf notes "After v47"): plain SpMM with A's blocks at
# 100 % and 50 % (128×128 and 64×64 blocks), the work a re-blocked A would run.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
step spmm "$XTASK" bench --blocks 128,64 --densities 1.0,0.5 --seed 777 --warmup-ms 1000 --json "$LOGS/spmm.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -h -E '^ *(uniform|spmm)' "$LOGS"/spmm.log | head -20
tail -25 "$LOGS"/spmm.log
