#!/usr/bin/env bash
# ncu: our Portable32 SpMM (uniform 12.5 %, 32x32) against PyTorch's tuned Triton kernel, same shape.
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
tar xJf target/c29/bins.tar.xz; X=target/release/xtask
M="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --metrics lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg"
timeout 200 ncu --clock-control none $M -k regex:spmm_mma -c 1 -s 3 $X bench --blocks 32 --warmup-ms 0 --timed-ms 0 --reps 5 --no-plot --seed 777 > $OUT/ncu_ours.txt 2>&1; echo "ours rc=$?"
timeout 200 ncu --clock-control none $M -k regex:bsr -c 1 -s 2 python3 target/c29/tri32.py > $OUT/ncu_triton.txt 2>&1; echo "triton rc=$?"
for f in ours triton; do echo "== $f"; grep -E "Duration|Memory Throughput|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\)|Achieved Occupancy|Registers Per|Block Size|Grid Size|Shared Memory Config|Dynamic Shared|Waves Per|lts__t_sectors_srcunit|lts__t_sector_hit|dram__bytes|ldgsts|inst_executed|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Theoretical Occupancy" $OUT/ncu_$f.txt | head -40; done
