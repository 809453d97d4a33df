//! The ops: each supplies its operand sources and its epilogue to the kernel skeletons in
//! `core` (one module per op, implementing `PortableOp` and, on sm_90a, `HopperOp`).

pub mod sddmm;
pub mod spgemm;
pub mod spmm;

pub use sddmm::Sddmm;
pub use spgemm::Spgemm;
pub use spmm::Spmm;
