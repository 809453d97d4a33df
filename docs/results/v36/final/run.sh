#!/usr/bin/env bash
# v36 final, first call: validate on both paths (with the examples) after the N-tile group rule
# of a walk one wave holds (planner only: the kernels are a92e96d's); then the 16×16 mask
# families with PyTorch tuned (the cached parameters of v32 and this session's third call).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper
step val_portable "$XTASK" validate --path portable
cp target/carry37/torch_tuned.json "$LOGS/torch_tuned.json"
step masks_peers_16 "$XTASK" bench --masks --blocks 16 --seed 777 --peers --tune --peer-cache "$LOGS/torch_tuned.json" --json "$LOGS/masks_peers_16.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
tail -n 2 "$LOGS"/val_*.log
grep -E '^spmm ' "$LOGS/masks_peers_16.log" | awk '{print $4,$5,$7,$9,$10,$NF}'
python3 - "$LOGS/masks_peers_16.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["rows"]:
    print(r["block"], r["pattern"], r["kernel"], f"{r['ms']:.4f}", f"{r['ratio_to_dense']:.3f}", r.get("ours_over_tuned"))
PY
