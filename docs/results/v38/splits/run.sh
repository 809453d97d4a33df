#!/usr/bin/env bash
# v38: split SpMM plans measured. The mask families and the mixed mask at 16/32/64, each timed
# with the planner's choice, never split (P0) and split wherever the model finds two parts (P1),
# 2 s warm-ups.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step splits "$XTASK" bench --masks --mixed --splits --blocks 16,32,64 --seed 777 --warmup-ms 2000 --json "$LOGS/splits.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
python3 - "$LOGS/splits.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("dense", " ".join(f"{t[4]:.3f}" for t in d["dense_timings"]))
for r in d["rows"]:
    print(r["block"], r["pattern"], r["op"], r["kernel"], f"{r['ms']:.4f}", f"{r['ratio_to_dense']:.3f}")
PY
