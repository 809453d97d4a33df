#!/usr/bin/env bash
# v35 exploration, third call: ncu on uniform 12.5 % at 16x16, the planner's plan (G2), G1 and
# G2 forced (8 launches each: 5 warm-up, 3 timed), L2 and DRAM traffic per launch.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,lts__t_sector_op_read_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed
step ncu16 ncu --clock-control none --kernel-name regex:spmm_mma_f16_t16 --metrics "$M" --csv \
    "$XTASK" bench --blocks 16 --groups 1,2 --warmup-ms 0 --timed-ms 0 --reps 3 --dtypes f16 --seed 777 --no-plot --json "$LOGS/ncu16.json"
tar czf "$OUT/logs3.tgz" -C "$LOGS" .
python3 - "$LOGS/ncu16.log" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = rows[0]; i_id, i_name, i_val = hdr.index("ID"), hdr.index("Metric Name"), hdr.index("Metric Value")
by = collections.OrderedDict()
for r in rows[1:]:
    by.setdefault(r[i_id], {})[r[i_name]] = r[i_val]
for k, v in by.items():
    print(k, " ".join(f"{m.split('__')[1][:28]}={v[m]}" for m in sorted(v)))
PY
