#!/usr/bin/env bash
# v42: the 16-row tile's ring chosen by the plan (warp rings below a share of 0.8 live
# warp-stages). STEPS=check: validate on both paths (16-row SpGEMM cases also with each ring
# forced), memcheck of the SpGEMM cases on both paths, racecheck and synccheck of the 16-row
# cases with each ring forced and of the 32-row ones; STEPS=bench: the 16×16 / 32×32 SpGEMM
# bench with main's binary (target/old/xtask) timed first, 2 s warm-ups. Both by default.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
STEPS="${STEPS:-check bench}"
if [[ "$STEPS" == *check* ]]; then
    validate_both
    for path in portable hopper; do step "memcheck_$path" sanitize memcheck "$path" spgemm; done
    step race_warp16 sanitize racecheck portable warp-rings
    step race_block16 sanitize racecheck portable block-ring
    step sync_warp16 sanitize synccheck portable warp-rings
    step race_hopper_b32x32 sanitize racecheck hopper b32x32x
fi
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -h "RACECHECK SUMMARY" "$LOGS"/race*.log 2>/dev/null
# The bench: the final kernels' steps (bench_old, bench_new).
[[ "$STEPS" == *bench* ]] && STEPS=bench bash "$(dirname "${BASH_SOURCE[0]}")/../final/run.sh"
