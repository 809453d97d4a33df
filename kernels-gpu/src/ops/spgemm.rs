//! SpGEMM: `C = alpha · A · B + beta · C` with A and B block-sparse, on either kernel family.
//! A is `(M, K)` in `(bm, bk)` blocks, B `(K, N)` in `(bk, bn)` blocks; C is dense (`out`) or
//! block-sparse in `(bm, bn)` blocks (`blocks`); the tile height is bm.
//!
//! A work item is block row `r` of C, a tile of `J = tn / bn` column blocks (N tile `nt` of a
//! dense C, or C's blocks `c0..c1` side by side), matrix `b`, and its stage records
//! `r0..r1` (`SpgemmParams::records`: record `s` is an A block `p` and, per tile column block
//! `j`, the B block `q_j` it meets or `NO_BLOCK`):
//! ```text
//! for i in 0..bm, j in 0..J, jj in 0..bn:
//!     g = the column group of j (the whole tile on the portable kernel, j's 128 columns on
//!         the Hopper kernel), p_g(s) its A block in record s (NO_BLOCK where g's list ended)
//!     acc = 0
//!     for s in r0..r1 (each group's entries in increasing K), kk in 0..bk:
//!         if p_g(s) != NO_BLOCK and q_j(s) != NO_BLOCK:
//!             acc += A[b].block(p_g(s))[i][kk] * B[b].block(q_j(s))[kk][jj]
//!     C tile (i, j·bn + jj) = alpha*acc + beta*C (dense: columns < N only; block-sparse: blocks
//!     c0..c1 only), or acc → the item's partial slot (summed by the fix-up kernel)
//! ```
//! The K axis of an item is its records, each `bk` deep, cut into stages. On the Hopper kernel's
//! 64-row tile the tile's 128-column groups stream their own lists side by side
//! (`SpgemmParams::records`): a stage holds one A slice per group, so a group computes only where
//! its own blocks meet A's, not wherever any block of the tile does. The tile is zero-fill
//! (`WgmmaTile::zero_fill`): only the present B boxes, and the A slices of the groups that have
//! one, are loaded; the consumer multiplies a zero box in place of the others. On its 128-row tile
//! (`WgmmaTile::n_split`) the tile streams one list, the union over its columns, with one A slice
//! per stage; each consumer warpgroup owns 128 columns (all 128 rows) and passes over the stages
//! where they hold no block, so neither the A slice nor the tensor work is spent on zeros. With
//! 128-wide C blocks its plans pair each row's C blocks by the K they share
//! ([`SpgemmParams::paired`]: the tile's two C blocks are any two of the row, not neighbours).

use blocksparse_abi::{FIXUP_TO_DENSE, MmaTile, NO_BLOCK, NO_SLOT, SpgemmParams, WorkItem};

use crate::core::epilogue::{BlockDest, DenseDest, partial_tile};
use crate::core::portable::{Acc, Chunk, ChunkAt, PortableOp, WarpTile, marked_b_chunk};
use crate::core::work::this_block_item;
use crate::dtype::Output;
use crate::ptx::ld_global_nc_u32;

/// The SpGEMM op.
pub struct Spgemm;

/// Word `w` of stage record `r` (32-bit offsets: the planner keeps the records below 2³²
/// words).
#[inline(always)]
unsafe fn record_word(p: &SpgemmParams, r: u32, w: u32) -> u32 {
    unsafe { ld_global_nc_u32((p.records as *const u32).wrapping_add((r * p.rec_words + w) as usize)) }
}

/// Element offset of matrix `batch`'s values of A block `blk`, row `row`, column `col`.
#[inline(always)]
fn a_offset(p: &SpgemmParams, batch: u32, blk: u32, row: u32, col: u32) -> usize {
    // The block's start in 64 bits, the offset inside it (under 2^14) in 32: the chunks of one
    // block then share the wide part.
    batch as usize * p.a_batch_stride as usize + ((blk as usize) << (p.bm_log2 + p.bk_log2)) + ((row << p.bk_log2) + col) as usize
}

