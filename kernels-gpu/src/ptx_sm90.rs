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
    unsafe {
        asm!("mbarrier.arrive.expect_tx.shared::cta.b64 _, [{0}], {1};", in(reg32) bar, in(reg32) bytes, options(nostack))
    };
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

/// 2D TMA load of the box at (`c0` innermost, `c1`) of the tensor map at generic address `tmap`
/// into shared memory `dst`, completing `bar`'s transaction count.
#[inline(always)]
pub unsafe fn tma_load_2d(dst: u32, tmap: u64, c0: u32, c1: u32, bar: u32) {
    unsafe {
        asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{0}], [{1}, {{{2}, {3}}}], [{4}];",
            in(reg32) dst, in(reg64) tmap, in(reg32) c0, in(reg32) c1, in(reg32) bar, options(nostack)
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

/// Shared-memory matrix descriptor for a 128-byte-swizzled tile starting at `addr` (1024-byte
/// aligned pattern): bits 0-13 address >> 4, 16-29 leading byte offset >> 4, 32-45 stride byte
/// offset >> 4, 62-63 swizzle mode (1 = 128B).
#[inline(always)]
pub fn sw128_desc(addr: u32, lbo: u32, sbo: u32) -> u64 {
    ((addr as u64 & 0x3FFFF) >> 4) | (((lbo as u64) >> 4) << 16) | (((sbo as u64) >> 4) << 32) | (1u64 << 62)
}

/// Producer warpgroup: give registers back (`setmaxnreg.dec`, the whole warpgroup).
#[inline(always)]
pub fn set_max_nreg_producer() {
    // SAFETY: executed by all threads of the warpgroup; the kernel is launched with a register cap.
    unsafe { asm!("setmaxnreg.dec.sync.aligned.u32 40;", options(nostack)) };
}

/// Consumer warpgroups: take the registers the accumulators need (`setmaxnreg.inc`).
#[inline(always)]
pub fn set_max_nreg_consumer() {
    // SAFETY: as above.
    unsafe { asm!("setmaxnreg.inc.sync.aligned.u32 232;", options(nostack)) };
}

/// This thread block's rank in its cluster.
#[inline(always)]
pub fn cluster_ctarank() -> u32 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {0}, %cluster_ctarank;", out(reg32) r, options(pure, nomem, nostack)) };
    r
}

/// Barrier over every thread of every thread block of the cluster (release / acquire).
#[inline(always)]
pub fn cluster_sync() {
    // SAFETY: every thread of the cluster reaches the kernel's cluster barriers.
    unsafe {
        asm!("barrier.cluster.arrive.release.aligned;", options(nostack));
        asm!("barrier.cluster.wait.acquire.aligned;", options(nostack));
    }
}

/// The shared::cluster address of `addr` (a shared::cta address) in cluster block `rank`.
#[inline(always)]
pub fn map_shared_rank(addr: u32, rank: u32) -> u32 {
    let r: u32;
    // SAFETY: address arithmetic only.
    unsafe { asm!("mapa.shared::cluster.u32 {0}, {1}, {2};", out(reg32) r, in(reg32) addr, in(reg32) rank, options(pure, nomem, nostack)) };
    r
}

/// One arrival on an mbarrier anywhere in the cluster (`bar` from [`map_shared_rank`]).
#[inline(always)]
pub unsafe fn mbar_arrive_cluster(bar: u32) {
    unsafe { asm!("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [{0}];", in(reg32) bar, options(nostack)) };
}

/// As [`tma_load_2d`], written to the same shared-memory offset of every cluster block in
/// `mask`, completing the mbarrier at the same offset in each.
#[inline(always)]
pub unsafe fn tma_load_2d_multicast(dst: u32, tmap: u64, c0: u32, c1: u32, bar: u32, mask: u16) {
    unsafe {
        asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [{0}], [{1}, {{{2}, {3}}}], [{4}], {5};",
            in(reg32) dst, in(reg64) tmap, in(reg32) c0, in(reg32) c1, in(reg32) bar, in(reg16) mask, options(nostack)
        );
    }
}
