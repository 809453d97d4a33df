#!/usr/bin/env bash
# v40: the portable BSR × BSR kernel's record words read unconditionally (a stage ahead, the
# select against the item's end made where the words are used): validate on both paths,
# memcheck of the SpGEMM cases on the portable module (sm_80) and on the Hopper path (its
# 16/32-row blocks run the sm_90a portable cubin), and the 16×16 / 32×32 SpGEMM bench (2 s
# warm-ups) with main's binary (target/old/xtask) timed first in the same call.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
OLD="${OLD_XTASK:-target/old/xtask}"
# VAL_FILTER (v41's warps/run.sh): validate only the cases it names.
step val_hopper "$XTASK" validate --path hopper --no-examples ${VAL_FILTER:+--filter "$VAL_FILTER"}
step val_portable "$XTASK" validate --path portable --no-examples ${VAL_FILTER:+--filter "$VAL_FILTER"}
step memcheck_portable timeout 170 compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path portable --no-examples --filter "spgemm"
step memcheck_hopper timeout 150 compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path hopper --no-examples --filter "spgemm"
step bench_old "$OLD" bench --no-plain --spgemm --spgemm-blocks 16,32 --seed 777 --warmup-ms 2000 --json "$LOGS/bench_old.json"
step bench_new "$XTASK" bench --no-plain --spgemm --spgemm-blocks 16,32 --seed 777 --warmup-ms 2000 --json "$LOGS/bench_new.json"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
for f in bench_old bench_new; do echo "== $f"; grep -E "^(uniform|top16|banded)" "$LOGS/$f.log" | awk '{print $1,$3,$4,$5,$7,$14,$17,$19,$21}'; done
