#!/usr/bin/env bash
# v32: the README's SpMM-forms and batched table re-timed with the 1 s warm-up (the new default; PyTorch's do_bench warm-up too).
set -u
cd "$(dirname "$0")/../.."
tar xJf target/carry/bins.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
L=/tmp/l13; mkdir -p $L; cp target/c32/torch_tuned.json $L/; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; shift; local t0=$SECONDS; "$@" > $L/$n.log 2>&1; printf '%-22s rc=%-3s %4ss\n' $n $? $((SECONDS-t0)) >> $L/summary.txt; (cd $L && tar czf $OUT/logs13.tgz .); }
step ops $X bench --ops --batched --blocks 32,64,128 --seed 777 --peers --tune --peer-cache $L/torch_tuned.json --json $L/ops.json
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs13.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
grep -E '^(spmm|dense|sddmm|batched)' $L/ops.log | awk '{print $1,$2,$3,$5,$8,$9,$11,$NF}' | head -80
