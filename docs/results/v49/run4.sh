#!/usr/bin/env bash
# v49, fourth call: uniformly random A dense enough that the default now re-blocks it (16×16
# at 25 % and 50 %, 32×32 at 50 %; the model's bounds are about 23 % and 46 %), the planner's
# row beside A as stored and re-blocked (`--reblock`); and the re-blocked cases and check
# again on each path on this binary.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper --no-examples --filter reblocked
step val_portable "$XTASK" validate --path portable --no-examples --filter reblocked
step bench_uniform timeout 240 "$XTASK" bench --blocks 16,32 --densities 0.25,0.5 --reblock --seed 777 --warmup-ms 1000 --json "$LOGS/uniform.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E '^FAIL' "$LOGS"/val_*.log | cut -c1-300 | head
python3 - "$LOGS/uniform.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("dense", " ".join(f"{t[4]:.3f}" for t in d["dense_timings"]))
for r in d["rows"]:
    print(r["block"], r["pattern"], r["density"], r["op"], r["kernel"], f"{r['ms']:.4f}", f"{r['ratio_to_dense']:.3f}", f"plan {r['plan_ms']:.2f}")
PY
