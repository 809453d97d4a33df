#!/usr/bin/env bash
# v33 experiment 2: SpMM tail-LPT schedule (BS_EXP_SPMM 0/1) on the mask families, and the SpGEMM v2 schedule on the 64-row tile.
set -u
cd "$(dirname "$0")/../.."
[ -x target/release/xtask ] || tar xJf target/carry33/x.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
L=/tmp/l2; mkdir -p $L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; shift; local t0=$SECONDS; "$@" > $L/$n.log 2>&1; printf '%-22s rc=%-3s %4ss\n' $n $? $((SECONDS-t0)) >> $L/summary.txt; (cd $L && tar czf $OUT/logs2.tgz .); }
step m_r1_v0 env BS_EXP_SPMM=0 $X bench --masks --blocks 32,64,128 --seed 777
step m_r2_v1 env BS_EXP_SPMM=1 $X bench --masks --blocks 32,64,128 --seed 777
step m_r3_v1 env BS_EXP_SPMM=1 $X bench --masks --blocks 32,64,128 --seed 777
step m_r4_v0 env BS_EXP_SPMM=0 $X bench --masks --blocks 32,64,128 --seed 777
step g64_r5_v2 env BS_EXP=2 $X bench --no-plain --spgemm --spgemm-blocks 64 --seed 777
step g64_r6_v0 env BS_EXP=0 $X bench --no-plain --spgemm --spgemm-blocks 64 --seed 777
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs2.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
