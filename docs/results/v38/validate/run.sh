#!/usr/bin/env bash
# v38: split SpMM plans (two launches over disjoint stream rows). validate on both paths (15 new
# cases: the mixed mask split at 16/32/64), memcheck of the split cases.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper --no-examples
grep " split" "$LOGS/val_hopper.log" | head -40 > "$LOGS/split_cases.txt"
step memcheck_split timeout 240 compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path hopper --no-examples --filter "split"
step val_portable "$XTASK" validate --path portable --no-examples
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
cat "$LOGS/split_cases.txt"
