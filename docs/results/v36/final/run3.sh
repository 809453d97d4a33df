#!/usr/bin/env bash
# v36 final, third call: the group rule by SMs (one strip on the portable tiles wherever a wave
# holds every row): validate on both paths (with the examples), then the mask families at
# 32/64/128 with PyTorch tuned (cached), as the README's table (v32's command).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper
step val_portable "$XTASK" validate --path portable
cp target/carry37/torch_tuned.json "$LOGS/torch_tuned.json"
step masks_peers_32_64_128 "$XTASK" bench --masks --blocks 32,64,128 --seed 777 --peers --tune --peer-cache "$LOGS/torch_tuned.json" --json "$LOGS/masks_peers_32_64_128.json"
tar czf "$OUT/logs3.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
python3 - "$LOGS/masks_peers_32_64_128.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("dense", " ".join(f"{t[4]:.3f}" for t in d["dense_timings"]))
for r in d["rows"]:
    print(r["block"], r["pattern"], r["kernel"], f"{r['ms']:.4f}", f"{r['ratio_to_dense']:.3f}", r.get("ours_over_tuned"))
PY
