//! Element types as zero-sized markers: which `mma` an input type selects, and how an output
//! type is read, rounded and written by the epilogue.

use crate::ptx;

pub struct F16;
pub struct Bf16;
pub struct F32;

/// Tensor-core input types (A and B).
pub trait Input {
    /// D += A·B for one m16n8k16 fragment.
    fn mma(d: &mut [f32; 4], a: &[u32; 4], b0: u32, b1: u32);
}

impl Input for F16 {
    #[inline(always)]
    fn mma(d: &mut [f32; 4], a: &[u32; 4], b0: u32, b1: u32) {
        ptx::mma_f16(d, a, b0, b1)
    }
}

impl Input for Bf16 {
    #[inline(always)]
    fn mma(d: &mut [f32; 4], a: &[u32; 4], b0: u32, b1: u32) {
        ptx::mma_bf16(d, a, b0, b1)
    }
}

/// Output types (C). Addresses are element pointers; pairs start at even columns, so a pair is
/// naturally aligned (leading dimensions are multiples of 8).
pub trait Output {
    type Elem;
    /// For 16-bit outputs: rounds a pair into one packed word (`lo` at the lower column); `None`
    /// for f32, whose pairs are written as they are.
    const PACK2: Option<fn(f32, f32) -> u32>;
    unsafe fn load2(p: *const Self::Elem) -> (f32, f32);
    unsafe fn store2(p: *mut Self::Elem, v0: f32, v1: f32);
    unsafe fn load1(p: *const Self::Elem) -> f32;
    unsafe fn store1(p: *mut Self::Elem, v: f32);
}

impl Output for F16 {
    type Elem = u16;
    const PACK2: Option<fn(f32, f32) -> u32> = Some(ptx::pack_f16x2);
    #[inline(always)]
    unsafe fn load2(p: *const u16) -> (f32, f32) {
        let w = unsafe { ptx::ld_global_u32(p as *const u32) };
        (ptx::f16_to_f32(w as u16), ptx::f16_to_f32((w >> 16) as u16))
    }
    #[inline(always)]
    unsafe fn store2(p: *mut u16, v0: f32, v1: f32) {
        unsafe { ptx::st_global_u32(p as *mut u32, ptx::pack_f16x2(v0, v1)) }
    }
    #[inline(always)]
    unsafe fn load1(p: *const u16) -> f32 {
        ptx::f16_to_f32(unsafe { ptx::ld_global_u16(p) })
    }
    #[inline(always)]
    unsafe fn store1(p: *mut u16, v: f32) {
        unsafe { ptx::st_global_u16(p, ptx::f32_to_f16(v)) }
    }
}

/// bf16 → f32 is a 16-bit shift: exact, no conversion instruction needed.
#[inline(always)]
fn bf16_bits_to_f32(h: u32) -> f32 {
    f32::from_bits(h << 16)
}

impl Output for Bf16 {
    type Elem = u16;
    const PACK2: Option<fn(f32, f32) -> u32> = Some(ptx::pack_bf16x2);
    #[inline(always)]
    unsafe fn load2(p: *const u16) -> (f32, f32) {
        let w = unsafe { ptx::ld_global_u32(p as *const u32) };
        (bf16_bits_to_f32(w & 0xffff), bf16_bits_to_f32(w >> 16))
    }
    #[inline(always)]
    unsafe fn store2(p: *mut u16, v0: f32, v1: f32) {
        unsafe { ptx::st_global_u32(p as *mut u32, ptx::pack_bf16x2(v0, v1)) }
    }
    #[inline(always)]
    unsafe fn load1(p: *const u16) -> f32 {
        bf16_bits_to_f32(unsafe { ptx::ld_global_u16(p) } as u32)
    }
    #[inline(always)]
    unsafe fn store1(p: *mut u16, v: f32) {
        unsafe { ptx::st_global_u16(p, ptx::f32_to_bf16(v)) }
    }
}

impl Output for F32 {
    type Elem = f32;
    const PACK2: Option<fn(f32, f32) -> u32> = None;
    #[inline(always)]
    unsafe fn load2(p: *const f32) -> (f32, f32) {
        unsafe { ptx::ld_global_f32x2(p) }
    }
    #[inline(always)]
    unsafe fn store2(p: *mut f32, v0: f32, v1: f32) {
        unsafe { ptx::st_global_f32x2(p, v0, v1) }
    }
    #[inline(always)]
    unsafe fn load1(p: *const f32) -> f32 {
        unsafe { ptx::ld_global_f32(p) }
    }
    #[inline(always)]
    unsafe fn store1(p: *mut f32, v: f32) {
        unsafe { ptx::st_global_f32(p, v) }
    }
}

