#!/usr/bin/env bash
# v32: does a plan's own power draw set its clocks? G2 x5 then G8 x5 (then G4 x5 at 64x64) per case, 1 s warm-up per row, SM clock / power sampled every 50 ms.
set -u
cd "$(dirname "$0")/../.."
[ -x target/release/xtask ] || tar xJf target/carry/bins.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
L=/tmp/l10; mkdir -p $L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; shift; local t0=$SECONDS; nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks.mem --format=csv,noheader,nounits -lms 50 > $L/$n.smi 2>&1 & local P=$!; "$@" > $L/$n.log 2>&1; local rc=$?; kill $P; printf '%-22s rc=%-3s %4ss\n' $n $rc $((SECONDS-t0)) >> $L/summary.txt; (cd $L && tar czf $OUT/logs10.tgz .); }
step s128 $X bench --masks --blocks 128 --groups 2,2,2,2,2,8,8,8,8,8 --warmup-ms 1000 --seed 777 --json $L/s128.json
step s64 $X bench --masks --blocks 64 --groups 2,2,2,2,2,4,4,4,4,4 --warmup-ms 1000 --seed 777 --json $L/s64.json
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs10.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
python3 - <<'PY'
import json,collections
for f in ("s128","s64"):
    d=json.load(open(f"/tmp/l10/{f}.json"))
    out=collections.defaultdict(list)
    for x in d["rows"]:
        if x["op"].startswith("spmm"): out[x["pattern"]].append((x["op"].replace("spmm","").strip() or "P", x["ms"]))
    for k,v in out.items(): print(f,k," ".join(f"{n}:{ms:.3f}" for n,ms in v))
PY
