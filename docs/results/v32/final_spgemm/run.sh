#!/usr/bin/env bash
# v32: the README's BSR x BSR table re-timed with the 1 s warm-up (the new default).
set -u
cd "$(dirname "$0")/../.."
[ -x target/release/xtask ] || tar xJf target/carry/bins.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
L=/tmp/l14; mkdir -p $L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; shift; local t0=$SECONDS; "$@" > $L/$n.log 2>&1; printf '%-22s rc=%-3s %4ss\n' $n $? $((SECONDS-t0)) >> $L/summary.txt; (cd $L && tar czf $OUT/logs14.tgz .); }
step bench_sg $X bench --no-plain --spgemm --unpaired --seed 777 --json $L/sg.json
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs14.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
sed -n '/^op /,$p' $L/bench_sg.log | head -60
