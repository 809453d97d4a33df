#!/usr/bin/env bash
# v32: N-tile groups timed in palindromic order (ABCDDCBA) to cancel the drift of times with a row's position in a case (run3).
set -u
cd "$(dirname "$0")/../.."
[ -x target/release/xtask ] || tar xJf target/carry/bins.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
L=/tmp/l4; mkdir -p $L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; shift; local t0=$SECONDS; "$@" > $L/$n.log 2>&1; printf '%-22s rc=%-3s %4ss\n' $n $? $((SECONDS-t0)) >> $L/summary.txt; (cd $L && tar czf $OUT/logs4.tgz .); }
step ab1 $X bench --masks --blocks 16,32,64,128 --groups 2,4,8,16,16,8,4,2 --seed 777 --json $L/ab1.json
step ab2 $X bench --masks --blocks 16,32,64,128 --groups 16,8,4,2,2,4,8,16 --seed 778 --json $L/ab2.json
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs4.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
python3 - <<'PY'
import json
for f in ("ab1","ab2"):
    d=json.load(open(f"/tmp/l4/{f}.json"))
    out={}
    for x in d["rows"]:
        if x["op"].startswith("spmm"): out.setdefault((x["block"],x["pattern"]),[]).append((x["op"].replace("spmm","").strip() or "P"+x["kernel"].split(" ")[-1], x["ms"]))
    for k,v in out.items():
        g={}
        for n,ms in v[1:]: g.setdefault(n,[]).append(ms)
        print(f,k,v[0][0],f"{v[0][1]:.3f}"," ".join(f"{n}:{sum(m)/len(m):.3f}" for n,m in sorted(g.items(),key=lambda t:int(t[0][1:]))))
PY
