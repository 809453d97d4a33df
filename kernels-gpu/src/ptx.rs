//! Thin wrappers over the PTX instructions the kernels use. This module and the kernel entry
//! points are the only places with `unsafe`; everything above works on plain values and
//! 32-bit shared-memory addresses.

use core::arch::nvptx;
use core::arch::{asm, global_asm};

// Dynamic shared memory: its size is the launch's `shared_mem_bytes`.
global_asm!(".extern .shared .align 1024 .b8 dyn_smem[];");

/// 32-bit shared-window address of the start of dynamic shared memory.
#[inline(always)]
pub fn smem_base() -> u32 {
    let r: u32;
    // SAFETY: reads the address of a symbol; no memory access.
    unsafe { asm!("mov.u32 {0}, dyn_smem;", out(reg32) r, options(pure, nomem, nostack)) };
    r
}

#[inline(always)]
pub fn thread_idx() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_thread_idx_x() as u32 }
}

#[inline(always)]
pub fn block_idx() -> u32 {
    // SAFETY: reads a special register.
    unsafe { nvptx::_block_idx_x() as u32 }
}

/// Barrier over the whole thread block (`bar.sync 0`).
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: every thread of the block reaches the kernels' barriers (no divergent calls).
    unsafe { nvptx::_syncthreads() }
}

/// Warp barrier (`bar.warp.sync`): orders the shared-memory accesses of the warp's threads
/// before it against those after it (`__syncwarp`).
#[inline(always)]
pub fn sync_warp() {
    // SAFETY: every call site is warp-uniform, all 32 lanes arrive (the full member mask).
    unsafe { asm!("bar.warp.sync -1;", options(nostack)) }
}

/// Asynchronous 16-byte global → shared copy; bytes past `src_bytes` (0..=16) are zero-filled
/// and not read.
#[inline(always)]
pub unsafe fn cp_async_16(dst: u32, src: *const u8, src_bytes: u32) {
    unsafe {
        asm!("cp.async.cg.shared.global [{0}], [{1}], 16, {2};",
            in(reg32) dst, in(reg64) src, in(reg32) src_bytes, options(nostack));
    }
}

/// Asynchronous 16-byte global → shared copy of the whole chunk at `src` where `valid`, of
/// zeros where not (`src` is then not read). The `ignore-src` predicate form: a source size
/// (`cp_async_16`) costs ptxas four address instructions and three issue slots per copy.
#[inline(always)]
pub unsafe fn cp_async_16_or_zeros(dst: u32, src: *const u8, valid: bool) {
    unsafe {
        asm!("{{ .reg .pred %ignore; setp.eq.u32 %ignore, {2}, 0; cp.async.cg.shared.global [{0}], [{1}], 16, %ignore; }}",
            in(reg32) dst, in(reg64) src, in(reg32) valid as u32, options(nostack));
    }
}

/// Asynchronous 16-byte global → shared copy of the whole chunk at `src` where `valid`;
/// nothing at all where not (neither `src` read nor `dst` written: the caller never reads
/// `dst` for such a chunk).
#[inline(always)]
pub unsafe fn cp_async_16_if(dst: u32, src: *const u8, valid: bool) {
    unsafe {
        asm!("{{ .reg .pred %copy; setp.ne.u32 %copy, {2}, 0; @%copy cp.async.cg.shared.global [{0}], [{1}], 16; }}",
            in(reg32) dst, in(reg64) src, in(reg32) valid as u32, options(nostack));
    }
}

#[inline(always)]
pub fn cp_async_commit() {
    // SAFETY: closes the current group of this thread's cp.async operations.
    unsafe { asm!("cp.async.commit_group;", options(nostack)) };
}

/// Waits until at most `pending` of this thread's committed cp.async groups are in flight.
#[inline(always)]
pub fn cp_async_wait(pending: u32) {
    // The count must be an immediate; the pipeline depths in use are 2..=8 stages.
    // SAFETY: waits only.
    unsafe {
        match pending {
            0 => asm!("cp.async.wait_group 0;", options(nostack)),
            1 => asm!("cp.async.wait_group 1;", options(nostack)),
            2 => asm!("cp.async.wait_group 2;", options(nostack)),
            3 => asm!("cp.async.wait_group 3;", options(nostack)),
            4 => asm!("cp.async.wait_group 4;", options(nostack)),
            5 => asm!("cp.async.wait_group 5;", options(nostack)),
            _ => asm!("cp.async.wait_group 6;", options(nostack)),
        }
    }
}

