#!/usr/bin/env bash
# v33 experiment: SpGEMM persistent schedule variants (BS_EXP 0..4), rotated orders.
set -u
cd "$(dirname "$0")/../.."
[ -x target/release/xtask ] || tar xJf target/carry33/x.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
L=/tmp/l1; mkdir -p $L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; shift; local t0=$SECONDS; "$@" > $L/$n.log 2>&1; printf '%-22s rc=%-3s %4ss\n' $n $? $((SECONDS-t0)) >> $L/summary.txt; (cd $L && tar czf $OUT/logs1.tgz .); }
r=0
for v in 0 1 2 3 4 4 3 2 1 0; do
  r=$((r+1)); step b128_r${r}_v$v env BS_EXP=$v $X bench --no-plain --spgemm --spgemm-blocks 128 --seed 777
done
for v in 0 3 4 0; do
  r=$((r+1)); step b64_r${r}_v$v env BS_EXP=$v $X bench --no-plain --spgemm --spgemm-blocks 64 --seed 777
done
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs1.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
for f in $L/b*.log; do echo "== $(basename $f)"; grep -E "^(uniform|top16|banded)" $f | sed -E "s/ +/ /g" | cut -d" " -f1-6,13-14; done
