#!/usr/bin/env bash
# v46 (first binary): BSR × BSR into a block-sparse C on the dense-B route with a product in
# C's type where beta is 0 (the sparsify kernel copies it, 4 elements per thread), and the
# cost model of 32×32 blocks. Validate of the SpGEMM cases on both paths (every case once more
# on the dense-B route, block-sparse C included), memcheck of the dense-B cases on each path,
# then 16×16 and 32×32 cases on both routes (`--routes`, C dense and at the product's pattern),
# uniform 25 % and 37.5 % added, 1.5 s warm-ups.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper --no-examples --filter spgemm
step val_portable "$XTASK" validate --path portable --no-examples --filter spgemm
step memcheck_hopper sanitize memcheck hopper dense-b
step memcheck_portable sanitize memcheck portable dense-b
step bench "$XTASK" bench --no-plain --spgemm --spgemm-blocks 16,32 --routes --spgemm-uniform 0.25,0.375 --seed 777 --warmup-ms 1500 --json "$LOGS/bench.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E 'FAIL|fail' "$LOGS"/val_*.log | head -20
