#!/usr/bin/env bash
# v41 experiment: the warp rings' A copies through L1 (`cp.async.ca`: the block's other warps
# copy the same A slices). The same steps as ../regcap/run.sh (validate and memcheck, then the
# 32×32 SpGEMM bench alternated twice with v41's final binary, target/old/xtask).
exec "$(dirname "${BASH_SOURCE[0]}")/../regcap/run.sh" "$@"
