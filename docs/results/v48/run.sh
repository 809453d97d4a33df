#!/usr/bin/env bash
# v48 (BSR × BSR on the dense-B route over A re-blocked into 128×128 blocks,
# `PlanOptions::coarse_a`): validate of the SpGEMM cases and checks on each path (every case
# that fits once more re-blocked), memcheck of the dense-B cases on each path, then the 16×16
# cases on every route (`--routes`: records, B dense, B dense over the re-blocked A) with
# uniform 25 % added.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper --no-examples --filter spgemm
step val_portable "$XTASK" validate --path portable --no-examples --filter spgemm
step memcheck_hopper sanitize memcheck hopper dense-b
step memcheck_portable sanitize memcheck portable dense-b
step bench16 "$XTASK" bench --no-plain --spgemm --spgemm-blocks 16 --routes --spgemm-uniform 0.25 --seed 777 --warmup-ms 1000 --json "$LOGS/bench16.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E '^FAIL|spgemm dense-b: C' "$LOGS"/val_*.log | cut -c1-600
grep -c "dense-b coarse" "$LOGS"/val_hopper.log
grep -h -E 'ERROR SUMMARY' "$LOGS"/memcheck_*.log
grep -h -E '^(uniform|top16|banded)' "$LOGS"/bench16.log | cut -c1-175
