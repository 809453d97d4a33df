#!/usr/bin/env bash
# v41 (the final kernels): plain SpMM at 32×32 (uniform 12.5 %, the portable 32-row tile,
# whose block ring v41 refactored), main's binary and v41's alternated three times each, 2 s
# warm-ups.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
OLD="${OLD_XTASK:-target/old/xtask}"
for r in 1 2 3; do
    step "old$r" "$OLD" bench --blocks 32 --seed 777 --warmup-ms 2000 --json "$LOGS/old$r.json"
    step "new$r" "$XTASK" bench --blocks 32 --seed 777 --warmup-ms 2000 --json "$LOGS/new$r.json"
done
tar czf "$OUT/logs.tgz" -C "$LOGS" .
for r in 1 2 3; do for v in old new; do echo "$v$r $(grep -E '^spmm ' "$LOGS/$v$r.log" | awk '{print $7, $8, $10}')"; done; done
