#!/usr/bin/env bash
# v49, second call: the README's mask table at 16×16 and 32×32 (the columns re-blocking moves),
# PyTorch default and tuned from the cache of earlier runs (v38's, carried), every measurement
# warmed up for 4 s, one process per block size as v37/v38 drew their masks (--seed 777), and
# each family's stream of Aᵀ (`--transposed`).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
step val_reblocked "$XTASK" validate --path hopper --no-examples --filter reblocked
step val_spgemm "$XTASK" validate --path hopper --no-examples --filter spgemm
cp target/carry/torch_tuned.json "$LOGS/torch_tuned.json"
for bs in 16 32; do
    step "masks_peers_$bs" "$XTASK" bench --masks --blocks "$bs" --seed 777 --peers --transposed --warmup-ms 4000 --peer-cache "$LOGS/torch_tuned.json" --json "$LOGS/masks_peers_$bs.json"
done
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
for bs in 16 32; do
python3 - "$LOGS/masks_peers_$bs.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("dense", " ".join(f"{t[4]:.3f}" for t in d["dense_timings"]))
for r in d["rows"]:
    print(r["block"], r["pattern"], r["op"], r["kernel"], f"{r['ms']:.4f}", f"{r['ratio_to_dense']:.3f}", r.get("ours_over_tuned"))
PY
done
