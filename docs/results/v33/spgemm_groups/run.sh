#!/usr/bin/env bash
# v33 experiment: BSR x BSR 128x128 N-tile groups (G4 = the planner's 8 columns, G8, G16), two orders.
set -u
cd "$(dirname "$0")/../.."
[ -x target/release/xtask ] || tar xJf target/carry33/x.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
L=/tmp/l4; mkdir -p $L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; shift; local t0=$SECONDS; "$@" > $L/$n.log 2>&1; printf '%-22s rc=%-3s %4ss\n' $n $? $((SECONDS-t0)) >> $L/summary.txt; (cd $L && tar czf $OUT/logs4.tgz .); }
step g_fwd $X bench --no-plain --spgemm --spgemm-blocks 128 --groups 4,8,16 --seed 777
step g_rev $X bench --no-plain --spgemm --spgemm-blocks 128 --groups 16,8,4 --seed 777
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs4.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
for f in $L/g_*.log; do echo "== $(basename $f)"; grep -E "^(uniform|top16|banded)" $f | sed -E "s/ +/ /g" | cut -d" " -f1-7,11-14; done
