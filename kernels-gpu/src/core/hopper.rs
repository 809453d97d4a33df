//! The Hopper kernel skeleton (sm_90a), written once for every op: TMA loads into a
//! 128-byte-swizzled shared-memory ring guarded by full/empty mbarriers, one producer
//! warpgroup, consumer warpgroups running `wgmma m64n256k16` with f32 accumulators in
//! registers, and a persistent grid that walks the host plan (ThunderKittens' producer load /
//! consumer compute / finish; CUTLASS's warp-specialized persistent mainloop).
//!
//! An op ([`HopperOp`]) supplies its stage stream (which boxes of which tensor map each K stage
//! loads, [`StageStream`]), the number of stages of an item, and its epilogue. The skeleton owns
//! the shared-memory layout, the barriers, the roles, the operand layouts of the tensor-core
//! loop and the consumer skew.
//!
//! Stage layout (`WgmmaTile`, stages `ks` = 64 deep, or 32 / 16 on SpMM's shallow tiles): A `(tm,
//! ks)` as K-major boxes `(ks, rows)` (rows of `2 · ks` bytes, swizzled over the row) or `tm /
//! 64` MN-major boxes `(64 M, ks K)` (on the shallow tiles `tm / rb` boxes `(rb M, ks K)`, one per
//! merged row, [`HopperOp::a_mn_width`]); B `(ks, tn)` as `tn / 64` boxes, MN-major `(64 N, ks K)`
//! (128-byte swizzle) or K-major `(ks K, 64 N)`. Consumer `c` owns rows `64 · (c / wg_n)` and
//! columns `256 · (c % wg_n)` of the tile, i.e. A rows `64 · (c / wg_n)` (`64 · 2 · ks` bytes
//! on) and B boxes `4 · (c % wg_n) ..` in either layout.
//!
//! Ring bookkeeping is [`MbarRing`] + [`PipelineState`]: the producer acquires a slot, announces
//! the stage's bytes and issues the copies; consumers wait on the stage, run its wgmma and, once
//! the next stage's wgmma are in flight (`wait_group 1`), release the slot. Where the op skips
//! ([`StageStream::skips`]), the producer also writes each stage's consumer mask beside the
//! barriers, and a consumer releases the stages without its bit unread. On a zero-fill tile
//! (`WgmmaTile::zero_fill`) that word holds the stage's loaded B boxes instead: the producer
//! loads no absent box, and the consumer multiplies a zero box in its place (one `m64n64` per
//! box, its operands chosen by selects, so the wgmma sequence stays branch-free).
//!
//! With `WgmmaTile::skew`, consumer 1 runs a fixed number of stages behind consumer 0, so that
//! the two warpgroups reach their epilogues at different times and one keeps the tensor cores
//! busy while the other stores.

use blocksparse_abi::{BOX, C_CHUNK_BYTES, DenseOut, WG_M, WG_N, WGMMA_TILES, WgmmaTile, WorkItem, WorkParams, flags};

use crate::core::epilogue::{BlockDest, CStage, ChunkTo, DenseDest, partial_tile, store_partial_strip, store_strip, store_strip_one_body};
use crate::core::ring::{MbarRing, PipelineState};
use crate::core::work::ItemCursor;
use crate::dtype::{Output, WgInput};
use crate::ptx::{ldmatrix_x4, ldmatrix_x4_trans, smem_base, st_shared_v2_u32, sync_threads, thread_idx};
use crate::ptx_sm90::{
    fence_proxy_async_smem, named_barrier, named_barrier_arrive, set_max_nreg_consumer, set_max_nreg_producer, swizzled_desc, tma_load_3d,
    wgmma_commit, wgmma_fence, wgmma_wait0, wgmma_wait1,
};

/// Bit of a zero-fill stage's mask (beside its B boxes' bits): every column group of the stage
/// meets the same A block, which the producer loaded once, into group 0's A slice.
pub const MASK_A_SHARED: u32 = 1 << 31;

/// Named barrier that starts consumer 1 `skew` stages after consumer 0 (0 is the block-wide
/// barrier, `1 + c` the epilogue barrier of consumer `c`).
const SKEW_BARRIER: u32 = 3;

