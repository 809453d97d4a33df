#!/usr/bin/env bash
# v37: streams of Aᵀ on the shallow wgmma tiles. Validate both paths (new Aᵀ cases), memcheck of
# the Aᵀ SpMM and X·A cases on the Hopper path, then the mask families at 16 and 32 as A·B and
# as Aᵀ·B on the same pattern (`--transposed`).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper
step masks_at "$XTASK" bench --masks --blocks 16,32 --seed 777 --transposed --json "$LOGS/masks_at.json"
step memcheck_at timeout 150 compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path hopper --no-examples --filter "spmm AT"
step val_portable "$XTASK" validate --path portable
grep -E "FAIL|fail" "$LOGS/val_hopper.log" | head -20
grep -E "spmm AT|dxs X. AN" "$LOGS/val_hopper.log" | grep -i "merge" | awk '{print $0}' | head -60 > "$LOGS/at_cases.txt"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
python3 - "$LOGS/masks_at.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["rows"]:
    print(r["block"], r["pattern"], r["op"], r["kernel"], f"{r['ms']:.4f}", f"{r['ratio_to_dense']:.3f}")
PY
