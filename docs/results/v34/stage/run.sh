#!/usr/bin/env bash
# v34: one description of an SpGEMM stage (abi SpgemmStage) for the kernel's producer and the
# planner's cost, and the pairing skipped where the pairs bound it out. Validate and memcheck
# the SpGEMM sweep (Hopper), then the BSR x BSR suite, main (base) and this build alternated.
set -u
cd "$(dirname "$0")/../../../.."
[ -x target/release/xtask ] || tar xJf target/carry34/x.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
export CUDA_CACHE_MAXSIZE=4294967296
X=$PWD/target/release/xtask; XB=$PWD/target/base/xtask
L=/tmp/ls; mkdir -p $L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/summary.txt; date >> $L/summary.txt
step() { local n=$1; shift; local t0=$SECONDS; "$@" > $L/$n.log 2>&1; printf '%-22s rc=%-3s %4ss %s\n' $n $? $((SECONDS-t0)) "$(grep -Eo '[0-9]+ passed, [0-9]+ failed|ERROR SUMMARY.*' $L/$n.log | tail -1)" >> $L/summary.txt; (cd $L && tar czf $OUT/logs.tgz .); }
B="bench --no-plain --spgemm --seed 777"
step val_spgemm $X validate --path hopper --filter spgemm --no-examples
step val_spgemm_portable $X validate --path portable --filter spgemm --no-examples
step memcheck_spgemm compute-sanitizer --tool memcheck --print-limit 20 $X validate --path hopper --no-examples --filter spgemm
step b0_base $XB $B --json $L/b0.json
step b1_new $X $B --json $L/b1.json
step b2_new $X $B --json $L/b2.json
step b3_base $XB $B --json $L/b3.json
date >> $L/summary.txt
(cd $L && tar czf $OUT/logs.tgz .); cp $L/summary.txt $OUT/
cat $L/summary.txt
for f in $L/b*.log; do echo "== $(basename $f)"; grep -E "^(uniform|top16|banded)" $f | sed -E "s/ +/ /g" | cut -d" " -f1-6,13-15,19-21; done
