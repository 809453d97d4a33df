//! The Hopper kernel (sm_90a): TMA loads into a 128-byte-swizzled shared-memory ring guarded by
//! full/empty mbarriers, one producer warpgroup, consumer warpgroups running `wgmma m64n256k16`
//! with f32 accumulators in registers, and a persistent grid that walks the host plan.
//!
//! Same semantics as `mma_kernel` (see there). Per work item the K axis is the item's blocks
//! concatenated, in stages of 64 (`WG_K`): block widths 64 and 128 only, so a stage never
//! straddles two blocks.
//!
//! Ring bookkeeping (one place, `Ring`): stage `g` (counted across all items of the block) uses
//! slot `g % stages` with phase parity `(g / stages) & 1`. The producer waits on `empty[slot]`
//! with the opposite parity (a fresh barrier passes at once), announces the stage's bytes on
//! `full[slot]` and issues the copies; consumers wait on `full[slot]`, run the stage's wgmma and,
//! once the next stage's wgmma are in flight (`wait_group 1`), release the slot on `empty`.
//!
//! With `WgmmaTile::skew`, consumer 1 runs a fixed number of stages behind consumer 0, so that
//! the two warpgroups reach their epilogues at different times and one keeps the tensor cores
//! busy while the other stores.
//!
//! Epilogue (per tile, `WgmmaTile::c_buffers`): with room beside the ring (bm = 128) C goes
//! through swizzled shared-memory chunks and TMA stores that complete during the next item;
//! otherwise (bm = 64) each lane writes 16-byte runs of C after a quad transpose (16-bit C) or
//! its f32 pairs. Split-K items write f32 partial tiles for the fix-up kernel.

use blocksparse_abi::{C_CHUNK_BYTES, NO_SLOT, SpmmParams, TMA_B_BOX_N, WG_K, WG_M, WG_N, WGMMA_TILES, WgmmaTile, WorkItem};

use crate::dtype::{Output, WgInput};
use crate::epilogue::{CStage, Dest, store_wg_fragment, store_wg_fragment_tma, store_wg_partial};
use crate::ptx::{block_idx, ld_global_nc_u32, smem_base, sync_threads, thread_idx};
use crate::ptx_sm90::{named_barrier, named_barrier_arrive};
use crate::ptx_sm90::{
    fence_mbar_init, mbar_arrive, mbar_arrive_expect_tx, mbar_init, mbar_wait, set_max_nreg_consumer,
    set_max_nreg_producer, sw128_desc, tma_load_2d, wgmma_commit, wgmma_fence, wgmma_wait0, wgmma_wait1,
};
use crate::scheduler::work_item;

struct Cfg<const TILE: usize>;
impl<const TILE: usize> Cfg<TILE> {
    const T: WgmmaTile = WGMMA_TILES[TILE];
}

/// Named barrier that starts consumer 1 `skew` stages after consumer 0 (0 is the block-wide
/// barrier, `1 + c` the epilogue barrier of consumer `c`).
const SKEW_BARRIER: u32 = 3;

/// Bytes of one 128-byte-swizzled row (64 f16/bf16) and of one 8-row swizzle atom.
const ROW_BYTES: u32 = 128;
const ATOM_BYTES: u32 = 8 * ROW_BYTES;
/// Bytes of one `(WG_K, 64)` TMA box of B.
const B_BOX_BYTES: u32 = WG_K * TMA_B_BOX_N * 2;

/// Slot and parity of the current stage.
#[derive(Clone, Copy)]
struct Ring {
    slot: u32,
    phase: u32,
    stages: u32,
}

impl Ring {
    #[inline(always)]
    fn advance(&mut self) {
        self.slot += 1;
        if self.slot == self.stages {
            self.slot = 0;
            self.phase ^= 1;
        }
    }
}