/// Element offset of matrix `batch`'s values of B block `blk`, row `row`, column `col`.
#[inline(always)]
fn b_offset(p: &SpgemmParams, batch: u32, blk: u32, row: u32, col: u32) -> usize {
    // As `a_offset`.
    batch as usize * p.b_batch_stride as usize + ((blk as usize) << (p.bk_log2 + p.bn_log2)) + ((row << p.bn_log2) + col) as usize
}

/// A block-sparse C's blocks `blk_begin .. blk_end` of matrix `batch`, from row `row0` of each.
#[inline(always)]
fn block_dest<O: Output>(p: &SpgemmParams, item: &WorkItem, row0: u32) -> BlockDest {
    let b = &p.blocks;
    let values = b.values + item.batch as u64 * b.batch_stride * core::mem::size_of::<O::Elem>() as u64;
    BlockDest::blocks::<O>(values, item.blk_begin, item.blk_end - item.blk_begin, 1 << b.bm_log2, b.bn_log2, row0, b.alpha, b.beta)
}

/// A portable thread block's item: virtual K runs over its records, bk deep each, so that a
/// stage holds `ks / bk` records of blocks shallower than a stage (16-deep blocks: two records
/// per 32-deep stage; before v38 each record took a whole stage, half of it zeros).
#[derive(Clone, Copy)]
pub struct PortableItem {
    item: WorkItem,
}

impl PortableItem {
    /// Word `w` of the record of virtual K `k` (word 0: its A block; 1 + j: the B block it
    /// meets at tile column block j), or [`NO_BLOCK`] past the item's last record (the last
    /// stage's tail).
    #[inline(always)]
    unsafe fn word_at(&self, p: &SpgemmParams, k: u32, w: u32) -> u32 {
        let r = self.item.k_begin + (k >> p.bk_log2);
        if r >= self.item.k_end { NO_BLOCK } else { unsafe { record_word(p, r, w) } }
    }

    /// Word `w` of the records of a 32-deep stage's two 16-deep halves (virtual K `k0` and
    /// `k0 + 16`). Each word is read unconditionally (a half past the item's last record reads
    /// that record's word, and [`HalfWords::live`] says it stands for [`NO_BLOCK`]): with the
    /// select after the load, each load's value was consumed at once, and the warps waited for
    /// the read a stage early (perf notes v40). Only for stages of the item (at least one
    /// record).
    #[inline(always)]
    unsafe fn half_words(&self, p: &SpgemmParams, k0: u32, w: u32) -> HalfWords {
        let r = [self.item.k_begin + (k0 >> p.bk_log2), self.item.k_begin + ((k0 + 16) >> p.bk_log2)];
        let last = self.item.k_end.saturating_sub(1);
        unsafe {
            HalfWords {
                words: [record_word(p, r[0].min(last), w), record_word(p, r[1].min(last), w)],
                live: [r[0] < self.item.k_end, r[1] < self.item.k_end],
            }
        }
    }

    /// The element offset in B's values of virtual K row `k` at the tile's column `tcol` (in
    /// the B block its record meets there), or `None` where the item has no record there or
    /// the record no B block (zeros).
    #[inline(always)]
    unsafe fn b_source(&self, p: &SpgemmParams, k: u32, tcol: u32) -> Option<usize> {
        let blk = unsafe { self.word_at(p, k, 1 + (tcol >> p.bn_log2)) };
        let kin = k & ((1 << p.bk_log2) - 1);
        (blk != NO_BLOCK).then(|| b_offset(p, self.item.batch, blk, kin, tcol & ((1 << p.bn_log2) - 1)))
    }
}

/// One record word per 16-deep half of a 32-deep stage, as read, and whether the half lies in
/// one of the item's records ([`PortableItem::half_words`]).
#[derive(Clone, Copy)]
pub struct HalfWords {
    words: [u32; 2],
    live: [bool; 2],
}

/// No record in either half.
impl Default for HalfWords {
    #[inline(always)]
    fn default() -> Self {
        HalfWords { words: [NO_BLOCK; 2], live: [false; 2] }
    }
}

