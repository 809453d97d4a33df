#!/usr/bin/env bash
# Installs the CUDA binary tools the PTX/SASS tests use (ptxas, cuobjdump, nvdisasm) from
# NVIDIA's PyPI wheels into <repo>/.tools/cuda (git-ignored). No CUDA toolkit, no GPU needed.
# Idempotent: does nothing when the pinned versions are already there.
#   ptxas:     .tools/cuda/nvidia/cuda_nvcc/bin/ptxas
#   cuobjdump: .tools/cuda/nvidia/cu13/bin/cuobjdump (nvdisasm beside it)
# The tests find the tools there, or in $BLOCKSPARSE_CUDA_TOOLS (a folder holding nvidia/).
set -euo pipefail

# Pinned so that every machine checks the kernels with the same assembler.
PACKAGES=(
    nvidia-cuda-nvcc-cu12==12.9.86
    nvidia-cuda-cuobjdump==13.5.37
    nvidia-cuda-nvdisasm==13.5.37
)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/.tools/cuda"
PTXAS="$DEST/nvidia/cuda_nvcc/bin/ptxas"
CUOBJDUMP="$DEST/nvidia/cu13/bin/cuobjdump"
NVDISASM="$DEST/nvidia/cu13/bin/nvdisasm"
STAMP="$DEST/.installed"
WANT="${PACKAGES[*]}"

if [[ -x "$PTXAS" && -x "$CUOBJDUMP" && -x "$NVDISASM" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    echo "CUDA tools already installed in $DEST"
else
    if [[ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]]; then
        echo "error: the pinned CUDA tool wheels are for Linux x86_64 only (this is $(uname -sm))" >&2
        exit 1
    fi
    if ! python3 -m pip --version >/dev/null 2>&1; then
        echo "error: python3 with pip is required (Debian: apt-get install python3-pip)" >&2
        exit 1
    fi
    echo "Installing ${PACKAGES[*]} into $DEST"
    # Install beside the final folder and move it in place, so an interrupted run leaves
    # no half-installed tree that the check above would accept.
    mkdir -p "$ROOT/.tools"
    TMP="$(mktemp -d "$ROOT/.tools/cuda.tmp.XXXXXX")"
    trap 'rm -rf "$TMP"' EXIT
    # --target skips the PEP 668 "externally managed" check, so this works on Debian's python.
    PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
        --no-deps --only-binary=:all: --target "$TMP" "${PACKAGES[@]}"
    for tool in "$TMP/nvidia/cuda_nvcc/bin/ptxas" "$TMP/nvidia/cu13/bin/cuobjdump" "$TMP/nvidia/cu13/bin/nvdisasm"; do
        if [[ ! -x "$tool" ]]; then
            echo "error: ${tool#"$TMP"/} missing from the installed wheels" >&2
            exit 1
        fi
    done
    echo "$WANT" > "$TMP/.installed"
    rm -rf "$DEST"
    mv "$TMP" "$DEST"
    trap - EXIT
fi

echo "ptxas:     $PTXAS ($("$PTXAS" --version | grep -o 'V[0-9][0-9.]*' | head -n1))"
echo "cuobjdump: $CUOBJDUMP ($("$CUOBJDUMP" --version | grep -o 'V[0-9][0-9.]*' | head -n1))"
echo "nvdisasm:  $NVDISASM"
echo "For the tests: export BLOCKSPARSE_CUDA_TOOLS=$DEST"