/// The wgmma descriptor of k16 step `kk` of a K-major operand at `base`: rows of `ks` elements
/// (`k_row_bytes`: 128, 64 or 32), swizzled over the row, 8-row atoms `8 · k_row_bytes` apart; the
/// step is 32 bytes along the row.
#[inline(always)]
fn k_major_desc(t: WgmmaTile, base: u32, kk: u32) -> u64 {
    let row = t.k_row_bytes();
    swizzled_desc(base + kk * 32, 16, 8 * row, row)
}

/// The wgmma descriptor of k16 step `kk` of an MN-major operand at `base`, in `(ks, width)`
/// boxes: `ks` rows of `width` elements along M or N (64 for B and the 64-deep tiles' A; a
/// shallow tile's A, one box per merged row, `rb` = 64, 32 or 16), each row swizzled over its
/// `2 · width` bytes, boxes `width · ks · 2` bytes apart (the leading offset), 8-row atoms (the
/// stride offset); the step is 16 rows. (CUTLASS's MN-major canonical layouts: `((T, w / T, m),
/// (8, k)) : ((1, T, LBO), (w, SBO))`, `T` = 8 elements.)
#[inline(always)]
fn mn_major_desc(t: WgmmaTile, base: u32, kk: u32, width: u32) -> u64 {
    let row = 2 * width;
    swizzled_desc(base + kk * 16 * row, width * t.ks * 2, 8 * row, row)
}

/// Generic addresses of the kernel's tensor maps (in its parameter memory).
#[derive(Clone, Copy)]
pub struct Maps {
    /// The A operand's map.
    pub a: u64,
    /// The B operand's map.
    pub b: u64,
    /// A row-major C's map (tiles that store through TMA).
    pub c: u64,
}

/// Shared addresses of one ring slot's A and B tiles.
#[derive(Clone, Copy)]
pub struct Slot {
    /// `a_groups` A slices of `(tm, ks)`, `a_group_bytes` apart.
    pub a: u32,
    /// `(ks, tn)` B, in `tn / 64` boxes of `box_bytes`.
    pub b: u32,
}

/// The producer side of an op: the K stages of this thread block's items, in order.
///
/// With `P = producers(t) > 1`, one thread in each of the first `P` warps of the producer
/// warpgroup walks its own stream: producer `w` issues the block's stages `w, w + P, w + 2 · P,
/// ...` (counted across items), into the slots those stages own. Each stage still has one
/// producer arrival on its full barrier; the split only shares out the issue work, which a
/// single thread cannot keep ahead of the tensor cores when stages are short or take many
/// boxes (perf notes v16).
pub trait StageStream: Sized {
    /// The op's launch parameters.
    type Params;
    /// One stage's coordinates.
    type Stage: Copy;
    /// Producer threads the op would share tile `t`'s stages between.
    #[inline(always)]
    fn wanted_producers(_t: WgmmaTile) -> u32 {
        1
    }
    /// Producer threads that share tile `t`'s stages: the op's wish, at most one per warp of
    /// the producer warpgroup and at most `t.stages` (which the ring's phase argument in
    /// [`run`] needs).
    #[inline(always)]
    fn producers(t: WgmmaTile) -> u32 {
        Self::wanted_producers(t).clamp(1, 4).min(t.stages)
    }
    /// Whether every lane of a producer's warp runs its stream on tile `t`: `new` and `next`
    /// on all 32 lanes (each lane may load its own word of a stage), `issue` too, where lane 0
    /// alone issues the copies; lane 0 alone acquires the slot.
    #[inline(always)]
    fn warp_wide(_t: WgmmaTile) -> bool {
        false
    }
    /// Producer `producer`'s stream over this block's items, in stages of `t.ks`: every
    /// `producers(t)`-th stage from stage `producer` on.
    unsafe fn new(p: &Self::Params, items: ItemCursor, t: WgmmaTile, producer: u32) -> Self;
    /// The next stage (its global reads, if any, already in flight), or `None` at the end.
    unsafe fn next(&mut self, p: &Self::Params) -> Option<Self::Stage>;
    /// Whether some stages of this launch leave consumer warpgroups out (a merged SpMM tile
    /// whose rows of one warpgroup all lack the stage's block): then the producer announces
    /// each stage's [`StageStream::consumers`] with it, and a consumer passes over the stages
    /// without its bit instead of multiplying zeros. Uniform over the launch (`t`: its tile).
    #[inline(always)]
    fn skips(_p: &Self::Params, _t: WgmmaTile) -> bool {
        false
    }
    /// The consumer warpgroups that multiply stage `s` (bit `c`: consumer `c`) and the bytes
    /// its loads deliver (every lane of a warp-wide producer calls it). Only called where
    /// [`StageStream::skips`].
    #[inline(always)]
    unsafe fn consumers(&self, _p: &Self::Params, _s: &Self::Stage, t: WgmmaTile) -> (u32, u32) {
        (u32::MAX, t.stage_bytes())
    }
    /// Issues the loads of stage `s` (the one [`StageStream::next`] returned last) into
    /// `slot`, completing on the mbarrier `full`; `consumers` is what
    /// [`StageStream::consumers`] returned for it (every consumer where the op does not skip).
    #[allow(clippy::too_many_arguments)]
    unsafe fn issue(&self, p: &Self::Params, s: &Self::Stage, maps: &Maps, t: WgmmaTile, slot: Slot, full: u32, consumers: u32);
}

