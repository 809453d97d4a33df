#!/usr/bin/env bash
# v35 review: the SpGEMM producer and the planner's item cost read a record's stage through one
# function (`SpgemmStage::read`). The Hopper SpGEMM SASS moved by scheduling only (same
# instruction count and resource usage per entry, no local memory); every other module is
# identical. Whole Hopper validate, the portable SpGEMM sweep, memcheck over the SpGEMM sweep,
# then the BSR x BSR suite with the previous binary (target/base5/xtask) and this one, base,
# new, new, base.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
[[ -x target/base5/xtask ]] || tar xJf target/carry36/base.tar.xz
step validate_hopper "$XTASK" validate --path hopper
step validate_portable_spgemm "$XTASK" validate --path portable --no-examples --filter spgemm
step memcheck_spgemm compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path hopper --no-examples --filter spgemm
B=(bench --no-plain --spgemm --seed 777)
step b0_base target/base5/xtask "${B[@]}" --json "$LOGS/b0.json"
step b1_new "$XTASK" "${B[@]}" --json "$LOGS/b1.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/gpu.txt" "$LOGS/summary.txt"
grep -h "ERROR SUMMARY" "$LOGS/memcheck_spgemm.log" | tail -1
for f in "$LOGS"/b?_*.log; do
    echo "== $(basename "$f")"
    grep -E "^targets: 128x128" "$f" | cut -c1-110
    grep -E "^(uniform|top16|banded)" "$f" | sed -E "s/ +/ /g" | cut -d" " -f1-6,13-14,16-18
done
