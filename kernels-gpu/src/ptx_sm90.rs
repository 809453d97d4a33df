//! Hopper-only instructions (sm_90a): mbarriers, TMA bulk tensor copies, wgmma.

use core::arch::asm;

include!(concat!(env!("OUT_DIR"), "/wgmma_gen.rs"));

/// `mbarrier.init` with the number of arrivals that completes a phase.
#[inline(always)]
pub unsafe fn mbar_init(bar: u32, count: u32) {
    unsafe { asm!("mbarrier.init.shared::cta.b64 [{0}], {1};", in(reg32) bar, in(reg32) count, options(nostack)) };
}

/// Makes barrier initialisation visible to the async proxy (TMA) and other threads.
#[inline(always)]
pub fn fence_mbar_init() {
    // SAFETY: a fence.
    unsafe { asm!("fence.mbarrier_init.release.cluster;", options(nostack)) };
}

/// Producer: one arrival that also announces `bytes` of TMA data for this phase.
#[inline(always)]
pub unsafe fn mbar_arrive_expect_tx(bar: u32, bytes: u32) {
    unsafe { asm!("mbarrier.arrive.expect_tx.shared::cta.b64 _, [{0}], {1};", in(reg32) bar, in(reg32) bytes, options(nostack)) };
}

/// One plain arrival.
#[inline(always)]
pub unsafe fn mbar_arrive(bar: u32) {
    unsafe { asm!("mbarrier.arrive.shared::cta.b64 _, [{0}];", in(reg32) bar, options(nostack)) };
}

/// Blocks until the phase with parity `parity` of `bar` has completed.
#[inline(always)]
pub unsafe fn mbar_wait(bar: u32, parity: u32) {
    loop {
        let done: u32;
        unsafe {
            asm!(
                "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{1}], {2}; selp.u32 {0}, 1, 0, p; }}",
                out(reg32) done, in(reg32) bar, in(reg32) parity, options(nostack)
            );
        }
        if done != 0 {
            break;
        }
    }
}

/// 3D TMA load of the box at (`c0` innermost, `c1`, `c2`) of the tensor map at generic address
/// `tmap` into shared memory `dst`, completing `bar`'s transaction count. Elements outside the
/// tensor are zero-filled (and still counted).
#[inline(always)]
pub unsafe fn tma_load_3d(dst: u32, tmap: u64, c0: u32, c1: u32, c2: u32, bar: u32) {
    unsafe {
        asm!(
            "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{0}], [{1}, {{{2}, {3}, {4}}}], [{5}];",
            in(reg32) dst, in(reg64) tmap, in(reg32) c0, in(reg32) c1, in(reg32) c2, in(reg32) bar, options(nostack)
        );
    }
}

/// Orders this warpgroup's register accesses before the wgmma that follow.
#[inline(always)]
pub fn wgmma_fence() {
    // SAFETY: a fence.
    unsafe { asm!("wgmma.fence.sync.aligned;", options(nostack)) };
}

#[inline(always)]
pub fn wgmma_commit() {
    // SAFETY: closes the current wgmma group.
    unsafe { asm!("wgmma.commit_group.sync.aligned;", options(nostack)) };
}

/// Shared-memory matrix descriptor for a tile starting at `addr`, swizzled over `span` bytes
/// (128, 64 or 32; the pattern is a function of the address bits, its atoms aligned to 8 ·
/// span): bits 0-13 address >> 4, 16-29 leading byte offset >> 4, 32-45 stride byte offset >> 4,
/// 62-63 swizzle mode (1 = 128B, 2 = 64B, 3 = 32B).
#[inline(always)]
pub fn swizzled_desc(addr: u32, lbo: u32, sbo: u32, span: u32) -> u64 {
    let mode: u64 = match span {
        128 => 1,
        64 => 2,
        _ => 3,
    };
    ((addr as u64 & 0x3FFFF) >> 4) | (((lbo as u64) >> 4) << 16) | (((sbo as u64) >> 4) << 32) | (mode << 62)
}

