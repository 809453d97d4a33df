#!/usr/bin/env bash
# v48 second binary (COARSE_PIECE refitted to 41.4, the copy's cell map from
# `coarse_view_cells`): the dense-B cases and checks on each path (the re-blocked copies
# included), and the 32×32 cases on the default plans.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper --no-examples --filter dense-b
step val_portable "$XTASK" validate --path portable --no-examples --filter dense-b
step bench32 "$XTASK" bench --no-plain --spgemm --spgemm-blocks 32 --seed 777 --warmup-ms 1000 --json "$LOGS/bench32.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E '^FAIL|spgemm dense-b: C' "$LOGS"/val_*.log | cut -c1-300
grep -h -E '^(uniform|top16|banded)' "$LOGS"/bench32.log | cut -c1-175
