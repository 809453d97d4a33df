#!/usr/bin/env bash
# v35: the SpGEMM planner's pairing by bitsets and each row zipped as it is walked (plans
# unchanged). The SpGEMM sweep on both paths, then the BSR x BSR suite with main's planner
# ($BASE, default target/base2/xtask: main plus the bench's median of five plans, from
# ${CARRY:-target/carry35}/x.tar.xz) and this one, in the order
# base, new, new, base; the planning times (median of five plans per row) side by side.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
BASE="${BASE:-target/base2/xtask}"
[[ -x "$BASE" ]] || tar xJf "${CARRY:-target/carry35}/x.tar.xz"
step validate_hopper_spgemm "$XTASK" validate --path hopper --no-examples --filter spgemm
step validate_portable_spgemm "$XTASK" validate --path portable --no-examples --filter spgemm
B=(bench --no-plain --spgemm --seed 777)
step b0_base "$BASE" "${B[@]}" --json "$LOGS/b0.json"
step b1_new "$XTASK" "${B[@]}" --json "$LOGS/b1.json"
step b2_new "$XTASK" "${B[@]}" --json "$LOGS/b2.json"
step b3_base "$BASE" "${B[@]}" --json "$LOGS/b3.json"
nproc > "$LOGS/nproc.txt"
lscpu | grep -E "Model name|^CPU\(s\)" >> "$LOGS/nproc.txt"
python3 - "$LOGS" > "$LOGS/plan_ms.txt" <<'PY'
import json, sys
d = [json.load(open(f"{sys.argv[1]}/b{i}.json"))["spgemm"] for i in range(4)]
print("case                                      C             block  records   plan ms base/new/new/base          kernel ms base/new/new/base")
for r in zip(*d):
    a = r[0]
    same = all((x["records"], x["tiles"]) == (a["records"], a["tiles"]) for x in r)
    print(f'{a["case"]:<40} {a["c"]:<14} {a["block"]:>4} {a["records"]:>8}   ' + " / ".join(f'{x["plan_ms"]:6.2f}' for x in r)
          + "   " + " / ".join(f'{x["ms"]:.3f}' for x in r) + ("" if same else "  PLANS DIFFER"))
PY
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cp "$LOGS/summary.txt" "$OUT/summary.txt"
cat "$LOGS/gpu.txt" "$LOGS/nproc.txt" "$LOGS/summary.txt" "$LOGS/plan_ms.txt"
for f in "$LOGS"/b?_*.log; do
    echo "== $(basename "$f")"
    grep -E "^targets: 128x128" "$f" | cut -c1-120
done
