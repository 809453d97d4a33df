#!/usr/bin/env bash
# v41 final kernels: compute-sanitizer racecheck and synccheck (memcheck sees neither shared
# memory races nor barrier misuse) on BSR × BSR cases of 32-row blocks (warp rings) on both
# paths (16- and 32-deep blocks: one and two records per stage), and racecheck on 16-row
# blocks (the refactored block ring).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
cs() { timeout 170 compute-sanitizer --tool "$1" --print-limit 20 "$XTASK" validate --no-examples --path "$2" --filter "$3"; }
step race_hopper_b32x32 cs racecheck hopper b32x32x
step race_portable_b32x16 cs racecheck portable b32x16x
step sync_hopper_b32x32 cs synccheck hopper b32x32x
step sync_portable_b32x16 cs synccheck portable b32x16x
step race_portable_b16x16 cs racecheck portable b16x16x
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
