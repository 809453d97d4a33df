//! # blocksparse
//!
//! Block-sparse (BSR) × dense matrix multiplication on NVIDIA tensor cores:
//! `C = alpha · A · B + beta · C`, A in BSR with bm×bk blocks (16, 32, 64 or 128 each), B and C
//! dense row-major, inputs f16 or bf16, accumulation in f32, C in f16, bf16 or f32.
//!
//! The kernels are written in Rust (`kernels-gpu/`), compiled to PTX by rustc's NVPTX backend
//! at build time and embedded here; the driver is loaded at run time, so the library builds
//! on machines without CUDA and returns [`Error::NoDevice`] where there is no GPU.
//!
//! ```no_run
//! use blocksparse::{BlockShape, Bsr, Context};
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
//! let plan = ctx.plan(&a_dev, n)?;          // once per sparsity pattern and N
//! ctx.spmm(&plan, 1.0, &a_dev, &b, 0.0, &mut c)?;
//! let c_host = ctx.download_matrix(&c)?;
//! # Ok(()) }
//! ```

pub mod bsr;
pub mod dense;
pub mod device;
pub mod element;
pub mod error;
pub mod kernels;
pub mod plan;
pub mod reference;
pub mod spmm;
pub mod testgen;

pub use blocksparse_abi as abi;
pub use cudarc;
pub use bsr::{BlockShape, Bsr};
pub use device::{Context, DeviceBsr, DeviceMatrix, KernelPath, driver_present};
pub use element::{DType, Element, InputElement};
pub use error::{Error, Result};
pub use spmm::Plan;
