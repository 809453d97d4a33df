//! SpMM: `C = alpha · op(A) · op(B) + beta · C` with A block-sparse, on either kernel family.
//!
//! The plan streams A's blocks per output tile row: for op(A) = A the blocks of one block row
//! (stream position `q` is block `q`, `kidx[q]` its block column); for op(A) = Aᵀ the blocks
//! of one block column (position `q` is block `perm[q]`, `kidx[q]` its block row). With `kb`
//! the K extent of a block (bk for A, bm for Aᵀ), for the work item (tile row `r`, N tile `nt`,
//! positions `q0..q1`, matrix `b`):
//! ```text
//! for i in 0..tm, j in nt*tn .. min((nt+1)*tn, N):
//!     acc = 0
//!     for q in q0..q1, kk in 0..kb:
//!         blk = perm[q] (or q)
//!         a = values[b][blk][i][kk]   (A)     or   values[b][blk][kk][i]   (Aᵀ)
//!         acc += a * opB[b][kidx[q]*kb + kk][j]
//!     C[b][r*tm + i][j] = alpha*acc + beta*C[b][r*tm + i][j]      (or acc → partial slot)
//! ```
//! The item's blocks form one virtual K axis of length `(q1 - q0) · kb`, cut into stages: a
//! stage may hold several small blocks or part of a large one. Virtual k past the end is
//! zero-filled in both operands.
//!
//! A merged plan (`flags::A_MERGED`, `m = 1 << merge_log2`) stacks m stream rows in one tile
//! (`tm = m · rb`, rb = bm for A, bk for Aᵀ): position `q` is a block column of their union, and
//! tile rows `h · rb .. (h + 1) · rb` multiply block `perm[q · m + h]`, or zeros where that row
//! lacks the column (`NO_BLOCK`):
//! ```text
//! for h in 0..m, i in 0..rb, j in the N tile:
//!     acc = Σ_{q in q0..q1, perm[q·m + h] != NO_BLOCK} Σ_kk a(perm[q·m + h], i, kk) · opB[kidx[q]·kb + kk][j]
//!     C[b][r*tm + h*rb + i][j] = alpha*acc + beta*C[..][..]       (rows < M only)
//! ```
//! A reordered plan (`out.row_map`, see `DenseOut`) writes tile row `r*tm + h*rb + i` to C's
//! row `row_map[r*m + h]*rb + i` instead: its stream rows are A's in another order.

use blocksparse_abi::{MAX_ITEM_BLOCKS, MMA_TILES, MmaTile, NO_BLOCK, NO_SLOT, SpmmParams, WorkItem, flags};

use crate::core::epilogue::{DenseDest, partial_tile};
use crate::core::portable::{Acc, Chunk, ChunkAt, PortableOp, WarpTile};
use crate::core::work::this_block_item;
use crate::dtype::Output;
use crate::ptx::{ld_global_nc_u32, ld_shared_u32, opaque, st_shared_u32, trap};

/// The SpMM op.
pub struct Spmm;

/// log2 of the K extent of one block: bk for A, bm for Aᵀ.
#[inline(always)]
fn kb_log2(p: &SpmmParams) -> u32 {
    if p.flags & flags::A_PERMUTED != 0 { p.bm_log2 } else { p.bk_log2 }
}

/// log2 of the extent of one block along the tile's rows: bm for A, bk for Aᵀ.
#[inline(always)]
fn rb_log2(p: &SpmmParams) -> u32 {
    if p.flags & flags::A_PERMUTED != 0 { p.bk_log2 } else { p.bm_log2 }
}

/// Whether stream positions name their blocks through `perm` (Aᵀ, or a merged plan).
#[inline(always)]
fn tabled(p: &SpmmParams) -> bool {
    p.flags & (flags::A_PERMUTED | flags::A_MERGED) != 0
}

/// Merged stream rows per tile, log2 (0 when the plan is not merged).
#[inline(always)]
fn merge_log2(p: &SpmmParams) -> u32 {
    if p.flags & flags::A_MERGED != 0 { p.merge_log2 } else { 0 }
}

