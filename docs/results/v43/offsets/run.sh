#!/usr/bin/env bash
# v43 experiment: BSR × BSR chunk offsets with the block's start in 64 bits and the offset inside
# it in 32 (`a_offset`, `b_offset`). Validate of the SpGEMM cases on both paths and memcheck of
# them on the portable path, then the 16×16 / 32×32 SpGEMM bench alternated twice with main's
# binary (target/old/xtask), 2 s warm-ups.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step val_hopper "$XTASK" validate --path hopper --no-examples --filter spgemm
step val_portable "$XTASK" validate --path portable --no-examples --filter spgemm
step memcheck_portable sanitize memcheck portable spgemm
alternate 2 --no-plain --spgemm --spgemm-blocks 16,32 --seed 777 --warmup-ms 2000
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
for r in 1 2; do for v in old new; do echo "== $v$r"; grep -E "^(uniform|top16|banded)" "$LOGS/$v$r.log" | awk '{print $1,$3,$4,$5,$7,$13,$14}'; done; done
