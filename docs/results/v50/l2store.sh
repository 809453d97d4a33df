#!/usr/bin/env bash
# After v50: where the C store's cost lies. Main's binary; one whose SpMM Hopper module sends
# every dense tile's TMA stores to C's first (128, 256) tile (`l2store.diff`: the same
# instructions, waits and bytes through the SM and L2, but C's writes stay in L2 instead of
# going to DRAM; results wrong by design); and v49's no-store binary. The mask families at
# 32×32 and 128×128, one process each, alternated twice.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
for r in 1 2; do
    step "main$r" "$XTASK" bench --masks --blocks 32,128 --seed 777 --warmup-ms 1000 --json "$LOGS/main$r.json"
    step "l2store$r" target/exp/xtask_l2store bench --masks --blocks 32,128 --seed 777 --warmup-ms 1000 --json "$LOGS/l2store$r.json"
    step "nostore$r" target/exp/xtask_nostore bench --masks --blocks 32,128 --seed 777 --warmup-ms 1000 --json "$LOGS/nostore$r.json"
done
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
python3 - "$LOGS" <<'PY'
import json, statistics, sys
d = sys.argv[1]
rows = {k: [json.load(open(f"{d}/{k}{r}.json"))["rows"] for r in (1, 2)] for k in ("main", "l2store", "nostore")}
print(f"{'block':>5} {'pattern':<12} {'kernel':<22} {'main':>7} {'l2store':>7} {'nostore':>7} {'m/l2':>6} {'m/no':>6}")
for i, row in enumerate(rows["main"][0]):
    t = {k: min(r[i]["ms"] for r in v) for k, v in rows.items()}
    print(f"{row['block']:>5} {row['pattern']:<12} {row['kernel']:<22} {t['main']:7.4f} {t['l2store']:7.4f} {t['nostore']:7.4f} "
          f"{t['main'] / t['l2store']:6.3f} {t['main'] / t['nostore']:6.3f}")
PY
