//! The portable kernel skeleton (sm_80+): one thread block per work item, a multistage
//! `cp.async` ring feeding `ldmatrix` + `mma.sync` m16n8k16 with f32 accumulators in registers.
//! An op supplies where each 16-byte chunk of a stage comes from (a [`Chunk`]:
//! [`PortableOp::a_chunk`], [`PortableOp::b_chunk`], with what a stage's chunks share computed
//! once per stage by [`PortableOp::a_stage`] and [`PortableOp::b_stage`]) and where the tile
//! goes ([`PortableOp::store`]); the ring, the operand layouts and the tensor-core loop are
//! written here once.
//!
//! Shared memory: `A ring (stages, A stage) | B ring (stages, B stage) | block cache`. A stage
//! holds the tile's A slice `(tm, ks)` either K-major (rows along M, `ldmatrix`) or MN-major
//! (rows along K, `ldmatrix.trans`), and its B slice `(ks, tn)` either MN-major (rows along K,
//! `ldmatrix.trans`) or K-major (rows along N, `ldmatrix`), as the op's [`flags`] say; each
//! layout is a separate instantiation of the main loop, chosen once per thread block.
//!
//! Absent B ([`PortableOp::B_MARKS`]): where most of a B stage's columns may be absent (BSR × BSR),
//! each warp loads the B columns it multiplies itself (its 64, its share of the stage's K rows),
//! tells which of its column chunks hold data per 16-deep half ([`PortableOp::b_present`]), and
//! passes over the halves where none of its chunks does: no copies, no zero fill
//! ([`Chunk::IfPresent`] for the chunks inside a half that holds some). The warps mark the
//! 16-column granules that hold data in shared memory, and the consumers pass over the
//! fragments and `mma.sync`s of the others. The kernel is issue-bound there, so what counts is
//! the instructions passed over, not the tensor work.
//!
//! Warp rings ([`MmaTile::warp_rings`], and [`MmaTile::warp_rings_by_plan`] where the launch
//! asks, with absent B): the warps of a tile of one warp row share only its A slice, so each warp
//! runs a ring of its own ([`warp_mainloop`]), copying its own A slice beside its B columns, only
//! for the stages where one of its columns holds a block.
//!
//! Ring bookkeeping: stage `t` lives in slot `t % stages`. Before computing stage `t`, every
//! thread waits for its own copies of stage `t` (at most `stages - 2` newer groups in flight)
//! and the block barrier makes all threads' copies visible. The same barrier proves that every
//! warp has finished computing stage `t - 1`, so its slot can receive stage `t + stages - 1`.

use blocksparse_abi::{MAX_ITEM_BLOCKS, MMA_TILES, MmaTile, WARP_N, WARP_RING_STAGES, flags};

use crate::core::epilogue::{Dest, store_partial_strip, store_strip};
use crate::core::ring::PipelineState;
use crate::core::smem::SmemTile;
use crate::dtype::{Input, Output};
use crate::ptx::{
    ballot, cp_async_16, cp_async_16_if, cp_async_16_or_zeros, cp_async_commit, cp_async_wait, ld_shared_u32, ldmatrix_x4,
    ldmatrix_x4_trans, smem_base, st_shared_u32, sync_threads, sync_warp, thread_idx,
};

/// n8 fragments per warp along N.
pub const NJ: usize = (WARP_N / 8) as usize;

/// Per-warp accumulators: `(MI, NJ, 4)` f32 in the `mma.sync` C fragment layout, MI ≤ 4 (the
/// rows a tile does not use are optimised away).
pub type Acc = [[[f32; 4]; NJ]; 4];

/// Where a warp's `(16 · MI, 64)` accumulators sit in the tile.
#[derive(Clone, Copy)]
pub struct WarpTile {
    /// First tile row of the warp.
    pub row0: u32,
    /// First tile column of the warp.
    pub col0: u32,
    /// m16 fragments along M.
    pub mi: usize,
    /// Lane in the warp.
    pub lane: u32,
}

impl WarpTile {
    /// Writes the warp's accumulators through `d`, whose tile coordinates put the warp's
    /// first column at `col0` (rows from `d`'s row 0).
    #[inline(always)]
    pub unsafe fn store<O: Output, D: Dest<O>>(&self, d: &D, col0: u32, acc: &Acc) {
        let mut i = 0;
        while i < self.mi {
            unsafe { store_strip::<O, _, NJ>(d, 16 * i as u32, col0, self.lane, |j| acc[i][j]) };
            i += 1;
        }
    }

    /// Writes the warp's accumulators, unscaled, into the row-major f32 partial tile `tile`
    /// with `tn` columns, at the warp's own rows and columns.
    #[inline(always)]
    pub unsafe fn store_partial(&self, tile: *mut f32, tn: u32, acc: &Acc) {
        let mut i = 0;
        while i < self.mi {
            unsafe { store_partial_strip::<NJ>(tile, tn, self.row0 + 16 * i as u32, self.col0, self.lane, |j| acc[i][j]) };
            i += 1;
        }
    }
}