impl HalfWords {
    /// The word of the first (`second` false) or second half, [`NO_BLOCK`] past the item's last
    /// record (selects, not an index: a variable index puts the arrays in local memory).
    #[inline(always)]
    fn half(self, second: bool) -> u32 {
        let (w, live) = if second { (self.words[1], self.live[1]) } else { (self.words[0], self.live[0]) };
        if live { w } else { NO_BLOCK }
    }
}

impl PortableOp for Spgemm {
    type Params = SpgemmParams;
    type Item = PortableItem;
    /// Per 16-row half of a 32-deep stage, its record's A block as read ([`HalfWords::half`]:
    /// [`NO_BLOCK`] past the item's last record).
    type AStage = HalfWords;
    /// Per 16-row half: the B block its record meets at the thread's column chunk
    /// ([`marked_b_chunk`]), as read (`half`: [`NO_BLOCK`] where none, or past the last record).
    type BStage = HalfWords;

    /// The tile's columns are those of `tn / bn` B blocks, most of them absent where B is
    /// sparse (16×16 blocks at 12.5 %: about 2 of a 256-wide tile's 16).
    const B_MARKS: bool = true;
    /// The stage's A and B blocks are record words in global memory, read a stage ahead.
    const STAGE_AHEAD: bool = true;

    #[inline(always)]
    fn warp_rings(p: &SpgemmParams) -> bool {
        p.warp_rings != 0
    }

    #[inline(always)]
    fn flags(_p: &SpgemmParams) -> u32 {
        0 // A K-major (its blocks row-major), B MN-major (its blocks row-major)
    }

    #[inline(always)]
    unsafe fn prepare(p: &SpgemmParams, _t: MmaTile, _cache: u32, _tid: u32) -> PortableItem {
        PortableItem { item: unsafe { this_block_item(&p.work) } }
    }

    #[inline(always)]
    fn k_stages(p: &SpgemmParams, it: &PortableItem, t: MmaTile) -> u32 {
        ((it.item.k_end - it.item.k_begin) << p.bk_log2).div_ceil(t.ks)
    }

    /// Form 1 where the stage is two halves of 16 K rows (32-deep stages, A K-major), each in
    /// one record (blocks are at least 16 deep, stages start at multiples of 32): the halves' A
    /// blocks, as read.
    #[inline(always)]
    unsafe fn a_stage<const A_MN: bool>(p: &SpgemmParams, it: &PortableItem, t: MmaTile, k0: u32) -> (HalfWords, u32) {
        if A_MN || t.ks != 32 {
            return (HalfWords::default(), 0);
        }
        unsafe { (it.half_words(p, k0, 0), 1) }
    }

    #[inline(always)]
    unsafe fn a_chunk<const A_MN: bool, const FORM: u32>(p: &SpgemmParams, it: &PortableItem, st: HalfWords, at: ChunkAt) -> Chunk {
        let ChunkAt { k0, row, chunk } = at;
        // K-major: row = M row of the block, chunk along its columns (K). (The op's flags never
        // ask for MN-major.)
        let values = p.a_values as *const u16;
        let k = k0 + 8 * chunk;
        let blk = if FORM == 1 {
            // Chunks 0-1 in the first half, 2-3 in the second.
            st.half(chunk >= 2)
        } else {
            unsafe { it.word_at(p, k, 0) }
        };
        if blk == NO_BLOCK {
            return Chunk::Whole(values as *const u8, false);
        }
        let kin = k & ((1 << p.bk_log2) - 1);
        Chunk::Whole(values.wrapping_add(a_offset(p, it.item.batch, blk, row, kin)) as *const u8, true)
    }

    /// Form 1 where the stage is two halves of 16 K rows (B MN-major, 32-deep stages): each half
    /// lies in one record, and each thread loads one column chunk ([`marked_b_chunk`]) on every
    /// row it copies, so it reads its B block once per half instead of once per chunk.
    #[inline(always)]
    unsafe fn b_stage<const B_K: bool>(p: &SpgemmParams, it: &PortableItem, t: MmaTile, k0: u32) -> (HalfWords, u32) {
        if B_K || t.ks != 32 {
            return (HalfWords::default(), 0);
        }
        let w = 1 + ((8 * marked_b_chunk(t)) >> p.bn_log2);
        unsafe { (it.half_words(p, k0, w), 1) }
    }

