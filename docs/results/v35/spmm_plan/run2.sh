#!/usr/bin/env bash
# v35 item 3: SpMM plans with the merge by K stamps (target/release/xtask) against the sort per
# group (target/base3/xtask, the bench with plan times): the mask families at 16-128 blocks and
# every op and layout (--ops), each with the bench's `plan ms` (median of three plans); order
# base, new for the masks, then new, base for the ops.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
[[ -x target/base3/xtask ]] || tar xJf target/carry35c/x.tar.xz
step validate_hopper "$XTASK" validate --path hopper --no-examples
step validate_portable "$XTASK" validate --path portable --no-examples
M=(bench --masks --blocks 16,32,64,128 --dtypes f16 --seed 777)
O=(bench --ops --no-plain --blocks 16,32,64,128 --dtypes f16 --seed 777)
step masks_base target/base3/xtask "${M[@]}" --json "$LOGS/masks_base.json"
step masks_new "$XTASK" "${M[@]}" --json "$LOGS/masks_new.json"
step ops_new "$XTASK" "${O[@]}" --json "$LOGS/ops_new.json"
step ops_base target/base3/xtask "${O[@]}" --json "$LOGS/ops_base.json"
python3 - "$LOGS" > "$LOGS/plan_ms.txt" <<'PY'
import json, sys
L = sys.argv[1]
for kind in ["masks", "ops"]:
    b = json.load(open(f"{L}/{kind}_base.json"))["rows"]
    n = json.load(open(f"{L}/{kind}_new.json"))["rows"]
    print(f"== {kind}: op, block, pattern, kernel base/new, ms base/new, plan ms base/new")
    for x, y in zip(b, n):
        print(f'{x["op"]:<22} {x["block"]:>4} {x["pattern"]:<10} {x["kernel"]:>22} {y["kernel"]:>22} {x["ms"]:7.3f} {y["ms"]:7.3f}   {x["plan_ms"]:7.2f} {y["plan_ms"]:7.2f}' + ("" if x["kernel"] == y["kernel"] else "  KERNEL DIFFERS"))
PY
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cp "$LOGS/summary.txt" "$OUT/summary.txt"
cat "$LOGS/gpu.txt" "$LOGS/summary.txt" "$LOGS/plan_ms.txt"
