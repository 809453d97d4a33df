#!/usr/bin/env bash
# v32 review: host-only clean-up (SpGEMM split parameters from one helper); validate the SpGEMM sweep on both paths, memcheck SpGEMM (hopper) and SpMM (portable, hopper), each under a time limit.
set -u
cd "$(dirname "$0")/../.."
tar xJf target/carry/bins.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
L=/tmp/l15; mkdir -p $L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; local lim=$2; shift 2; local t0=$SECONDS; timeout $lim "$@" > $L/$n.log 2>&1; printf '%-22s rc=%-3s %4ss %s %s\n' $n $? $((SECONDS-t0)) "$(grep -Eo '[0-9]+ passed, [0-9]+ failed' $L/$n.log | tail -1)" "$(grep -E 'ERROR SUMMARY' $L/$n.log | tail -1)" >> $L/summary.txt; (cd $L && tar czf $OUT/logs15.tgz .); }
step val_hopper_sg 120 $X validate --path hopper --filter spgemm
step val_portable_sg 120 $X validate --path portable --filter spgemm
step memcheck_sg 150 $CS --tool memcheck $X validate --path hopper --filter spgemm
step memcheck_spmm_h 150 $CS --tool memcheck $X validate --path hopper --filter spmm
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs15.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
