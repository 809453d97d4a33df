#!/usr/bin/env bash
# v41: ../../v40/ncu_portable/run.sh on v41's final binary, the 32×32 launch only: where the
# warp-ring kernel waits (uniform 12.5 % × 12.5 %, C dense).
NCU_BLOCKS=32 XTASK_NCU=target/release/xtask exec bash "$(dirname "${BASH_SOURCE[0]}")/../../v40/ncu_portable/run.sh"