/// log2 of the K depth of a portable stage (every tile's `ks`; stages start at its multiples).
const STAGE_K_LOG2: u32 = 5;
const _: () = {
    let mut i = 0;
    while i < MMA_TILES.len() {
        assert!(MMA_TILES[i].ks == 1 << STAGE_K_LOG2);
        i += 1;
    }
};

/// Element offset of matrix `batch`'s values of block `blk`, row `row`, column `col`.
#[inline(always)]
fn a_offset(p: &SpmmParams, batch: u32, blk: u32, row: u32, col: u32) -> usize {
    batch as usize * p.a_batch_stride as usize + ((((blk as usize) << p.bm_log2) + row as usize) << p.bk_log2) + col as usize
}

/// A portable thread block's item and its stream: block `i` of the item is position
/// `blk_begin + i`, with its K-block index at `cache[i]` and its blocks (one per merged row `h`)
/// at `cache[MAX + i · m + h]`.
#[derive(Clone, Copy)]
pub struct PortableItem {
    item: WorkItem,
    cache: u32,
    /// Virtual K length `(q1 - q0) · kb`.
    ktot: u32,
    /// First column of the output tile.
    n0: u32,
}

impl PortableItem {
    /// K-block index of item block `i` (the rows of op(B) it meets).
    #[inline(always)]
    unsafe fn kblk(&self, i: u32) -> u32 {
        unsafe { ld_shared_u32(self.cache + 4 * i) }
    }
    /// The block of merged row `h` at item position `i` (its values), or `NO_BLOCK`.
    #[inline(always)]
    unsafe fn blk(&self, p: &SpmmParams, i: u32, h: u32) -> u32 {
        if tabled(p) {
            unsafe { ld_shared_u32(self.cache + 4 * (MAX_ITEM_BLOCKS + (i << merge_log2(p)) + h)) }
        } else {
            self.item.blk_begin + i
        }
    }
}

impl PortableOp for Spmm {
    type Params = SpmmParams;
    type Item = PortableItem;
    type AStage = u64;
    type BStage = [u64; 2];

    #[inline(always)]
    fn flags(p: &SpmmParams) -> u32 {
        p.flags
    }

    #[inline(always)]
    unsafe fn prepare(p: &SpmmParams, t: MmaTile, cache: u32, tid: u32) -> PortableItem {
        let item = unsafe { this_block_item(&p.work) };
        let nblk = item.blk_end - item.blk_begin;
        let ml = merge_log2(p);
        if nblk > MAX_ITEM_BLOCKS >> ml {
            trap(); // the planner never emits this
        }
        let kidx = p.kidx as *const u32;
        let perm = p.perm as *const u32;
        let mut i = tid;
        while i < nblk {
            let q = item.blk_begin + i;
            unsafe { st_shared_u32(cache + 4 * i, ld_global_nc_u32(kidx.wrapping_add(q as usize))) };
            i += t.threads();
        }
        if tabled(p) {
            // (nblk, m) block words.
            let (first, words) = (item.blk_begin << ml, nblk << ml);
            let mut w = tid;
            while w < words {
                unsafe { st_shared_u32(cache + 4 * (MAX_ITEM_BLOCKS + w), ld_global_nc_u32(perm.wrapping_add((first + w) as usize))) };
                w += t.threads();
            }
        }
        PortableItem { item, cache, ktot: nblk << kb_log2(p), n0: item.n_tile * t.tn }
    }

    #[inline(always)]
    fn k_stages(_p: &SpmmParams, it: &PortableItem, t: MmaTile) -> u32 {
        it.ktot.div_ceil(t.ks)
    }

    /// Where A streams as stored (K-major, not merged: the tile's rows are one block's) with
    /// blocks at least 32 deep, the stage's A slice lies in one block: the element offset of
    /// its row 0 at the stage's first K (form 1), so that a chunk adds only its row and column.
    /// Not on the tiles whose warps hold one m16 fragment (the 16-row tile, which runs 16-deep
    /// blocks: its code stays that of the per-chunk form, perf notes v29 and v30).
    #[inline(always)]
    unsafe fn a_stage<const A_MN: bool>(p: &SpmmParams, it: &PortableItem, t: MmaTile, k0: u32) -> (u64, u32) {
        let kb_log2 = kb_log2(p);
        if A_MN || t.warp_m() == 16 || tabled(p) || kb_log2 < STAGE_K_LOG2 {
            return (0, 0);
        }
        // A stage the ring loads starts inside the item's K, so its block is the item's.
        let blk = it.item.blk_begin + (k0 >> kb_log2);
        (a_offset(p, it.item.batch, blk, 0, k0 & ((1 << kb_log2) - 1)) as u64, 1)
    }