    /// Form 1: where the half's record has a B block at the thread's columns (a granule's two
    /// chunks lie in one block, blocks being at least 16 wide). Form 0 copies every chunk.
    #[inline(always)]
    fn b_present(st: HalfWords, form: u32, h: u32) -> bool {
        form != 1 || st.half(h != 0) != NO_BLOCK
    }

    #[inline(always)]
    unsafe fn b_chunk<const B_K: bool, const FORM: u32>(p: &SpgemmParams, it: &PortableItem, st: HalfWords, at: ChunkAt) -> Chunk {
        let ChunkAt { k0, row, chunk } = at;
        // MN-major: row = K row, chunk along the tile's columns; column block j of the tile is
        // the record's word 1 + j. (The op's flags never ask for K-major.)
        let values = p.b_values as *const u16;
        if FORM == 1 {
            // The half's block, at K row `row` of the stage. An absent block's chunks are not
            // copied: no warp reads its granule (`b_present`).
            let blk = st.half(row >= 16);
            let kin = (k0 + row) & ((1 << p.bk_log2) - 1);
            let at = b_offset(p, it.item.batch, blk, kin, (8 * chunk) & ((1 << p.bn_log2) - 1));
            return Chunk::IfPresent(values.wrapping_add(at) as *const u8, blk != NO_BLOCK);
        }
        match unsafe { it.b_source(p, k0 + row, 8 * chunk) } {
            Some(at) => Chunk::Whole(values.wrapping_add(at) as *const u8, true),
            None => Chunk::Whole(values as *const u8, false),
        }
    }

    #[inline(always)]
    unsafe fn store<O: Output>(p: &SpgemmParams, _it: &PortableItem, t: MmaTile, w: WarpTile, acc: &Acc) {
        // The item's descriptor read again (from L1 / L2): kept in registers through the main
        // loop, its fields that only the store needs spilled on the 32-row tile.
        let item = &unsafe { this_block_item(&p.work) };
        if item.partial_slot != NO_SLOT {
            unsafe { w.store_partial(partial_tile(&p.work, item.partial_slot, t.tm * t.tn), t.tn, acc) };
        } else if p.to == FIXUP_TO_DENSE {
            let d = DenseDest::tile::<O>(&p.out, item.batch, item.tile_row * t.tm + w.row0, item.n_tile * t.tn + w.col0);
            unsafe { w.store::<O, _>(&d, 0, acc) };
        } else {
            unsafe { w.store::<O, _>(&block_dest::<O>(p, item, w.row0), w.col0, acc) };
        }
    }
}

#[cfg(target_feature = "sm_90a")]
mod hopper {
    use super::*;
    use crate::core::epilogue::{ChunkTo, store_partial_strip, store_strip};
    use crate::core::hopper::{Consumer, HopperOp, MASK_A_SHARED, Maps, Slot, StageStream, load_a, load_b_box};
    use crate::core::work::ItemCursor;
    use crate::ptx::opaque;
    use crate::ptx_sm90::prefetch_l2;
    use blocksparse_abi::{BOX, MAX_A_GROUPS, SpgemmStage, WG_K, WG_M, WG_N, WgmmaTile, WorkParams};

    /// One stage: 64 K of one record (`kin` into its blocks), what it holds (`s`: each column
    /// group's A block and the B boxes that hold a block).
    #[derive(Clone, Copy)]
    pub struct Stage {
        batch: u32,
        record: u32,
        kin: u32,
        s: SpgemmStage,
    }