/// Where one 16-byte chunk of a stage comes from. An op returns one variant on every path of a
/// chunk form, so that the copy's form is known at compile time.
#[derive(Clone, Copy)]
pub enum Chunk {
    /// All 16 bytes from the address where the flag is set, zeros where not.
    Whole(*const u8, bool),
    /// The first `bytes` (0..=16) from the address, zeros after (a row's tail).
    Part(*const u8, u32),
    /// All 16 bytes from the address where the flag is set, nothing where not (not even
    /// zeros): a B chunk of an op with [`PortableOp::B_MARKS`], whose flag is
    /// [`PortableOp::b_present`] (no warp reads the granules where it is false).
    IfPresent(*const u8, bool),
}

impl Chunk {
    /// Copies the chunk into shared address `dst` (a `cp.async` of the current group).
    #[inline(always)]
    unsafe fn copy_to(self, dst: u32) {
        // SAFETY: the op's address is readable for the bytes it names (its contract).
        unsafe {
            match self {
                Chunk::Whole(src, valid) => cp_async_16_or_zeros(dst, src, valid),
                Chunk::Part(src, bytes) => cp_async_16(dst, src, bytes),
                Chunk::IfPresent(src, valid) => cp_async_16_if(dst, src, valid),
            }
        }
    }
}

/// Which chunk of a stage an op is asked for: the stage's first K offset (inside the item),
/// and the chunk's row and 16-byte column in the stage's layout of that operand.
#[derive(Clone, Copy)]
pub struct ChunkAt {
    /// K offset of the stage's first row or column.
    pub k0: u32,
    /// Row of the stage's slice.
    pub row: u32,
    /// 16-byte chunk along the row.
    pub chunk: u32,
}

/// An op of the portable kernel family.
pub trait PortableOp {
    /// The op's launch parameters.
    type Params;
    /// What a thread block knows about its item after [`PortableOp::prepare`].
    type Item: Copy;
    /// What every A chunk of one stage shares ([`PortableOp::a_stage`]), `()` for an op whose
    /// chunks find their sources alone.
    type AStage: Copy + Default;
    /// As [`PortableOp::AStage`] for the B chunks ([`PortableOp::b_stage`]).
    type BStage: Copy + Default;

    /// The [`flags`] bits.
    fn flags(p: &Self::Params) -> u32;
    /// Every thread: reads this block's work item and writes what its stages need into the
    /// block cache at shared address `cache` (the skeleton synchronises after). No barriers.
    unsafe fn prepare(p: &Self::Params, t: MmaTile, cache: u32, tid: u32) -> Self::Item;
    /// K stages of `ks` elements of the item.
    fn k_stages(p: &Self::Params, it: &Self::Item, t: MmaTile) -> u32;
    /// As [`PortableOp::b_stage`] for the stage's A chunks: what they share and the form of
    /// [`PortableOp::a_chunk`] that uses it (1, the op's to define); 0 (the default): each
    /// chunk finds its own source.
    #[inline(always)]
    unsafe fn a_stage<const A_MN: bool>(_p: &Self::Params, _it: &Self::Item, _t: MmaTile, _k0: u32) -> (Self::AStage, u32) {
        (Self::AStage::default(), 0)
    }
    /// Source of the A chunk `at` (chunk `at.chunk` of row `at.row` of the A slice of the stage
    /// starting at K offset `at.k0`): rows along M (K-major, `A_MN` false) or along K
    /// (MN-major); `st` is the stage's [`PortableOp::a_stage`], and `FORM` the form it asked
    /// for.
    unsafe fn a_chunk<const A_MN: bool, const FORM: u32>(p: &Self::Params, it: &Self::Item, st: Self::AStage, at: ChunkAt) -> Chunk;
    /// Computed by each thread once per stage (starting at K offset `k0`) of tile `t`, before
    /// the stage's B chunks: what they share (for example the source of the stage's first K
    /// row) and the form of [`PortableOp::b_chunk`] that uses it (`FORM`, 1 or 2, the op's to
    /// define); 0: each chunk finds its own source (the default: nothing shared).
    #[inline(always)]
    unsafe fn b_stage<const B_K: bool>(_p: &Self::Params, _it: &Self::Item, _t: MmaTile, _k0: u32) -> (Self::BStage, u32) {
        (Self::BStage::default(), 0)
    }
    /// Whether B's columns may be absent (see the module docs): each thread then loads the B
    /// column chunk [`marked_b_chunk`] of every K row it copies (its [`PortableOp::b_stage`]
    /// computed for that chunk), and the op tells [`PortableOp::b_present`]. Such an op leaves
    /// the block cache to the marks (its [`PortableOp::prepare`] writes nothing there). Tiles of
    /// 32-deep stages, and a B MN-major only (its [`PortableOp::flags`] never ask for
    /// K-major: the warps' copies assume rows along K).
    const B_MARKS: bool = false;
    /// With [`PortableOp::B_MARKS`] on a tile of [`MmaTile::warp_rings_by_plan`]: whether this
    /// launch runs a ring per warp ([`warp_mainloop`]) instead of the block ring.
    #[inline(always)]
    fn warp_rings(_p: &Self::Params) -> bool {
        false
    }
    /// Whether [`PortableOp::a_stage`] and [`PortableOp::b_stage`] read global memory (the
    /// stage's block indices): the skeleton then calls them one iteration before the stage's
    /// copies, so that their loads' latency passes under a stage of tensor work instead of
    /// stalling the copies (an op doing so should return the words read, and leave what it
    /// derives from them to the chunks).
    const STAGE_AHEAD: bool = false;
    /// With [`PortableOp::B_MARKS`]: whether K rows `16 h .. 16 h + 16` of the stage (`st`,
    /// `form`: its [`PortableOp::b_stage`]) may hold data at this thread's column chunk. It must
    /// be the same for both chunks of a 16-column granule (chunks `2g`, `2g + 1`). Where it is
    /// false the warps pass over the granule, and a chunk the op returns as
    /// [`Chunk::IfPresent`] must be copied exactly where it is true.
    #[inline(always)]
    fn b_present(_st: Self::BStage, _form: u32, _h: u32) -> bool {
        true
    }
    /// As [`PortableOp::a_chunk`] for the B slice: rows along K (MN-major, `B_K` false) or
    /// along N (K-major); `st` is the stage's [`PortableOp::b_stage`], and `FORM` the form it
    /// asked for (the skeleton branches once per stage, not per chunk).
    unsafe fn b_chunk<const B_K: bool, const FORM: u32>(p: &Self::Params, it: &Self::Item, st: Self::BStage, at: ChunkAt) -> Chunk;
    /// Writes one warp's accumulators (all 32 lanes call it).
    unsafe fn store<O: Output>(p: &Self::Params, it: &Self::Item, t: MmaTile, w: WarpTile, acc: &Acc);
}