    #[inline(always)]
    unsafe fn a_chunk<const A_MN: bool, const FORM: u32>(p: &SpmmParams, it: &PortableItem, st: u64, at: ChunkAt) -> Chunk {
        let ChunkAt { k0, row, chunk } = at;
        if FORM == 1 {
            // K-major, one block: row = M row of the tile, chunk along K from `st`.
            let min = row & ((1 << rb_log2(p)) - 1);
            let off = st + ((min as u64) << p.bk_log2) + 8 * chunk as u64;
            return Chunk::Whole((p.a_values as *const u16).wrapping_add(off as usize) as *const u8, true);
        }
        let kb_log2 = kb_log2(p);
        // K-major (A): row = M row of the tile, chunk along the block's columns (K).
        // MN-major (Aᵀ): row = K = a row of the block, chunk along its columns (M).
        let (k, m) = if A_MN { (k0 + row, 8 * chunk) } else { (k0 + 8 * chunk, row) };
        let values = p.a_values as *const u16;
        if k >= it.ktot {
            return Chunk::Whole(values as *const u8, false);
        }
        let (i, kin) = (k >> kb_log2, k & ((1 << kb_log2) - 1));
        // The merged row of tile row m, and m inside its block.
        let rb_log2 = rb_log2(p);
        let (h, min) = (m >> rb_log2, m & ((1 << rb_log2) - 1));
        let blk = unsafe { it.blk(p, i, h) };
        if blk == NO_BLOCK {
            return Chunk::Whole(values as *const u8, false);
        }
        let off = if A_MN { a_offset(p, it.item.batch, blk, kin, min) } else { a_offset(p, it.item.batch, blk, min, kin) };
        Chunk::Whole(values.wrapping_add(off) as *const u8, true)
    }

    /// Where the tile's columns all lie inside op(B)'s (no tail chunks), the stage's 32 K rows
    /// lie in one block (blocks at least 32 deep: the stages start at multiples of 32; form 1)
    /// or in two (16 deep, both inside the item's K; form 2). Per block, the element offset in
    /// op(B) of matrix `batch` of the stage's first K row in it (row `brow` of an MN-major
    /// op(B), column `brow` of a K-major one): a chunk then adds only its own row and column
    /// and copies a whole chunk. Form 2 on the tiles whose warps hold one m16 fragment only: on
    /// the 32-row tile it spilled (perf notes v29); there 16-deep blocks keep the per-chunk
    /// form 0, as do the tiles with a column tail and a last stage with one 16-deep block.
    #[inline(always)]
    unsafe fn b_stage<const B_K: bool>(p: &SpmmParams, it: &PortableItem, t: MmaTile, k0: u32) -> ([u64; 2], u32) {
        let kb_log2 = kb_log2(p);
        let batch = it.item.batch as u64 * p.b_batch_stride;
        let ldb = if B_K { 1 } else { p.ldb as u64 };
        // The offset of K offset `k` (inside the item) of block `k >> kb_log2`, if inside the
        // item's K.
        let at = |k: u32| {
            (k < it.ktot).then(|| {
                let kblk = unsafe { it.kblk(k >> kb_log2) };
                batch + (((kblk << kb_log2) + (k & ((1 << kb_log2) - 1))) as u64) * ldb
            })
        };
        let per_chunk = ([0; 2], 0);
        if it.n0 + t.tn > p.out.cols {
            per_chunk
        } else if kb_log2 >= STAGE_K_LOG2 {
            // A stage the ring loads starts inside the item's K, so `at(k0)` is a block's.
            at(k0).map_or(per_chunk, |first| ([first, 0], 1))
        } else if t.warp_m() == 16 {
            // Both blocks inside the item's K, or the per-chunk form (an item's last stage
            // with an odd count of 16-deep blocks).
            match (at(k0), at(k0 + (1 << kb_log2))) {
                (Some(first), Some(second)) => ([first, second], 2),
                _ => per_chunk,
            }
        } else {
            per_chunk
        }
    }