/// Shared-memory layout of one thread block (1024-byte aligned: the swizzle pattern of TMA and
/// of the wgmma descriptors is a function of the address bits).
#[derive(Clone, Copy)]
struct Smem {
    a_ring: u32, // (stages, bm, WG_K)
    b_ring: u32,  // (stages, bn / 64, WG_K, 64)
    c_stage: u32, // (consumers, c_buffers, WG_M, 128 bytes)
    bars: u32,    // full[stages], empty[stages]
    t: WgmmaTile,
}

impl Smem {
    #[inline(always)]
    fn a(&self, slot: u32) -> u32 {
        self.a_ring + slot * self.t.a_stage_bytes()
    }
    #[inline(always)]
    fn b(&self, slot: u32) -> u32 {
        self.b_ring + slot * self.t.b_stage_bytes()
    }
    #[inline(always)]
    fn full(&self, slot: u32) -> u32 {
        self.bars + 8 * slot
    }
    #[inline(always)]
    fn empty(&self, slot: u32) -> u32 {
        self.bars + 8 * (self.t.stages + slot)
    }
}

/// `tmap_a` / `tmap_b` / `tmap_c`: generic addresses of the tensor maps (kernel parameter memory).
#[inline(always)]
pub unsafe fn spmm_wgmma<I: WgInput, O: Output, const TILE: usize>(p: &SpmmParams, tmap_a: u64, tmap_b: u64, tmap_c: u64) {
    let t = Cfg::<TILE>::T;
    let tid = thread_idx();
    let warpgroup = tid / 128;
    let base = (smem_base() + 1023) & !1023;
    let sm = Smem {
        a_ring: base,
        b_ring: base + t.stages * t.a_stage_bytes(),
        c_stage: base + t.c_stage_offset(),
        bars: base + t.barrier_offset(),
        t,
    };
    if tid == 0 {
        let mut s = 0;
        while s < t.stages {
            unsafe {
                mbar_init(sm.full(s), 1);
                mbar_init(sm.empty(s), t.consumers());
            }
            s += 1;
        }
        fence_mbar_init();
    }
    sync_threads();

    if warpgroup == 0 {
        set_max_nreg_producer();
        if tid == 0 {
            unsafe { produce(p, sm, tmap_a, tmap_b) };
        }
    } else {
        set_max_nreg_consumer();
        unsafe { consume::<I, O>(p, sm, tmap_c, warpgroup - 1, tid % 128) };
    }
}

/// This thread block's share of the items: `schedule[b] .. schedule[b + 1]` (host-planned).
#[inline(always)]
unsafe fn my_items(p: &SpmmParams) -> (u32, u32) {
    let s = (p.schedule as *const u32).wrapping_add(block_idx() as usize);
    unsafe { (ld_global_nc_u32(s), ld_global_nc_u32(s.wrapping_add(1))) }
}

/// The producer's stream of K stages over this block's items. Global reads are issued one step
/// ahead of their use, so their latency hides behind the barrier wait and TMA issue of the
/// stage before: each item's descriptor one item ahead, each stage's column index one stage
/// ahead.
struct StageStream {
    items: u64,
    col_idx: *const u32,
    bk_log2: u32,
    /// Next item index to fetch a descriptor for, and the end of this block's range.
    idx: u32,
    end: u32,
    /// The item being walked, its stage count and the next stage.
    item: WorkItem,
    n_k: u32,
    kt: u32,
    /// Descriptor of item `idx` (loaded ahead).
    next_item: WorkItem,
    /// The next stage to hand out: (item, stage, column index of its A block).
    pending: Option<(WorkItem, u32, u32)>,
}

impl StageStream {
    #[inline(always)]
    unsafe fn new(p: &SpmmParams, first: u32, end: u32) -> Self {
        let next_item = if first < end { unsafe { work_item(p.items, first) } } else { WorkItem::default() };
        let mut s = StageStream {
            items: p.items,
            col_idx: p.col_idx as *const u32,
            bk_log2: p.bk_log2,
            idx: first,
            end,
            item: WorkItem::default(),
            n_k: 0,
            kt: 0,
            next_item,
            pending: None,
        };
        s.pending = unsafe { s.fetch() };
        s
    }