/// Bytes of one stage's B marks: `(ks / 16, tn / 16)`.
const fn marks_bytes(t: MmaTile) -> u32 {
    (t.ks / 16) * (t.tn / 16)
}

// Every tile's marks, one set per ring slot, fit in the block cache; a stage is two 16-deep
// halves, the warps of one column span its tile's columns, and each warp's share of a stage's K
// rows is whole groups of four (a warp copies 8 chunks × 4 rows at a time), inside one half.
const _: () = {
    let mut i = 0;
    while i < MMA_TILES.len() {
        let t = MMA_TILES[i];
        assert!(t.stages * marks_bytes(t) <= MAX_ITEM_BLOCKS * 8);
        assert!(t.ks == 32 && t.warps_n * WARP_N == t.tn);
        let rows = t.ks / t.warps_m;
        assert!(rows.is_multiple_of(4) && (16u32.is_multiple_of(rows) || rows.is_multiple_of(16)));
        i += 1;
    }
    // A warp's four 16-column granules are one 32-bit word of the marks, one chunk pair each.
    assert!(WARP_N == 64);
    // Warp rings: each lane copies whole rounds of its warp's A slice, and the marks of the
    // groups in flight (a byte each) fit one word.
    let mut i = 0;
    while i < MMA_TILES.len() {
        let t = MMA_TILES[i];
        let warp = t.warp_rings() || t.warp_rings_by_plan();
        assert!(!warp || ((t.tm * t.ks / 8).is_multiple_of(32) && WARP_RING_STAGES >= 2 && WARP_RING_STAGES <= 5));
        i += 1;
    }
};

/// With [`PortableOp::B_MARKS`]: the B column chunk (of 8 elements) the calling thread loads, on
/// every K row it copies: lane `l` of the warp at tile column `64 wn` takes chunk `8 wn + l % 8`.
#[inline(always)]
pub fn marked_b_chunk(t: MmaTile) -> u32 {
    let tid = thread_idx();
    8 * ((tid / 32) % t.warps_n) + tid % 8
}

