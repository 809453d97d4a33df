#!/usr/bin/env bash
# v35 item 4: the SpGEMM planner on several threads (row ranges of about equal pairs; plans
# unchanged): plan/run.sh with main at 5443be9 (one thread) as the base.
BASE=target/base4/xtask CARRY=target/carry35d exec "$(dirname "${BASH_SOURCE[0]}")/../plan/run.sh"
