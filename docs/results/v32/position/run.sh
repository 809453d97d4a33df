#!/usr/bin/env bash
# v32: the row-position effect: one plan (G8) timed 8 times per case, default warm-up (100 ms) vs 1000 ms, with SM clock / power sampled every 50 ms.
set -u
cd "$(dirname "$0")/../.."
[ -x target/release/xtask ] || tar xJf target/carry/bins.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
L=/tmp/l6; mkdir -p $L; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; shift; local t0=$SECONDS; nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader -lms 50 > $L/$n.smi 2>&1 & local P=$!; "$@" > $L/$n.log 2>&1; local rc=$?; kill $P; printf '%-22s rc=%-3s %4ss\n' $n $rc $((SECONDS-t0)) >> $L/summary.txt; (cd $L && tar czf $OUT/logs6.tgz .); }
step w100 $X bench --masks --blocks 16,32 --groups 8,8,8,8,8,8,8,8 --seed 777 --json $L/w100.json
step w1000 $X bench --masks --blocks 16,32 --groups 8,8,8,8,8,8,8,8 --seed 777 --warmup-ms 1000 --json $L/w1000.json
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs6.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
python3 - <<'PY'
import json,collections
for f in ("w100","w1000"):
    d=json.load(open(f"/tmp/l6/{f}.json"))
    out=collections.defaultdict(list)
    for x in d["rows"]:
        if x["op"].startswith("spmm"): out[(x["block"],x["pattern"])].append(x["ms"])
    for k,v in out.items():
        m=sorted(v)[len(v)//2]
        print(f,k," ".join(f"{t/m:.2f}" for t in v), f"med {m:.3f}")
PY
