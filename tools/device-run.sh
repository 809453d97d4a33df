#!/usr/bin/env bash
# One device session: the steps given as arguments. Runs the prebuilt binaries (the GPU machine
# has no Rust toolchain): XTASK=target/release/xtask [BASE=older/xtask] tools/device-run.sh STEP...
# The environment, the logs ($LOGS, archived into $OUT/logs.tgz after every step) and `step`
# come from tools/device-prelude.sh, which experiment scripts source too.
# Steps:
#   validate     cargo xtask validate on the Hopper module and on the portable one (FILTER)
#   memcheck     compute-sanitizer memcheck over the validate cases whose label contains
#                MEMCHECK_FILTER (default "batch"; " " for all), Hopper module
#   memcheck_portable  the same on the portable kernels
#   ab           plain SpMM bench, the older binary ($BASE) and this one, interleaved twice
#   ops          bench of every op and layout, and the batched cases
#   peers        bench with PyTorch's kernels, default and tuned (PEERS_TUNE_BUDGET_S each)
#   spgemm       bench of BSR x BSR (8192^3, 64 and 128 blocks) against dense cuBLAS and each
#                case's roof, no other suite
#   spgemm_peers the same with PyTorch's CSR x CSR on the same patterns (each case in its own
#                python3, at most SPGEMM_PEER_TIMEOUT s, default 45): run it as its own command,
#                8 cases may take 8 x that
#   masks        bench of the mask families of real workloads at 32, 64 and 128 blocks, with
#                the planner's choice and forced merges of 1, 2 and 4 block rows per tile
#   masks_peers  the same with PyTorch's kernel, default and tuned for the GPU on each case
#   ncu          Nsight Compute on the op bench at NCU_BLOCKS (default 64; or the bench arguments
#                NCU_BENCH_ARGS) for the kernels matching NCU_KERNEL (regex, default sddmm_wgmma),
#                NCU_COUNT launches after NCU_SKIP; log ncu_$NCU_TAG
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/device-prelude.sh"
for s in "$@"; do
    case "$s" in
        validate)
            step validate_hopper "$XTASK" validate ${FILTER:+--filter "$FILTER"}
            step validate_portable "$XTASK" validate --path portable ${FILTER:+--filter "$FILTER"} ;;
        memcheck | memcheck_portable)
            path=hopper; [[ "$s" == memcheck_portable ]] && path=portable
            step "$s" compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path "$path" --no-examples \
                --filter "${MEMCHECK_FILTER:-batch}" ;;
        ab)
            for round in 1 2; do
                [[ -n "${BASE:-}" ]] && step "ab_base_$round" "$BASE" bench --dtypes f16 --blocks 32,64,128 --json "$LOGS/ab_base_$round.json"
                step "ab_new_$round" "$XTASK" bench --dtypes f16 --blocks 32,64,128 --json "$LOGS/ab_new_$round.json"
            done ;;
        ops)
            step ops "$XTASK" bench --no-plain --ops --batched --blocks 32,64,128 --json "$LOGS/ops.json" ;;
        peers)
            step peers "$XTASK" bench --ops --batched --blocks 32,64,128 --peers --tune --peer-cache "$LOGS/torch_tuned.json" --json "$LOGS/peers.json" ;;
        spgemm)
            step spgemm "$XTASK" bench --no-plain --spgemm --json "$LOGS/spgemm.json" ;;
        spgemm_peers)
            step spgemm_peers "$XTASK" bench --no-plain --spgemm --peers --peer-timeout "${SPGEMM_PEER_TIMEOUT:-45}" \
                --json "$LOGS/spgemm_peers.json" ;;
        masks)
            step masks "$XTASK" bench --masks --merge 1,2,4 --blocks 32,64,128 --json "$LOGS/masks.json" ;;
        masks_peers)
            step masks_peers "$XTASK" bench --masks --merge 1,2,4 --blocks 32,64,128 --peers --tune \
                --peer-cache "$LOGS/torch_tuned.json" --json "$LOGS/masks_peers.json" ;;
        ncu)
            # shellcheck disable=SC2086
            step "ncu_${NCU_TAG:-${NCU_BLOCKS:-64}}" ncu --clock-control none --kernel-name "regex:${NCU_KERNEL:-sddmm_wgmma}" \
                --launch-skip "${NCU_SKIP:-3}" --launch-count "${NCU_COUNT:-1}" --section SpeedOfLight \
                --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section SchedulerStats \
                --section WarpStateStats "$XTASK" bench ${NCU_BENCH_ARGS:---no-plain --ops --blocks ${NCU_BLOCKS:-64} --reps 3} \
                --json "$LOGS/ncu_bench.json" ;;
        *) echo "unknown step $s" >&2 ;;
    esac
done
cp "$LOGS/summary.txt" "$OUT/summary.txt"
cat "$LOGS/summary.txt"