    #[inline(always)]
    unsafe fn b_chunk<const B_K: bool, const FORM: u32>(p: &SpmmParams, it: &PortableItem, st: [u64; 2], at: ChunkAt) -> Chunk {
        let ChunkAt { k0, row, chunk } = at;
        let kb_log2 = kb_log2(p);
        let n_total = p.out.cols;
        let n0 = it.n0;
        let b = p.b as *const u16;
        // MN-major: row = K row of op(B), chunk along N. K-major: row = N, chunk along K. The
        // chunk's K offset in the stage.
        let (kin, n) = if B_K { (8 * chunk, n0 + row) } else { (row, n0 + 8 * chunk) };
        if FORM != 0 {
            // Its block's offset and its K offset there; every column inside op(B).
            let (base, kin) =
                if FORM == 1 { (st[0], kin) } else { (if kin >> kb_log2 == 0 { st[0] } else { st[1] }, kin & ((1 << kb_log2) - 1)) };
            let off = if B_K { base + n as u64 * opaque(p.ldb) as u64 + kin as u64 } else { base + kin as u64 * p.ldb as u64 + n as u64 };
            return Chunk::Whole(b.wrapping_add(off as usize) as *const u8, true);
        }
        // Form 0: the chunk finds its block itself.
        let k = k0 + kin;
        let b = b.wrapping_add(it.item.batch as usize * p.b_batch_stride as usize);
        if k >= it.ktot || n >= n_total {
            return if B_K { Chunk::Whole(b as *const u8, false) } else { Chunk::Part(b as *const u8, 0) };
        }
        let brow = ((unsafe { it.kblk(k >> kb_log2) } << kb_log2) + (k & ((1 << kb_log2) - 1))) as usize;
        if B_K {
            // The stride through `opaque`: otherwise the row offsets of a thread's chunks are
            // hoisted out of the K loop into registers the tile cannot spare.
            Chunk::Whole(b.wrapping_add(n as usize * opaque(p.ldb) as usize + brow) as *const u8, true)
        } else {
            Chunk::Part(b.wrapping_add(brow * p.ldb as usize + n as usize) as *const u8, (n_total - n).min(8) * 2)
        }
    }

    #[inline(always)]
    unsafe fn store<O: Output>(p: &SpmmParams, it: &PortableItem, t: MmaTile, w: WarpTile, acc: &Acc) {
        let item = &it.item;
        if item.partial_slot == NO_SLOT {
            let row0 = item.tile_row * t.tm + w.row0;
            // The rows of a merged tile past the last stream row do not exist (the planner
            // merges only where a warp's rows lie inside one stream row, so a row-mapped C
            // maps them whole).
            if row0 >= p.out.rows {
                return;
            }
            let d = unsafe { DenseDest::mapped::<O>(&p.out, item.batch, row0, 0, item.n_tile * t.tn + w.col0) };
            unsafe { w.store::<O, _>(&d, 0, acc) };
        } else {
            unsafe { w.store_partial(partial_tile(&p.work, item.partial_slot, t.tm * t.tn), t.tn, acc) };
        }
    }
}

#[cfg(target_feature = "sm_90a")]
mod hopper {
    use super::*;
    use crate::core::hopper::{Consumer, HopperOp, Maps, Slot, StageStream, load_a, load_b_box};
    use crate::core::work::ItemCursor;
    use crate::ptx::{ballot, shfl_idx, thread_idx};
    use crate::ptx_sm90::tma_load_3d;
    use blocksparse_abi::{
        BLOCK_SIZES, BOX, PACKED_ROW, WG_K, WG_M, WGMMA_SHALLOW_TILES, WGMMA_TILE_ROWS, WGMMA_TILES, WgmmaTile, WorkParams,
    };

