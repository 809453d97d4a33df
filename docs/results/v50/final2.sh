#!/usr/bin/env bash
# v50 closing run, second call: the issue's table in one bench run, the README's command
# (`--masks --blocks 32,64,128 --seed 777 --peers --warmup-ms 4000`), PyTorch tuned from the
# cache of earlier runs (the first call's, carried).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
cp target/carry/torch_tuned.json "$LOGS/torch_tuned.json"
step masks_peers "$XTASK" bench --masks --blocks 32,64,128 --seed 777 --peers --warmup-ms 4000 --peer-cache "$LOGS/torch_tuned.json" --json "$LOGS/masks_peers.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cp "$LOGS/torch_tuned.json" "$OUT/torch_tuned.json"
cat "$LOGS/summary.txt"
python3 "$(dirname "${BASH_SOURCE[0]}")/table.py" "$LOGS/masks_peers.json"
