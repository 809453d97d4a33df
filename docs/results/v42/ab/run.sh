#!/usr/bin/env bash
# v42 experiment: warp rings two stages deep (48 KB, 4 blocks per SM) against three (72 KB, 3),
# with the steps of v41's register-cap experiment: validate of the SpGEMM cases on both paths,
# memcheck of the 32-row ones on the Hopper path, then the 32×32 SpGEMM bench alternated twice
# with main's binary (target/old/xtask), 2 s warm-ups.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../../v41/regcap/run.sh" "$@"