    /// Stream rows of a merged Hopper tile at most: the planner merges rows of at least `ks`
    /// rows (a 64-row box on the 64-deep tiles, `ks` rows on the shallow ones), `tm / ks` per
    /// tile: 8 on the 16-deep tile. (A tile with fewer uses the first `tm / ks` words of a
    /// stage's `blk`; the others stay constant and cost no registers.)
    const MAX_MERGED: usize =
        (WGMMA_TILE_ROWS[WGMMA_TILE_ROWS.len() - 1] / WGMMA_TILES[WGMMA_SHALLOW_TILES[WGMMA_SHALLOW_TILES.len() - 1]].ks) as usize;

    /// Stages whose block indices are in flight ahead of the one being issued. A stage's
    /// indices are independent global loads (L2 latency when they miss L1); a 32-deep stage of
    /// the 128 x 256 tile is multiplied in about 512 cycles, less than that latency, so with
    /// one stage ahead a producer that fell behind could not catch up (perf notes v16). Three
    /// stages of the 32-deep tile's four merged rows no longer fit the producer's 56
    /// registers (`PRODUCER_REGS`; build-ptx reports the spill).
    const AHEAD: usize = 2;

    /// Whether tile `t` merges more than four rows (the 16-deep tile: eight block indices per
    /// stage). Its producers are whole warps ([`StageStream::warp_wide`]): lane h loads row
    /// h's index and the issuing lane gathers them, since [`AHEAD`] stages of eight indices in
    /// one thread do not fit the producer's registers (the first build spilled 264 bytes; with
    /// no look-ahead the tile ran 14-17 % slower, perf notes v18).
    #[inline(always)]
    const fn many_rows(t: WgmmaTile) -> bool {
        t.tm / t.ks > 4
    }

    // `Stage::n_kin` holds a K offset inside a block in 8 bits, and the tile index in the rest.
    const _: () = {
        let mut i = 0;
        while i < BLOCK_SIZES.len() {
            assert!(BLOCK_SIZES[i] <= 256);
            i += 1;
        }
        let mut t = 0;
        while t < WGMMA_TILES.len() {
            assert!(WGMMA_TILES[t].tn() >= 256);
            t += 1;
        }
    };

    /// The producer's stream of K stages over this block's items. Global reads are issued
    /// ahead of their use, so their latency hides behind the barrier waits and TMA issues of
    /// the stages before: each item's descriptor one item ahead, each stage's block indices
    /// [`AHEAD`] stages ahead.
    pub struct SpmmStages {
        items: ItemCursor,
        t: WgmmaTile,
        /// The item being walked, its stage count and the next stage.
        item: WorkItem,
        n_k: u32,
        kt: u32,
        /// Stages (of this block, the other producers') to pass over before the next fetch.
        skip: u32,
        /// The next stages to hand out, in order (`None` past the end).
        ahead: [Option<Stage>; AHEAD],
    }

    /// One stage: the item's output tile and batch, the K offset inside the current block, the
    /// block of each merged row (`blk[0]` alone when the plan is not merged; on a warp-wide
    /// tile, lane h's `blk[0]` is row h's block; `NO_BLOCK`: zeros) and their K-block index.
    /// (The tile and the offset share a word, `n_tile << 8 | kin`: `kin` < the largest block
    /// size, 128, and `n_tile < 2^23` as the host limits N to `i32::MAX` and tiles are at
    /// least 256 wide; [`AHEAD`] stages must fit the producer's registers.)
    #[derive(Clone, Copy)]
    pub struct Stage {
        n_kin: u32,
        batch: u32,
        blk: [u32; MAX_MERGED],
        kblk: u32,
    }

    /// Whether merged row `h` of a stage exists: the tile holds `tm / ks` rows of `ks`-row boxes,
    /// the plan merges `1 << ml` block rows.
    #[inline(always)]
    fn merged_row(t: WgmmaTile, ml: u32, h: u32) -> bool {
        h < t.tm / t.ks && h < 1 << ml
    }

