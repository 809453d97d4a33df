#!/usr/bin/env bash
# (Run with the experiment binary of perf notes v36 item 3, settle/settle_warmup.diff: --warmup-max-ms existed only there.)
# v36, third call: the warm-up that goes on until the board settles (`--warmup-max-ms`, default
# 5000) against the fixed 1 s one (`--warmup-max-ms 1000`), the same plan in every row of a
# case (`--groups 0,0,0`: 16×16 mask families; uniform 64×64 right after dense cuBLAS); then
# the 128×128 mask families with PyTorch tuned (cached parameters), settled the same way.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step m16_fixed "$XTASK" bench --masks --blocks 16 --groups 0,0,0 --warmup-max-ms 1000 --dtypes f16 --seed 777 --no-plot --json "$LOGS/m16_fixed.json"
step m16_settle "$XTASK" bench --masks --blocks 16 --groups 0,0,0 --dtypes f16 --seed 777 --no-plot --json "$LOGS/m16_settle.json"
step u64_fixed "$XTASK" bench --blocks 64 --groups 0,0,0,0 --warmup-max-ms 1000 --dtypes f16 --seed 777 --no-plot --json "$LOGS/u64_fixed.json"
step u64_settle "$XTASK" bench --blocks 64 --groups 0,0,0,0 --dtypes f16 --seed 777 --no-plot --json "$LOGS/u64_settle.json"
cp target/carry37/torch_tuned.json "$LOGS/torch_tuned.json"
step m128_peers "$XTASK" bench --masks --blocks 128 --seed 777 --dtypes f16 --peers --tune --peer-cache "$LOGS/torch_tuned.json" --no-plot --json "$LOGS/m128_peers.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -h "^bench:" "$LOGS"/*.log | sed -E 's/.*warm-up//' | cut -c1-300
python3 - "$LOGS" <<'PY'
import json, sys, os
for f in ("m16_fixed", "m16_settle", "u64_fixed", "u64_settle"):
    d = json.load(open(os.path.join(sys.argv[1], f + ".json")))
    print(f, "dense", " ".join(f"{t[4]:.3f}" for t in d["dense_timings"]))
    by = {}
    for r in d["rows"]:
        by.setdefault(r["pattern"], []).append(f"{r['kernel'].split()[-1]}:{r['ms']:.4f}")
    for p, v in by.items():
        print(f, p, " ".join(v))
d = json.load(open(os.path.join(sys.argv[1], "m128_peers.json")))
for r in d["rows"]:
    print("m128", r["pattern"], f"{r['ms']:.4f}", f"ratio {r['ratio_to_dense']:.3f}", "tuned", r.get("peer_tuned_tflops"), "ours/tuned", r.get("ours_over_tuned"))
PY