/// What an epilogue knows about the consumer warpgroup that calls it.
#[derive(Clone, Copy)]
pub struct Consumer {
    /// Rows `64 · wm ..` of the tile.
    pub wm: u32,
    /// Columns `256 · wn ..` of the tile.
    pub wn: u32,
    /// Thread in the warpgroup (0..128).
    pub lt: u32,
    /// The tile configuration.
    pub t: WgmmaTile,
    /// This warpgroup's C staging chunks (tiles with `c_buffers > 0`).
    pub stage: CStage,
}

impl Consumer {
    /// The `(64, 8 · N / 4)` wgmma fragment `acc` as `(4,)` f32 groups, `j` = n8 group.
    #[inline(always)]
    pub fn frag<const N: usize>(acc: &[f32; N]) -> impl Fn(usize) -> [f32; 4] + '_ {
        |j: usize| [acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]]
    }

    /// Writes the warpgroup's accumulators into dense C `out` at output tile `(tile_row,
    /// n_tile)` of matrix `batch`: through the TMA-store staging chunks where the tile has them
    /// and C is row-major, else straight from the registers.
    #[inline(always)]
    pub unsafe fn store_dense<O: Output>(&self, out: &DenseOut, item: &WorkItem, acc: &[f32; 128]) {
        unsafe { self.store_dense_at::<O, 128, 32>(out, item, acc, self.wm * WG_M, self.wn * WG_N) };
    }

    /// [`Consumer::store_dense`] of a `(64, 8 · J)` fragment (`N = 4 · J` accumulators) whose
    /// element (0, 0) is the tile's `(row, col)`.
    #[inline(always)]
    pub unsafe fn store_dense_at<O: Output, const N: usize, const J: usize>(
        &self,
        out: &DenseOut,
        item: &WorkItem,
        acc: &[f32; N],
        row: u32,
        col: u32,
    ) {
        let t = self.t;
        let (row0, col0) = (item.tile_row * t.tm + row, item.n_tile * t.tn() + col);
        // Each warp's 16 rows lie in one stream row (of at least 16 rows): a row-mapped C is
        // addressed per warp.
        let wr = 16 * (self.lt / 32);
        let d = unsafe { DenseDest::mapped::<O>(out, item.batch, row0 + wr, wr, col0) };
        if t.c_buffers > 0 && out.col_major == 0 {
            unsafe { self.stage.store::<O, _, N>(&d, out, acc, ChunkTo::Dense { col0, row0 }, item.batch, self.lt) };
        } else {
            unsafe { store_strip::<O, _, J>(&d, wr, 0, self.lt % 32, Self::frag(acc)) };
        }
    }

    /// Writes the warpgroup's accumulators into block-sparse C through `d` (whose rows start at
    /// this warpgroup's first row).
    #[inline(always)]
    pub unsafe fn store_blocks<O: Output>(&self, d: &BlockDest, acc: &[f32; 128]) {
        unsafe { store_strip_one_body::<O, _, 32>(d, 16 * (self.lt / 32), self.wn * WG_N, self.lt % 32, Self::frag(acc)) };
    }

    /// Writes the warpgroup's accumulators, unscaled, into the item's f32 partial tile.
    #[inline(always)]
    pub unsafe fn store_partial(&self, work: &WorkParams, slot: u32, acc: &[f32; 128]) {
        let t = self.t;
        let tile = partial_tile(work, slot, t.tm * t.tn());
        unsafe {
            store_partial_strip::<32>(tile, t.tn(), self.wm * WG_M + 16 * (self.lt / 32), self.wn * WG_N, self.lt % 32, Self::frag(acc))
        };
    }
}

