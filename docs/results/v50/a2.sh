#!/usr/bin/env bash
# v50b: A2 ("deferred chunks", docs/epilogue-design.md) in the form that builds clean: on the
# deep SpMM tiles, a consumer writes chunks 0-1 of its 16-bit C fragment at the item's end and
# chunks 2-3 after the wgmma of the next item's stages 0 and 1 ($XTASK), against main
# (target/old/xtask): the mask families at 32×32 and 128×128, alternated three times, then the
# Hopper validate sweep and memcheck of the re-blocked cases on the new binary.
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../tools/device-prelude.sh"
alternate 3 --masks --blocks 32,128 --seed 777 --warmup-ms 1000
step val_hopper "$XTASK" validate --path hopper --no-examples
step memcheck_reblocked sanitize memcheck hopper reblocked
tar czf "$OUT/logs.tgz" -C "$LOGS" .
cat "$LOGS/summary.txt"
python3 "$(dirname "${BASH_SOURCE[0]}")/compare.py" "$LOGS" 3
