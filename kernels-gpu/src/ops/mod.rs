//! The ops: each supplies its operand sources and its epilogue to the kernel skeletons in
//! `core` (one module per op, implementing `PortableOp` and, on sm_90a, `HopperOp`).

pub mod sddmm;
pub mod spgemm;
pub mod spmm;

pub use sddmm::Sddmm;
pub use spgemm::Spgemm;
pub use spmm::Spmm;

// The host sizes a portable kernel's shared memory by its op (`launch_shape` in
// `host/src/kernels.rs`): `MmaTile::warp_rings_smem_bytes` for SpGEMM where the tile takes warp
// rings (the larger of both rings' where the plan chooses), which the skeleton lays out for an
// op that marks absent B. Only SpGEMM does.
const _: () = {
    use crate::core::portable::PortableOp;
    assert!(<Spgemm as PortableOp>::B_MARKS && !<Spmm as PortableOp>::B_MARKS && !<Sddmm as PortableOp>::B_MARKS);
};