    /// The producer's stream: each item's records in order, `bk / 64` stages each, every
    /// `producers`-th of them from stage `producer` on. A record's words are read one of the
    /// producer's stages ahead, from L2: an item's records are prefetched there (by producer 0)
    /// when the item before it starts (a record read from DRAM on its first use left the
    /// producer, one thread, waiting a DRAM latency per stage: perf notes v14).
    pub struct SpgemmStages {
        items: ItemCursor,
        item: WorkItem,
        t: WgmmaTile,
        /// Next record and K offset inside it.
        r: u32,
        kin: u32,
        /// Stages to pass over (the other producers' share) before the next one fetched.
        skip: u32,
        pending: Option<Stage>,
        /// Whether this producer prefetches the items' records (the first one only: the
        /// others walk the same items).
        prefetches: bool,
    }

    /// Prefetches the records of `item` into L2.
    #[inline(always)]
    unsafe fn prefetch_records(p: &SpgemmParams, item: &WorkItem) {
        let (lo, hi) = (4 * (item.k_begin * p.rec_words) as u64, 4 * (item.k_end * p.rec_words) as u64);
        let mut at = lo & !127;
        while at < hi {
            unsafe { prefetch_l2(p.records + at) };
            at += 128;
        }
    }

    impl SpgemmStages {
        #[inline(always)]
        unsafe fn fetch(&mut self, p: &SpgemmParams) -> Option<Stage> {
            loop {
                while self.r >= self.item.k_end {
                    self.item = unsafe { self.items.next() }?;
                    self.r = self.item.k_begin;
                    self.kin = 0;
                    if self.prefetches
                        && let Some(next) = self.items.peek()
                    {
                        unsafe { prefetch_records(p, &next) };
                    }
                }
                if self.skip == 0 {
                    break;
                }
                // Pass over the other producers' stages, at most to the item's end.
                let left = (((self.item.k_end - self.r) << p.bk_log2) - self.kin) / WG_K;
                let step = self.skip.min(left);
                let kin = self.kin + step * WG_K;
                self.r += kin >> p.bk_log2;
                self.kin = kin & ((1 << p.bk_log2) - 1);
                self.skip -= step;
            }
            self.skip = <Self as StageStream>::producers(self.t) - 1;
            let (r, kin) = (self.r, self.kin);
            self.kin += WG_K;
            if self.kin >> p.bk_log2 != 0 {
                self.kin = 0;
                self.r += 1;
            }
            // Through `opaque`: the per-box word offsets would otherwise be hoisted out of the
            // stage loop into registers the producer, held to a few dozen by `setmaxnreg`,
            // cannot spare.
            let (bn_log2, gw) = (opaque(p.bn_log2), opaque(p.group_words));
            let groups = p.rec_words / gw;
            let mut a_blk = [NO_BLOCK; MAX_A_GROUPS];
            let mut g = 0;
            while g < MAX_A_GROUPS {
                if (g as u32) < groups {
                    a_blk[g] = unsafe { record_word(p, r, g as u32 * gw) };
                }
                g += 1;
            }
            let mut boxes = 0;
            let mut j = 0;
            while j < self.t.tn() / BOX {
                if unsafe { record_word(p, r, SpgemmStage::box_word(j, gw, bn_log2, SpgemmStage::group_cols(self.t))) } != NO_BLOCK {
                    boxes |= 1 << j;
                }
                j += 1;
            }
            Some(Stage { batch: self.item.batch, record: r, kin, s: SpgemmStage { a_blk, boxes } })
        }
    }

    impl StageStream for SpgemmStages {
        type Params = SpgemmParams;
        type Stage = Stage;

        #[inline(always)]
        unsafe fn new(p: &SpgemmParams, items: ItemCursor, t: WgmmaTile, producer: u32) -> Self {
            let prefetches = producer == 0;
            if prefetches && let Some(first) = items.peek() {
                unsafe { prefetch_records(p, &first) };
            }
            let mut s = SpgemmStages { items, item: WorkItem::default(), t, r: 0, kin: 0, skip: producer, pending: None, prefetches };
            s.pending = unsafe { s.fetch(p) };
            s
        }

        #[inline(always)]
        unsafe fn next(&mut self, p: &SpgemmParams) -> Option<Stage> {
            let current = self.pending.take()?;
            self.pending = unsafe { self.fetch(p) };
            Some(current)
        }