/// An op of the Hopper kernel family.
pub trait HopperOp {
    /// The op's launch parameters.
    type Params;
    /// Its producer side.
    type Stream: StageStream<Params = Self::Params>;
    /// Where the work is.
    fn work(p: &Self::Params) -> &WorkParams;
    /// The [`flags`] bits.
    fn flags(p: &Self::Params) -> u32;
    /// K stages (of `t.ks`) of an item.
    fn k_stages(p: &Self::Params, item: &WorkItem, t: WgmmaTile) -> u32;
    /// Elements along M of one MN-major A box on tile `t` (the width of its rows): [`BOX`] but
    /// where the op loads narrower boxes (SpMM's shallow tiles: one `(ks, rb)` box per merged
    /// row of a stream of Aᵀ).
    #[inline(always)]
    fn a_mn_width(_p: &Self::Params, _t: WgmmaTile) -> u32 {
        BOX
    }
    /// Writes a consumer warpgroup's `(64, 256)` accumulators (all 128 threads call it).
    unsafe fn store<O: Output>(p: &Self::Params, item: &WorkItem, acc: &[f32; 128], c: &Consumer);
}

/// Loads the A slice of a stage: the box at (`k`, `m`) of a K-major map (one `(ks, tm)` box),
/// or the `tm / 64` boxes at (`m + 64 w`, `k`) of an MN-major one; `batch` is the third
/// coordinate.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn load_a(maps: &Maps, t: WgmmaTile, a_mn: bool, slot: Slot, k: u32, m: u32, batch: u32, full: u32) {
    unsafe {
        if a_mn {
            let mut w = 0;
            while w < t.tm / BOX {
                tma_load_3d(slot.a + w * t.box_bytes(), maps.a, m + w * BOX, k, batch, full);
                w += 1;
            }
        } else {
            tma_load_3d(slot.a, maps.a, k, m, batch, full);
        }
    }
}

/// Loads B box `j` of a stage: columns `n .. n + 64` and K rows `k .. k + ks` of op(B), from
/// an MN-major map (coordinates (`n`, `k`)) or a K-major one ((`k`, `n`)).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn load_b_box(maps: &Maps, t: WgmmaTile, b_k: bool, slot: Slot, j: u32, n: u32, k: u32, batch: u32, full: u32) {
    let dst = slot.b + j * t.box_bytes();
    unsafe {
        if b_k {
            tma_load_3d(dst, maps.b, k, n, batch, full);
        } else {
            tma_load_3d(dst, maps.b, n, k, batch, full);
        }
    }
}

/// Shared-memory layout of one thread block (1024-byte aligned: the swizzle pattern of TMA and
/// of the wgmma descriptors is a function of the address bits).
#[derive(Clone, Copy)]
struct Smem {
    a_ring: u32,  // (stages, a_groups, tm, ks)
    b_ring: u32,  // (stages, tn / 64, ks × 64)
    zero: u32,    // (ks, 64) zeros (`zero_fill`)
    c_stage: u32, // (consumers, c_buffers, WG_M, 128 bytes)
    ring: MbarRing,
    t: WgmmaTile,
}

impl Smem {
    #[inline(always)]
    fn slot(&self, slot: u32) -> Slot {
        Slot { a: self.a_ring + slot * self.t.a_stage_bytes(), b: self.b_ring + slot * self.t.b_stage_bytes() }
    }
}