/// Four 8x8 b16 matrices from shared memory, one row address per lane (lanes 8i..8i+7 → reg i).
#[inline(always)]
pub unsafe fn ldmatrix_x4(addr: u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    unsafe {
        asm!("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{0},{1},{2},{3}}}, [{4}];",
            out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg32) addr,
            options(nostack, readonly));
    }
    [a, b, c, d]
}

/// As [`ldmatrix_x4`], transposed: each lane receives column elements.
#[inline(always)]
pub unsafe fn ldmatrix_x4_trans(addr: u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    unsafe {
        asm!("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{{0},{1},{2},{3}}}, [{4}];",
            out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg32) addr,
            options(nostack, readonly));
    }
    [a, b, c, d]
}

/// D = A·B + D for one m16n8k16 tile with f16 inputs and f32 accumulators.
#[inline(always)]
pub fn mma_f16(d: &mut [f32; 4], a: &[u32; 4], b0: u32, b1: u32) {
    // SAFETY: register-only instruction.
    unsafe {
        asm!("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {{{0},{1},{2},{3}}}, {{{4},{5},{6},{7}}}, {{{8},{9}}}, {{{0},{1},{2},{3}}};",
            inout(reg32) d[0], inout(reg32) d[1], inout(reg32) d[2], inout(reg32) d[3],
            in(reg32) a[0], in(reg32) a[1], in(reg32) a[2], in(reg32) a[3], in(reg32) b0, in(reg32) b1,
            options(pure, nomem, nostack));
    }
}

/// D = A·B + D for one m16n8k16 tile with bf16 inputs and f32 accumulators.
#[inline(always)]
pub fn mma_bf16(d: &mut [f32; 4], a: &[u32; 4], b0: u32, b1: u32) {
    // SAFETY: register-only instruction.
    unsafe {
        asm!("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{{0},{1},{2},{3}}}, {{{4},{5},{6},{7}}}, {{{8},{9}}}, {{{0},{1},{2},{3}}};",
            inout(reg32) d[0], inout(reg32) d[1], inout(reg32) d[2], inout(reg32) d[3],
            in(reg32) a[0], in(reg32) a[1], in(reg32) a[2], in(reg32) a[3], in(reg32) b0, in(reg32) b1,
            options(pure, nomem, nostack));
    }
}

/// Shared-memory load. Pure: callers read data that a barrier (an asm the compiler treats as
/// writing memory) separates from its writes, so repeated or unused loads may be merged or
/// dropped.
#[inline(always)]
pub unsafe fn ld_shared_u32(addr: u32) -> u32 {
    let v: u32;
    unsafe { asm!("ld.shared.u32 {0}, [{1}];", out(reg32) v, in(reg32) addr, options(pure, nostack, readonly)) };
    v
}

#[inline(always)]
pub unsafe fn st_shared_u32(addr: u32, v: u32) {
    unsafe { asm!("st.shared.u32 [{0}], {1};", in(reg32) addr, in(reg32) v, options(nostack)) };
}

/// Read-only (non-coherent cache) global load.
#[inline(always)]
pub unsafe fn ld_global_nc_u32(p: *const u32) -> u32 {
    let v: u32;
    unsafe { asm!("ld.global.nc.u32 {0}, [{1}];", out(reg32) v, in(reg64) p, options(pure, nostack, readonly)) };
    v
}

#[inline(always)]
pub unsafe fn ld_global_u32(p: *const u32) -> u32 {
    let v: u32;
    unsafe { asm!("ld.global.u32 {0}, [{1}];", out(reg32) v, in(reg64) p, options(nostack, readonly)) };
    v
}

#[inline(always)]
pub unsafe fn st_global_u32(p: *mut u32, v: u32) {
    unsafe { asm!("st.global.u32 [{0}], {1};", in(reg64) p, in(reg32) v, options(nostack)) };
}

