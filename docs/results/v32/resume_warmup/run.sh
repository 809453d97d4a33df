#!/usr/bin/env bash
# v32: the resume warm-up (2 s after a pause): one plan (G8) timed 8 times per case, then the mask families with PyTorch tuned (README table), with SM clock / power sampled.
set -u
cd "$(dirname "$0")/../.."
tar xJf target/carry/bins.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
L=/tmp/l7; mkdir -p $L; cp target/c32/torch_tuned.json $L/; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; shift; local t0=$SECONDS; nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader -lms 100 > $L/$n.smi 2>&1 & local P=$!; "$@" > $L/$n.log 2>&1; local rc=$?; kill $P; printf '%-22s rc=%-3s %4ss\n' $n $rc $((SECONDS-t0)) >> $L/summary.txt; (cd $L && tar czf $OUT/logs7.tgz .); }
step wres $X bench --masks --blocks 16,32 --groups 8,8,8,8,8,8,8,8 --seed 777 --json $L/wres.json
step masks_peers_32_64_128 $X bench --masks --blocks 32,64,128 --seed 777 --peers --tune --peer-cache $L/torch_tuned.json --json $L/masks_peers_32_64_128.json
step masks_peers_16 $X bench --masks --blocks 16 --seed 777 --peers --tune --peer-cache $L/torch_tuned.json --json $L/masks_peers_16.json
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs7.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
python3 - <<'PY'
import json,collections
d=json.load(open("/tmp/l7/wres.json"))
out=collections.defaultdict(list)
for x in d["rows"]:
    if x["op"].startswith("spmm"): out[(x["block"],x["pattern"])].append(x["ms"])
for k,v in out.items():
    m=sorted(v)[len(v)//2]
    print("wres",k," ".join(f"{t/m:.2f}" for t in v), f"med {m:.3f}")
PY
for f in masks_peers_16 masks_peers_32_64_128; do grep -E '^spmm ' $L/$f.log | awk '{print $5,$6,$8,$11,$NF}'; done
