/work/main/kernels-gpu/target/debug/deps/blocksparse_kernels-5527c46cb71115a6.d: src/lib.rs src/core/mod.rs src/core/epilogue.rs src/core/fixup.rs src/core/portable.rs src/core/ring.rs src/core/smem.rs src/core/work.rs src/dtype.rs src/ops/mod.rs src/ops/sddmm.rs src/ops/spgemm.rs src/ops/spmm.rs src/ptx.rs Cargo.toml

/work/main/kernels-gpu/target/debug/deps/libblocksparse_kernels-5527c46cb71115a6.rmeta: src/lib.rs src/core/mod.rs src/core/epilogue.rs src/core/fixup.rs src/core/portable.rs src/core/ring.rs src/core/smem.rs src/core/work.rs src/dtype.rs src/ops/mod.rs src/ops/sddmm.rs src/ops/spgemm.rs src/ops/spmm.rs src/ptx.rs Cargo.toml

src/lib.rs:
src/core/mod.rs:
src/core/epilogue.rs:
src/core/fixup.rs:
src/core/portable.rs:
src/core/ring.rs:
src/core/smem.rs:
src/core/work.rs:
src/dtype.rs:
src/ops/mod.rs:
src/ops/sddmm.rs:
src/ops/spgemm.rs:
src/ops/spmm.rs:
src/ptx.rs:
Cargo.toml:

# env-dep:CLIPPY_ARGS=
# env-dep:CLIPPY_CONF_DIR