/// The kernel body for tile `WGMMA_TILES[TILE]`.
#[inline(always)]
pub unsafe fn run<Op: HopperOp, I: WgInput, O: Output, const TILE: usize>(p: &Op::Params, maps: Maps) {
    let t = WGMMA_TILES[TILE];
    // A producer about to issue stage g waits for the release of stage g - stages, the slot's
    // previous use. Before issuing its own previous stage, g - P (P producers), it waited for
    // the release of g - P - stages, and consumers release in order. So with at least P slots
    // (`StageStream::producers` clamps P to the stages) everything up to g - 2 · stages is
    // released: the slot's empty barrier is at most one phase behind, never two (whose parity
    // would look the same).
    let producers = <Op::Stream as StageStream>::producers(t);
    let tid = thread_idx();
    let warpgroup = tid / 128;
    let base = (smem_base() + 1023) & !1023;
    let sm = Smem {
        a_ring: base,
        b_ring: base + t.stages * t.a_stage_bytes(),
        zero: base + t.zero_box_offset(),
        c_stage: base + t.c_stage_offset(),
        ring: MbarRing { bars: base + t.barrier_offset(), stages: t.stages },
        t,
    };
    if tid == 0 {
        unsafe { sm.ring.init(t.consumers() * releasers(<Op::Stream as StageStream>::skips(p, t))) };
    }
    if t.zero_fill {
        // The zero box, written by every thread and made visible to the async proxy (wgmma's
        // operand reads) before the barrier.
        let mut at = 8 * tid;
        while at < t.zero_box_bytes() {
            // SAFETY: inside the zero box, which nothing else uses.
            unsafe { st_shared_v2_u32(sm.zero + at, 0, 0) };
            at += 8 * t.threads();
        }
        fence_proxy_async_smem();
    }
    sync_threads();

    if warpgroup == 0 {
        set_max_nreg_producer();
        // One thread (or the whole warp) in each of the first `producers` warps.
        let warp = tid / 32;
        if (tid.is_multiple_of(32) || <Op::Stream as StageStream>::warp_wide(t)) && warp < producers {
            // Two copies of the loop: without skipping, the producer's stages carry none of its
            // bookkeeping (the shallow tiles' producers are near their issue limit, perf notes
            // v25).
            if <Op::Stream as StageStream>::skips(p, t) {
                unsafe { produce::<Op, true>(p, sm, maps, warp, producers) };
            } else {
                unsafe { produce::<Op, false>(p, sm, maps, warp, producers) };
            }
        }
    } else {
        set_max_nreg_consumer();
        unsafe { consume::<Op, I, O>(p, sm, maps, warpgroup - 1, tid % 128) };
    }
}

/// Load role: producer thread `producer` streams its share of the op's stages into the ring
/// (every `producers`-th stage from stage `producer`; slot `g % stages` holds stage `g`),
/// announcing each stage's consumers where the stream skips (`SKIPS`).
#[inline(always)]
unsafe fn produce<Op: HopperOp, const SKIPS: bool>(p: &Op::Params, sm: Smem, maps: Maps, producer: u32, producers: u32) {
    let mut st = PipelineState::starting_at(sm.t.stages, producer);
    let mut stream = unsafe { Op::Stream::new(p, ItemCursor::mine(Op::work(p)), sm.t, producer) };
    let lane0 = thread_idx().is_multiple_of(32);
    while let Some(stage) = unsafe { stream.next(p) } {
        unsafe {
            let (consumers, bytes) = if SKIPS { stream.consumers(p, &stage, sm.t) } else { (u32::MAX, sm.t.stage_bytes()) };
            let full = if lane0 { sm.ring.producer_acquire(st, bytes, SKIPS.then_some(consumers)) } else { sm.ring.full(st.slot) };
            stream.issue(p, &stage, &maps, sm.t, sm.slot(st.slot), full, consumers);
        }
        let mut i = 0;
        while i < producers {
            st.advance();
            i += 1;
        }
    }
}

