#!/usr/bin/env bash
# Installs the Rust toolchain pinned in rust-toolchain.toml (channel and components) with rustup.
# rustup does not always install a pinned toolchain by itself (RUSTUP_AUTO_INSTALL=0, or older
# rustup versions), so the project's scripts call this first. Idempotent: rustup skips what is
# already installed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FILE="$ROOT/rust-toolchain.toml"

if ! command -v rustup >/dev/null 2>&1; then
    echo "error: rustup not found. Install it (https://rustup.rs) and put ~/.cargo/bin on PATH." >&2
    exit 1
fi

channel="$(sed -n 's/^channel *= *"\(.*\)"/\1/p' "$FILE")"
# components = ["rust-src", "llvm-tools", ...] -> rust-src,llvm-tools,...
components="$(sed -n 's/^components *= *\[\(.*\)\]/\1/p' "$FILE" | tr -d ' "')"
if [[ -z "$channel" ]]; then
    echo "error: no channel in $FILE" >&2
    exit 1
fi

echo "Installing Rust $channel (components: ${components:-none})"
args=(toolchain install "$channel" --profile minimal --no-self-update)
if [[ -n "$components" ]]; then
    args+=(--component "$components")
fi
rustup "${args[@]}"
rustup run "$channel" rustc --version