#[inline(always)]
pub unsafe fn ld_global_u16(p: *const u16) -> u16 {
    let v: u16;
    unsafe { asm!("ld.global.u16 {0}, [{1}];", out(reg16) v, in(reg64) p, options(nostack, readonly)) };
    v
}

#[inline(always)]
pub unsafe fn st_global_u16(p: *mut u16, v: u16) {
    unsafe { asm!("st.global.u16 [{0}], {1};", in(reg64) p, in(reg16) v, options(nostack)) };
}

#[inline(always)]
pub unsafe fn ld_global_f32x2(p: *const f32) -> (f32, f32) {
    let (a, b): (f32, f32);
    unsafe { asm!("ld.global.v2.f32 {{{0},{1}}}, [{2}];", out(reg32) a, out(reg32) b, in(reg64) p, options(nostack, readonly)) };
    (a, b)
}

#[inline(always)]
pub unsafe fn st_global_f32x2(p: *mut f32, a: f32, b: f32) {
    unsafe { asm!("st.global.v2.f32 [{0}], {{{1},{2}}};", in(reg64) p, in(reg32) a, in(reg32) b, options(nostack)) };
}

#[inline(always)]
pub unsafe fn ld_global_f32(p: *const f32) -> f32 {
    let v: f32;
    unsafe { asm!("ld.global.f32 {0}, [{1}];", out(reg32) v, in(reg64) p, options(nostack, readonly)) };
    v
}

/// 16-byte global load of four f32 (`p` 16-byte aligned).
#[inline(always)]
pub unsafe fn ld_global_v4_f32(p: *const f32) -> [f32; 4] {
    let (a, b, c, d): (f32, f32, f32, f32);
    unsafe {
        asm!("ld.global.v4.f32 {{{0},{1},{2},{3}}}, [{4}];", out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg64) p,
            options(nostack, readonly))
    };
    [a, b, c, d]
}

#[inline(always)]
pub unsafe fn st_global_f32(p: *mut f32, v: f32) {
    unsafe { asm!("st.global.f32 [{0}], {1};", in(reg64) p, in(reg32) v, options(nostack)) };
}

/// 8-byte shared-memory store (`addr` 8-byte aligned).
#[cfg(target_feature = "sm_90a")]
#[inline(always)]
pub unsafe fn st_shared_v2_u32(addr: u32, a: u32, b: u32) {
    unsafe { asm!("st.shared.v2.b32 [{0}], {{{1},{2}}};", in(reg32) addr, in(reg32) a, in(reg32) b, options(nostack)) };
}

/// 16-byte read-only (non-coherent cache) global load (`p` 16-byte aligned).
#[inline(always)]
pub unsafe fn ld_global_nc_v4_u32(p: *const u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the caller guarantees that `p` is a readable, 16-byte aligned global address that
    // the kernel does not write.
    unsafe {
        asm!("ld.global.nc.v4.b32 {{{0},{1},{2},{3}}}, [{4}];", out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg64) p,
            options(pure, nostack, readonly))
    };
    [a, b, c, d]
}

/// 16-byte global store (`p` 16-byte aligned).
#[inline(always)]
pub unsafe fn st_global_v4_u32(p: *mut u32, v: [u32; 4]) {
    // SAFETY: the caller guarantees that `p` is a writable, 16-byte aligned global address.
    unsafe {
        asm!("st.global.v4.b32 [{0}], {{{1},{2},{3},{4}}};", in(reg64) p, in(reg32) v[0], in(reg32) v[1], in(reg32) v[2], in(reg32) v[3], options(nostack))
    };
}

/// Butterfly shuffle: the value of lane `lane ^ MASK` (all 32 lanes must take part).
#[inline(always)]
pub fn shfl_xor<const MASK: u32>(v: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only warp exchange; callers run it warp-uniformly.
    unsafe { asm!("shfl.sync.bfly.b32 {0}, {1}, {2}, 31, -1;", out(reg32) r, in(reg32) v, const MASK, options(nomem, nostack)) };
    r
}

