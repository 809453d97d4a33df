#!/usr/bin/env bash
# explore: N-tile group sizes on the mask families at 128x128 (heavy-tailed 64 is 1.27 of tuned), two rounds.
set -u
cd "$(dirname "$0")/../.."
tar xJf target/carry/bins.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
L=/tmp/l12; mkdir -p $L
for r in 1 2; do $X bench --masks --blocks 128 --groups 1,2,4,8 --seed 777 --json $L/g$r.json > $L/g$r.log 2>&1; done
(cd $L && tar czf $OUT/logs12.tgz .)
python3 - <<'PY'
import json
for r in (1,2):
    d=json.load(open(f"/tmp/l12/g{r}.json"))
    out={}
    for x in d["rows"]:
        if x["op"].startswith("spmm"): out.setdefault(x["pattern"],[]).append(f'{x["op"]}:{x["ms"]:.3f}')
    for k,v in out.items(): print(r,k," ".join(v))
PY