/// Producer warpgroup: give registers back (`setmaxnreg.dec`, the whole warpgroup).
#[inline(always)]
pub fn set_max_nreg_producer() {
    // SAFETY: executed by all threads of the warpgroup; the kernel is launched with a register cap.
    unsafe { asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const blocksparse_abi::PRODUCER_REGS, options(nostack)) };
}

/// Consumer warpgroups: take the registers the accumulators need (`setmaxnreg.inc`).
#[inline(always)]
pub fn set_max_nreg_consumer() {
    // SAFETY: as above.
    unsafe { asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const blocksparse_abi::CONSUMER_REGS, options(nostack)) };
}

/// 3D TMA store of the shared-memory box at `src` to (`c0` innermost, `c1`, `c2`) of the tensor
/// map at generic address `tmap`, in the current bulk group (elements out of range are not
/// written).
#[inline(always)]
pub unsafe fn tma_store_3d(tmap: u64, c0: u32, c1: u32, c2: u32, src: u32) {
    unsafe {
        asm!(
            "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [{0}, {{{1}, {2}, {3}}}], [{4}];",
            in(reg64) tmap, in(reg32) c0, in(reg32) c1, in(reg32) c2, in(reg32) src, options(nostack)
        );
    }
}

/// Stores four 8x8 b16 matrices to shared memory (sm_90 `stmatrix`): `v[i]` is this lane's
/// word of matrix `i` in the `mma` fragment layout (lane `l`: row `l / 4`, columns `2 (l % 4)`
/// and `+ 1`, packed low-first), and lane `l` gives the 16-byte-aligned address of row `l % 8`
/// of matrix `l / 8`. All 32 lanes take part.
#[inline(always)]
pub unsafe fn stmatrix_x4(addr: u32, v: [u32; 4]) {
    unsafe {
        asm!(
            "stmatrix.sync.aligned.m8n8.x4.shared.b16 [{0}], {{{1}, {2}, {3}, {4}}};",
            in(reg32) addr, in(reg32) v[0], in(reg32) v[1], in(reg32) v[2], in(reg32) v[3], options(nostack)
        );
    }
}

/// Closes this thread's current bulk group (TMA stores issued since the last commit).
#[inline(always)]
pub fn bulk_commit() {
    // SAFETY: bookkeeping of this thread's bulk groups.
    unsafe { asm!("cp.async.bulk.commit_group;", options(nostack)) };
}

/// Waits until at most `N` of this thread's bulk groups still read their shared memory.
#[inline(always)]
pub fn bulk_wait_read<const N: u32>() {
    // SAFETY: a wait.
    unsafe { asm!("cp.async.bulk.wait_group.read {n};", n = const N, options(nostack)) };
}

/// Waits until all of this thread's bulk groups have completed (their writes are done).
#[inline(always)]
pub fn bulk_wait_all() {
    // SAFETY: a wait.
    unsafe { asm!("cp.async.bulk.wait_group 0;", options(nostack)) };
}

/// Orders this thread's generic-proxy shared-memory writes before later async-proxy (TMA) reads.
#[inline(always)]
pub fn fence_proxy_async_smem() {
    // SAFETY: a fence.
    unsafe { asm!("fence.proxy.async.shared::cta;", options(nostack)) };
}

/// Named barrier `id` over `threads` threads (id 0 is `__syncthreads`).
#[inline(always)]
pub fn named_barrier(id: u32, threads: u32) {
    // SAFETY: all `threads` threads of the group execute it.
    unsafe { asm!("bar.sync {0}, {1};", in(reg32) id, in(reg32) threads, options(nostack)) };
}

/// Arrives on named barrier `id` (counted over `threads` threads) without waiting for it.
#[inline(always)]
pub fn named_barrier_arrive(id: u32, threads: u32) {
    // SAFETY: the matching `bar.sync` side counts these threads in `threads`.
    unsafe { asm!("bar.arrive {0}, {1};", in(reg32) id, in(reg32) threads, options(nostack)) };
}

/// Asks L2 to fetch the 128-byte line holding global address `addr` (a hint: no data, no
/// fault).
#[inline(always)]
pub unsafe fn prefetch_l2(addr: u64) {
    unsafe { asm!("prefetch.global.L2 [{0}];", in(reg64) addr, options(nostack)) };
}
