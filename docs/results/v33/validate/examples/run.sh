#!/usr/bin/env bash
# v33 final: the five examples validate runs (run5 carried xtask alone), each must exit 0.
set -u
cd "$(dirname "$0")/../.."
tar xJf target/carry/bins.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
L=/tmp/l6; mkdir -p $L; date > $L/summary.txt
for e in sparse_linear basic npy_interop two_streams sparse_sparse; do timeout 60 target/release/examples/$e > $L/$e.log 2>&1; echo "example $e rc=$? $(tail -1 $L/$e.log | cut -c1-120)" >> $L/summary.txt; done
cp $L/* $OUT/; cat $L/summary.txt
