#!/usr/bin/env bash
# Builds the release binaries the GPU steps run (xtask and every example) and packs them into
# target/carry/bins.tar.xz for the device tool's carry (64 MiB limit: each binary embeds the
# same ~35 MB of kernel modules, which xz stores once). tools/device-run.sh unpacks it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --release -p xtask -p blocksparse --examples --bins
files=(target/release/xtask)
for src in host/examples/*.rs; do
    files+=("target/release/examples/$(basename "$src" .rs)")
done
mkdir -p target/carry
tar cf - "${files[@]}" | xz -6 -T0 > target/carry/bins.tar.xz
ls -l target/carry/bins.tar.xz
