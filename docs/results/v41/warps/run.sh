#!/usr/bin/env bash
# v41: a ring per warp on the portable BSR × BSR tiles of one warp row (16/32-row blocks; the
# scan reads each stage's words one stage ahead): v40's steps (../../v40/words/run.sh) with
# validate of the SpGEMM cases only: on both paths, memcheck of them on the portable module
# (sm_80) and on the Hopper path, and the 16×16 / 32×32 SpGEMM bench (2 s warm-ups) with main's
# binary (target/old/xtask) timed first in the same call.
VAL_FILTER=spgemm exec "$(dirname "${BASH_SOURCE[0]}")/../../v40/words/run.sh" "$@"