    /// The position after the last one handed out, with its column index load issued.
    #[inline(always)]
    unsafe fn fetch(&mut self) -> Option<(WorkItem, u32, u32)> {
        while self.kt >= self.n_k {
            if self.idx >= self.end {
                return None;
            }
            self.item = self.next_item;
            self.n_k = ((self.item.blk_end - self.item.blk_begin) << self.bk_log2) / WG_K;
            self.kt = 0;
            self.idx += 1;
            if self.idx < self.end {
                self.next_item = unsafe { work_item(self.items, self.idx) };
            }
        }
        let kt = self.kt;
        self.kt += 1;
        let blk = self.item.blk_begin + ((kt * WG_K) >> self.bk_log2);
        let col = unsafe { ld_global_nc_u32(self.col_idx.wrapping_add(blk as usize)) };
        Some((self.item, kt, col))
    }

    #[inline(always)]
    unsafe fn next(&mut self) -> Option<(WorkItem, u32, u32)> {
        let current = self.pending.take()?;
        self.pending = unsafe { self.fetch() };
        Some(current)
    }
}

/// Load stage: one thread streams A slices and B boxes for this block's items.
#[inline(always)]
unsafe fn produce(p: &SpmmParams, sm: Smem, tmap_a: u64, tmap_b: u64) {
    let t = sm.t;
    let bk_log2 = p.bk_log2;
    let bk_mask = (1u32 << bk_log2) - 1;
    let mut ring = Ring { slot: 0, phase: 0, stages: t.stages };
    let (first, end) = unsafe { my_items(p) };
    let mut stages = unsafe { StageStream::new(p, first, end) };
    while let Some((item, kt, col)) = unsafe { stages.next() } {
        let k = kt * WG_K;
        let blk = item.blk_begin + (k >> bk_log2);
        let kin = k & bk_mask;
        let b_row = (col << bk_log2) + kin;
        let n0 = item.n_tile * t.bn();
        unsafe {
            mbar_wait(sm.empty(ring.slot), ring.phase ^ 1);
            let full = sm.full(ring.slot);
            mbar_arrive_expect_tx(full, t.stage_bytes());
            tma_load_2d(sm.a(ring.slot), tmap_a, kin, blk * t.bm, full);
            let mut j = 0;
            while j < t.bn() / TMA_B_BOX_N {
                tma_load_2d(sm.b(ring.slot) + j * B_BOX_BYTES, tmap_b, n0 + j * TMA_B_BOX_N, b_row, full);
                j += 1;
            }
        }
        ring.advance();
    }
}

