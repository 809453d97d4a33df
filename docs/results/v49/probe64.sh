#!/usr/bin/env bash
# v49 probe: would re-blocking a 32×32 sliding window (±8) into 64×64 cells beat the 128×128
# ones? The 64×64 cells of that mask are a band of 9 (±4) around the diagonal: timed here as a
# banded 64×64 A of density 9/128 (cyclic at the edges: ~1.7 % more cells than the window's),
# every merge and skip choice, beside the 32×32 masks' planner rows (window ±8 re-blocked into
# 128×128 cells) in the same session.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
step band64 timeout 200 "$XTASK" bench --structured --blocks 64 --densities 0.0703125 --merge 1,2 --skips --seed 777 --warmup-ms 1000 --json "$LOGS/band64.json"
step masks32 timeout 120 "$XTASK" bench --masks --blocks 32 --seed 777 --warmup-ms 1000 --json "$LOGS/masks32.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
python3 - "$LOGS/band64.json" "$LOGS/masks32.json" <<'PY'
import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f))
    for r in d["rows"]:
        if r["pattern"] in ("banded", "window8"):
            print(r["block"], r["pattern"], r["op"], r["kernel"], f"{r['ms']:.4f}", f"{r['ratio_to_dense']:.3f}")
PY
