#!/usr/bin/env bash
# Nsight Compute on single launches of the mask-family bench, one ncu run per case:
#   tools/ncu-cases.sh TAG:BLOCKS:KERNEL_REGEX:SKIP ...
# TAG names the log (ncu_TAG.log under $OUT), BLOCKS the bench's --blocks, KERNEL_REGEX the
# kernels counted, SKIP how many of those launches to pass over (each bench measurement is 5
# warm-up + --reps 3 launches, in the order of the bench table). Runs the prebuilt binaries.
set -uo pipefail
OUT="${OUT:-device-out}"; mkdir -p "$OUT"
XTASK="${XTASK:-target/release/xtask}"
[[ -f target/carry/bins.tar.xz && ! -x "$XTASK" ]] && tar xJf target/carry/bins.tar.xz
for spec in "$@"; do
    IFS=: read -r tag blocks kernel skip <<< "$spec"
    t0=$SECONDS
    ncu --target-processes application-only --clock-control none --kernel-name "regex:$kernel" \
        --launch-skip "$skip" --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
        --section LaunchStats --section Occupancy --section SchedulerStats --section WarpStateStats \
        --section ComputeWorkloadAnalysis \
        --metrics "regex:sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active|smsp__average_warps_issue_stalled_.*_per_issue_active.ratio" \
        "$XTASK" bench --masks --blocks "$blocks" ${NCU_MERGE:+--merge "$NCU_MERGE"} --reps 3 --no-plot \
        --json "/tmp/ncu_$tag.json" > "$OUT/ncu_$tag.log" 2>&1
    echo "$tag rc=$? $((SECONDS - t0))s"
done
