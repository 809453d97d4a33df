#!/usr/bin/env bash
# v40: where the portable BSR × BSR kernel waits: ncu warp sampling per SASS line of one launch
# each of the 16×16 and 32×32 uniform 12.5 % × 12.5 % cases (C dense, the first launch of
# each block size's run), main's binary.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
# (XTASK_NCU: the binary profiled; ../ncu_portable_after/ ran this with v40's. NCU_BLOCKS: the
# block sizes, v41's ncu32/.)
XTASK="${XTASK_NCU:-target/old/xtask}"
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section SchedulerStats --section SourceCounters"
for b in ${NCU_BLOCKS:-16 32}; do
    step "ncu_p$b" timeout 200 ncu --clock-control none -k "regex:spgemm_mma_f16_t${b}_" -c 1 $S -o "$OUT/p$b" \
        "$XTASK" bench --no-plain --spgemm --spgemm-blocks "$b" --warmup-ms 0 --timed-ms 0 --reps 2 --seed 777
    ncu -i "$OUT/p$b.ncu-rep" --page source --print-source sass --csv > "$OUT/p${b}_sass.csv" 2>&1
    ncu -i "$OUT/p$b.ncu-rep" --page details > "$OUT/p${b}_details.txt" 2>&1
    gzip -f "$OUT/p${b}_sass.csv"
done
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E "Duration|Throughput|Warp Cycles Per Issued|Issued Warp|No Eligible|Active Warps" "$OUT/p${b}_details.txt" | head -30
