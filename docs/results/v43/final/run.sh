#!/usr/bin/env bash
# v43, the session's final main: the whole validate sweep on both paths (its kernels' SASS is
# that of the builds validated and timed in v42/plan16 and v43/offsets; this checks the final
# binary end to end).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
validate_both
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
