#!/usr/bin/env bash
# (Run with the experiment binary of perf notes v36 item 3: --pause-warmup-ms existed only there.)
# v36, second call: the row-position effect with the same plan in every row of a case: the
# planner's row, then the same plan three more times (`--groups 0,0,0`, the 16×16 mask
# families), with 1 s (old) and 3 s (new) warm-up after a pause of the GPU; and uniform 64×64
# right after dense cuBLAS, the same plan four more times.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step m16_old "$XTASK" bench --masks --blocks 16 --groups 0,0,0 --pause-warmup-ms 1000 --dtypes f16 --seed 777 --no-plot --json "$LOGS/m16_old.json"
step m16_new "$XTASK" bench --masks --blocks 16 --groups 0,0,0 --dtypes f16 --seed 777 --no-plot --json "$LOGS/m16_new.json"
step u64_old "$XTASK" bench --blocks 64 --groups 0,0,0,0 --pause-warmup-ms 1000 --dtypes f16 --seed 777 --no-plot --json "$LOGS/u64_old.json"
step u64_new "$XTASK" bench --blocks 64 --groups 0,0,0,0 --dtypes f16 --seed 777 --no-plot --json "$LOGS/u64_new.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -h "^bench:" "$LOGS"/*.log | cut -c1-400
python3 - "$LOGS" <<'PY'
import json, sys, os
for f in ("m16_old", "m16_new", "u64_old", "u64_new"):
    d = json.load(open(os.path.join(sys.argv[1], f + ".json")))
    by = {}
    for r in d["rows"]:
        by.setdefault(r["pattern"], []).append(f"{r['kernel'].split()[-1]}:{r['ms']:.4f}")
    for p, v in by.items():
        print(f, p, " ".join(v))
PY
