"""Prints a bench --masks JSON as the README's cells: ratio to dense, ms, ours ÷ PyTorch tuned."""
import json
import sys

d = json.load(open(sys.argv[1]))
print("dense", " ".join(f"{t[4]:.3f}" for t in d.get("dense_timings", [])))
for r in d["rows"]:
    tuned = r.get("ours_over_tuned")
    print(f"{r['block']:>4} {r['pattern']:<12} {r['kernel']:<40} {r['ms']:.4f} ms  {r['ratio_to_dense']:.3f} of dense  "
          f"tuned {tuned if tuned is None else f'{tuned:.2f}'}  density {r['density']:.4f}")