/// Input types of the Hopper kernels: which wgmma they select.
#[cfg(target_feature = "sm_90a")]
pub trait WgInput {
    /// `D += A·B` for one m64n256k16 step from shared-memory descriptors; A MN-major when
    /// `A_MN` (else K-major), B K-major when `B_K` (else MN-major).
    unsafe fn wgmma<const A_MN: bool, const B_K: bool>(d: &mut [f32; 128], desc_a: u64, desc_b: u64);
    /// As [`WgInput::wgmma`] for m64n128k16: one 128-column group of a consumer's tile, whose
    /// 64 accumulators are the first or second half of the m64n256 fragment.
    unsafe fn wgmma_n128<const A_MN: bool, const B_K: bool>(d: &mut [f32; 64], desc_a: u64, desc_b: u64);
    /// As [`WgInput::wgmma`] for m64n64k16: one 64-column B box of a consumer's tile, whose 32
    /// accumulators are a quarter of the m64n256 fragment.
    unsafe fn wgmma_n64<const A_MN: bool, const B_K: bool>(d: &mut [f32; 32], desc_a: u64, desc_b: u64);
    /// As [`WgInput::wgmma`] with A from registers: this warp's `(16, 16)` fragment of the
    /// warpgroup's 64 rows (the mma.m16n8k16 A layout, as `ldmatrix.x4` loads it).
    unsafe fn wgmma_rs<const B_K: bool>(d: &mut [f32; 128], a: [u32; 4], desc_b: u64);
}

/// The wgmma wrapper of one input type for the operand layouts (`A_MN`, `B_K`); the
/// instruction's transpose immediates are 1 for MN-major.
#[cfg(target_feature = "sm_90a")]
macro_rules! wg_input {
    // One wrapper method over the four layout variants `[kk, km, mk, mm]` (A K-/MN-major, B
    // K-/MN-major) of an instruction with `$regs` accumulators.
    (@method $name:ident, $regs:literal, [$kk:ident, $km:ident, $mk:ident, $mm:ident]) => {
        #[inline(always)]
        unsafe fn $name<const A_MN: bool, const B_K: bool>(d: &mut [f32; $regs], desc_a: u64, desc_b: u64) {
            use crate::ptx_sm90::*;
            unsafe {
                match (A_MN, B_K) {
                    (false, true) => $kk(d, desc_a, desc_b, 1),
                    (false, false) => $km(d, desc_a, desc_b, 1),
                    (true, true) => $mk(d, desc_a, desc_b, 1),
                    (true, false) => $mm(d, desc_a, desc_b, 1),
                }
            }
        }
    };
    ($ty:ident, $n256:tt, $n128:tt, $n64:tt, [$rk:ident, $rm:ident]) => {
        impl WgInput for $ty {
            wg_input!(@method wgmma, 128, $n256);
            wg_input!(@method wgmma_n128, 64, $n128);
            wg_input!(@method wgmma_n64, 32, $n64);
            #[inline(always)]
            unsafe fn wgmma_rs<const B_K: bool>(d: &mut [f32; 128], a: [u32; 4], desc_b: u64) {
                use crate::ptx_sm90::*;
                unsafe { if B_K { $rk(d, a, desc_b, 1) } else { $rm(d, a, desc_b, 1) } }
            }
        }
    };
}
#[cfg(target_feature = "sm_90a")]
wg_input!(
    F16,
    [wgmma_m64n256k16_f16_00, wgmma_m64n256k16_f16_01, wgmma_m64n256k16_f16_10, wgmma_m64n256k16_f16_11],
    [wgmma_m64n128k16_f16_00, wgmma_m64n128k16_f16_01, wgmma_m64n128k16_f16_10, wgmma_m64n128k16_f16_11],
    [wgmma_m64n64k16_f16_00, wgmma_m64n64k16_f16_01, wgmma_m64n64k16_f16_10, wgmma_m64n64k16_f16_11],
    [wgmma_m64n256k16_f16_r0, wgmma_m64n256k16_f16_r1]
);
#[cfg(target_feature = "sm_90a")]
wg_input!(
    Bf16,
    [wgmma_m64n256k16_bf16_00, wgmma_m64n256k16_bf16_01, wgmma_m64n256k16_bf16_10, wgmma_m64n256k16_bf16_11],
    [wgmma_m64n128k16_bf16_00, wgmma_m64n128k16_bf16_01, wgmma_m64n128k16_bf16_10, wgmma_m64n128k16_bf16_11],
    [wgmma_m64n64k16_bf16_00, wgmma_m64n64k16_bf16_01, wgmma_m64n64k16_bf16_10, wgmma_m64n64k16_bf16_11],
    [wgmma_m64n256k16_bf16_r0, wgmma_m64n256k16_bf16_r1]
);