    /// The consumers (bit `c`: consumer warpgroup `c`, rows `64 · (c / wg_n)` of the tile) whose
    /// rows hold a block somewhere in a stage of a merged plan, from the stage's rows holding one
    /// (bit `h`: merged row `h`, of `1 << rb_log2` rows).
    #[inline(always)]
    fn consumer_mask(t: WgmmaTile, rb_log2: u32, rows: u32) -> u32 {
        // Merged rows per consumer row group (merged rows are at most WG_M tall).
        let per = WG_M >> rb_log2;
        let mut mask = 0;
        let mut c = 0;
        while c < t.consumers() {
            if (rows >> ((c / t.wg_n) * per)) & ((1 << per) - 1) != 0 {
                mask |= 1 << c;
            }
            c += 1;
        }
        mask
    }

    /// Whether the consumers of `mask` include those of tile row group `wm` (64 rows).
    #[inline(always)]
    fn rows_multiplied(t: WgmmaTile, mask: u32, wm: u32) -> bool {
        mask & (1 << (wm * t.wg_n)) != 0
    }

    /// The merged rows (bit `h`, rows of `1 << rb_log2`) that the consumers of `mask` multiply.
    #[inline(always)]
    fn multiplied_rows(t: WgmmaTile, rb_log2: u32, mask: u32) -> u32 {
        let per = WG_M >> rb_log2;
        let mut rows = 0;
        let mut wm = 0;
        while wm < t.tm / WG_M {
            if rows_multiplied(t, mask, wm) {
                rows |= ((1 << per) - 1) << (wm * per);
            }
            wm += 1;
        }
        rows
    }

    impl SpmmStages {
        /// The stage after the last one fetched, with its index loads issued.
        #[inline(always)]
        unsafe fn fetch(&mut self, p: &SpmmParams) -> Option<Stage> {
            loop {
                while self.kt >= self.n_k {
                    self.item = unsafe { self.items.next() }?;
                    self.n_k = <Spmm as HopperOp>::k_stages(p, &self.item, self.t);
                    self.kt = 0;
                }
                if self.skip == 0 {
                    break;
                }
                let step = self.skip.min(self.n_k - self.kt);
                self.kt += step;
                self.skip -= step;
            }
            self.skip = <Self as StageStream>::producers(self.t) - 1;
            let kb_log2 = kb_log2(p);
            let k = self.kt * self.t.ks;
            self.kt += 1;
            let q = self.item.blk_begin + (k >> kb_log2);
            let kblk = unsafe { ld_global_nc_u32((p.kidx as *const u32).wrapping_add(q as usize)) };
            let mut blk = [NO_BLOCK; MAX_MERGED];
            if tabled(p) {
                let ml = merge_log2(p);
                let words = (p.perm as *const u32).wrapping_add((q << ml) as usize);
                if many_rows(self.t) {
                    // Warp-wide: lane h holds merged row h's block (`issue` gathers them).
                    let h = thread_idx() % 32;
                    if merged_row(self.t, ml, h) {
                        blk[0] = unsafe { ld_global_nc_u32(words.wrapping_add(h as usize)) };
                    }
                } else {
                    let mut h = 0;
                    while h < MAX_MERGED {
                        if merged_row(self.t, ml, h as u32) {
                            blk[h] = unsafe { ld_global_nc_u32(words.wrapping_add(h)) };
                        }
                        h += 1;
                    }
                }
            } else {
                blk[0] = q;
            }
            Some(Stage { n_kin: self.item.n_tile << 8 | (k & ((1 << kb_log2) - 1)), batch: self.item.batch, blk, kblk })
        }
    }

    impl StageStream for SpmmStages {
        type Params = SpmmParams;
        type Stage = Stage;
        /// Where the plan says so ([`flags::A_SKIPS`]): a merged tile's consumer whose rows all
        /// lack the stage's block column skips it.
        #[inline(always)]
        fn skips(p: &SpmmParams, _t: WgmmaTile) -> bool {
            p.flags & flags::A_SKIPS != 0
        }

