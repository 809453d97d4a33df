#!/usr/bin/env bash
# v50 closing run, first call: the whole validate sweep on each path (main, no kernel change
# since v49's validated sweep), then the mask table's 16×16 column with PyTorch default and
# tuned (v38's cache, carried), every measurement warmed up for 4 s.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
validate_both
cp target/carry/torch_tuned.json "$LOGS/torch_tuned.json"
step masks_peers_16 "$XTASK" bench --masks --blocks 16 --seed 777 --peers --warmup-ms 4000 --peer-cache "$LOGS/torch_tuned.json" --json "$LOGS/masks_peers_16.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cp "$LOGS/torch_tuned.json" "$OUT/torch_tuned.json"
cat "$LOGS/summary.txt"
python3 "$(dirname "${BASH_SOURCE[0]}")/table.py" "$LOGS/masks_peers_16.json"
