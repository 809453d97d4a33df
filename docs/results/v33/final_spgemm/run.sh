#!/usr/bin/env bash
# v33 final: the SpGEMM LPT-tail schedule (column-split tile) — validate the SpGEMM sweep on the Hopper path, and the README's BSR x BSR table twice.
set -u
cd "$(dirname "$0")/../.."
[ -x target/release/xtask ] || tar xJf target/carry33/x.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
L=/tmp/l3; mkdir -p $L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; shift; local t0=$SECONDS; "$@" > $L/$n.log 2>&1; printf '%-22s rc=%-3s %4ss %s\n' $n $? $((SECONDS-t0)) "$(grep -Eo '[0-9]+ passed, [0-9]+ failed' $L/$n.log | tail -1)" >> $L/summary.txt; (cd $L && tar czf $OUT/logs3.tgz .); }
step val_hopper_spgemm $X validate --path hopper --filter spgemm
step bench_sg_1 $X bench --no-plain --spgemm --unpaired --seed 777 --json $L/sg1.json
step bench_sg_2 $X bench --no-plain --spgemm --unpaired --seed 777 --json $L/sg2.json
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs3.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
for f in $L/bench_sg_*.log; do echo "== $(basename $f)"; grep -E "measured in this run|^targets: 128x128" $f | cut -c1-160; grep -E "^(uniform|top16|banded)" $f | sed -E "s/ +/ /g" | cut -d" " -f1-6,13-15,19-21; done
