//! The ring of shared-memory stages: which slot a stage uses and which phase of its barriers
//! (CUTLASS's `PipelineState`), written once for both kernel families.
//!
//! Stage `g` (counted across all the items a thread block runs) lives in slot `g % stages`; its
//! phase parity is `(g / stages) & 1`, flipped on every wrap.

/// Position in a ring of `stages` slots.
#[derive(Clone, Copy)]
pub struct PipelineState {
    /// Slot of the current stage.
    pub slot: u32,
    /// Phase parity of the current stage's barriers.
    pub phase: u32,
    stages: u32,
}

impl PipelineState {
    /// Stage 0.
    #[inline(always)]
    pub const fn new(stages: u32) -> Self {
        PipelineState { slot: 0, phase: 0, stages }
    }

    /// State `ahead` stages later (`ahead < stages`).
    #[inline(always)]
    pub const fn starting_at(stages: u32, ahead: u32) -> Self {
        PipelineState { slot: ahead, phase: 0, stages }
    }

    /// Moves to the next stage.
    #[inline(always)]
    pub fn advance(&mut self) {
        self.slot += 1;
        if self.slot == self.stages {
            self.slot = 0;
            self.phase ^= 1;
        }
    }
}

/// The mbarrier pair of a TMA ring (sm_90a): `full[slot]` completes when the producer's loads
/// of a stage have landed (one arrival carrying the byte count), `empty[slot]` when every
/// consumer warpgroup has released it.
#[cfg(target_feature = "sm_90a")]
#[derive(Clone, Copy)]
pub struct MbarRing {
    /// Shared address of `full[0]`; `empty[0]` follows `full[stages - 1]`.
    pub bars: u32,
    /// Slots.
    pub stages: u32,
}

#[cfg(target_feature = "sm_90a")]
impl MbarRing {
    /// Shared address of `full[slot]`.
    #[inline(always)]
    pub fn full(&self, slot: u32) -> u32 {
        self.bars + 8 * slot
    }
    #[inline(always)]
    fn empty(&self, slot: u32) -> u32 {
        self.bars + 8 * (self.stages + slot)
    }

    /// One thread, before the block's first barrier: `full` counts the producer's single
    /// arrival, `empty` the `releasers` arrivals of the consumer warpgroups (one per warpgroup,
    /// or one per consumer warp).
    #[inline(always)]
    pub unsafe fn init(&self, releasers: u32) {
        use crate::ptx_sm90::{fence_mbar_init, mbar_init};
        let mut s = 0;
        while s < self.stages {
            unsafe {
                mbar_init(self.full(s), 1);
                mbar_init(self.empty(s), releasers);
            }
            s += 1;
        }
        fence_mbar_init();
    }

    /// Shared address of the consumer mask of `slot` (after the barriers).
    #[inline(always)]
    fn mask(&self, slot: u32) -> u32 {
        self.bars + 16 * self.stages + 4 * slot
    }

    /// Producer: waits until the slot of `st` is free (a fresh barrier passes at once, hence
    /// the opposite parity), then announces `bytes` of loads on its full barrier, which the
    /// loads issued next complete. Returns that barrier. For a stage that not every consumer
    /// multiplies, `consumers` is its consumer mask (bit `c`: consumer warpgroup `c` multiplies
    /// it), written in between, once the slot's previous readers have released it: the full
    /// barrier's arrival (a release) publishes it with the stage.
    #[inline(always)]
    pub unsafe fn producer_acquire(&self, st: PipelineState, bytes: u32, consumers: Option<u32>) -> u32 {
        use crate::ptx_sm90::{mbar_arrive_expect_tx, mbar_wait};
        unsafe {
            mbar_wait(self.empty(st.slot), st.phase ^ 1);
            if let Some(mask) = consumers {
                crate::ptx::st_shared_u32(self.mask(st.slot), mask);
            }
            let full = self.full(st.slot);
            mbar_arrive_expect_tx(full, bytes);
            full
        }
    }

    /// Consumer: waits until the stage `st` has landed.
    #[inline(always)]
    pub unsafe fn consumer_wait(&self, st: PipelineState) {
        unsafe { crate::ptx_sm90::mbar_wait(self.full(st.slot), st.phase) }
    }

    /// Consumer, after [`MbarRing::consumer_wait`] on `slot`: the stage's consumer mask (only
    /// for stages the producer announced with one, [`MbarRing::producer_acquire`]).
    #[inline(always)]
    pub unsafe fn consumer_mask(&self, slot: u32) -> u32 {
        unsafe { crate::ptx::ld_shared_u32(self.mask(slot)) }
    }

    /// Consumer (each of the releasing threads [`MbarRing::init`] counts): releases `slot` to
    /// the producer.
    #[inline(always)]
    pub unsafe fn consumer_release(&self, slot: u32) {
        unsafe { crate::ptx_sm90::mbar_arrive(self.empty(slot)) }
    }
}