        /// The consumers whose rows hold a block of the stage; the A boxes of the others are not
        /// loaded. (Every consumer where the rows are not merged.)
        #[inline(always)]
        unsafe fn consumers(&self, p: &SpmmParams, s: &Stage, t: WgmmaTile) -> (u32, u32) {
            let rb_log2 = rb_log2(p);
            // (Merged rows are at most WG_M tall; a shallow tile may stream taller blocks
            // unmerged.)
            if p.flags & flags::A_MERGED == 0 || rb_log2 > WG_M.trailing_zeros() {
                return (u32::MAX, t.stage_bytes());
            }
            let rows = if many_rows(t) {
                // Warp-wide: lane h holds merged row h's block (NO_BLOCK past the rows).
                ballot((s.blk[0] != NO_BLOCK) as u32)
            } else {
                let mut rows = 0;
                let mut h = 0;
                while h < MAX_MERGED {
                    if s.blk[h] != NO_BLOCK {
                        rows |= 1 << h;
                    }
                    h += 1;
                }
                rows
            };
            // (`opaque`: the row-group shifts are not hoisted out of the producer loop.)
            let mask = consumer_mask(t, opaque(rb_log2), rows);
            // Each row group left out is WG_M rows of A not loaded.
            let mut bytes = t.stage_bytes();
            let mut wm = 0;
            while wm < t.tm / WG_M {
                if !rows_multiplied(t, mask, wm) {
                    bytes -= WG_M * t.k_row_bytes();
                }
                wm += 1;
            }
            (mask, bytes)
        }
        /// Two: a 32-deep stage of four merged rows takes eight boxes, whose issue from one
        /// thread took longer than the tensor cores take to multiply the stage (perf notes v16).
        /// Four on the 16-deep tile: twelve boxes per stage of half the work.
        #[inline(always)]
        fn wanted_producers(t: WgmmaTile) -> u32 {
            if many_rows(t) { 4 } else { 2 }
        }

        /// The 16-deep tile's eight block indices per stage: one per lane, so that
        /// [`AHEAD`] stages fit the producer's registers.
        #[inline(always)]
        fn warp_wide(t: WgmmaTile) -> bool {
            many_rows(t)
        }

        #[inline(always)]
        unsafe fn new(p: &SpmmParams, items: ItemCursor, t: WgmmaTile, producer: u32) -> Self {
            let mut s = SpmmStages { items, t, item: WorkItem::default(), n_k: 0, kt: 0, skip: producer, ahead: [None; AHEAD] };
            let mut i = 0;
            while i < AHEAD {
                s.ahead[i] = unsafe { s.fetch(p) };
                i += 1;
            }
            s
        }

        #[inline(always)]
        unsafe fn next(&mut self, p: &SpmmParams) -> Option<Stage> {
            let current = self.ahead[0]?;
            // A shift by constant indices (unrolled), so the stages stay in registers.
            let mut i = 0;
            while i + 1 < AHEAD {
                self.ahead[i] = self.ahead[i + 1];
                i += 1;
            }
            self.ahead[AHEAD - 1] = unsafe { self.fetch(p) };
            Some(current)
        }

