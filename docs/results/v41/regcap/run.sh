#!/usr/bin/env bash
# v41 experiment: the 32-row BSR × BSR kernels' register cap from the blocks their warp rings
# let an SM hold (.minnctapersm 3: 153 registers, was 4: 126). Validate and memcheck of the
# SpGEMM cases on both paths, then the 32×32 SpGEMM bench alternated twice with v41's final
# binary (target/old/xtask), 2 s warm-ups.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
OLD="${OLD_XTASK:-target/old/xtask}"
step val_hopper "$XTASK" validate --path hopper --no-examples --filter spgemm
step val_portable "$XTASK" validate --path portable --no-examples --filter spgemm
step memcheck_hopper timeout 150 compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path hopper --no-examples --filter "b32x32x"
for r in 1 2; do
    step "old$r" "$OLD" bench --no-plain --spgemm --spgemm-blocks 32 --seed 777 --warmup-ms 2000 --json "$LOGS/old$r.json"
    step "new$r" "$XTASK" bench --no-plain --spgemm --spgemm-blocks 32 --seed 777 --warmup-ms 2000 --json "$LOGS/new$r.json"
done
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
for r in 1 2; do for v in old new; do echo "== $v$r"; grep -E "^(uniform|top16|banded)" "$LOGS/$v$r.log" | awk '{print $1,$3,$4,$5,$7,$14,$21}'; done; done
