//! What every op shares: the stage ring, the work source, the epilogues, the two kernel
//! skeletons, the split-K fix-up, and the densify and sparsify kernels.

pub mod cells;
pub mod densify;
pub mod epilogue;
pub mod fixup;
#[cfg(target_feature = "sm_90a")]
pub mod hopper;
pub mod portable;
pub mod ring;
pub mod smem;
pub mod sparsify;
pub mod work;