/// B fragment `j` of a warp whose columns start at `col0`, K rows `16 kk ..` of the slot: two n8
/// groups per ldmatrix, `(k 0-7 | 8-15) × (group j | j + 1)`.
#[inline(always)]
unsafe fn b_fragment<const B_K: bool>(b_slot: SmemTile, col0: u32, kk: u32, j: u32, lane: u32) -> [u32; 4] {
    unsafe {
        if B_K {
            // Lane l addresses N row 8·(2j + l / 16) + l % 8 at K chunk (l / 8) % 2.
            let n = col0 + 8 * (2 * j + lane / 16) + lane % 8;
            ldmatrix_x4(b_slot.chunk_addr(n, 2 * kk + (lane / 8) % 2))
        } else {
            // Lane l addresses K row (l & 7) + 8·((l >> 3) & 1) at N chunk 2j + l / 16.
            let krow = 16 * kk + (lane & 7) + 8 * ((lane >> 3) & 1);
            ldmatrix_x4_trans(b_slot.chunk_addr(krow, col0 / 8 + 2 * j + lane / 16))
        }
    }
}

/// What a stage's A and B chunks share, with the forms that use it ([`PortableOp::a_stage`],
/// [`PortableOp::b_stage`]).
type Shared<Op> = ((<Op as PortableOp>::AStage, u32), (<Op as PortableOp>::BStage, u32));

/// The kernel body for tile `MMA_TILES[TILE]`.
#[inline(always)]
pub unsafe fn run<Op: PortableOp, I: Input, O: Output, const TILE: usize>(p: &Op::Params) {
    let t = MMA_TILES[TILE];
    let tid = thread_idx();
    let (warp, lane) = (tid / 32, tid % 32);
    let (warp_m, warp_n) = (warp / t.warps_n, warp % t.warps_n);
    let mi = (t.warp_m() / 16) as usize;

    let smem = smem_base();
    let cache = smem + t.cache_offset();
    let it = unsafe { Op::prepare(p, t, cache, tid) };
    sync_threads();
    let n_k = Op::k_stages(p, &it, t);

    let w = WarpTile { row0: warp_m * t.warp_m(), col0: warp_n * WARP_N, mi, lane };
    let acc = match Op::flags(p) & (flags::A_MN_MAJOR | flags::B_K_MAJOR) {
        0 => unsafe { mainloop::<Op, I, false, false>(p, &it, t, smem, n_k, w) },
        flags::A_MN_MAJOR => unsafe { mainloop::<Op, I, true, false>(p, &it, t, smem, n_k, w) },
        flags::B_K_MAJOR => unsafe { mainloop::<Op, I, false, true>(p, &it, t, smem, n_k, w) },
        _ => unsafe { mainloop::<Op, I, true, true>(p, &it, t, smem, n_k, w) },
    };
    unsafe { Op::store::<O>(p, &it, t, w, &acc) };
}

/// Copies a stage's A chunks (`(rows, rc)` 16-byte chunks of the slice at K offset `k0`) into
/// `a_slot`, in the form `form` the op asked for (one branch per stage): chunks `first + i ·
/// step` for `i` in `0..trips` (a constant trip count, so the copies unroll), those where
/// `take(idx)` and then `want(r, c)` hold (chunk `idx`: row `r`, chunk `c` of its row). Both
/// rings' copies; a macro: as a function (with another change) the 32-row tile ran slower (v41).
macro_rules! copy_a_chunks {
    ($op:ident, $a_mn:ident, $form:expr, $src:tt, $walk:tt, |$idx:ident| $take:expr, |$r:ident, $c:ident| $want:expr) => {
        match $form {
            1 => copy_a_chunks!(@form 1, $op, $a_mn, $src, $walk, |$idx| $take, |$r, $c| $want),
            _ => copy_a_chunks!(@form 0, $op, $a_mn, $src, $walk, |$idx| $take, |$r, $c| $want),
        }
    };
    (@form $f:literal, $op:ident, $a_mn:ident, ($p:ident, $it:ident, $sa:ident, $k0:ident, $a_slot:ident, $rc:expr),
        ($trips:expr, $first:expr, $step:expr), |$idx:ident| $take:expr, |$r:ident, $c:ident| $want:expr) => {{
        let mut i = 0;
        while i < $trips {
            let $idx = $first + i * $step;
            if $take {
                let ($r, $c) = ($idx / $rc, $idx % $rc);
                if $want {
                    let at = ChunkAt { k0: $k0, row: $r, chunk: $c };
                    unsafe { $op::a_chunk::<$a_mn, $f>($p, $it, $sa, at).copy_to($a_slot.chunk_addr($r, $c)) };
                }
            }
            i += 1;
        }
    }};
}

