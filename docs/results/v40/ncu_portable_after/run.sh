#!/usr/bin/env bash
# v40: ../ncu_portable/run.sh on v40's binary (the words read unconditionally): the same two
# launches, the profile after the change.
XTASK_NCU=target/release/xtask exec bash "$(dirname "${BASH_SOURCE[0]}")/../ncu_portable/run.sh"
