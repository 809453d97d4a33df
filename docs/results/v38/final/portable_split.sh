#!/usr/bin/env bash
# v38 final, second call: the 20 split cases on the portable path on the final binaries (the
# holes cases at 132 block rows), after run.sh on the same machine. Its output is
# portable_split.log beside this script.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
"$XTASK" validate --path portable --no-examples --filter "split" 2>&1 | tail -28 | cut -c1-200 | tee "$OUT/portable_split.log"