        #[inline(always)]
        unsafe fn issue(&self, p: &SpmmParams, s: &Stage, maps: &Maps, t: WgmmaTile, slot: Slot, full: u32, consumers: u32) {
            let a_mn = p.flags & flags::A_MN_MAJOR != 0;
            let b_k = p.flags & flags::B_K_MAJOR != 0;
            let (n_tile, kin) = (s.n_kin >> 8, s.n_kin & 0xff);
            let b_row = (s.kblk << kb_log2(p)) + kin;
            let n0 = n_tile * t.tn();
            unsafe {
                // The A map is the values as a (nnzb · bm, bk) matrix: a K-major box starts at
                // column kin of the block's first row; MN-major boxes at row kin of the block.
                if t.ks == WG_K && p.flags & flags::A_MERGED == 0 {
                    let blk_row = s.blk[0] << p.bm_log2;
                    let (k, m) = if a_mn { (blk_row + kin, 0) } else { (kin, blk_row) };
                    load_a(maps, t, a_mn, slot, k, m, s.batch, full);
                } else {
                    // One box per merged row h, rows h · rb .. of the tile, rb · ks elements: a
                    // (ks, rb) K-major map box (rows of k_row_bytes), or an MN-major (Aᵀ) one of
                    // ks rows of the block from row kin, rb wide (the 64-deep tiles: (64, 64),
                    // rb = 64; the shallow ones: rb ≤ 64, the planner's bound); a row without a block there loads
                    // from row `a_rows`, past the end of the values: TMA fills the box with
                    // zeros without reading memory.
                    // A tile that takes A through registers, with blocks exactly ks wide (bk =
                    // ks, `WgmmaTile::a_packed`), maps the values as rows of PACKED_ROW elements
                    // (the host's choice for that case too): value row r (of ks elements) lies in map row r · ks /
                    // PACKED_ROW, and a box is whole map rows: a K-major block's bm · ks /
                    // PACKED_ROW (kin is 0), or an MN-major (Aᵀ, rb = ks) box's ks · ks /
                    // PACKED_ROW from row kin of the block.
                    let packed = t.a_packed(1 << p.bk_log2);
                    let rb_log2 = rb_log2(p);
                    // Warp-wide (many rows): gather the rows' blocks from their lanes; lane 0
                    // issues.
                    let mut blks = s.blk;
                    if many_rows(t) {
                        let mut h = 0;
                        while h < MAX_MERGED {
                            blks[h] = shfl_idx(s.blk[0], h as u32);
                            h += 1;
                        }
                        if !thread_idx().is_multiple_of(32) {
                            return;
                        }
                    }
                    // Rows of a consumer that skips the stage are not loaded. (`opaque`: the
                    // row masks are not hoisted out of the producer loop into registers.)
                    let loaded = if consumers == u32::MAX { u32::MAX } else { multiplied_rows(t, opaque(rb_log2), consumers) };
                    let mut h = 0;
                    while h < t.tm / t.ks {
                        if h < t.tm >> rb_log2 && loaded & (1 << h) != 0 {
                            let blk = blks[h as usize];
                            let row = if blk != NO_BLOCK { blk << p.bm_log2 } else { p.a_rows };
                            let (x, y) = if packed {
                                (0, (row + kin) >> (PACKED_ROW / t.ks).trailing_zeros())
                            } else if a_mn {
                                (0, row + kin)
                            } else {
                                (kin, row)
                            };
                            tma_load_3d(slot.a + (h << rb_log2) * t.k_row_bytes(), maps.a, x, y, s.batch, full);
                        }
                        h += 1;
                    }
                }
                let mut j = 0;
                while j < t.tn() / BOX {
                    load_b_box(maps, t, b_k, slot, j, n0 + j * BOX, b_row, s.batch, full);
                    j += 1;
                }
            }
        }
    }

    impl HopperOp for Spmm {
        type Params = SpmmParams;
        type Stream = SpmmStages;

        #[inline(always)]
        fn work(p: &SpmmParams) -> &WorkParams {
            &p.work
        }

        #[inline(always)]
        fn flags(p: &SpmmParams) -> u32 {
            p.flags
        }

        #[inline(always)]
        fn k_stages(p: &SpmmParams, item: &WorkItem, t: WgmmaTile) -> u32 {
            ((item.blk_end - item.blk_begin) << kb_log2(p)) / t.ks
        }

        /// A shallow tile loads Aᵀ in one `(ks, rb)` box per merged row.
        #[inline(always)]
        fn a_mn_width(p: &SpmmParams, t: WgmmaTile) -> u32 {
            if t.ks < WG_K { 1 << rb_log2(p) } else { BOX }
        }

        #[inline(always)]
        unsafe fn store<O: Output>(p: &SpmmParams, item: &WorkItem, acc: &[f32; 128], c: &Consumer) {
            unsafe {
                if item.partial_slot == NO_SLOT {
                    // A merged tile's rows past the last stream row (whole warpgroups) do not
                    // exist. (Only tiles of several warpgroups' rows are merged: the 64-row
                    // tile keeps its store free of the branch, which would cost it ptxas's
                    // divergence handling around the quad-transpose shuffles.)
                    if c.t.tm > WG_M && item.tile_row * c.t.tm + c.wm * WG_M >= p.out.rows {
                        return;
                    }
                    c.store_dense::<O>(&p.out, item, acc);
                } else {
                    c.store_partial(&p.work, item.partial_slot, acc);
                }
            }
        }
    }
}
