#!/usr/bin/env bash
# v32 review: full validate on both paths after the host clean-up, and memcheck of the portable SpMM sweep.
set -u
cd "$(dirname "$0")/../.."
[ -x target/release/xtask ] || tar xJf target/carry/bins.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
L=/tmp/l16; mkdir -p $L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; local lim=$2; shift 2; local t0=$SECONDS; timeout $lim "$@" > $L/$n.log 2>&1; printf '%-22s rc=%-3s %4ss %s %s\n' $n $? $((SECONDS-t0)) "$(grep -Eo '[0-9]+ passed, [0-9]+ failed' $L/$n.log | tail -1)" "$(grep -E 'ERROR SUMMARY' $L/$n.log | tail -1)" >> $L/summary.txt; (cd $L && tar czf $OUT/logs16.tgz .); }
step val_hopper 200 $X validate --path hopper
step val_portable 240 $X validate --path portable
step memcheck_spmm_p 120 $CS --tool memcheck $X validate --path portable --filter spmm
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs16.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
