#!/usr/bin/env bash
# v40: SpGEMM's 64-row grouped tile with one consumer warpgroup per 128-column group
# (`WgmmaTile::group_consumers`), three shapes of its shared memory: g4c1 = 4 stages and one C
# staging chunk per consumer, g3c2 = 3 stages and two, g4c0 = 4 stages and direct stores.
# Validate of the SpGEMM cases on the Hopper path for each, memcheck of g4c1's, and the 64×64
# BSR × BSR bench (1 s warm-ups) with main's binary (target/old/xtask) first and last.
# Binaries: main (3681fd4) with ../group_consumers.diff, tile 2's `stages` / `c_buffers` set per
# shape, only spgemm_hopper rebuilt (`build-ptx --only`) and the other modules' ABI hash
# patched to match (experiment builds; nothing of them was committed).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
XTASK=target/old/xtask
for v in g4c1 g3c2 g4c0; do
    step "val_$v" "target/var/$v/xtask" validate --path hopper --no-examples --filter spgemm
done
step memcheck_g4c1 timeout 150 compute-sanitizer --tool memcheck --print-limit 20 target/var/g4c1/xtask validate --path hopper --no-examples --filter spgemm
B=(bench --no-plain --spgemm --spgemm-blocks 64 --seed 777 --warmup-ms 1000)
step bench_old target/old/xtask "${B[@]}"
for v in g4c1 g3c2 g4c0; do
    step "bench_$v" "target/var/$v/xtask" "${B[@]}"
done
step bench_old2 target/old/xtask "${B[@]}"
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
for f in bench_old bench_g4c1 bench_g3c2 bench_g4c0 bench_old2; do echo "== $f"; grep -E "^(uniform|top16|banded)" "$LOGS/$f.log" | cut -c1-150; done
