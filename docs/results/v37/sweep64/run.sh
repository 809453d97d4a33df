#!/usr/bin/env bash
# v37: the planner's alternatives at 64×64 on the mask families (heavy-tailed 64×64 is 1.23 ×
# PyTorch tuned, the issue asks 1.3): N-tile groups 1/2/4/8, merges 1/2, reordered, skipping,
# and the planner's plan again (G0), 1 s warm-up.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step sweep64 "$XTASK" bench --masks --blocks 64 --seed 777 --groups 0,1,2,4,8 --merge 1,2 --reorder --skips --json "$LOGS/sweep64.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
python3 - "$LOGS/sweep64.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("dense", " ".join(f"{t[4]:.3f}" for t in d["dense_timings"]))
for r in d["rows"]:
    print(r["pattern"], r["op"], r["kernel"], f"{r['ms']:.4f}", f"{r['ratio_to_dense']:.3f}")
PY
