#!/usr/bin/env bash
# The session's last binary (5d3e65a): the whole validate sweep on each path.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
validate_both
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E "^FAIL" "$LOGS"/val_*.log | cut -c1-200 || true
