/work/main/kernels-gpu/target/debug/deps/blocksparse_abi-a8905c67fd3b95cf.d: /work/main/abi/src/lib.rs

/work/main/kernels-gpu/target/debug/deps/libblocksparse_abi-a8905c67fd3b95cf.rmeta: /work/main/abi/src/lib.rs

/work/main/abi/src/lib.rs:
