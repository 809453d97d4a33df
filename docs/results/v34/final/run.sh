#!/usr/bin/env bash
# v34 final (main with the SpgemmStage kernel change and the planner's walk changes): the whole
# validate sweep on both paths with the examples, memcheck over the SpGEMM sweep, and the
# README's BSR x BSR bench once. Uses the shared device prelude (tools/device-prelude.sh).
set -uo pipefail
# shellcheck source=tools/device-prelude.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../../tools/device-prelude.sh"
step validate_hopper "$XTASK" validate --path hopper
step validate_portable "$XTASK" validate --path portable
step memcheck_spgemm compute-sanitizer --tool memcheck --print-limit 20 "$XTASK" validate --path hopper --no-examples --filter spgemm
step bench_spgemm "$XTASK" bench --no-plain --spgemm --unpaired --seed 777 --json "$LOGS/spgemm.json"
cp "$LOGS/summary.txt" "$OUT/summary.txt"
cat "$LOGS/gpu.txt" "$LOGS/summary.txt"
grep -E "measured in this run|^targets: 128x128" "$LOGS/bench_spgemm.log" | cut -c1-170
grep -E "^(uniform|top16|banded)" "$LOGS/bench_spgemm.log" | sed -E "s/ +/ /g" | cut -d" " -f1-6,13-15,19-21
python3 -c "
import json; d=json.load(open('$LOGS/spgemm.json'))
print(' '.join(f\"{r['case'][:9]}/{r['block']}/{r['c'][:5]}:{r['plan_ms']:.1f}\" for r in d['spgemm']))"
