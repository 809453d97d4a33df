#!/usr/bin/env bash
# v44: the check that BSR × BSR plans made with f16 values run bf16 values of the same patterns
# (records and B dense), on each path.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper --no-examples --filter "plans made with"
step val_portable "$XTASK" validate --path portable --no-examples --filter "plans made with"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -h -E '^(ok|FAIL)' "$LOGS"/val_*.log
