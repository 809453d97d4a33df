#!/usr/bin/env bash
# v37, second call: streams of Aᵀ before / after at 16 and 32 (At M1 = the only plan a 16-row Aᵀ
# stream had before; At M2 = the portable 64-row merge, a 32-row stream's pair before), beside
# A·B; then the first-row drift with a 4 s warm-up (the planner's plan in three rows).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step masks_at2 "$XTASK" bench --masks --blocks 16,32 --seed 777 --transposed --merge 1,2 --json "$LOGS/masks_at2.json"
step drift4s "$XTASK" bench --masks --blocks 16 --seed 777 --groups 0,0 --warmup-ms 4000 --json "$LOGS/drift4s.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
for f in masks_at2 drift4s; do
python3 - "$LOGS/$f.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("dense", " ".join(f"{t[4]:.3f}" for t in d["dense_timings"]))
for r in d["rows"]:
    print(r["block"], r["pattern"], r["op"], r["kernel"], f"{r['ms']:.4f}", f"{r['ratio_to_dense']:.3f}")
PY
done
