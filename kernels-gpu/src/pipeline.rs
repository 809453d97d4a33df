//! The multistage `cp.async` ring: the one place that knows which slot is being filled, which
//! is being read, and when a slot may be reused.
//!
//! Stage `t` of the K loop lives in slot `t % stages`. Before computing stage `t`, every thread
//! waits for its own copies of stage `t` (at most `stages - 2` newer groups in flight) and the
//! block barrier makes all threads' copies visible. The same barrier proves that every warp has
//! finished computing stage `t - 1`, so its slot can receive stage `t + stages - 1`.

use crate::ptx::{cp_async_commit, cp_async_wait, sync_threads};

/// Runs the load → compute ring over `n_k` stages.
///
/// `load(stage, slot)` issues the cp.async copies of K stage `stage` into ring slot `slot`;
/// `compute(slot)` consumes a slot. Every thread of the block must call this with the same
/// `n_k` (it contains block barriers).
#[inline(always)]
pub fn run(stages: u32, n_k: u32, mut load: impl FnMut(u32, u32), mut compute: impl FnMut(u32)) {
    // Prologue: fill stages - 1 slots. A group is committed even when empty so that the
    // wait count below always refers to the right stage.
    let mut s = 0;
    while s < stages - 1 {
        if s < n_k {
            load(s, s);
        }
        cp_async_commit();
        s += 1;
    }
    let mut read = 0;
    let mut write = stages - 1;
    let mut t = 0;
    while t < n_k {
        cp_async_wait(stages - 2);
        sync_threads();
        let next = t + stages - 1;
        if next < n_k {
            load(next, write);
        }
        cp_async_commit();
        compute(read);
        read = if read + 1 == stages { 0 } else { read + 1 };
        write = if write + 1 == stages { 0 } else { write + 1 };
        t += 1;
    }
    // Nothing real is in flight any more (the trailing groups are empty); drain anyway so the
    // block never exits with copies outstanding.
    cp_async_wait(0);
}
