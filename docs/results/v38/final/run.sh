#!/usr/bin/env bash
# v38 final: validate on the Hopper path again (the split cases with holes at 132 block rows,
# whole warpgroups), memcheck of those, and the README's 16×16 column re-timed (heavy-tailed
# 16×16 is now a split plan) with PyTorch default and tuned from the cache, 4 s warm-ups.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper --no-examples
grep " split" "$LOGS/val_hopper.log" > "$LOGS/split_cases.txt"
step memcheck_holes timeout 120 compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path hopper --no-examples --filter "MixedHoles"
cp target/carry38/torch_tuned.json "$LOGS/torch_tuned.json"
step masks_peers_16 "$XTASK" bench --masks --blocks 16 --seed 777 --peers --warmup-ms 4000 --peer-cache "$LOGS/torch_tuned.json" --json "$LOGS/masks_peers_16.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -c "^ok" "$LOGS/split_cases.txt"
python3 - "$LOGS/masks_peers_16.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("dense", " ".join(f"{t[4]:.3f}" for t in d["dense_timings"]))
for r in d["rows"]:
    print(r["block"], r["pattern"], r["op"], r["kernel"], f"{r['ms']:.4f}", f"{r['ratio_to_dense']:.3f}", r.get("ours_over_tuned"))
PY
