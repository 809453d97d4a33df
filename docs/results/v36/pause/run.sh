#!/usr/bin/env bash
# (Run with the experiment binary of perf notes v36 item 3: --pause-warmup-ms existed only there.)
# v36, first call: the first row after a pause with the old warm-up (1 s after a pause too) and
# the new one (3 s after a pause), and the N-tile group rule of a walk one wave holds, against
# groups forced in later rows (8192³ mask families at 16×16; uniform at 64×64; 4096³ uniform).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step m16_old "$XTASK" bench --masks --blocks 16 --groups 1,2 --pause-warmup-ms 1000 --dtypes f16 --seed 777 --no-plot --json "$LOGS/m16_old.json"
step m16_new "$XTASK" bench --masks --blocks 16 --groups 1,2 --dtypes f16 --seed 777 --no-plot --json "$LOGS/m16_new.json"
step u64 "$XTASK" bench --blocks 64 --groups 1,2,1,2 --dtypes f16 --seed 777 --no-plot --json "$LOGS/u64.json"
step u4096 "$XTASK" bench --m 4096 --n 4096 --k 4096 --blocks 16,64 --groups 1,2,4,2,1,4 --dtypes f16 --seed 777 --no-plot --json "$LOGS/u4096.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
grep -E "^spmm" "$LOGS"/*.log | sed -E "s/ +/ /g" | cut -c1-160
