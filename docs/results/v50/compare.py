"""Per row of `bench --masks` JSON: main's (old1..oldN) and the variant's (new1..newN) times and
the ratio of their medians. Usage: compare.py LOGDIR ROUNDS."""
import json
import statistics
import sys

d, rounds = sys.argv[1], int(sys.argv[2])
runs = {k: [json.load(open(f"{d}/{k}{r}.json"))["rows"] for r in range(1, rounds + 1)] for k in ("old", "new")}
print(f"{'block':>5} {'pattern':<12} {'kernel':<36} {'old ms':>26} {'new ms':>26} {'old/new':>7}")
for i, row in enumerate(runs["old"][0]):
    o = [r[i]["ms"] for r in runs["old"]]
    n = [r[i]["ms"] for r in runs["new"]]
    print(f"{row['block']:>5} {row['pattern']:<12} {row['kernel']:<36} {' '.join(f'{x:.4f}' for x in o):>26} "
          f"{' '.join(f'{x:.4f}' for x in n):>26} {statistics.median(o) / statistics.median(n):7.3f}")