/// Compute + store role of consumer warpgroup `c` (thread `lt` of 128 in it).
#[inline(always)]
unsafe fn consume<Op: HopperOp, I: WgInput, O: Output>(p: &Op::Params, sm: Smem, maps: Maps, c: u32, lt: u32) {
    let t = sm.t;
    let (wm, wn) = (c / t.wg_n, c % t.wg_n);
    let consumer = Consumer {
        wm,
        wn,
        lt,
        t,
        // Named barriers 1 + c (0 is the block-wide one).
        stage: CStage { chunks: sm.c_stage + c * t.c_buffers * C_CHUNK_BYTES, barrier: 1 + c, tmap: maps.c },
    };
    // This warpgroup's operands inside a stage: A box wm, B boxes 4 wn .. 4 wn + 4.
    // (Rows of a K-major A are k_row_bytes long; an MN-major A's box wm, of (ks, 64), is as
    // many bytes, as are a shallow tile's 64 / rb boxes of (ks, rb).)
    // (A column-split tile, `n_split`: all of A's rows, B boxes `2 c ..`. A zero-fill tile,
    // the only one with several A slices, addresses its slices and boxes per box from the
    // slot in its main loop.)
    let a_off = if t.n_split { 0 } else { wm * WG_M * t.k_row_bytes() };
    let b_off = if t.n_split { c * (128 / BOX) * t.box_bytes() } else { wn * (WG_N / BOX) * t.box_bytes() };
    // Lag of warpgroup 1 behind warpgroup 0 (`WgmmaTile::skew`): warpgroup 1 starts once
    // warpgroup 0 has multiplied `skew` stages (or all of its stages, if fewer). Both walk the
    // same stages, so the lag then persists: each one's epilogue overlaps the other's wgmma.
    // Stages warpgroup 0 still owes before it lets warpgroup 1 start.
    let mut skew_left = if c == 0 { t.skew } else { 0 };
    if t.skew > 0 && c == 1 {
        named_barrier(SKEW_BARRIER, 256);
    }
    let mut st = PipelineState::new(t.stages);
    let skips = <Op::Stream as StageStream>::skips(p, t);
    let a_width = Op::a_mn_width(p, t);
    let layout = Op::flags(p) & (flags::A_MN_MAJOR | flags::B_K_MAJOR);
    let mut items = unsafe { ItemCursor::mine(Op::work(p)) };
    while let Some(item) = unsafe { items.next() } {
        let n_k = Op::k_stages(p, &item, t);
        // (128 threads, 128) f32: the m64n256 accumulator fragment.
        let mut acc = [0.0f32; 128];
        let ring = Mainloop { sm, a_off, b_off, n_k, lt, c, wm, wn, skips, a_width };
        unsafe {
            match layout {
                0 => ring.run::<I, false, false>(&mut acc, &mut st, &mut skew_left),
                flags::A_MN_MAJOR => ring.run::<I, true, false>(&mut acc, &mut st, &mut skew_left),
                flags::B_K_MAJOR => ring.run::<I, false, true>(&mut acc, &mut st, &mut skew_left),
                _ => ring.run::<I, true, true>(&mut acc, &mut st, &mut skew_left),
            }
            Op::store::<O>(p, &item, &acc, &consumer);
        }
    }
    if skew_left > 0 {
        named_barrier_arrive(SKEW_BARRIER, 256);
    }
    if t.c_buffers > 0 && lt == 0 {
        consumer.stage.drain();
    }
}

/// One item's pass of a consumer warpgroup over the ring.
#[derive(Clone, Copy)]
struct Mainloop {
    sm: Smem,
    a_off: u32,
    b_off: u32,
    n_k: u32,
    lt: u32,
    /// This consumer warpgroup (its bit in a stage's consumer mask), at rows `64 · wm ..` and
    /// columns `256 · wn ..` of the tile.
    c: u32,
    wm: u32,
    wn: u32,
    /// Whether the stream skips ([`StageStream::skips`]).
    skips: bool,
    /// An MN-major A's box width ([`HopperOp::a_mn_width`]).
    a_width: u32,
}

/// Warps of a warpgroup.
const WARPGROUP_WARPS: u32 = 4;

/// Threads of a consumer warpgroup that release each stage: one, or where the stream skips,
/// one per warp. A consumer that skips a stage releases it as soon as it has read the
/// stage's mask; released by one thread, the slot could be refilled (and its mask rewritten)
/// before the warpgroup's other warps had read the mask, and they would take the other path
/// (perf notes v25: a hang, the warps of one warpgroup apart around its wgmma).
#[inline(always)]
const fn releasers(skips: bool) -> u32 {
    if skips { WARPGROUP_WARPS } else { 1 }
}

impl Mainloop {
    /// Whether this thread is one of [`releasers`].
    #[inline(always)]
    fn releases(&self) -> bool {
        if self.skips { self.lt.is_multiple_of(32) } else { self.lt == 0 }
    }

    /// One stage of consumer 0's lead done: at the last one, consumer 1 may start.
    #[inline(always)]
    fn count_skew(&self, skew_left: &mut u32) {
        if *skew_left > 0 {
            *skew_left -= 1;
            if *skew_left == 0 {
                named_barrier_arrive(SKEW_BARRIER, 256);
            }
        }
    }

