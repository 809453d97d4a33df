#!/usr/bin/env bash
# v40: main's binary (target/old/xtask) against the group-consumer tile g4c1 (4 stages, one C
# staging chunk per consumer), alternated twice with 2 s warm-ups on the 64×64 BSR × BSR cases;
# then ncu on g4c1's 64×64 launches (L2 → SM bytes, L2, DRAM, tensor pipe).
# Binaries: main (3681fd4) with ../group_consumers.diff, tile 2's `stages` / `c_buffers` set per
# shape, only spgemm_hopper rebuilt (`build-ptx --only`) and the other modules' ABI hash
# patched to match (experiment builds; nothing of them was committed).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
XTASK=target/old/xtask
B=(bench --no-plain --spgemm --spgemm-blocks 64 --seed 777 --warmup-ms 2000)
step bench_old1 target/old/xtask "${B[@]}"
step bench_new1 target/var/g4c1/xtask "${B[@]}"
step bench_old2 target/old/xtask "${B[@]}"
step bench_new2 target/var/g4c1/xtask "${B[@]}"
M="--metrics gpu__time_duration.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed"
step ncu_new timeout 240 ncu --clock-control none $M -k regex:spgemm_wgmma -c 60 target/var/g4c1/xtask bench --no-plain --spgemm --spgemm-blocks 64 --warmup-ms 0 --timed-ms 0 --reps 2 --seed 777
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
for f in bench_old1 bench_new1 bench_old2 bench_new2; do echo "== $f"; grep -E "^(uniform|top16|banded)" "$LOGS/$f.log" | awk '{print $1,$3,$4,$5,$14,$17,$19,$21}'; done
grep -E "Profiling|gpu__time|lts__t_sectors_srcunit|lts__throughput|dram__throughput|tensor|lts2xbar" "$LOGS/ncu_new.log" | awk '{print $1,$NF}' | paste - - - - - - - | head -60
