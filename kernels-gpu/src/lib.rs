//! blocksparse device code. Compiled by rustc's `nvptx64-nvidia-cuda` backend to PTX at build
//! time (see `host/build.rs`); the host crate embeds the PTX and launches these entry points.
//!
//! Layers:
//! - `ptx`, `ptx_sm90`: the instructions (the only `asm!`);
//! - `core`: what every op shares — the stage ring ([`core::ring`]), the work source
//!   ([`core::work`]), the epilogues ([`core::epilogue`]), and the two kernel skeletons,
//!   [`core::portable`] (`cp.async` + `mma.sync`) and [`core::hopper`] (TMA + mbarriers +
//!   `wgmma`, warp-specialized and persistent), plus the split-K fix-up;
//! - `ops`: each op supplies its operand sources and its epilogue to both skeletons
//!   ([`ops::spmm`], [`ops::sddmm`]).
//!
//! Entry points are generated from the kernel list in `blocksparse-abi`
//! (`for_each_kernel!`), which the host uses too.
#![no_std]
#![feature(abi_ptx, asm_experimental_arch, stdarch_nvptx)]

mod core;
mod dtype;
mod ops;
mod ptx;
#[cfg(target_feature = "sm_90a")]
mod ptx_sm90;

use blocksparse_abi::FixupParams;

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
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(p: FixupParams) {
            unsafe { core::fixup::run::<dtype::$output>(&p) }
        }
    };
    ($name:ident, $op:ident, Portable, $input:ident, $tile:literal, $output:ident) => {
        /// Portable tensor-core kernel (see `core::portable` and the op in `ops`).
        ///
        /// # Safety
        /// Launched by the host library only, with the parameter block its plan built.
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
        #[cfg(target_feature = "sm_90a")]
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
