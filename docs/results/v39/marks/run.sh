#!/usr/bin/env bash
# v39: BSR × BSR on the portable tiles, the warps passing over the absent B blocks (B marks)
#
# ../ahead/run.sh without its SpMM timing: validate on both paths, memcheck of the SpGEMM cases
# on the portable module (sm_80 cubin) and on the Hopper path (its 16/32-row blocks run the
# sm_90a portable cubin), and the 16×16 and 32×32 SpGEMM bench (2 s warm-ups) with v38's binary
# (OLD_XTASK) and this one; `run.sh 1` validates, `run.sh 2` times (about 8.5 minutes in all).
# (The SpMM portable module's SASS is v38's, instruction for instruction; SDDMM's differs by the
# order of 48 instructions.)
NO_SPMM=1 exec bash "$(dirname "${BASH_SOURCE[0]}")/../ahead/run.sh" "$@"
