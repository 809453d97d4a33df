#!/usr/bin/env bash
# v47 third binary (SpgemmPlan's route as an enum; densify and sparsify sharing their chunk ->
# cell walk, `core::cells`): validate of the SpGEMM cases and checks on each path, memcheck of
# the dense-B cases on each path, and the 16×16 cases (default plans, C dense, at the product's
# pattern and causal) against the second binary's rows.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper --no-examples --filter spgemm
step val_portable "$XTASK" validate --path portable --no-examples --filter spgemm
step memcheck_hopper sanitize memcheck hopper dense-b
step memcheck_portable sanitize memcheck portable dense-b
step bench16 "$XTASK" bench --no-plain --spgemm --spgemm-blocks 16 --spgemm-causal --seed 777 --warmup-ms 1000 --json "$LOGS/bench16.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E '^FAIL|spgemm dense-b: C' "$LOGS"/val_*.log | cut -c1-400
grep -h -E 'ERROR SUMMARY' "$LOGS"/memcheck_*.log
grep -h -E '^(uniform|top16|banded)' "$LOGS"/bench16.log | cut -c1-175