/// Indexed shuffle: the value of lane `src` (all 32 lanes must take part). Used by the Hopper
/// producers' warp-wide index fetch.
#[cfg(target_feature = "sm_90a")]
#[inline(always)]
pub fn shfl_idx(v: u32, src: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only warp exchange; callers run it warp-uniformly.
    unsafe { asm!("shfl.sync.idx.b32 {0}, {1}, {2}, 31, -1;", out(reg32) r, in(reg32) v, in(reg32) src, options(nomem, nostack)) };
    r
}

/// The warp's votes: bit `l` set when lane `l`'s `v` is non-zero (all 32 lanes must take
/// part).
#[inline(always)]
pub fn ballot(v: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only warp vote; callers run it warp-uniformly.
    unsafe {
        asm!(
            "{{ .reg .pred q; setp.ne.u32 q, {1}, 0; vote.sync.ballot.b32 {0}, q, -1; }}",
            out(reg32) r, in(reg32) v, options(nomem, nostack)
        )
    };
    r
}

/// Packs two f32 into f16x2 (round to nearest): `lo` in the low half.
#[inline(always)]
pub fn pack_f16x2(lo: f32, hi: f32) -> u32 {
    let r: u32;
    // SAFETY: register-only.
    unsafe { asm!("cvt.rn.f16x2.f32 {0}, {1}, {2};", out(reg32) r, in(reg32) hi, in(reg32) lo, options(pure, nomem, nostack)) };
    r
}

/// Packs two f32 into bf16x2 (round to nearest): `lo` in the low half.
#[inline(always)]
pub fn pack_bf16x2(lo: f32, hi: f32) -> u32 {
    let r: u32;
    // SAFETY: register-only.
    unsafe { asm!("cvt.rn.bf16x2.f32 {0}, {1}, {2};", out(reg32) r, in(reg32) hi, in(reg32) lo, options(pure, nomem, nostack)) };
    r
}

/// f16 bits → f32.
#[inline(always)]
pub fn f16_to_f32(h: u16) -> f32 {
    let r: f32;
    // SAFETY: register-only.
    unsafe { asm!("cvt.f32.f16 {0}, {1};", out(reg32) r, in(reg16) h, options(pure, nomem, nostack)) };
    r
}

/// f32 → f16 bits (round to nearest).
#[inline(always)]
pub fn f32_to_f16(x: f32) -> u16 {
    let r: u16;
    // SAFETY: register-only.
    unsafe { asm!("cvt.rn.f16.f32 {0}, {1};", out(reg16) r, in(reg32) x, options(pure, nomem, nostack)) };
    r
}

/// f32 → bf16 bits (round to nearest).
#[inline(always)]
pub fn f32_to_bf16(x: f32) -> u16 {
    let r: u16;
    // SAFETY: register-only.
    unsafe { asm!("cvt.rn.bf16.f32 {0}, {1};", out(reg16) r, in(reg32) x, options(pure, nomem, nostack)) };
    r
}

/// Transposes an 8×8 matrix of 16-bit values held in the `mma` fragment layout (lane `l`: row
/// `l / 4`, columns `2 (l % 4)` and `+ 1` packed low-first): afterwards lane `l` holds row
/// `l / 4` of the transpose. All 32 lanes take part.
#[inline(always)]
pub fn movmatrix_trans(v: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only warp exchange; callers run it warp-uniformly.
    unsafe { asm!("movmatrix.sync.aligned.m8n8.trans.b16 {0}, {1};", out(reg32) r, in(reg32) v, options(nomem, nostack)) };
    r
}

/// `v`, hidden from the optimiser: not pure, so it is evaluated where it is written. Epilogues
/// pass their strides through it once per item, so that the many address products they derive
/// are not hoisted out of the item loop into registers that stay live across the main loop.
#[inline(always)]
pub fn opaque(v: u32) -> u32 {
    let r: u32;
    // SAFETY: a register move.
    unsafe { asm!("mov.b32 {0}, {1};", out(reg32) r, in(reg32) v, options(nomem, nostack)) };
    r
}

/// Stops the kernel with an error the host sees as a launch failure.
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: ends the thread.
    unsafe { asm!("trap;", options(noreturn, nostack)) }
}
