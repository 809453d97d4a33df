#!/usr/bin/env bash
# v34 second review: the C tensor map through Pattern::values_map and the zip sized by the counting pass (host only; kernels unchanged), the SpGEMM sweep on both paths.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
[[ -x "$XTASK" ]] || tar xJf target/carry35/x.tar.xz
step validate_hopper_spgemm "$XTASK" validate --path hopper --no-examples --filter spgemm
step validate_portable_spgemm "$XTASK" validate --path portable --no-examples --filter spgemm
cp "$LOGS/summary.txt" "$OUT/summary.txt"
cat "$LOGS/gpu.txt" "$LOGS/summary.txt"
ls -la "$OUT"