        /// One per slot, up to four: one thread issuing every stage (up to five record words
        /// and six boxes each) took longer than the tensor cores take to multiply it (on the
        /// column-split tile, 63 % of all warp samples were consumers at their full barrier
        /// and almost none the producer at its empty one: perf notes v26).
        #[inline(always)]
        fn wanted_producers(t: WgmmaTile) -> u32 {
            t.stages
        }

        /// On the column-split tile, where the records are not grouped: consumer `c` owns the
        /// tile's B boxes `2 c, 2 c + 1` (128 columns). On a zero-fill tile, the stage's mask
        /// is its present B boxes.
        #[inline(always)]
        fn skips(_p: &SpgemmParams, t: WgmmaTile) -> bool {
            t.n_split || t.zero_fill
        }

        /// Column-split tile: the consumers whose 128 columns hold a block of the stage; the
        /// others' B boxes are not loaded. Zero-fill tile: the present B boxes (bit `j`: box
        /// `j`), which alone are loaded, with the A slices of the groups that hold one.
        #[inline(always)]
        unsafe fn consumers(&self, _p: &SpgemmParams, s: &Stage, t: WgmmaTile) -> (u32, u32) {
            let s = s.s;
            let mask = if t.zero_fill { s.boxes | if s.a_shared(t) { MASK_A_SHARED } else { 0 } } else { s.split_consumers(t) };
            (mask, s.bytes(t))
        }

        #[inline(always)]
        unsafe fn issue(&self, p: &SpgemmParams, s: &Stage, maps: &Maps, t: WgmmaTile, slot: Slot, full: u32, consumers: u32) {
            // The tile is grouped (`a_groups` column groups of 128, one A slice each). A: the
            // values as an (nnzA · bm, bk) matrix, group g's K-major box at column kin of its
            // block's first row. B: the values as an (nnzB · bk, bn) matrix, box j at row
            // q · bk + kin, column (64 j) mod bn. A group whose list has ended, and an absent
            // B block, load from row `a_rows` / `b_rows`, past the end of the values: TMA fills
            // those boxes with zeros, and their products add nothing. On a zero-fill tile they
            // are not loaded at all: the consumer reads the zero box in their place (an
            // out-of-bounds box still moves its bytes from L2, perf notes v27).
            let (bn_log2, gw) = (opaque(p.bn_log2), opaque(p.group_words));
            unsafe {
                let mut g = 0;
                while g < t.a_groups {
                    if t.zero_fill && !s.s.loads_a(t, g) {
                        g += 1;
                        continue;
                    }
                    let blk = s.s.a_blk[g as usize];
                    let row = if blk != NO_BLOCK { blk << p.bm_log2 } else { p.a_rows };
                    let a_slot = Slot { a: slot.a + g * t.a_group_bytes(), b: slot.b };
                    load_a(maps, t, false, a_slot, s.kin, row, s.batch, full);
                    g += 1;
                }
                let mut j = 0;
                while j < t.tn() / BOX {
                    let n = (j * BOX) & ((1 << bn_log2) - 1);
                    let row = if (s.s.boxes >> j) & 1 != 0 {
                        (record_word(p, s.record, SpgemmStage::box_word(j, gw, bn_log2, SpgemmStage::group_cols(t))) << p.bk_log2) + s.kin
                    } else {
                        p.b_rows
                    };
                    // A consumer that skips the stage (column-split tile) reads none of its boxes;
                    // a zero-fill tile loads the present boxes only.
                    let wanted = if t.zero_fill { (s.s.boxes >> j) & 1 } else { (consumers >> (j / 2)) & 1 };
                    if wanted != 0 {
                        load_b_box(maps, t, false, slot, j, n, row, s.batch, full);
                    }
                    j += 1;
                }
            }
        }
    }

