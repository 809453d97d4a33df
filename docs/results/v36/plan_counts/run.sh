#!/usr/bin/env bash
# v36, last call: validate on both paths after the review's fixes and the merge counts (plans
# costed from per-K stamp counts, only the kept one merged); then the SpMM plan times of the
# mask families at 16×16 and 32×32 with ee68cd7's binary and this one, in the order old, new,
# new, old (the plans must be the same; `plan ms` the median of three plans per row).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
xz -dc target/carry38/xtask_old.xz > /tmp/xtask_old && chmod +x /tmp/xtask_old
step val_hopper "$XTASK" validate --path hopper
step val_portable "$XTASK" validate --path portable
step plan_old1 /tmp/xtask_old bench --masks --blocks 16,32 --dtypes f16 --seed 777 --no-plot --json "$LOGS/plan_old1.json"
step plan_new1 "$XTASK" bench --masks --blocks 16,32 --dtypes f16 --seed 777 --no-plot --json "$LOGS/plan_new1.json"
step plan_new2 "$XTASK" bench --masks --blocks 16,32 --dtypes f16 --seed 777 --no-plot --json "$LOGS/plan_new2.json"
step plan_old2 /tmp/xtask_old bench --masks --blocks 16,32 --dtypes f16 --seed 777 --no-plot --json "$LOGS/plan_old2.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
python3 - "$LOGS" <<'PY'
import json, sys, os
runs = {f: json.load(open(os.path.join(sys.argv[1], f + ".json")))["rows"] for f in ("plan_old1", "plan_new1", "plan_new2", "plan_old2")}
print("block pattern kernel(old) kernel(new) same | plan ms old1 new1 new2 old2 | ms old1 new1 new2 old2")
for i, r in enumerate(runs["plan_old1"]):
    rs = [runs[f][i] for f in runs]
    same = all(x["kernel"] == r["kernel"] for x in rs)
    print(r["block"], r["pattern"], r["kernel"], rs[1]["kernel"], same, "|", " ".join(f"{x['plan_ms']:.2f}" for x in rs), "|", " ".join(f"{x['ms']:.3f}" for x in rs))
PY
