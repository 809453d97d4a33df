#!/usr/bin/env bash
# v41, second build: the warps' scan looks at four stages at a time (a window of eight lanes per
# stage, read one window early). The same steps as ../warps/run.sh.
exec "$(dirname "${BASH_SOURCE[0]}")/../warps/run.sh" "$@"
