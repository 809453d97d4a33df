//! blocksparse device code. Compiled by rustc's `nvptx64-nvidia-cuda` backend to PTX at build
//! time (see `host/build.rs`); the host crate embeds the PTX and launches these entry points.
//!
//! One module per layer: `ptx` (instructions), `tile` (shared-memory layouts), `pipeline` (the
//! cp.async ring), `scheduler` (work items), `epilogue` (alpha/beta and stores), and the kernels
//! `mma_kernel` and `fixup` that compose them. Entry points are generated from the variant lists
//! in `blocksparse-abi`, which the host uses too.
#![no_std]
#![feature(abi_ptx, asm_experimental_arch, stdarch_nvptx)]

mod dtype;
mod epilogue;
mod fixup;
mod mma_kernel;
mod pipeline;
mod ptx;
mod scheduler;
mod tile;
#[cfg(target_feature = "sm_90a")]
mod ptx_sm90;
#[cfg(target_feature = "sm_90a")]
mod wgmma_kernel;

use blocksparse_abi::{FixupParams, SpmmParams};
#[cfg(target_feature = "sm_90a")]
use blocksparse_abi::WgmmaParams;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    ptx::trap()
}

macro_rules! mma_entry {
    ($name:ident, $input:ident, $tile:literal, $output:ident) => {
        /// Portable tensor-core BSR × dense kernel (see `mma_kernel`).
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(p: SpmmParams) {
            unsafe { mma_kernel::spmm_mma::<dtype::$input, dtype::$output, $tile>(&p) }
        }
    };
}
blocksparse_abi::for_each_mma_kernel!(mma_entry);

macro_rules! fixup_entry {
    ($name:ident, $output:ident) => {
        /// Split-K fix-up kernel (see `fixup`).
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(p: FixupParams) {
            unsafe { fixup::spmm_fixup::<dtype::$output>(&p) }
        }
    };
}
blocksparse_abi::for_each_fixup_kernel!(fixup_entry);

/// Generic address of a Hopper kernel's parameter block: the tensor maps sit at its start.
/// (The build step declares the parameter 64-byte aligned.)
#[cfg(target_feature = "sm_90a")]
macro_rules! param_address {
    ($name:ident) => {{
        let addr: u64;
        // SAFETY: takes the address of this kernel's own parameter; no memory access.
        unsafe {
            core::arch::asm!(
                concat!("mov.b64 {0}, ", stringify!($name), "_param_0;\n\tcvta.param.u64 {0}, {0};"),
                out(reg64) addr,
                options(pure, nomem, nostack)
            )
        };
        addr
    }};
}

#[cfg(target_feature = "sm_90a")]
macro_rules! wgmma_entry {
    ($name:ident, $input:ident, $tile:literal, $output:ident) => {
        /// Hopper BSR × dense kernel (see `wgmma_kernel`).
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(p: WgmmaParams) {
            let tmaps = param_address!($name);
            let tmap_b = tmaps + core::mem::size_of_val(&p.tmap_a) as u64;
            let tmap_c = tmap_b + core::mem::size_of_val(&p.tmap_b) as u64;
            unsafe { wgmma_kernel::spmm_wgmma::<dtype::$input, dtype::$output, $tile>(&p.base, tmaps, tmap_b, tmap_c) }
        }
    };
}
#[cfg(target_feature = "sm_90a")]
blocksparse_abi::for_each_wgmma_kernel!(wgmma_entry);
