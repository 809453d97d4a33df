#!/usr/bin/env bash
# v49, fifth call (main after the second review), and sixth (after the read-through's host-only
# column_ptr and coarse_bytes): the re-blocked cases and check on each path, the SpGEMM cases
# and checks on the Hopper path.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
step val_reblocked_hopper "$XTASK" validate --path hopper --no-examples --filter reblocked
step val_reblocked_portable "$XTASK" validate --path portable --no-examples --filter reblocked
step val_spgemm_hopper "$XTASK" validate --path hopper --no-examples --filter spgemm
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E '^FAIL' "$LOGS"/val_*.log | cut -c1-300 | head
