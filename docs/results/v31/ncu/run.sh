#!/usr/bin/env bash
# v31 ncu of the SpGEMM 128x128 launches (paired 50 % and the others), SOL + memory + L2->SM bytes.
set -u
cd "$(dirname "$0")/../.."
tar xJf target/carry/bins.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export PATH=$PATH:/usr/local/cuda/bin
X=$PWD/target/release/xtask
M="--metrics gpu__time_duration.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum"
timeout 400 ncu --clock-control none $M -k regex:spgemm_wgmma -s 28 -c 14 $X bench --no-plain --spgemm --spgemm-blocks 128 --warmup-ms 0 --timed-ms 0 --reps 2 --unpaired --seed 777 > $OUT/ncu_sg128_50.txt 2>&1; echo "rc=$?"
grep -E "spgemm_wgmma|gpu__time|lts__t_sectors_srcunit|lts__throughput|dram__throughput|lts2xbar|hit_rate" $OUT/ncu_sg128_50.txt | head -150
