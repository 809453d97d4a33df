#!/usr/bin/env bash
# v38, SPLIT_GAIN 0.97 and the review's cases (empty rows and a short last group in the unmerged
# part, reordered splits): validate on both paths, memcheck of the split cases, and the splits
# bench again (2 s warm-ups) to check that the planner now splits the mixed mask at 16/32/64
# and heavy-tailed 16×16, and nothing else.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper --no-examples
grep " split" "$LOGS/val_hopper.log" > "$LOGS/split_cases.txt"
step memcheck_split timeout 240 compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path hopper --no-examples --filter "split"
step val_portable "$XTASK" validate --path portable --no-examples
step splits "$XTASK" bench --masks --mixed --splits --blocks 16,32,64 --seed 777 --warmup-ms 2000 --json "$LOGS/splits.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
tail -n 6 "$LOGS/split_cases.txt"
python3 - "$LOGS/splits.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("dense", " ".join(f"{t[4]:.3f}" for t in d["dense_timings"]))
rows = {(r["block"], r["pattern"], r["op"]): r for r in d["rows"]}
for (bs, pat, op), r in rows.items():
    if op != "spmm":
        continue
    p0, p1 = rows[(bs, pat, "spmm P0")], rows[(bs, pat, "spmm P1")]
    print(bs, pat, r["kernel"], f"{r['ms']:.4f} P0 {p0['ms']:.4f} P1 {p1['ms']:.4f} P1/P0 {p1['ms'] / p0['ms']:.3f}")
PY
