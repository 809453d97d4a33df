//! blocksparse device code. Compiled by rustc's `nvptx64-nvidia-cuda` backend to PTX by
//! `cargo xtask build-ptx` (`xtask/src/build_ptx.rs`), which commits the PTX and cubins to
//! `host/kernels/`; the host crate embeds them and launches these entry points.
//!
//! Layers:
//! - `ptx`, `ptx_sm90`: the instructions (the only `asm!`);
//! - `core`: what every op shares — the stage ring ([`core::ring`]), the work source
//!   ([`core::work`]), the epilogues ([`core::epilogue`]), and the two kernel skeletons,
//!   [`core::portable`] (`cp.async` + `mma.sync`) and [`core::hopper`] (TMA + mbarriers +
//!   `wgmma`, warp-specialized and persistent), plus the split-K fix-up and the densify and sparsify
//!   kernels;
//! - `ops`: each op supplies its operand sources and its epilogue to both skeletons
//!   ([`ops::spmm`], [`ops::sddmm`]).
//!
//! Entry points are generated from the kernel list in `blocksparse-abi`
//! (`for_each_kernel!`), which the host uses too. Without cfg flags the crate holds every entry
//! (what clippy checks); `build-ptx` builds one module per op and family with
//! `--cfg kernels_split --cfg <Op> --cfg <Family>` (the `OpKind` and `KernelFamily` variant
//! names), which keeps that module's entries only.
#![no_std]
#![feature(abi_ptx, asm_experimental_arch, stdarch_nvptx, stmt_expr_attributes)]
// A split build uses part of the shared code only.
#![cfg_attr(kernels_split, allow(dead_code, unused_imports, unused_macros))]

mod core;
mod dtype;
mod ops;
mod ptx;
#[cfg(target_feature = "sm_90a")]
mod ptx_sm90;

use blocksparse_abi::{DensifyParams, FixupParams, SparsifyParams};

/// The hash of the shared ABI this module was built against (`blocksparse_abi::ABI_HASH`,
/// exported as `blocksparse_abi::ABI_HASH_SYMBOL`); the host reads it when it loads the module.
#[unsafe(no_mangle)]
pub static BLOCKSPARSE_ABI_HASH: u64 = blocksparse_abi::ABI_HASH;

#[panic_handler]
fn panic(_: &::core::panic::PanicInfo) -> ! {
    ptx::trap()
}

/// Generic address of a Hopper kernel's parameter block: the tensor maps sit at its start.
/// (The build step declares the parameter 64-byte aligned.)
#[cfg(target_feature = "sm_90a")]
macro_rules! param_address {
    ($name:ident) => {{
        let addr: u64;
        // SAFETY: takes the address of this kernel's own parameter; no memory access.
        unsafe {
            ::core::arch::asm!(
                concat!("mov.b64 {0}, ", stringify!($name), "_param_0;\n\tcvta.param.u64 {0}, {0};"),
                out(reg64) addr,
                options(pure, nomem, nostack)
            )
        };
        addr
    }};
}

/// One entry point per line of `for_each_kernel!`.
macro_rules! entry {
    ($name:ident, Fixup, Portable, $input:ident, $tile:literal, $output:ident) => {
        /// Split-K fix-up kernel (see `core::fixup`).
        ///
        /// # Safety
        /// Launched by the host library only, with the parameter block its plan built.
        #[cfg(any(not(kernels_split), all(Fixup, Portable)))]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(p: FixupParams) {
            unsafe { core::fixup::run::<dtype::$output>(&p) }
        }
    };
    ($name:ident, Densify, Portable, $input:ident, $tile:literal, $output:ident) => {
        /// Densify kernel (see `core::densify`).
        ///
        /// # Safety
        /// Launched by the host library only, with the parameter block its plan built.
        #[cfg(any(not(kernels_split), all(Densify, Portable)))]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(p: DensifyParams) {
            unsafe { core::densify::run(&p) }
        }
    };
    ($name:ident, Sparsify, Portable, $input:ident, $tile:literal, $output:ident) => {
        /// Sparsify kernel (see `core::sparsify`).
        ///
        /// # Safety
        /// Launched by the host library only, with the parameter block its plan built.
        #[cfg(any(not(kernels_split), all(Sparsify, Portable)))]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(p: SparsifyParams) {
            unsafe { core::sparsify::run::<dtype::$output>(&p) }
        }
    };
    ($name:ident, $op:ident, Portable, $input:ident, $tile:literal, $output:ident) => {
        /// Portable tensor-core kernel (see `core::portable` and the op in `ops`).
        ///
        /// # Safety
        /// Launched by the host library only, with the parameter block its plan built.
        #[cfg(any(not(kernels_split), all($op, Portable)))]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(p: <ops::$op as core::portable::PortableOp>::Params) {
            unsafe { core::portable::run::<ops::$op, dtype::$input, dtype::$output, $tile>(&p) }
        }
    };
    ($name:ident, $op:ident, Hopper, $input:ident, $tile:literal, $output:ident) => {
        /// Hopper kernel (see `core::hopper` and the op in `ops`).
        ///
        /// # Safety
        /// Launched by the host library only, with the parameter block and tensor maps its plan
        /// built.
        #[cfg(all(target_feature = "sm_90a", any(not(kernels_split), all($op, Hopper))))]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(p: blocksparse_abi::HopperParams<<ops::$op as core::hopper::HopperOp>::Params>) {
            let a = param_address!($name);
            let b = a + ::core::mem::size_of_val(&p.tmap_a) as u64;
            let c = b + ::core::mem::size_of_val(&p.tmap_b) as u64;
            let maps = core::hopper::Maps { a, b, c };
            unsafe { core::hopper::run::<ops::$op, dtype::$input, dtype::$output, $tile>(&p.p, maps) }
        }
    };
}
blocksparse_abi::for_each_kernel!(entry);
