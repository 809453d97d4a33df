#!/usr/bin/env bash
# v32: N-tile group from the live part of B's strips. Masks with peers (planner = new rule, G2 = the old rule at 64/128), plus group sweeps at 16/32.
set -u
cd "$(dirname "$0")/../.."
tar xJf target/carry/bins.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
L=/tmp/l1; mkdir -p $L; cp target/c32/torch_tuned.json $L/; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; shift; local t0=$SECONDS; "$@" > $L/$n.log 2>&1; printf '%-22s rc=%-3s %4ss\n' $n $? $((SECONDS-t0)) >> $L/summary.txt; (cd $L && tar czf $OUT/logs1.tgz .); }
step masks_peers_32_64_128 $X bench --masks --blocks 32,64,128 --groups 2 --seed 777 --peers --tune --peer-cache $L/torch_tuned.json --json $L/masks_peers_32_64_128.json
step masks_peers_16 $X bench --masks --blocks 16 --groups 2 --seed 777 --peers --tune --peer-cache $L/torch_tuned.json --json $L/masks_peers_16.json
step sweep_16_32 $X bench --masks --blocks 16,32 --groups 1,4,8 --seed 777 --json $L/sweep_16_32.json
step sweep_64_128 $X bench --masks --blocks 64,128 --groups 4,8 --seed 777 --json $L/sweep_64_128.json
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs1.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
python3 - <<'PY'
import json
for f in ("masks_peers_16","masks_peers_32_64_128","sweep_16_32","sweep_64_128"):
    try: d=json.load(open(f"/tmp/l1/{f}.json"))
    except Exception as e: print(f,e); continue
    out={}
    for x in d["rows"]:
        if x["op"].startswith("spmm"): out.setdefault((x["block"] if "block" in x else x.get("bs"),x["pattern"]),[]).append(f'{x["op"].replace("spmm","").strip() or "P"}[{x.get("kernel","").split(" ")[-1]}]:{x["ms"]:.3f}')
    for k,v in out.items(): print(f[:6],k," ".join(v))
PY
