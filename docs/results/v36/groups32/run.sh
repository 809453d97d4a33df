#!/usr/bin/env bash
# v36: uniform 12.5 % at 32×32 (portable 32-row tile, 256 rows at 8192³, 128 at 4096³) with one
# and two N-tile groups alternated in both orders: does one strip pay on the portable tiles
# wherever a wave holds every row (as at 16×16), or only at 16×16?
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step g32_a "$XTASK" bench --blocks 32 --groups 1,2,1,2,1,2 --dtypes f16 --seed 777 --no-plot --json "$LOGS/g32_a.json"
step g32_b "$XTASK" bench --blocks 32 --groups 2,1,2,1,2,1 --dtypes f16 --seed 777 --no-plot --json "$LOGS/g32_b.json"
step g32_4096 "$XTASK" bench --m 4096 --n 4096 --k 4096 --blocks 32,16 --groups 1,2,4,1,2,4 --dtypes f16 --seed 777 --no-plot --json "$LOGS/g32_4096.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
python3 - "$LOGS" <<'PY'
import json, sys, os
for f in ("g32_a", "g32_b", "g32_4096"):
    d = json.load(open(os.path.join(sys.argv[1], f + ".json")))
    by = {}
    for r in d["rows"]:
        by.setdefault((r["m"], r["block"]), []).append(f"{r['kernel'].split()[-1]}:{r['ms']:.4f}")
    for p, v in by.items():
        print(f, p, " ".join(v))
PY
