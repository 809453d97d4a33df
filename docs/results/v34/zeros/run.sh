#!/usr/bin/env bash
# v34 item 9: SpGEMM items (or column-split consumers) that multiplied nothing store their zeros
# from one chunk of zeros (beta 0) instead of staging every chunk. Whole Hopper validate (with
# the examples), the SpGEMM sweep on the portable path and under memcheck, then the BSR x BSR
# suite with main's binary (target/base/xtask) and this one: base, new, new, base.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
[[ -x target/base/xtask ]] || tar xJf target/carry34/x.tar.xz
step validate_hopper "$XTASK" validate --path hopper
step validate_portable_spgemm "$XTASK" validate --path portable --no-examples --filter spgemm
step memcheck_spgemm compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path hopper --no-examples --filter spgemm
B=(bench --no-plain --spgemm --seed 777)
step b0_base target/base/xtask "${B[@]}" --json "$LOGS/b0.json"
step b1_new "$XTASK" "${B[@]}" --json "$LOGS/b1.json"
step b2_new "$XTASK" "${B[@]}" --json "$LOGS/b2.json"
step b3_base target/base/xtask "${B[@]}" --json "$LOGS/b3.json"
cp "$LOGS/summary.txt" "$OUT/summary.txt"
cat "$LOGS/gpu.txt" "$LOGS/summary.txt"
for f in "$LOGS"/b?_*.log; do
    echo "== $(basename "$f")"
    grep -E "^targets: 128x128" "$f" | cut -c1-120
    grep -E "^(uniform|top16|banded)" "$f" | sed -E "s/ +/ /g" | cut -d" " -f1-6,13-15,19-21
done