/// Compute + store stages of consumer warpgroup `c` (thread `lt` of 128 in it).
#[inline(always)]
unsafe fn consume<I: WgInput, O: Output>(p: &SpmmParams, sm: Smem, tmap_c: u64, c: u32, lt: u32) {
    let t = sm.t;
    let (wm, wn) = (c / t.wg_n, c % t.wg_n);
    // This warpgroup's operands inside a stage: A rows [64 wm, 64 wm + 64), B columns
    // [256 wn, 256 wn + 256) = boxes 4 wn .. 4 wn + 4.
    let a_off = wm * WG_M * ROW_BYTES;
    let b_off = wn * (WG_N / TMA_B_BOX_N) * B_BOX_BYTES;
    let bk_log2 = p.bk_log2;
    let dest = Dest { c: p.c, ldc: p.ldc, n: p.n, alpha: p.alpha, beta: p.beta };
    // Named barriers 1 + c (0 is the block-wide one).
    let stage = CStage { chunks: sm.c_stage + c * t.c_buffers * C_CHUNK_BYTES, barrier: 1 + c, tmap: tmap_c };
    // Lag of warpgroup 1 behind warpgroup 0 (`WgmmaTile::skew`): warpgroup 1 starts once
    // warpgroup 0 has multiplied `skew` stages (or all of its stages, if fewer). Both walk the
    // same stages, so the lag then persists: each one's epilogue overlaps the other's wgmma.
    // Stages warpgroup 0 still owes before it lets warpgroup 1 start.
    let mut skew_left = if c == 0 { t.skew } else { 0 };
    if t.skew > 0 && c == 1 {
        named_barrier(SKEW_BARRIER, 256);
    }
    let mut ring = Ring { slot: 0, phase: 0, stages: t.stages };
    let (mut idx, end) = unsafe { my_items(p) };
    // The next item's descriptor is loaded while the current one computes.
    let mut next = if idx < end { unsafe { work_item(p.items, idx) } } else { WorkItem::default() };
    while idx < end {
        let item = next;
        idx += 1;
        if idx < end {
            next = unsafe { work_item(p.items, idx) };
        }
        let n_k = ((item.blk_end - item.blk_begin) << bk_log2) / WG_K;
        // (128 threads, 128) f32: the m64n256 accumulator fragment.
        let mut acc = [0.0f32; 128];
        let mut prev = NO_SLOT;
        let mut kt = 0;
        while kt < n_k {
            unsafe { mbar_wait(sm.full(ring.slot), ring.phase) };
            wgmma_fence();
            let a = sm.a(ring.slot) + a_off;
            let b = sm.b(ring.slot) + b_off;
            let mut kk = 0;
            while kk < WG_K / 16 {
                // A: K-major, next k16 slice 32 bytes on. B: N-major, 64-column boxes LBO apart,
                // 8-row K groups SBO apart; next k16 slice = 16 rows on.
                let da = sw128_desc(a + kk * 32, 16, ATOM_BYTES);
                let db = sw128_desc(b + kk * 16 * ROW_BYTES, B_BOX_BYTES, ATOM_BYTES);
                unsafe { I::wgmma(&mut acc, da, db) };
                kk += 1;
            }
            wgmma_commit();
            wgmma_wait1(&mut acc);
            if prev != NO_SLOT && lt == 0 {
                unsafe { mbar_arrive(sm.empty(prev)) };
            }
            prev = ring.slot;
            ring.advance();
            kt += 1;
            if skew_left > 0 {
                skew_left -= 1;
                if skew_left == 0 {
                    named_barrier_arrive(SKEW_BARRIER, 256);
                }
            }
        }
        wgmma_wait0(&mut acc);
        if prev != NO_SLOT && lt == 0 {
            unsafe { mbar_arrive(sm.empty(prev)) };
        }

        // Store: register i of thread (warp w, lane l) holds row 16w + l/4 + 8·((i>>1)&1),
        // column 8·(i>>2) + 2·(l%4) + (i&1) of the (64, 256) sub-tile.
        let (w, l) = (lt / 32, lt % 32);
        let row0 = wm * WG_M + 16 * w + l / 4;
        let col0 = wn * WG_N + 2 * (l % 4);
        let n0 = item.n_tile * t.bn();
        if item.partial_slot == NO_SLOT {
            if t.c_buffers > 0 {
                let (grow0, gcol0) = (item.block_row * t.bm + wm * WG_M, n0 + wn * WG_N);
                unsafe { store_wg_fragment_tma::<O, 128>(&dest, &stage, &acc, grow0, gcol0, lt) };
            } else {
                let (grow0, gcol0) = (item.block_row * t.bm + row0, n0 + wn * WG_N);
                unsafe { store_wg_fragment::<O, 128>(&dest, &acc, grow0, gcol0, l) };
            }
        } else {
            let tile = (p.partials as *mut f32).wrapping_add(item.partial_slot as usize * (t.bm * t.bn()) as usize);
            unsafe { store_wg_partial(tile, t.bn(), &acc, row0, col0) };
        }
    }
    if skew_left > 0 {
        named_barrier_arrive(SKEW_BARRIER, 256);
    }
    if t.c_buffers > 0 && lt == 0 {
        stage.drain();
    }
}
