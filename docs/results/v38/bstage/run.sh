#!/usr/bin/env bash
# v38: BSR × BSR on the portable tiles, each thread looking up its B block once per 16-row half
#
# validate on both paths, memcheck of the SpGEMM cases on the portable module, and the 16×16 and
# 32×32 SpGEMM bench (2 s warm-ups).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper --no-examples
step val_portable "$XTASK" validate --path portable --no-examples
step memcheck_spgemm timeout 150 compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path portable --no-examples --filter "spgemm"
step spgemm_small "$XTASK" bench --no-plain --spgemm --spgemm-blocks 16,32 --seed 777 --warmup-ms 2000 --json "$LOGS/spgemm_small.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E "^(uniform|top16|banded)" "$LOGS/spgemm_small.log" | cut -c1-200
