#!/usr/bin/env bash
# v49, third call (after a helper's review: the coarse values as 16-bit bits, so that a
# re-blocked plan serves f16 and bf16 alike; the copy's cell map from A's rows; a split plan's
# shallow part alone weighed): the whole validate sweep on each path (the new check of
# re-blocked plans' typed errors, bf16 values and two streams included), memcheck of the
# re-blocked cases and check on each path, and the mask families at 16×16 and 32×32 for the
# planner's rows and planning times.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
validate_both
step memcheck_hopper sanitize memcheck hopper reblocked
step memcheck_portable sanitize memcheck portable reblocked
step bench_masks timeout 150 "$XTASK" bench --masks --blocks 16,32 --seed 777 --warmup-ms 1000 --json "$LOGS/masks.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E '^FAIL' "$LOGS"/val_*.log | cut -c1-400 | head -20
grep -h "spmm reblocked:" "$LOGS"/val_*.log "$LOGS"/memcheck_*.log | cut -c1-300
grep -h -E 'ERROR SUMMARY' "$LOGS"/memcheck_*.log
python3 - "$LOGS/masks.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["rows"]:
    print(r["block"], r["pattern"], r["op"], r["kernel"], f"{r['ms']:.4f}", f"{r['ratio_to_dense']:.3f}", f"plan {r['plan_ms']:.2f} ms")
PY
