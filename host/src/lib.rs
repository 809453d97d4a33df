//! # blocksparse
//!
//! Block-sparse (BSR) matrix products on NVIDIA tensor cores, kernels written in Rust:
//! - **SpMM** `C = alpha · op(A) · op(B) + beta · C` ([`Context::spmm`]);
//! - **dense × sparse** `C = alpha · op(X) · op(A) + beta · C` ([`Context::dense_sparse`]);
//! - **SDDMM** `C.values = alpha · (op(X) · op(Y)) at C's blocks + beta · C.values`
//!   ([`Context::sddmm`]);
//! - **BSR × BSR** `C = alpha · A · B + beta · C` with both operands block-sparse and C dense or
//!   block-sparse (the product's pattern or a mask) ([`Context::spgemm`],
//!   [`Context::spgemm_bsr`]);
//!
//! with A (or C) block-sparse in bm×bk blocks (16, 32, 64 or 128 each), dense operands
//! row-major or column-major views (`op(X)` is the view or its transpose: no copies), inputs f16
//! or bf16 with f32 accumulation, outputs f16, bf16 or f32, and batches of matrices that share
//! one pattern (heads, experts) in one launch.
//!
//! Every call of a [`Context`] is queued on its stream: the default stream, or the caller's
//! ([`Context::from_stream`], [`Context::with_stream`]), with cudarc's read/write guards held
//! across each launch so that work on other streams is ordered after it. Dense operands may be
//! the caller's own device buffers ([`MatRef::new`], [`MatRef::from_view`], [`MatMut::new`],
//! [`MatMut::from_view`]), and a BSR matrix may be built from parts already on the device with
//! u32, i32 or i64 indices ([`Context::bsr_from_device`], [`Bsr::from_index_arrays`]).
//!
//! The kernels (`kernels-gpu/`) are compiled to PTX by rustc's NVPTX backend and to cubins by
//! ptxas ahead of time (`cargo xtask build-ptx`) and embedded here; the driver is loaded at run
//! time, so the library builds on stable Rust on machines without CUDA and returns
//! [`Error::NoDevice`] where there is no GPU. Each kernel module loads when a product first
//! needs it.
//!
//! ```no_run
//! use blocksparse::{BlockShape, Bsr, Context, Transpose};
//! use half::f16;
//! # fn main() -> blocksparse::Result<()> {
//! let (m, k, n) = (1024, 1024, 512);
//! let mask: Vec<bool> = (0..16 * 16).map(|i| i % 5 == 0).collect();
//! let nnzb = mask.iter().filter(|&&x| x).count();
//! let values = vec![f16::from_f32(0.5); nnzb * 64 * 64];
//! let a = Bsr::from_block_mask(m, k, BlockShape::square(64), &mask, values)?;
//!
//! let ctx = Context::new(0)?;
//! let a_dev = ctx.upload_bsr(&a)?;
//! let b = ctx.upload_matrix(k, n, &vec![f16::from_f32(1.0); k * n])?;
//! let mut c = ctx.zeros_matrix::<f32>(m, n)?;
//! let plan = ctx.plan_spmm(&a_dev, Transpose::No, n)?;   // once per pattern and N
//! ctx.spmm(&plan, 1.0, &a_dev, &b, 0.0, &mut c)?;        // C = 1·A·B + 0·C
//! let c_host = ctx.download_matrix(&c)?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod bsr;
pub mod context;
pub mod device_bsr;
pub mod element;
pub mod error;
pub mod index;
pub mod kernels;
mod launch;
pub mod matrix;
mod merge;
pub mod ops;
mod pairs;
mod par;
pub mod plan;

pub use blocksparse_abi as abi;
pub use bsr::{BlockShape, Bsr, BsrParts};
pub use context::{Context, KernelPath, driver_present};
pub use cudarc;
pub use device_bsr::{DeviceBsr, Pattern};
pub use element::{DType, Element, InputElement};
pub use error::{Error, Result};
pub use index::BsrIndex;
pub use matrix::{DeviceMatrix, Layout, MatMut, MatRef, MatShape};
pub use ops::sddmm::SddmmPlan;
pub use ops::spgemm::{SpgemmOutput, SpgemmPlan, SpgemmSize};
pub use ops::spmm::SpmmPlan;
pub use ops::{PlanOptions, TileChoice, Transpose};

// A context, its matrices and its plans may be moved to and shared with other threads (e.g. the
// next step's plan made on another thread, on a context of another stream, while the GPU runs
// this one): checked at compile time.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Context>();
    send_sync::<SpmmPlan>();
    send_sync::<SddmmPlan>();
    send_sync::<SpgemmPlan>();
    send_sync::<DeviceBsr<half::f16>>();
    send_sync::<DeviceMatrix<f32>>();
};
