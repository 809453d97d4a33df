#!/usr/bin/env bash
# v37 final, second call: validate (both paths) and the mask families at 16 with PyTorch default and tuned (cached
# parameters), as the README's table, every measurement warmed up for 4 s (`--warmup-ms 4000`,
# PyTorch's do_bench too): the first row of a case after a load change then reads at most ~3 %
# slow instead of up to 10 % (perf notes v37).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper
step val_portable "$XTASK" validate --path portable
cp target/carry38/torch_tuned.json "$LOGS/torch_tuned.json"
step masks_peers_16 "$XTASK" bench --masks --blocks 16 --seed 777 --peers --tune --warmup-ms 4000 --peer-cache "$LOGS/torch_tuned.json" --json "$LOGS/masks_peers_16.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
python3 - "$LOGS/masks_peers_16.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("dense", " ".join(f"{t[4]:.3f}" for t in d["dense_timings"]))
for r in d["rows"]:
    print(r["block"], r["pattern"], r["op"], r["kernel"], f"{r['ms']:.4f}", f"{r['ratio_to_dense']:.3f}", r.get("ours_over_tuned"))
PY
