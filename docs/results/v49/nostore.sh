#!/usr/bin/env bash
# After v49, step 0 of docs/epilogue-design.md: the bound of taking the C store off the
# consumers' path. Main's binary and one whose SpMM Hopper module skips the C store of dense
# row-major tiles (experiment, not kept: `if out.alpha != 12345.0 { return; }` before the
# staging store in `Consumer::store_dense_at`), the mask families at 32×32 and 128×128, one
# process each, alternated.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
step main "$XTASK" bench --masks --blocks 32,128 --seed 777 --warmup-ms 1000 --json "$LOGS/main.json"
step nostore target/exp/xtask_nostore bench --masks --blocks 32,128 --seed 777 --warmup-ms 1000 --json "$LOGS/nostore.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
python3 - "$LOGS/main.json" "$LOGS/nostore.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for r, s in zip(a["rows"], b["rows"]):
    print(r["block"], r["pattern"], r["kernel"], f"{r['ms']:.4f}", f"{s['ms']:.4f}", f"{r['ms'] / s['ms']:.3f}")
PY
