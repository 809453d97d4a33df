#!/usr/bin/env bash
# v38: BSR × BSR at 16×16 and 32×32 blocks (the mma.sync tiles on Hopper: the wgmma tiles take
# blocks of 64 and 128 only), the bench's four cases, C dense and at the product's pattern, 2 s
# warm-ups: where the small blocks stand against dense cuBLAS and their roofs.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step spgemm_small "$XTASK" bench --no-plain --spgemm --spgemm-blocks 16,32 --seed 777 --warmup-ms 2000 --json "$LOGS/spgemm_small.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -A40 "spgemm" "$LOGS/spgemm_small.log" | grep -E "^(spgemm|  |dense|C )" | head -40
