#!/usr/bin/env bash
# v35: how long SpMM plans take (the bench's new `plan ms` column, the median of three plans
# per row): the mask families and uniform 12.5 % at 16, 32, 64 and 128 blocks, 8192^3, f16.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
[[ -x "$XTASK" ]] || tar xJf target/carry35b/x.tar.xz
nproc > "$LOGS/nproc.txt"
step masks "$XTASK" bench --masks --blocks 16,32,64,128 --dtypes f16 --seed 777 --json "$LOGS/masks.json"
[[ -n "${OPS:-}" ]] && step ops "$XTASK" bench --ops --blocks 16,32,64,128 --dtypes f16 --seed 777 --json "$LOGS/ops.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cp "$LOGS/summary.txt" "$OUT/summary.txt"
cat "$LOGS/gpu.txt" "$LOGS/summary.txt"
grep -E "^spmm" "$LOGS/masks.log" | sed -E "s/ +/ /g" | cut -d" " -f1,4,5,6,7,8,11,16
