#!/usr/bin/env bash
# v46 review fixes: validate of the SpGEMM cases and checks on each path (the new gather check
# and typed errors included), memcheck of the dense-B cases and checks on each path.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper --no-examples --filter spgemm
step val_portable "$XTASK" validate --path portable --no-examples --filter spgemm
step memcheck_hopper sanitize memcheck hopper dense-b
step memcheck_portable sanitize memcheck portable dense-b
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E '^FAIL|spgemm dense-b: C|spgemm: invalid' "$LOGS"/val_*.log | cut -c1-260
