#!/usr/bin/env bash
# v33 final: the whole validate sweep on the Hopper path (the schedule change is Hopper-only).
set -u
cd "$(dirname "$0")/../.."
[ -x target/release/xtask ] || tar xJf target/carry33/x.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
L=/tmp/l5; mkdir -p $L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; shift; local t0=$SECONDS; timeout 300 "$@" > $L/$n.log 2>&1; printf '%-22s rc=%-3s %4ss %s\n' $n $? $((SECONDS-t0)) "$(grep -Eo '[0-9]+ passed, [0-9]+ failed' $L/$n.log | tail -1)" >> $L/summary.txt; (cd $L && tar czf $OUT/logs5.tgz .); }
step val_hopper $X validate --path hopper
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs5.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt; tail -5 $L/val_hopper.log