    /// `n_k` stages into `acc`, operands K-major or MN-major as `A_MN` / `B_K` say; where the
    /// stream skips, the stages without this consumer's bit are released unread.
    #[inline(always)]
    unsafe fn run<I: WgInput, const A_MN: bool, const B_K: bool>(&self, acc: &mut [f32; 128], st: &mut PipelineState, skew_left: &mut u32) {
        let ring = self.sm.ring;
        let mut prev: Option<u32> = None;
        let mut kt = 0;
        let t = self.sm.t;
        // A through registers, warp w's rows 16 w .. 16 w + 16 of the consumer's 64 as the
        // mma.m16n8k16 A fragment (four 8 × 8 matrices: rows 0-7 / 8-15 at K 0, then at K 8):
        // this thread's `ldmatrix.x4` row.
        // - K-major, the consumer's `(64, 16)` slice of 32-byte rows along K: lanes 0-15 rows
        //   0-15 at K 0, lanes 16-31 at K 8.
        // - MN-major (Aᵀ, `ldmatrix.trans`), `(16, w)` boxes of K rows `2 · w` bytes long
        //   (`w` = a_width, one box per merged row), swizzled over the row but where packed
        //   (`WgmmaTile::a_packed`, w = 16: the box is 512 contiguous bytes of the block, loaded
        //   unswizzled in whole lines, as the K-major 16-wide blocks): the warp's rows are box `16 w / w` at M `16 w % w`;
        //   lanes 0-7 / 8-15 / 16-23 / 24-31 give K rows 0-7 / 0-7 / 8-15 / 8-15 at M + 0 / 8 /
        //   0 / 8. The slice starts 1024-byte aligned, so TMA's swizzle (16-byte chunk ^= the
        //   address bits from 7 on, as many as the span has chunks) is that of the offset.
        let (warp, lane) = (self.lt / 32, self.lt % 32);
        let a_row = if A_MN {
            let (w, m) = (self.a_width, 16 * warp);
            let k_row = lane % 8 + 8 * (lane / 16);
            let off = (m / w) * w * t.ks * 2 + k_row * 2 * w + (m % w + 8 * ((lane / 8) % 2)) * 2;
            // (For Aᵀ the box width is bk.)
            let chunks = if t.a_packed(w) { 0 } else { w / 8 - 1 };
            off ^ (((off >> 7) & chunks) << 4)
        } else {
            (16 * warp + lane % 16) * t.k_row_bytes() + (lane / 16) * 16
        };
        while kt < self.n_k {
            unsafe { ring.consumer_wait(*st) };
            // Bit `c` of the stage's mask: this consumer multiplies it (on a zero-fill tile, bit
            // `j`: B box `j` is loaded, below).
            if self.skips && !t.zero_fill && unsafe { ring.consumer_mask(st.slot) } & (1 << self.c) == 0 {
                // Not this consumer's stage (its rows hold only zeros there): the previous
                // stage's wgmma are finished first, so that both slots go back to the
                // producer now rather than after this consumer's next stage.
                if let Some(s) = prev.take() {
                    wgmma_wait0(acc);
                    if self.releases() {
                        unsafe { ring.consumer_release(s) };
                    }
                }
                if self.releases() {
                    unsafe { ring.consumer_release(st.slot) };
                }
                st.advance();
                kt += 1;
                self.count_skew(skew_left);
                continue;
            }
            let slot = self.sm.slot(st.slot);
            let (a, b) = (slot.a + self.a_off, slot.b + self.b_off);
            if t.a_regs {
                // Loaded before the fence, which orders the registers' writes before the
                // wgmma that reads them.
                // SAFETY: inside this stage's A slice, which the full barrier made visible.
                let af = unsafe { if A_MN { ldmatrix_x4_trans(a + a_row) } else { ldmatrix_x4(a + a_row) } };
                wgmma_fence();
                let db = if B_K { k_major_desc(t, b, 0) } else { mn_major_desc(t, b, 0, BOX) };
                unsafe { I::wgmma_rs::<B_K>(acc, af, db) };
            } else if t.zero_fill {
                wgmma_fence();
                // One m64n64 per B box and k16, on the box's quarter of the accumulator
                // fragment: this consumer's boxes 4 wn + j (j < 4), box j of column group
                // (4 wn + j) / per_group, with that group's A slice. An absent box, and the A
                // slice of a group without any box, are read from the zero box: the selects
                // keep the wgmma sequence branch-free. SpGEMM only: K-major A, MN-major B.
                if A_MN || B_K {
                    crate::ptx::trap();
                }
                let mask = if self.skips { unsafe { ring.consumer_mask(st.slot) } } else { u32::MAX };
                let per_group = t.tn() / t.a_groups / BOX;
                let group_bits = (1u32 << per_group) - 1;
                let a_row = self.wm * WG_M * t.k_row_bytes();
                let mut a_box = [0u32; 4];
                let mut b_box = [0u32; 4];
                let mut j = 0;
                while j < 4 {
                    let jt = 4 * self.wn + j;
                    let g = jt / per_group;
                    let a_here = mask & (group_bits << (g * per_group)) != 0;
                    // A stage whose groups meet the same A block holds it once, in group 0's
                    // slice.
                    let slice = if mask & MASK_A_SHARED != 0 { 0 } else { g };
                    a_box[j as usize] = if a_here { slot.a + slice * t.a_group_bytes() + a_row } else { self.sm.zero };
                    b_box[j as usize] = if (mask >> jt) & 1 != 0 { slot.b + jt * t.box_bytes() } else { self.sm.zero };
                    j += 1;
                }
                // SAFETY: the four quarters of `acc`, 32 f32 each at offsets 0, 32, 64 and 96.
                let p = acc.as_mut_ptr();
                let (q0, q1, q2, q3) = unsafe {
                    (
                        &mut *(p as *mut [f32; 32]),
                        &mut *(p.add(32) as *mut [f32; 32]),
                        &mut *(p.add(64) as *mut [f32; 32]),
                        &mut *(p.add(96) as *mut [f32; 32]),
                    )
                };
                let mut kk = 0;
                while kk < t.ks / 16 {
                    let d = |j: usize| (k_major_desc(t, a_box[j], kk), mn_major_desc(t, b_box[j], kk, BOX));
                    let (d0, d1, d2, d3) = (d(0), d(1), d(2), d(3));
                    unsafe {
                        I::wgmma_n64::<false, false>(q0, d0.0, d0.1);
                        I::wgmma_n64::<false, false>(q1, d1.0, d1.1);
                        I::wgmma_n64::<false, false>(q2, d2.0, d2.1);
                        I::wgmma_n64::<false, false>(q3, d3.0, d3.1);
                    }
                    kk += 1;
                }
            } else if t.a_groups == 1 && !t.n_split {
                wgmma_fence();
                let mut kk = 0;
                while kk < t.ks / 16 {
                    // K-major: rows of ks elements along K, next k16 slice 32 bytes on.
                    // MN-major: rows along M (N) in boxes of a_width (B: 64) elements LBO apart,
                    // 8-row K groups SBO apart; next k16 slice = 16 rows on.
                    let da = if A_MN { mn_major_desc(t, a, kk, self.a_width) } else { k_major_desc(t, a, kk) };
                    let db = if B_K { k_major_desc(t, b, kk) } else { mn_major_desc(t, b, kk, BOX) };
                    unsafe { I::wgmma::<A_MN, B_K>(acc, da, db) };
                    kk += 1;
                }
            } else {
                wgmma_fence();
                // The column-split tile (`n_split`): this consumer's 128 columns over the tile's
                // 128 rows, two m64n128 per k16 on the halves of the accumulator fragment (rows
                // 0-63 and 64-127 of the one A slice, sharing the B descriptor; no branch
                // between them: ptxas serializes wgmma separated by one). SpGEMM only: K-major
                // A, MN-major B.
                if A_MN || B_K {
                    crate::ptx::trap();
                }
                // SAFETY: the two halves of `acc`, 64 f32 each at offsets 0 and 64, as arrays.
                let (lo, hi) = unsafe { (&mut *(acc.as_mut_ptr() as *mut [f32; 64]), &mut *(acc.as_mut_ptr().add(64) as *mut [f32; 64])) };
                let mut kk = 0;
                while kk < t.ks / 16 {
                    let da0 = k_major_desc(t, a, kk);
                    let da1 = k_major_desc(t, a + WG_M * t.k_row_bytes(), kk);
                    let db = mn_major_desc(t, b, kk, BOX);
                    unsafe {
                        I::wgmma_n128::<false, false>(lo, da0, db);
                        I::wgmma_n128::<false, false>(hi, da1, db);
                    }
                    kk += 1;
                }
            }
            wgmma_commit();
            if t.a_regs {
                // The next stage rewrites the A fragment, which this stage's wgmma reads until
                // it is done (the other consumer warpgroup keeps the tensor cores busy
                // meanwhile).
                wgmma_wait0(acc);
            } else {
                wgmma_wait1(acc);
            }
            if let Some(s) = prev
                && self.releases()
            {
                unsafe { ring.consumer_release(s) };
            }
            prev = Some(st.slot);
            st.advance();
            kt += 1;
            self.count_skew(skew_left);
        }
        wgmma_wait0(acc);
        if let Some(s) = prev
            && self.releases()
        {
            unsafe { ring.consumer_release(s) };
        }
    }
}
