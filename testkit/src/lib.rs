//! Dev-only helpers of blocksparse, kept out of the published library: random sparsity patterns
//! and values ([`testgen`]), f64 CPU references of every op ([`reference`]), and the dense
//! cuBLAS baseline the benchmarks compare against ([`dense`]).

pub mod dense;
pub mod reference;
pub mod testgen;
