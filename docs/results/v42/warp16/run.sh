#!/usr/bin/env bash
# v42 experiment: two-stage warp rings on the 16-row tile too (warp_rings for tm = 16), against
# main (v42: the block ring there). Validate of the 16-row SpGEMM cases on both paths and
# memcheck of them on the portable one, then the 16×16 SpGEMM bench alternated twice with
# main's binary (target/old/xtask), 2 s warm-ups. Before it, ncu of main's 32×32 kernel
# (../ncu32/, v40's script).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools/device-prelude.sh
source "$HERE/../../../../tools/device-prelude.sh"
XTASK_NCU="$OLD" NCU_BLOCKS=32 OUT="$OUT/ncu32" LOGS="$LOGS/ncu32" bash "$HERE/../../v40/ncu_portable/run.sh" > "$LOGS/ncu32.log" 2>&1
step val_hopper "$XTASK" validate --path hopper --no-examples --filter "b16x"
step val_portable "$XTASK" validate --path portable --no-examples --filter "b16x"
step memcheck_portable sanitize memcheck portable "b16x"
alternate 2 --no-plain --spgemm --spgemm-blocks 16 --seed 777 --warmup-ms 2000
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E "Duration|Throughput|Warp Cycles Per Issued|Issued Warp|No Eligible|Active Warps|Registers|Achieved" "$OUT/ncu32/p32_details.txt" | head -24
for r in 1 2; do for v in old new; do echo "== $v$r"; grep -E "^(uniform|top16|banded)" "$LOGS/$v$r.log" | awk '{print $1,$3,$4,$5,$7,$14,$21}'; done; done