/// The ring over `n_k` stages for one operand layout: cp.async loads of each stage's chunks
/// (as the op maps them), then the warp's `(16 · MI, 64)` share of each stage on the tensor
/// cores. With [`PortableOp::B_MARKS`] on a tile of [`MmaTile::warp_rings`], or of
/// [`MmaTile::warp_rings_by_plan`] where the launch asks for it, each warp runs its own ring
/// ([`warp_mainloop`]).
#[inline(always)]
unsafe fn mainloop<Op: PortableOp, I: Input, const A_MN: bool, const B_K: bool>(
    p: &Op::Params,
    it: &Op::Item,
    t: MmaTile,
    smem: u32,
    n_k: u32,
    w: WarpTile,
) -> Acc {
    if Op::B_MARKS && (t.warp_rings() || (t.warp_rings_by_plan() && Op::warp_rings(p))) {
        return unsafe { warp_mainloop::<Op, I, A_MN, B_K>(p, it, t, smem, n_k, w) };
    }
    let threads = t.threads();
    let tid = thread_idx();
    // Stage layouts: (rows, 16-byte chunks per row) of A and B.
    let (a_rows, a_rc) = a_layout::<A_MN>(t);
    let (b_rows, b_rc) = if B_K { (t.tn, t.ks / 8) } else { (t.ks, t.tn / 8) };
    let a_ring = SmemTile { base: smem, row_chunks: a_rc };
    let b_ring = SmemTile { base: smem + t.stages * t.a_stage_bytes(), row_chunks: b_rc };
    let a_chunks = a_rows * a_rc;
    let b_chunks = b_rows * b_rc;
    // The B marks of ring slot `s` (`B_MARKS`): `(ks / 16, tn / 16)` bytes in the block cache.
    let marks = |s: u32| smem + t.cache_offset() + s * marks_bytes(t);

    // ---- load: stage `stage` of A and B into ring slot `slot`; thread `tid` copies chunks
    // `tid + i · threads` (a constant trip count, so the copies unroll), but for B with
    // `B_MARKS`, where each warp copies its own columns ----
    // What the stage's A and B chunks share ([`PortableOp::a_stage`], [`PortableOp::b_stage`]).
    let shared = |stage: u32| -> Shared<Op> {
        let k0 = stage * t.ks;
        unsafe { (Op::a_stage::<A_MN>(p, it, t, k0), Op::b_stage::<B_K>(p, it, t, k0)) }
    };
    // `ahead`: the stage's shared parts, read one iteration earlier (`STAGE_AHEAD`).
    let load = |stage: u32, slot: u32, ahead: Option<Shared<Op>>| {
        let k0 = stage * t.ks;
        let a_slot = a_ring.offset(slot * t.a_stage_bytes());
        let (sa, form) = match ahead {
            Some((a, _)) => a,
            None => unsafe { Op::a_stage::<A_MN>(p, it, t, k0) },
        };
        // Thread `tid`'s chunks; with fewer chunks than threads (small tiles), the last threads
        // copy nothing.
        copy_a_chunks!(
            Op,
            A_MN,
            form,
            (p, it, sa, k0, a_slot, a_rc),
            (a_chunks.div_ceil(threads), tid, threads),
            |idx| a_chunks % threads == 0 || idx < a_chunks,
            |_r, _c| true
        );
        let b_slot = b_ring.offset(slot * t.b_stage_bytes());
        let (st, form) = match ahead {
            Some((_, b)) => b,
            None => unsafe { Op::b_stage::<B_K>(p, it, t, k0) },
        };
        if Op::B_MARKS {
            // The warp's own columns, K rows `row0 ..` of the stage.
            let rows = t.ks / t.warps_m;
            let row0 = (w.row0 / t.warp_m()) * rows;
            let held = held_halves::<Op>(st, form);
            unsafe { load_marked_b::<Op, B_K>(p, it, t, st, form, k0, b_slot, row0, rows, w.lane, held) };
            // The marks of the halves the warp's rows begin: granule g (chunks 2g, 2g + 1) from
            // lane 2g's vote, byte g of the warp's word.
            if w.lane == 0 {
                let mut h = 0;
                while h < 2 {
                    if row0 <= 16 * h && 16 * h < row0 + rows {
                        let word = spread_granules(granule_bits(if h == 0 { held[0] } else { held[1] }));
                        unsafe { st_shared_u32(marks(slot) + h * (t.tn / 16) + w.col0 / 16, word) };
                    }
                    h += 1;
                }
            }
            return;
        }
        // The B chunks in the form the op asked for (one branch per stage).
        macro_rules! load_b {
            ($form:literal) => {{
                let mut i = 0;
                while i < b_chunks / threads {
                    let idx = tid + i * threads;
                    let (r, c) = (idx / b_rc, idx % b_rc);
                    unsafe { Op::b_chunk::<B_K, $form>(p, it, st, ChunkAt { k0, row: r, chunk: c }).copy_to(b_slot.chunk_addr(r, c)) };
                    i += 1;
                }
            }};
        }
        match form {
            1 => load_b!(1),
            2 => load_b!(2),
            _ => load_b!(0),
        }
    };

    let mut acc: Acc = [[[0.0; 4]; NJ]; 4];
    // Prologue: fill stages - 1 slots. A group is committed even when empty so that the wait
    // count below always refers to the right stage.
    let mut s = 0;
    while s < t.stages - 1 {
        if s < n_k {
            load(s, s, None);
        }
        cp_async_commit();
        s += 1;
    }
    let mut read = PipelineState::new(t.stages);
    let mut write = PipelineState::starting_at(t.stages, t.stages - 1);
    let mut ahead = if Op::STAGE_AHEAD && t.stages - 1 < n_k { Some(shared(t.stages - 1)) } else { None };
    let mut st = 0;
    while st < n_k {
        cp_async_wait(t.stages - 2);
        sync_threads();
        let next = st + t.stages - 1;
        if next < n_k {
            load(next, write.slot, ahead);
            if Op::STAGE_AHEAD {
                ahead = if next + 1 < n_k { Some(shared(next + 1)) } else { None };
            }
        }
        cp_async_commit();
        let slot = read.slot;
        // Which of the warp's granules hold data, per 16 K rows: all unless the op marks B.
        // SAFETY: the slot's marks, written before the barrier that opened this stage.
        let present = |kk: u32| if Op::B_MARKS { unsafe { ld_shared_u32(marks(slot) + kk * (t.tn / 16) + w.col0 / 16) } } else { u32::MAX };
        unsafe { compute::<Op, I, A_MN, B_K>(&mut acc, (a_ring, b_ring), slot, t, w, present) };
        read.advance();
        write.advance();
        st += 1;
    }
    // Nothing real is in flight any more (the trailing groups are empty); drain anyway so the
    // block never exits with copies outstanding.
    cp_async_wait(0);
    acc
}

