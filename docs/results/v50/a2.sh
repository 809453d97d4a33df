#!/usr/bin/env bash
# v50b: A2 ("deferred chunks", docs/epilogue-design.md) in the form that builds clean: on the
# deep SpMM tiles, a consumer writes chunks 0-1 of its 16-bit C fragment at the item's end and
# chunks 2-3 after the wgmma of the next item's stages 0 and 1 ($XTASK), against main
# (target/old/xtask): the mask families at 32×32 and 128×128, alternated three times, then the
# Hopper validate sweep and memcheck of the re-blocked cases on the new binary.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
alternate 3 --masks --blocks 32,128 --seed 777 --warmup-ms 1000
step val_hopper "$XTASK" validate --path hopper --no-examples
step memcheck_reblocked sanitize memcheck hopper reblocked
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
python3 - "$LOGS" <<'PY'
import json, statistics, sys
d = sys.argv[1]
runs = {k: [json.load(open(f"{d}/{k}{r}.json"))["rows"] for r in (1, 2, 3)] for k in ("old", "new")}
print(f"{'block':>5} {'pattern':<12} {'kernel':<22} {'old ms (3 runs)':>24} {'new ms (3 runs)':>24} {'old/new':>7}")
for i, row in enumerate(runs["old"][0]):
    o = [r[i]["ms"] for r in runs["old"]]; n = [r[i]["ms"] for r in runs["new"]]
    print(f"{row['block']:>5} {row['pattern']:<12} {row['kernel']:<22} {' '.join(f'{x:.4f}' for x in o):>24} "
          f"{' '.join(f'{x:.4f}' for x in n):>24} {statistics.median(o) / statistics.median(n):7.3f}")
PY
