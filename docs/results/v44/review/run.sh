#!/usr/bin/env bash
# v44 after the review's host changes (the densify queued by the SpMM path after its checks, an
# untyped 16-bit workspace, the default's conditions): validate of the SpGEMM cases on each path
# and memcheck of the dense-B cases on the Hopper path.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper --no-examples --filter spgemm
step val_portable "$XTASK" validate --path portable --no-examples --filter spgemm
step memcheck_hopper sanitize memcheck hopper dense-b
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -h FAIL "$LOGS"/val_*.log | head -20