/// The ring of one warp ([`MmaTile::warp_rings`], with [`PortableOp::B_MARKS`]): the warp copies
/// the stages where one of its B granules holds data, and only those (A slice and own B columns),
/// into its own slots (`A rings (warps, S, A stage) | B ring (S, B stage)`, its 64 columns of
/// each B slot, `S` = [`WARP_RING_STAGES`]), and computes them; no block barrier. Its A copies
/// are the block ring's (`copy_a_chunks!`) with their own chunk walk and choice (the halves it
/// multiplies).
///
/// Ring bookkeeping: the warp's `g`-th copy group (a stage found live, or an empty group once
/// the item has no more) lives in slot `g % S`. Each thread waits for its own copies of the group
/// it computes (at most `S - 2` newer groups in flight), and the warp barrier makes the lanes'
/// copies visible to each other and proves that every lane has finished the slot the next copies
/// overwrite (the one computed the iteration before). The copy closure is inlined by attribute:
/// with two stages the fill is one iteration, which the compiler peels into a second call site.
#[inline(always)]
unsafe fn warp_mainloop<Op: PortableOp, I: Input, const A_MN: bool, const B_K: bool>(
    p: &Op::Params,
    it: &Op::Item,
    t: MmaTile,
    smem: u32,
    n_k: u32,
    w: WarpTile,
) -> Acc {
    let (a_rows, a_rc) = a_layout::<A_MN>(t);
    let warp = thread_idx() / 32;
    // (S, A stage) of this warp; (S, B stage) shared by the warps, 64 columns each.
    let a_ring = SmemTile { base: smem + warp * WARP_RING_STAGES * t.a_stage_bytes(), row_chunks: a_rc };
    let b_ring = SmemTile { base: smem + t.warps_n * WARP_RING_STAGES * t.a_stage_bytes(), row_chunks: t.tn / 8 };

    // The scan, a window of `LOOK` stages at a time: lane `l` looks at stage `base + l / 8` for
    // its column chunk `l % 8` (the chunk it copies, [`marked_b_chunk`]: 8 per warp). `window`:
    // byte `g`, the marks (bit `4 h + g'`: granule `g'` in half `h`) of stage `base + g` not yet
    // copied; `ahead`: the B stage each lane looks at in the next window, `next` (read one window
    // early, as `STAGE_AHEAD` asks; held to the item's last stage, whose votes are then dropped).
    const LOOK: u32 = 32 / (WARP_N / 8);
    let look = |first: u32| unsafe { Op::b_stage::<B_K>(p, it, t, (first + w.lane / 8).min(n_k.max(1) - 1) * t.ks) };
    let mut base = 0;
    let mut window = 0u32;
    let mut next = 0;
    let mut ahead = if n_k > 0 { look(0) } else { Default::default() };
    // Copies the warp's next stage with a granule that holds data into `slot`; returns its marks,
    // 0 where the item has none left.
    let mut load_next = #[inline(always)]
    |slot: u32| -> u32 {
        while window == 0 {
            if next >= n_k {
                return 0;
            }
            let (sb, b_form) = ahead;
            let here = next + w.lane / 8 < n_k;
            let held = [ballot((here && Op::b_present(sb, b_form, 0)) as u32), ballot((here && Op::b_present(sb, b_form, 1)) as u32)];
            base = next;
            next += LOOK;
            if next < n_k {
                ahead = look(next);
            }
            let mut g = 0;
            while g < LOOK {
                window |= (granule_bits(held[0] >> (8 * g)) | granule_bits(held[1] >> (8 * g)) << 4) << (8 * g);
                g += 1;
            }
        }
        let g = window.trailing_zeros() / 8;
        let m = (window >> (8 * g)) & 0xff;
        window &= !(0xff << (8 * g));
        let k0 = (base + g) * t.ks;
        // The stage's words again (likely from L1: the scan read B's words of the record).
        let ((sa, a_form), (sb, b_form)) = unsafe { (Op::a_stage::<A_MN>(p, it, t, k0), Op::b_stage::<B_K>(p, it, t, k0)) };
        let a_slot = a_ring.offset(slot * t.a_stage_bytes());
        // The lane's chunks in the halves the warp multiplies (a half of 16 K rows: K chunks 2h,
        // 2h + 1 of a K-major row, rows 16h .. of an MN-major slice).
        copy_a_chunks!(Op, A_MN, a_form, (p, it, sa, k0, a_slot, a_rc), (a_rows * a_rc / 32, w.lane, 32), |_idx| true, |r, c| {
            (m >> (4 * if A_MN { r / 16 } else { c / 2 })) & 0xf != 0
        });
        let b_slot = b_ring.offset(slot * t.b_stage_bytes());
        unsafe { load_marked_b::<Op, B_K>(p, it, t, sb, b_form, k0, b_slot, 0, t.ks, w.lane, [m & 0xf, m >> 4]) };
        m
    };

    let mut acc: Acc = [[[0.0; 4]; NJ]; 4];
    // Marks of the groups in flight, the newest in the low byte (`S - 1` of them).
    let mut queue = 0u32;
    let oldest = 8 * (WARP_RING_STAGES - 2);
    let in_flight = u32::MAX >> (32 - 8 * (WARP_RING_STAGES - 1));
    let mut read = PipelineState::new(WARP_RING_STAGES);
    let mut write = PipelineState::new(WARP_RING_STAGES);
    // Group `g`: the first `S - 1` fill the ring; from then on each iteration computes the
    // oldest group in flight and copies one more (with two stages the compiler peels the fill
    // into a second call site: the copy closure is inlined by attribute).
    let mut g = 0;
    loop {
        let fill = g < WARP_RING_STAGES - 1;
        // The oldest group in flight; empty only once the scan has ended (so are the newer ones).
        let m = (queue >> oldest) & 0xff;
        if !fill {
            if m == 0 {
                break;
            }
            cp_async_wait(WARP_RING_STAGES - 2);
            sync_warp();
        }
        queue = (queue << 8 | load_next(write.slot)) & in_flight;
        cp_async_commit();
        write.advance();
        if !fill {
            let slot = read.slot;
            // Granule g's byte of the half's word, as the block ring's marks.
            let present = |kk: u32| spread_granules((m >> (4 * kk)) & 0xf);
            unsafe { compute::<Op, I, A_MN, B_K>(&mut acc, (a_ring, b_ring), slot, t, w, present) };
            read.advance();
        }
        g += 1;
    }
    cp_async_wait(0);
    acc
}

