#!/usr/bin/env bash
# v34 experiment: SpGEMM's 64-row tile with two blocks per SM (tile 6, 2 stages, direct stores),
# picked by BLOCKSPARSE_EXP_SG64X2=1 (experiment switch), against the one-block tile 2.
set -u
cd "$(dirname "$0")/../../../.."
[ -x target/release/xtask ] || tar xJf target/carry34/x.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
export CUDA_CACHE_MAXSIZE=4294967296
X=$PWD/target/release/xtask
L=/tmp/lx; mkdir -p $L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; shift; local t0=$SECONDS; "$@" > $L/$n.log 2>&1; printf '%-22s rc=%-3s %4ss %s\n' $n $? $((SECONDS-t0)) "$(grep -Eo '[0-9]+ passed, [0-9]+ failed|ERROR SUMMARY.*' $L/$n.log | tail -1)" >> $L/summary.txt; (cd $L && tar czf $OUT/logs.tgz .); }
B="bench --no-plain --spgemm --spgemm-blocks 64 --seed 777"
step val_x2 env BLOCKSPARSE_EXP_SG64X2=1 $X validate --path hopper --filter spgemm --no-examples
step b0_base $X $B
step b1_x2 env BLOCKSPARSE_EXP_SG64X2=1 $X $B
step b2_x2 env BLOCKSPARSE_EXP_SG64X2=1 $X $B
step b3_base $X $B
step memcheck_x2 timeout 200 env BLOCKSPARSE_EXP_SG64X2=1 compute-sanitizer --tool memcheck --print-limit 20 $X validate --path hopper --no-examples --filter spgemm
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
for f in $L/b*.log; do echo "== $(basename $f)"; grep -E "^(uniform|top16|banded)" $f | sed -E "s/ +/ /g" | cut -d" " -f1-5,13-15,19-21; done
