#!/usr/bin/env bash
# v35 final checks on main's binaries (target/carry/bins.tar.xz, tools/pack-bins.sh): validate
# on both paths with the examples, the README's BSR x BSR suite, the mask families, and the
# uniform 16x16 / 32x32 rows with other N-tile groups (exploration).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step validate_hopper "$XTASK" validate --path hopper
step validate_portable "$XTASK" validate --path portable
step spgemm "$XTASK" bench --no-plain --spgemm --unpaired --seed 777 --json "$LOGS/spgemm.json"
step masks "$XTASK" bench --masks --blocks 16,32,64,128 --dtypes f16 --seed 777 --json "$LOGS/masks.json"
step groups "$XTASK" bench --blocks 16,32 --groups 1,4,8 --dtypes f16 --seed 777 --json "$LOGS/groups.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cp "$LOGS/summary.txt" "$OUT/summary.txt"
cat "$LOGS/gpu.txt" "$LOGS/summary.txt"
grep -E "^targets" "$LOGS/spgemm.log" | cut -c1-150
grep -E "^(uniform|top16|banded)" "$LOGS/spgemm.log" | sed -E "s/ +/ /g" | cut -d" " -f1-6,12-15,19-21
grep -E "^spmm" "$LOGS/masks.log" "$LOGS/groups.log" | sed -E "s/ +/ /g" | cut -d" " -f1-2,5-9,12,17