    impl Spgemm {
        /// Stores a consumer's `(64, 8 · J)` fragment (`N = 4 · J` accumulators) whose element
        /// (0, 0) is the tile's `(row, col)`: into the item's partial slot, a dense C or C's
        /// blocks.
        #[inline(always)]
        unsafe fn store_fragment<O: Output, const N: usize, const J: usize>(
            p: &SpgemmParams,
            item: &WorkItem,
            acc: &[f32; N],
            c: &Consumer,
            row: u32,
            col: u32,
        ) {
            let t = c.t;
            let (w, l) = (c.lt / 32, c.lt % 32);
            unsafe {
                if item.partial_slot != NO_SLOT {
                    let tile = partial_tile(&p.work, item.partial_slot, t.tm * t.tn());
                    store_partial_strip::<J>(tile, t.tn(), row + 16 * w, col, l, Consumer::frag(acc));
                } else if p.to == FIXUP_TO_DENSE {
                    c.store_dense_at::<O, N, J>(&p.out, item, acc, row, col);
                } else if t.c_buffers > 0 {
                    // Through the staging chunks and C's tensor map over its values (the
                    // fragment's first block `first`; `col` is a whole number of blocks).
                    let b = &p.blocks;
                    let first = item.blk_begin + (col >> b.bn_log2);
                    if first >= item.blk_end {
                        return; // the tile's blocks end before this fragment
                    }
                    let d = block_dest::<O>(p, &WorkItem { blk_begin: first, ..*item }, row);
                    let to = ChunkTo::Blocks { first, bm: 1 << b.bm_log2, bn_log2: b.bn_log2, row0: row };
                    c.stage.store::<O, _, N>(&d, &p.out, acc, to, item.batch, c.lt);
                } else {
                    let d = block_dest::<O>(p, item, row);
                    store_strip::<O, _, J>(&d, 16 * w, col, l, Consumer::frag(acc));
                }
            }
        }
    }

    impl HopperOp for Spgemm {
        type Params = SpgemmParams;
        type Stream = SpgemmStages;

        #[inline(always)]
        fn work(p: &SpgemmParams) -> &WorkParams {
            &p.work
        }

        #[inline(always)]
        fn flags(_p: &SpgemmParams) -> u32 {
            0
        }

        #[inline(always)]
        fn k_stages(p: &SpgemmParams, item: &WorkItem, _t: WgmmaTile) -> u32 {
            ((item.k_end - item.k_begin) << p.bk_log2) / WG_K
        }

        #[inline(always)]
        unsafe fn store<O: Output>(p: &SpgemmParams, item: &WorkItem, acc: &[f32; 128], c: &Consumer) {
            if c.t.n_split {
                // Consumer `wm` owns columns 128 wm ..: rows 0-63 in the first half of `acc`,
                // 64-127 in the second.
                // SAFETY: the two halves of `acc`, 64 f32 each at offsets 0 and 64, as arrays.
                let (lo, hi) = unsafe { (&*(acc.as_ptr() as *const [f32; 64]), &*(acc.as_ptr().add(64) as *const [f32; 64])) };
                let (item, col) = if p.paired != 0 && item.partial_slot == NO_SLOT {
                    // A paired plan: this consumer's C block is the item's `blk_begin` (consumer
                    // 0) or `blk_end` (consumer 1), none where the tile has one block (bn = 128:
                    // one C block per consumer).
                    let m = if c.wm == 0 { item.blk_begin } else { item.blk_end };
                    if m == NO_BLOCK {
                        return;
                    }
                    if p.to == FIXUP_TO_DENSE {
                        (WorkItem { n_tile: 0, ..*item }, m << p.bn_log2)
                    } else {
                        (WorkItem { blk_begin: m, blk_end: m + 1, ..*item }, 0)
                    }
                } else {
                    (*item, 128 * c.wm)
                };
                unsafe {
                    Self::store_fragment::<O, 64, 16>(p, &item, lo, c, 0, col);
                    Self::store_fragment::<O, 64, 16>(p, &item, hi, c, WG_M, col);
                }
            } else {
                unsafe { Self::store_fragment::<O, 128, 32>(p, item, acc, c, c.wm * WG_M, c.wn * WG_N) };
            }
        }
    }
}
