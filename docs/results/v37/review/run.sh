#!/usr/bin/env bash
# v37 review clean-up: one rule for the packed A map (`WgmmaTile::a_packed`) in the host, the
# producer and the consumers. validate on both paths and memcheck of the Aᵀ cases on its binaries.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper --no-examples
step memcheck_at timeout 60 compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path hopper --no-examples --filter "spmm AT"
step val_portable "$XTASK" validate --path portable --no-examples
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
