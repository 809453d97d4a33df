#!/usr/bin/env bash
# v32 final: the mask families with PyTorch tuned (cached params) for the README, with the 1 s warm-up per measurement (the new default).
set -u
cd "$(dirname "$0")/../.."
tar xJf target/carry/bins.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
L=/tmp/l11; mkdir -p $L; cp target/c32/torch_tuned.json $L/; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; shift; local t0=$SECONDS; "$@" > $L/$n.log 2>&1; printf '%-22s rc=%-3s %4ss\n' $n $? $((SECONDS-t0)) >> $L/summary.txt; (cd $L && tar czf $OUT/logs11.tgz .); }
step masks_peers_32_64_128 $X bench --masks --blocks 32,64,128 --seed 777 --peers --tune --peer-cache $L/torch_tuned.json --json $L/masks_peers_32_64_128.json
step masks_peers_16 $X bench --masks --blocks 16 --seed 777 --peers --tune --peer-cache $L/torch_tuned.json --json $L/masks_peers_16.json
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs11.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
for f in masks_peers_16 masks_peers_32_64_128; do grep -E '^spmm ' $L/$f.log | awk '{print $4,$5,$7,$9,$10,$NF}'; done