/// `(rows, 16-byte chunks per row)` of an A stage: rows along M (K-major) or along K.
#[inline(always)]
const fn a_layout<const A_MN: bool>(t: MmaTile) -> (u32, u32) {
    if A_MN { (t.ks, t.tm / 8) } else { (t.tm, t.ks / 8) }
}

/// With [`PortableOp::B_MARKS`]: per 16-deep half of the stage, the warp's votes of
/// [`PortableOp::b_present`] (lane `l` for its column chunk `l % 8`).
#[inline(always)]
fn held_halves<Op: PortableOp>(st: Op::BStage, form: u32) -> [u32; 2] {
    [ballot(Op::b_present(st, form, 0) as u32), ballot(Op::b_present(st, form, 1) as u32)]
}

/// Bit `g` for the warp's 16-column granule `g` (chunks `2g`, `2g + 1`) from the votes of lanes
/// `2g` ([`held_halves`]).
#[inline(always)]
fn granule_bits(v: u32) -> u32 {
    (v & 1) | ((v >> 1) & 2) | ((v >> 2) & 4) | ((v >> 3) & 8)
}

/// Granule bits as the marks' word: byte `g` non-zero for granule `g`.
#[inline(always)]
fn spread_granules(g: u32) -> u32 {
    (g & 1) | (g & 2) << 7 | (g & 4) << 14 | (g & 8) << 21
}

