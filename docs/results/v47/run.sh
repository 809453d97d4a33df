#!/usr/bin/env bash
# v47 (the dense-B route computes only the SpMM tiles that hold C's blocks): validate of the
# SpGEMM cases and checks on each path (main's unrun 0a9dba8 / 62c6f3b included), memcheck of
# the dense-B cases on each path, then the 16×16 cases on both routes and the 32×32 cases,
# each also into a causal C (`--spgemm-causal`), 1 s warm-ups.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper --no-examples --filter spgemm
step val_portable "$XTASK" validate --path portable --no-examples --filter spgemm
step memcheck_hopper sanitize memcheck hopper dense-b
step memcheck_portable sanitize memcheck portable dense-b
step bench16 "$XTASK" bench --no-plain --spgemm --spgemm-blocks 16 --routes --spgemm-causal --seed 777 --warmup-ms 1000 --json "$LOGS/bench16.json"
step bench32 "$XTASK" bench --no-plain --spgemm --spgemm-blocks 32 --spgemm-causal --seed 777 --warmup-ms 1000 --json "$LOGS/bench32.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E '^FAIL|spgemm dense-b: C' "$LOGS"/val_*.log | cut -c1-400
grep -h -E 'ERROR SUMMARY' "$LOGS"/memcheck_*.log
grep -h -E '^(uniform|top16|banded)' "$LOGS"/bench16.log "$LOGS"/bench32.log | cut -c1-175
