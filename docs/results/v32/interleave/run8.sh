#!/usr/bin/env bash
# v32: N-tile groups A/B with --interleave (the variants of a case timed launch by launch, same clocks); G8 twice as a same-plan check.
set -u
cd "$(dirname "$0")/../.."
tar xJf target/carry/bins.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
L=/tmp/l8; mkdir -p $L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; shift; local t0=$SECONDS; "$@" > $L/$n.log 2>&1; printf '%-22s rc=%-3s %4ss\n' $n $? $((SECONDS-t0)) >> $L/summary.txt; (cd $L && tar czf $OUT/logs8.tgz .); }
step i1 $X bench --masks --blocks 16,32,64,128 --groups 2,4,8,8 --interleave --seed 781 --json $L/i1.json
step i2 $X bench --masks --blocks 16,32,64,128 --groups 8,4,2,8 --interleave --seed 782 --json $L/i2.json
step i3 $X bench --masks --blocks 16,32,64,128 --groups 2,4,8,8 --interleave --seed 783 --json $L/i3.json
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs8.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
python3 - <<'PY'
import json,collections
tab=collections.defaultdict(lambda: collections.defaultdict(list))
for f in ("i1","i2","i3"):
    d=json.load(open(f"/tmp/l8/{f}.json"))
    for x in d["rows"]:
        if not x["op"].startswith("spmm"): continue
        n=x["op"].replace("spmm","").strip() or "P"
        k=(x["block"],x["pattern"]); tab[k][n].append(x["ms"])
        if n=="P": tab[k]["lab"]=x["kernel"].split(" ")[-1]
for k in sorted(tab):
    t=tab[k]
    print(k, t["lab"], " ".join(f"{g}:{sum(t[g])/len(t[g]):.3f}[{min(t[g]):.3f}-{max(t[g]):.3f}]" for g in ("P","G2","G4","G8")))
PY