/// With [`PortableOp::B_MARKS`]: the warp's copies of its own B column chunk
/// ([`marked_b_chunk`]) on K rows `row0 .. row0 + rows` of the stage at `k0` (lane `l`: rows
/// `row0 + l / 8 + 4 i`), four rows at a time, passing over the halves whose votes `held` are
/// all zero.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn load_marked_b<Op: PortableOp, const B_K: bool>(
    p: &Op::Params,
    it: &Op::Item,
    t: MmaTile,
    st: Op::BStage,
    form: u32,
    k0: u32,
    b_slot: SmemTile,
    row0: u32,
    rows: u32,
    lane: u32,
    held: [u32; 2],
) {
    let c = marked_b_chunk(t);
    macro_rules! load_b_marked {
        ($form:literal) => {{
            let mut i = 0;
            while i < rows / 4 {
                // Four rows at a time, inside one half (a select: an index would put `held` in
                // local memory).
                let any = if row0 + 4 * i < 16 { held[0] } else { held[1] };
                if any != 0 {
                    let row = row0 + 4 * i + lane / 8;
                    unsafe { Op::b_chunk::<B_K, $form>(p, it, st, ChunkAt { k0, row, chunk: c }).copy_to(b_slot.chunk_addr(row, c)) };
                }
                i += 1;
            }
        }};
    }
    match form {
        1 => load_b_marked!(1),
        _ => load_b_marked!(0),
    }
}

/// The warp's `(16 · MI, 64)` sub-tile over slot `slot` of the rings `(A, B)` (either ring's
/// layout: the slot's A and B stages at `slot` stage sizes from each base): `present(kk)` says
/// which of the warp's four 16-column granules hold data in K rows `16 kk ..` (byte `j` for
/// granule `j`: n8 groups `2j`, `2j + 1`), `u32::MAX` where the op does not mark B.
#[inline(always)]
unsafe fn compute<Op: PortableOp, I: Input, const A_MN: bool, const B_K: bool>(
    acc: &mut Acc,
    (a_ring, b_ring): (SmemTile, SmemTile),
    slot: u32,
    t: MmaTile,
    w: WarpTile,
    present: impl Fn(u32) -> u32,
) {
    let (a_slot, b_slot) = (a_ring.offset(slot * t.a_stage_bytes()), b_ring.offset(slot * t.b_stage_bytes()));
    let lane = w.lane;
    let mut kk = 0;
    while kk < t.ks / 16 {
        let present = present(kk);
        // The warp passes over the halves where all four are absent, and over each absent
        // granule (whose chunks were not copied).
        let has = |j: usize| (present >> (8 * j)) & 0xff != 0;
        if present == 0 {
            kk += 1;
            continue;
        }
        // A fragments (16 rows × k16 each): matrices (rows 0-7 | 8-15) × (k 0-7 | 8-15).
        let mut af = [[0u32; 4]; 4];
        let mut i = 0;
        while i < w.mi {
            let m = w.row0 + 16 * i as u32;
            af[i] = unsafe {
                if A_MN {
                    // Lane l addresses K row (l / 16)·8 + l % 8 of M chunk (l / 8) % 2.
                    ldmatrix_x4_trans(a_slot.chunk_addr(16 * kk + 8 * (lane / 16) + lane % 8, m / 8 + (lane / 8) % 2))
                } else {
                    // Lane l addresses M row l % 16 at K chunk l / 16.
                    ldmatrix_x4(a_slot.chunk_addr(m + lane % 16, 2 * kk + lane / 16))
                }
            };
            i += 1;
        }
        // B fragments, two n8 groups per ldmatrix: (k 0-7 | 8-15) × (group j | j + 1).
        if Op::B_MARKS {
            // Granule by granule, each present one's fragment and its MMAs (one fragment live at
            // a time: all four with the branches spilled on the 32-row and larger tiles).
            let mut j = 0;
            while j < NJ / 2 {
                if has(j) {
                    let bf = unsafe { b_fragment::<B_K>(b_slot, w.col0, kk, j as u32, lane) };
                    let mut i = 0;
                    while i < w.mi {
                        I::mma(&mut acc[i][2 * j], &af[i], bf[0], bf[1]);
                        I::mma(&mut acc[i][2 * j + 1], &af[i], bf[2], bf[3]);
                        i += 1;
                    }
                }
                j += 1;
            }
        } else {
            let mut bf = [[0u32; 4]; NJ / 2];
            let mut j = 0;
            while j < NJ / 2 {
                bf[j] = unsafe { b_fragment::<B_K>(b_slot, w.col0, kk, j as u32, lane) };
                j += 1;
            }
            let mut i = 0;
            while i < w.mi {
                let mut j = 0;
                while j < NJ / 2 {
                    I::mma(&mut acc[i][2 * j], &af[i], bf[j][0], bf[j][1]);
                    I::mma(&mut acc[i][2 * j + 1], &af[i], bf[j][2], bf[j][3]);
                    j += 1;
                }
                i += 1;
            }
        }
        kk += 1;
    }
}
