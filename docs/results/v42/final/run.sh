#!/usr/bin/env bash
# v42 final kernels (warp rings two stages deep): STEPS=check: validate on both paths, memcheck
# of the SpGEMM cases (portable module, sm_80, and the Hopper path) and of the SDDMM ones on the
# portable path, racecheck and synccheck of the 32-row BSR × BSR cases (warp rings);
# STEPS=bench: the 16×16 / 32×32 SpGEMM bench with main's binary (target/old/xtask) timed first.
# Both by default.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
STEPS="${STEPS:-check bench}"
if [[ "$STEPS" == *check* ]]; then
    validate_both
    step memcheck_portable sanitize memcheck portable spgemm
    step memcheck_hopper sanitize memcheck hopper spgemm
    step memcheck_sddmm sanitize memcheck portable sddmm
    step race_hopper_b32x32 sanitize racecheck hopper b32x32x
    step race_portable_b32x16 sanitize racecheck portable b32x16x
    step sync_hopper_b32x32 sanitize synccheck hopper b32x32x
    step sync_portable_b32x16 sanitize synccheck portable b32x16x
fi
if [[ "$STEPS" == *bench* ]]; then
    step bench_old "$OLD" bench --no-plain --spgemm --spgemm-blocks 16,32 --seed 777 --warmup-ms 2000 --json "$LOGS/bench_old.json"
    step bench_new "$XTASK" bench --no-plain --spgemm --spgemm-blocks 16,32 --seed 777 --warmup-ms 2000 --json "$LOGS/bench_new.json"
fi
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
for f in bench_old bench_new; do
    [[ -f "$LOGS/$f.log" ]] && { echo "== $f"; grep -E "^(uniform|top16|banded)" "$LOGS/$f.log" | awk '{print $1,$3,$4,$5,$7,$13,$14,$17,$19,$21}'; }
done
