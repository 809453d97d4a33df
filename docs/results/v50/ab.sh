#!/usr/bin/env bash
# v50: the SpMM Hopper kernel whose consumers write the last C chunk of an item under the next
# item's last stage's wgmma ($XTASK) against main's (target/old/xtask), the mask families at
# every block size, alternated three times in one session; per row the median of each.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
alternate 3 --masks --blocks 16,32,64,128 --seed 777 --warmup-ms 1000
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
python3 - "$LOGS" <<'PY'
import json, statistics, sys
d = sys.argv[1]
runs = {k: [json.load(open(f"{d}/{k}{r}.json"))["rows"] for r in (1, 2, 3)] for k in ("old", "new")}
print(f"{'block':>5} {'pattern':<22} {'kernel':<16} {'old ms':>8} {'new ms':>8} {'old/new':>7}")
for i, row in enumerate(runs["old"][0]):
    o = statistics.median(r[i]["ms"] for r in runs["old"])
    n = statistics.median(r[i]["ms"] for r in runs["new"])
    print(f"{row['block']:>5} {row['pattern']:<22} {row['kernel']:<16} {o:8.4f} {n:8.4f} {o / n:7.3f}")
PY
