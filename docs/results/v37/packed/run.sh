#!/usr/bin/env bash
# v37, item 1b: Aᵀ of 16-row stream blocks on the 16-deep tile, loaded unswizzled in whole
# lines (the packed map, as K-major 16-wide blocks) instead of 32-byte-swizzled boxes.
# validate and memcheck on the new binary, then the mask families at 16×16 as A·B and Aᵀ·B,
# old (7994cd2, swizzled) and new binaries alternated twice.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
OLD=/tmp/xtask_old
xz -dc target/carry39/xtask_old.xz > "$OLD" && chmod +x "$OLD"
step val_hopper "$XTASK" validate --path hopper
step memcheck_at timeout 150 compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path hopper --no-examples --filter "spmm AT"
for r in 1 2; do
    step "old$r" "$OLD" bench --masks --blocks 16 --seed 777 --transposed --json "$LOGS/old$r.json"
    step "new$r" "$XTASK" bench --masks --blocks 16 --seed 777 --transposed --json "$LOGS/new$r.json"
done
step val_portable "$XTASK" validate --path portable
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
python3 - "$LOGS" <<'PY'
import json, sys
rows = {}
for f in ["old1", "new1", "old2", "new2"]:
    d = json.load(open(f"{sys.argv[1]}/{f}.json"))
    for r in d["rows"]:
        rows.setdefault((r["pattern"], r["op"]), {})[f] = (r["ms"], r["kernel"])
print("pattern op kernel old1 new1 old2 new2")
for (pat, op), v in rows.items():
    print(pat, op, v["new1"][1], " ".join(f"{v[f][0]:.4f}" for f in ["old1", "new1", "old2", "new2"]))
PY
