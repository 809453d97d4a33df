//! BSR × BSR (SpGEMM): `C = alpha · A · B + beta · C` with A `(M, K)` in `(bm, bk)` blocks and
//! B `(K, N)` in `(bk, bn)` blocks, both block-sparse, and C either dense `(M, N)` (either
//! layout) or block-sparse in `(bm, bn)` blocks: with the product's own pattern (every block
//! that receives at least one pair) or a pattern the caller gives (a masked product).
//!
//! ```text
//! for each matrix b, block row i, C block (i, j) of the output (every (i, j) for a dense C):
//!     acc = Σ_{p in A's row i, q in B's row k = col(p), col(q) = j, in increasing k} A[b].block(p) · B[b].block(q)
//!     C[b](i, j) = alpha·acc + beta·C[b](i, j)                 (C not read when beta == 0)
//! ```
//! Blocks of a dense C that receive no pair are written as `beta · C`; so are blocks of a BSR
//! C whose pairs are all absent. Blocks outside a caller's pattern are not computed.
//!
//! The plan (the symbolic phase, [`Context::plan_spgemm`], once per pair of patterns) lists each
//! output tile's *stage records*: per column group of the tile (the whole tile on the portable
//! kernel, each 128 columns on the Hopper kernel), an A block of the tile's block row that meets
//! at least one B block under the group, with the B block met at each of the group's column
//! blocks (or none), in increasing K; the groups' lists run side by side, the shorter ones
//! padded. The kernels stream those records through the op core: A's blocks and the B blocks
//! present are loaded, absent ones are zeros (`cp.async` zero fill; TMA boxes past the end of
//! the values) and multiplied as such, so the work is the records', not the pairs' (perf notes
//! v14). Long record lists are split into pieces summed by the fix-up kernel in a fixed order:
//! the result is deterministic.

use core::ops::Range;
use std::sync::Arc;

use blocksparse_abi::{
    BOX, BlockOut, DenseOut, FIXUP_TO_BLOCKS, FIXUP_TO_DENSE, HopperParams, KernelFamily, MAX_A_GROUPS, MMA_TILES, MmaTile, NO_BLOCK,
    NO_SLOT, OpKind, SpgemmParams, SpgemmStage, SplitGroup, WARP_N, WG_K, WG_M, WGMMA_TILES, WgmmaTile, WorkItem, mma_tile_index,
    wgmma_tile_index,
};
use cudarc::driver::{CudaSlice, DevicePtr};

use super::spgemm_dense_b::{DenseB, dense_b_device_bytes, dense_b_fits, dense_b_may_pay, dense_b_pays, route_variant};
use super::{PlanOptions, TileChoice, c_store_map, check_scalars, dense_out, expect, expect_batch, to_u32};
use crate::bsr::BlockShape;
use crate::context::Context;
use crate::device_bsr::{DeviceBsr, Pattern};
use crate::element::{Element, InputElement};
use crate::error::{Error, Result};
use crate::kernels::KernelKey;
use crate::launch::{Params, launch};
use crate::matrix::MatMut;
use crate::pairs::{self, BlockPattern};
use crate::plan::{DeviceWork, WorkList, heavy_first, schedule_persistent, schedule_persistent_lpt_tail};

// SAFETY: the op's `#[repr(C)]` parameter block from `blocksparse-abi`, taken by value by its
// kernels.
unsafe impl Params for SpgemmParams {}

/// What C of a sparse × sparse product is.
#[derive(Clone)]
pub enum SpgemmOutput {
    /// A dense `(M, N)` matrix, row- or column-major ([`Context::spgemm`]).
    Dense,
    /// Block-sparse in `(bm, bn)` blocks with the product's own pattern: every block that
    /// receives at least one pair ([`Context::spgemm_bsr`], with C from
    /// [`Context::spgemm_output`]).
    Product,
    /// Block-sparse with the caller's pattern (a masked product: blocks outside it are not
    /// computed, blocks inside it without a pair are written as `beta · C`), e.g.
    /// `c.pattern().clone()` of the C it will write ([`Context::spgemm_bsr`]).
    Mask(Arc<Pattern>),
}

impl core::fmt::Debug for SpgemmOutput {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SpgemmOutput::Dense => f.write_str("Dense"),
            SpgemmOutput::Product => f.write_str("Product"),
            SpgemmOutput::Mask(p) => write!(f, "Mask({} blocks)", p.nnzb()),
        }
    }
}

/// The size of a product's plan, known before anything proportional to it is allocated
/// ([`Context::spgemm_size`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpgemmSize {
    /// Block multiply-adds per matrix (each `2 · bm · bk · bn` flops).
    pub pairs: usize,
    /// Blocks of a block-sparse C (of a dense C: its `(M / bm) · (N / bn)` blocks).
    pub c_blocks: usize,
    /// Stage records of the plan (each one A block per column group of a tile and the B blocks
    /// it meets there; 0 for a plan that streams B dense, [`PlanOptions::dense_b`]).
    pub records: usize,
    /// Output tiles (work items before splitting), per matrix (0 for a plan that streams B
    /// dense).
    pub tiles: usize,
    /// Bytes of device memory the plan takes: its records, one work item per output tile and
    /// matrix, and a product-pattern C's column indices (with B streamed dense: B dense, the
    /// product workspace of a block-sparse C, the cell maps and the SpMM plan at its bounds,
    /// instead of the records and items). Splitting the longest tiles (decided
    /// when the plan is made, for the GPU's size) adds a few items and partial tiles per SM:
    /// [`SpgemmPlan::device_bytes`] has the exact total.
    pub device_bytes: usize,
    /// Peak bytes of host memory the planner uses (more with more threads:
    /// [`PlanOptions::threads`], whose default depends on the host).
    pub host_bytes: usize,
}

/// A plan for `C = alpha · A · B + beta · C` at one pair of patterns (and a mask, for a masked
/// product) and one batch size: C's pattern for a block-sparse C, and the stage records of
/// every output tile, how they are dealt to the GPU and the split-K workspace (or, streaming B
/// dense, the SpMM plan and its workspaces: [`PlanOptions::dense_b`]). Products with new
/// values of the same patterns reuse it, one at a time (a product queued on another stream
/// waits for the previous one of the same plan).
pub struct SpgemmPlan {
    a_pattern: Arc<Pattern>,
    b_pattern: Arc<Pattern>,
    /// C's pattern (block-sparse C).
    c_pattern: Option<Arc<Pattern>>,
    /// Whether the plan made C's pattern (the product's own) and holds its column indices.
    product_pattern: bool,
    batch: usize,
    size: SpgemmSize,
    choice: TileChoice,
    /// How its products run.
    route: Route,
}

/// How a plan's products run: the BSR × BSR kernels over the stage records, or B streamed
/// dense into the SpMM kernels ([`PlanOptions::dense_b`]).
enum Route {
    Records(RecordsRoute),
    DenseB(DenseB),
}

/// The records' route: the stage records of every output tile and how they are dealt to the
/// GPU, with the split-K workspace.
struct RecordsRoute {
    rec_words: u32,
    group_words: u32,
    /// The items name their tiles' two C blocks ([`SpgemmParams::paired`]).
    paired: bool,
    /// Those two blocks are paired by shared K, not neighbours ([`PlanOptions::pair_columns`]).
    pairs_columns: bool,
    /// A portable tile with a ring per warp ([`PlanOptions::warp_rings`]).
    warp_rings: bool,
    /// Hopper: the rows of A's and B's values (where the zero boxes start; bounded by the tile
    /// choice); 0 for the portable kernels, which do not use them.
    zero_rows: (u32, u32),
    records: CudaSlice<u32>,
    work: WorkList,
    device: DeviceWork,
}

impl SpgemmPlan {
    /// Block pairs per matrix: the product costs `2 · pairs · bm · bk · bn` flops per matrix.
    pub fn pairs(&self) -> usize {
        self.size.pairs
    }
    /// Flops of one product (the whole batch), counting only the pairs.
    pub fn flops(&self) -> f64 {
        let (a, b) = (self.a_pattern.block, self.b_pattern.block);
        2.0 * self.size.pairs as f64 * a.bm as f64 * a.bk as f64 * b.bk as f64 * self.batch as f64
    }
    /// The plan's sizes.
    pub fn size(&self) -> SpgemmSize {
        self.size
    }
    /// C's pattern, for a block-sparse C (None for a dense C).
    pub fn output_pattern(&self) -> Option<&Arc<Pattern>> {
        self.c_pattern.as_ref()
    }
    /// Matrices per product.
    pub fn batch(&self) -> usize {
        self.batch
    }
    /// The kernel family and tile it launches (with B streamed dense: the SpMM plan's, of a
    /// split SpMM plan its merged part's).
    pub fn tile(&self) -> TileChoice {
        self.choice
    }
    /// Whether each product streams B dense into the SpMM kernels ([`PlanOptions::dense_b`]).
    pub fn dense_b(&self) -> bool {
        matches!(self.route, Route::DenseB(_))
    }
    /// Whether each product, streaming B dense, first copies A's blocks into 128×128 blocks
    /// and runs the SpMM plan of those ([`PlanOptions::coarse_a`]).
    pub fn coarse_a(&self) -> bool {
        matches!(&self.route, Route::DenseB(d) if d.coarse_a())
    }
    /// Output tiles the plan's kernels compute per matrix: its records' tiles
    /// ([`SpgemmSize::tiles`]), or, streaming B dense, the SpMM plan's `(tm, tn)` tiles of
    /// `A · B`: all of them for a dense C, those that hold one of C's blocks for a block-sparse
    /// C (none without blocks).
    pub fn output_tiles(&self) -> usize {
        match &self.route {
            Route::Records(_) => self.size.tiles,
            Route::DenseB(d) => d.spmm.output_tiles(),
        }
    }
    /// Whether each tile's two C blocks are two blocks of the row that share K rather than
    /// neighbours ([`PlanOptions::pair_columns`]).
    pub fn pairs_columns(&self) -> bool {
        matches!(&self.route, Route::Records(r) if r.pairs_columns)
    }
    /// Whether each warp of the plan's portable tile runs a ring of its own
    /// ([`PlanOptions::warp_rings`]; always on the 32-row tile, never on the Hopper tiles).
    pub fn warp_rings(&self) -> bool {
        matches!(&self.route, Route::Records(r) if r.warp_rings)
    }
    /// The host-side work list (with B streamed dense: the SpMM plan's, of a split SpMM plan
    /// its merged part's).
    pub fn work(&self) -> &WorkList {
        match &self.route {
            Route::Records(r) => &r.work,
            Route::DenseB(d) => d.spmm.work(),
        }
    }
    /// Bytes of device memory the plan holds (records, work list, workspace; with B streamed
    /// dense, the dense B, its cell map and the SpMM plan).
    pub fn device_bytes(&self) -> usize {
        let product = match (&self.c_pattern, self.product_pattern) {
            (Some(p), true) => 4 * p.col_idx.len(),
            _ => 0,
        };
        product
            + match &self.route {
                Route::Records(r) => 4 * r.records.len() + r.device.bytes(),
                Route::DenseB(d) => d.device_bytes(),
            }
    }

    /// The device the plan lives on.
    fn ordinal(&self) -> usize {
        match &self.route {
            Route::Records(r) => r.device.ordinal(),
            Route::DenseB(d) => d.ordinal(),
        }
    }
}

/// The block grid of a pattern, for the symbolic phase.
fn grid(p: &Pattern) -> BlockPattern<'_> {
    BlockPattern { cols: p.ncols / p.block.bk, row_ptr: &p.row_ptr, col_idx: &p.col_idx_host }
}

/// How the records of one product are laid out: the tile's columns in `groups` column groups
/// of `j_per_tile` blocks, each streaming its own list (one group for the portable kernels; the
/// 128-column groups of the grouped Hopper tiles).
struct Layout2 {
    j_per_tile: usize,
    dense: bool,
    groups: usize,
    /// The tiles are pairs of C blocks named by their items ([`SpgemmParams::paired`]: the
    /// column-split tile with one C block per consumer). The tiles' `[2]` and `[3]` are then the
    /// two blocks (a dense C's block columns, a block-sparse C's block indices; `NO_BLOCK` for
    /// a lone block), and `[1]` the tile's index in its row.
    pair: bool,
    /// On a paired layout: whether each row's blocks are paired by shared K
    /// ([`spgemm_pairing`](pairing)) within windows of `window` block columns, or two by two in
    /// column order.
    matching: bool,
    window: usize,
}

impl Layout2 {
    fn new(choice: TileChoice, bn: usize, dense: bool) -> Self {
        let (_, tn) = choice.shape();
        match choice.family {
            KernelFamily::Hopper => {
                // The kernel's column groups: 128 columns each on the grouped tile, the whole
                // tile otherwise (the column-split tile: one list for both halves).
                let t = WGMMA_TILES[choice.tile];
                let groups = t.a_groups as usize;
                let j_per_tile = (tn as usize / groups / bn).max(1);
                let pair = t.n_split && j_per_tile == 2;
                Layout2 { j_per_tile, dense, groups, pair, matching: false, window: 0 }
            }
            KernelFamily::Portable => {
                Layout2 { j_per_tile: (tn as usize / bn).max(1), dense, groups: 1, pair: false, matching: false, window: 0 }
            }
        }
    }
    /// Words of one group of a record.
    fn group_words(&self) -> usize {
        1 + self.j_per_tile
    }
    /// C block columns of one output tile.
    fn tile_cols(&self) -> u64 {
        (self.groups * self.j_per_tile) as u64
    }
}

/// The records of every tile, built by [`walk_pairs`] over a range of rows and joined by
/// [`walk_rows`] (or only counted).
#[derive(Default)]
struct Records {
    /// `(records, groups, 1 + j_per_tile)` words (one group before [`zip_groups`]).
    words: Vec<u32>,
    /// Per tile, in row order (until [`group_tiles_by_columns`]): (block row, tile index in the row (a dense C's N tile), first C
    /// block, one past the last (block-sparse C), first record, one past the last).
    tiles: Vec<[u32; 6]>,
    n_records: usize,
}

/// Walks every block row of the product: the records of each tile of `j_per_tile` column blocks
/// (a column group, before [`zip_groups`]), in increasing K (A's column order), counted, or also
/// stored when `store` (the tiles are listed either way). `c` is C's pattern for a block-sparse
/// C (`None`: dense).
#[cfg(test)]
fn walk(a: &BlockPattern, b: &BlockPattern, c: Option<&BlockPattern>, l: &Layout2, store: bool) -> Result<Records> {
    walk_pairs(a, b, c, l, all_rows(a), store.then_some(0), None, false)
}

/// Every block row of A.
fn all_rows(a: &BlockPattern) -> Range<usize> {
    0..a.row_ptr.len().saturating_sub(1)
}

/// The plan's records: [`walk`] storing them, with the column groups of each row's tiles zipped
/// as the row is walked (what [`zip_groups`] makes of the whole walk, without holding the
/// unzipped records), on a paired layout with the tiles of the counting pass (`given`).
/// `records` is the zipped records' count (for one allocation).
#[cfg(test)]
fn walk_zipped(
    a: &BlockPattern,
    b: &BlockPattern,
    c: Option<&BlockPattern>,
    l: &Layout2,
    records: usize,
    given: Option<&[[u32; 6]]>,
) -> Result<Records> {
    walk_pairs(a, b, c, l, all_rows(a), Some(records), given, true)
}

/// The planner's walks over every block row on `threads` threads, each a contiguous range of
/// rows of about equal pairs, joined in row order: the records and tiles of the one-thread
/// walk. Counting (the tests' one-thread `walk` without storing) where `stored` is `None`; else
/// storing with the column groups zipped (the tests' `walk_zipped`), `stored` being the
/// counting pass's zipped tiles (in row order: where each range's records start in the
/// result). `given`: as [`walk_pairs`].
#[allow(clippy::too_many_arguments)]
fn walk_rows(
    a: &BlockPattern,
    b: &BlockPattern,
    c: Option<&BlockPattern>,
    l: &Layout2,
    stored: Option<(&[[u32; 6]], usize)>,
    given: Option<&[[u32; 6]]>,
    threads: usize,
) -> Result<Records> {
    let rows = all_rows(a);
    // A row's weight: its pairs, and one for its tiles.
    let weight = |i: usize| -> u64 {
        (a.row_ptr[i]..a.row_ptr[i + 1])
            .map(|p| {
                let k = a.col_idx[p as usize] as usize;
                (b.row_ptr[k + 1] - b.row_ptr[k]) as u64
            })
            .sum::<u64>()
            + 1
    };
    let ranges = crate::par::balanced_ranges(rows.end, threads, weight);
    let Some((tiles, records)) = stored else {
        if ranges.len() == 1 {
            return walk_pairs(a, b, c, l, rows, None, given, false);
        }
        let parts = crate::par::for_ranges(&ranges, &mut vec![(); ranges.len()], |_, r, _| walk_pairs(a, b, c, l, r, None, given, false))?;
        return join_records(parts);
    };
    if ranges.len() == 1 {
        return walk_pairs(a, b, c, l, rows, Some(records), given, true);
    }
    // Each range's records in place in the result's words, where the counting pass put them.
    let rec_words = if l.groups > 1 { l.groups * l.group_words() } else { l.group_words() };
    let first_record = |row: usize| tiles.get(tiles.partition_point(|t| (t[0] as usize) < row)).map_or(records, |t| t[4] as usize);
    let starts: Vec<usize> = ranges.iter().map(|r| first_record(r.start)).chain([records]).collect();
    if starts.windows(2).any(|w| w[1] < w[0]) {
        return Err(Error::Internal(format!("the counting pass's tiles place the row ranges' records at {starts:?}")));
    }
    let mut words = vec![0u32; records * rec_words];
    let mut slices = Vec::with_capacity(ranges.len());
    let mut rest = &mut words[..];
    for w in starts.windows(2) {
        let (head, tail) = rest.split_at_mut((w[1] - w[0]) * rec_words);
        slices.push(head);
        rest = tail;
    }
    let parts = crate::par::for_ranges(&ranges, &mut slices, |i, r, slice| {
        let expect = starts[i + 1] - starts[i];
        let part = walk_pairs(a, b, c, l, r, Some(expect), given, true)?;
        if part.n_records != expect || part.words.len() != slice.len() {
            return Err(Error::Internal(format!(
                "the storing walk of rows {:?} made {} records where the counting pass found {expect}",
                ranges[i], part.n_records
            )));
        }
        slice.copy_from_slice(&part.words);
        Ok(Records { words: Vec::new(), ..part })
    })?;
    let mut out = join_records(parts)?;
    out.words = words;
    Ok(out)
}

/// Walks of consecutive row ranges joined in row order: their tiles with the records
/// renumbered from each part's first, their words (where stored) one after another.
fn join_records(parts: Vec<Records>) -> Result<Records> {
    let mut out = Records::default();
    for part in parts {
        let base = out.n_records;
        if base + part.n_records > u32::MAX as usize - 1 || out.tiles.len() + part.tiles.len() > i32::MAX as usize {
            return Err(Error::TooLarge { what: "stage records of the product", value: base + part.n_records });
        }
        out.words.extend_from_slice(&part.words);
        out.tiles.extend(part.tiles.iter().map(|t| [t[0], t[1], t[2], t[3], t[4] + base as u32, t[5] + base as u32]));
        out.n_records += part.n_records;
    }
    Ok(out)
}

/// The walk (the tests' `walk`) of the block rows `rows`, on a paired layout with the tiles of an earlier walk of the
/// same product and layout (`given`, every row's, in row order) instead of pairing the rows
/// again; the records are numbered from the range's first; `store` is `Some` (with the
/// records' count where the counting pass knows it, for one allocation) to store the records;
/// with `zip`, each row's column groups are zipped ([`zip_into`]) into the result as the row
/// is done.
#[allow(clippy::too_many_arguments)]
fn walk_pairs(
    a: &BlockPattern,
    b: &BlockPattern,
    c: Option<&BlockPattern>,
    l: &Layout2,
    rows: Range<usize>,
    store: Option<usize>,
    given: Option<&[[u32; 6]]>,
    zip: bool,
) -> Result<Records> {
    let jt = l.j_per_tile;
    let w = 1 + jt;
    let zip = zip && l.groups > 1;
    let mut out = Records::default();
    // Storing: the records' words, allocated once where the caller knows their count.
    if let Some(records) = store {
        out.words.reserve_exact(records * if zip { l.groups * w } else { w });
    }
    let store = store.is_some();
    // Zipping: the current row's records before the zip, and the zip's buffers.
    let (mut row, mut zs) = (Records::default(), ZipScratch::default());
    // Per C column: its tile and column within the tile in the current row, stamped with the
    // row (a dense C's columns are in every row's tiles, each tile `jt` of them).
    let mut pos = vec![(u32::MAX, 0u32, 0u32); b.cols];
    let n_tiles_dense = b.cols.div_ceil(jt);
    let mut last_p: Vec<u32> = Vec::new();
    let mut count_recs: Vec<usize> = Vec::new();
    // Storing: per tile of the row, its next record's index in `out.words` (by records).
    let mut next_rec: Vec<usize> = Vec::new();
    // A paired layout's tiles of the current row.
    let (mut scratch, mut pairs) = (pairing::Scratch::default(), Vec::new());
    let mut given_at = given.map_or(0, |g| g.partition_point(|t| (t[0] as usize) < rows.start));
    for i in rows {
        let (n_tiles, c_begin, c_len) = match c {
            _ if l.pair => {
                pairs.clear();
                match given {
                    Some(g) => {
                        while given_at < g.len() && g[given_at][0] as usize == i {
                            pairs.push([g[given_at][2], g[given_at][3]]);
                            given_at += 1;
                        }
                    }
                    None => pairing::row_tiles(a, b, c, i, l.matching.then_some(l.window), &mut scratch, &mut pairs),
                }
                for (t, pr) in pairs.iter().enumerate() {
                    for (s, &m) in pr.iter().enumerate().filter(|(_, m)| **m != NO_BLOCK) {
                        let col = c.map_or(m, |c| c.col_idx[m as usize]);
                        pos[col as usize] = (i as u32, t as u32, s as u32);
                    }
                }
                (pairs.len(), 0, 0)
            }
            None => {
                for (j, at) in pos.iter_mut().enumerate() {
                    *at = (i as u32, (j / jt) as u32, (j % jt) as u32);
                }
                (n_tiles_dense, 0, 0)
            }
            Some(c) => {
                let (lo, hi) = (c.row_ptr[i] as usize, c.row_ptr[i + 1] as usize);
                for (s, ci) in (lo..hi).enumerate() {
                    pos[c.col_idx[ci] as usize] = (i as u32, (s / jt) as u32, (s % jt) as u32);
                }
                ((hi - lo).div_ceil(jt), lo, hi - lo)
            }
        };
        if last_p.len() < n_tiles {
            last_p.resize(n_tiles, u32::MAX);
            count_recs.resize(n_tiles, 0);
            next_rec.resize(n_tiles, 0);
        }
        // Where the row's records go: the result, or the row's own list to be zipped.
        let dst = if zip {
            row.words.clear();
            row.tiles.clear();
            row.n_records = 0;
            &mut row
        } else {
            &mut out
        };
        // Count each tile's records (a record per A block that meets the tile).
        last_p[..n_tiles].fill(u32::MAX);
        count_recs[..n_tiles].fill(0);
        row_pairs(a, b, i, &pos, &mut |p, _, t, _| {
            if last_p[t] != p as u32 {
                last_p[t] = p as u32;
                count_recs[t] += 1;
            }
        });
        if store {
            // The row's tiles' records side by side in `out.words`, tile by tile: fill them in
            // place.
            let mut at = dst.n_records;
            for t in 0..n_tiles {
                next_rec[t] = at;
                at += count_recs[t];
            }
            dst.words.resize(at * w, NO_BLOCK);
            last_p[..n_tiles].fill(u32::MAX);
            let words = &mut dst.words;
            row_pairs(a, b, i, &pos, &mut |p, q, t, s| {
                if last_p[t] != p as u32 {
                    last_p[t] = p as u32;
                    words[next_rec[t] * w] = p as u32;
                    next_rec[t] += 1;
                }
                words[(next_rec[t] - 1) * w + 1 + s] = q as u32;
            });
        }
        for t in 0..n_tiles {
            let first = dst.n_records;
            dst.n_records += count_recs[t];
            let (cb, ce) = if l.pair {
                (pairs[t][0] as usize, pairs[t][1] as usize)
            } else if l.dense {
                (0, 0)
            } else {
                let lo = c_begin + t * jt;
                (lo, (lo + jt).min(c_begin + c_len))
            };
            dst.tiles.push([i as u32, t as u32, cb as u32, ce as u32, first as u32, dst.n_records as u32]);
        }
        if dst.n_records > u32::MAX as usize - 1 || dst.tiles.len() > i32::MAX as usize {
            return Err(Error::TooLarge { what: "stage records of the product", value: dst.n_records });
        }
        if zip {
            zip_into(&row.words, &row.tiles, l, true, &mut out, &mut zs)?;
        }
    }
    Ok(out)
}

/// Calls `f(p, q, t, s)` for each pair of block row `i` (A block `p`, B block `q`) that lands
/// in a tile: in tile `t`, slot `s`, as `pos` places C's column `j` in row `i` (`pos[j] = (i,
/// t, s)`; other rows' entries are columns outside the row's blocks). The A blocks come in
/// increasing `p`.
#[inline]
fn row_pairs(a: &BlockPattern, b: &BlockPattern, i: usize, pos: &[(u32, u32, u32)], f: &mut impl FnMut(usize, usize, usize, usize)) {
    for p in a.row_ptr[i] as usize..a.row_ptr[i + 1] as usize {
        let k = a.col_idx[p] as usize;
        for q in b.row_ptr[k] as usize..b.row_ptr[k + 1] as usize {
            let (row, t, s) = pos[b.col_idx[q] as usize];
            if row == i as u32 {
                f(p, q, t as usize, s as usize);
            }
        }
    }
}

/// Joins the column groups of each tile: `l.groups` consecutive group tiles of one row become
/// one tile whose record `s` holds one record of each group, or `NO_BLOCK` words where that
/// group's list has ended (a row's last tile may lack groups: they are all padding), as many
/// records as the longest list. With two groups the records of both that meet the same A block
/// come first, side by side (the zero-fill kernel loads such a stage's A slice once), then the
/// others in order; otherwise record `s` holds each group's record `s`. Without `words` (the
/// counting pass) only the tiles and the count are made; with it, `Some` of the zipped
/// records' count where the counting pass knows it (for one allocation), as [`walk_pairs`].
fn zip_groups(rec: Records, l: &Layout2, words: Option<usize>) -> Result<Records> {
    if l.groups == 1 {
        return Ok(rec);
    }
    let mut out = Records::default();
    if let Some(records) = words {
        out.words.reserve_exact(records * l.groups * l.group_words());
    }
    zip_into(&rec.words, &rec.tiles, l, words.is_some(), &mut out, &mut ZipScratch::default())?;
    Ok(out)
}

/// Buffers of [`zip_into`], reused from call to call: two groups' records left after the
/// shared ones.
#[derive(Default)]
struct ZipScratch {
    left0: Vec<u32>,
    left1: Vec<u32>,
}

/// [`zip_groups`] of the group tiles `tiles` (whole tiles' groups, in row order) whose records
/// lie in `rec_words`, appended to `out` (the zipped records with `words`, else only counted).
fn zip_into(rec_words: &[u32], tiles: &[[u32; 6]], l: &Layout2, words: bool, out: &mut Records, zs: &mut ZipScratch) -> Result<()> {
    let (g, gw) = (l.groups, l.group_words());
    let (left0, left1) = (&mut zs.left0, &mut zs.left1);
    let mut at = 0;
    while at < tiles.len() {
        let [row, t0, cb, _, _, _] = tiles[at];
        let tile = t0 as usize / g;
        let mut end = at;
        while end < tiles.len() && tiles[end][0] == row && tiles[end][1] as usize / g == tile {
            end += 1;
        }
        let members = &tiles[at..end];
        let len = members.iter().map(|m| (m[5] - m[4]) as usize).max().unwrap_or(0);
        let first = out.n_records;
        if words {
            // One group's record `r` of the stage, or padding.
            let mut push = |r: Option<u32>| match r {
                Some(r) => out.words.extend_from_slice(&rec_words[r as usize * gw..(r as usize + 1) * gw]),
                None => out.words.extend(std::iter::repeat_n(NO_BLOCK, gw)),
            };
            if let (2, [m0, m1]) = (g, members) {
                // Two groups (a tile of more groups whose row ends after two is padded as
                // below): the records of both groups that meet the same A block first, side
                // by side (the kernel then loads that A slice once), then the others paired in
                // order. As many stages as the longer list either way; each list is in A's
                // order (word 0 increasing).
                let (mut i, mut j) = (m0[4], m1[4]);
                left0.clear();
                left1.clear();
                while i < m0[5] && j < m1[5] {
                    let (p0, p1) = (rec_words[i as usize * gw], rec_words[j as usize * gw]);
                    if p0 == p1 {
                        push(Some(i));
                        push(Some(j));
                        (i, j) = (i + 1, j + 1);
                    } else if p0 < p1 {
                        left0.push(i);
                        i += 1;
                    } else {
                        left1.push(j);
                        j += 1;
                    }
                }
                left0.extend(i..m0[5]);
                left1.extend(j..m1[5]);
                for s in 0..left0.len().max(left1.len()) {
                    push(left0.get(s).copied());
                    push(left1.get(s).copied());
                }
            } else {
                for s in 0..len {
                    for k in 0..g {
                        push(members.get(k).filter(|m| s < (m[5] - m[4]) as usize).map(|m| m[4] + s as u32));
                    }
                }
            }
        }
        out.n_records += len;
        if out.n_records > u32::MAX as usize - 1 {
            return Err(Error::TooLarge { what: "stage records of the product", value: out.n_records });
        }
        let ce = members.last().map_or(cb, |m| m[3]);
        out.tiles.push([row, tile as u32, cb, ce, first as u32, out.n_records as u32]);
        at = end;
    }
    Ok(())
}

/// The product's plan before any device allocation: the symbolic phase's counts and C's
/// pattern.
struct Symbolic {
    size: SpgemmSize,
    /// C's pattern (row_ptr, col_idx) for a product-pattern C.
    product: Option<(Vec<u32>, Vec<u32>)>,
    /// The records' layout, with the pairing the counting pass chose.
    layout: Layout2,
    /// C block columns per N-tile group of the plan's order ([`group_tiles_by_columns`]).
    group_cols: u64,
    /// The counting pass's tiles, zipped (a paired layout's: its pairs as chosen).
    tiles: Vec<[u32; 6]>,
    /// Host threads of the walks ([`PlanOptions::threads`]).
    threads: usize,
    /// B streamed dense ([`PlanOptions::dense_b`]; no records walked): `Some(re-blocked A)`
    /// ([`PlanOptions::coarse_a`]).
    dense_b: Option<bool>,
}

/// Block columns of C over which a paired plan's blocks are matched at most
/// ([`pairing`]: its cost is up to this many overlap counts per pair of the
/// product): 64, the whole 8192-column C of 128-wide blocks.
const PAIR_WINDOW_MAX: u64 = 64;

/// The window of a paired plan's matching for N-tile groups of `group_cols` block columns out of
/// `cols`: windows tile the groups, so a tile's two blocks lie in one group. The cap where one
/// group holds every column, else the largest even divisor of the group's columns up to the
/// cap (a group's columns are a multiple of the tile's two).
fn pair_window(group_cols: u64, cols: u64) -> usize {
    if group_cols >= cols {
        return PAIR_WINDOW_MAX as usize;
    }
    (2..=PAIR_WINDOW_MAX).rev().step_by(2).find(|w| group_cols.is_multiple_of(*w)).unwrap_or(2) as usize
}

/// The fewest stages per output tile, on average over a paired walk's tiles, at which a plan
/// keeps its pairing (perf notes v31, 128×128 blocks, 8192³): pairing gained 3–8 % at 12 and 45
/// stages per tile (top-16 and 50 % × 50 %) and lost 4–13 % with a dense C at 2.5 (12.5 %
/// patterns), where the tiles' C stores, not their stages, hold the kernel, and pairing leaves
/// more tiles with no stage to hide a store behind.
const PAIR_MIN_STAGES_PER_TILE: u64 = 8;

/// The fewest tiles a paired plan of `rows` block rows can have: two C blocks to a tile, over
/// every block of a dense C of `cols` block columns or of the given C pattern `c`.
fn min_paired_tiles(rows: usize, cols: usize, c: Option<&BlockPattern>) -> u64 {
    match c {
        None => rows as u64 * cols.div_ceil(2) as u64,
        Some(c) => c.row_ptr.windows(2).map(|w| ((w[1] - w[0]) as u64).div_ceil(2)).sum(),
    }
}

/// Whether a paired plan of a product with `pairs` block pairs and at least `min_tiles` tiles
/// could average [`PAIR_MIN_STAGES_PER_TILE`] stages a tile: each record holds at least one pair,
/// so its records are at most the pairs. Where it cannot, the planner's rule would reject the
/// pairing after running it (the records' count only falls with pairing).
fn may_reach_pair_stages(pairs: usize, min_tiles: u64, stages_per_record: u32) -> bool {
    pairs as u64 * stages_per_record as u64 >= PAIR_MIN_STAGES_PER_TILE * min_tiles
}

/// The longest record list of one of `tiles` that [`split_tiles`] leaves whole: twice a
/// resident thread block's fair share of all the records of `batch` matrices, at least 8
/// stages, at most 2²⁴ records (an item's K, records · bk ≤ 2³¹, stays in the kernels' u32).
fn split_limit(tiles: &[[u32; 6]], batch: u32, resident: u32, stages_per_record: u32) -> u32 {
    let total: u64 = tiles.iter().map(|t| (t[5] - t[4]) as u64).sum::<u64>() * batch as u64;
    let fair = total.div_ceil(resident.max(1) as u64);
    let min_piece = 8u64.div_ceil(stages_per_record.max(1) as u64);
    (2 * fair).max(min_piece).min(1 << 24) as u32
}

/// Whether [`split_tiles`] would split any of `tiles`.
fn splits_any(tiles: &[[u32; 6]], batch: u32, resident: u32, stages_per_record: u32) -> bool {
    let limit = split_limit(tiles, batch, resident, stages_per_record);
    tiles.iter().any(|t| t[5] - t[4] > limit)
}

impl Context {
    /// The tile the kernels use for `(bm, bk, bn)` blocks (wgmma + TMA where the blocks are 64
    /// or 128 in every dimension, the TMA coordinates fit and the module has the kernel;
    /// mma.sync otherwise). `c_blocks`: the blocks of a block-sparse C (0 for a dense one),
    /// which the Hopper tiles store through a tensor map over C's values.
    fn spgemm_tile<T: InputElement>(&self, a: &Pattern, b: &Pattern, c_blocks: usize) -> Result<TileChoice> {
        let (bm, bk, bn) = (a.block.bm, a.block.bk, b.block.bk);
        // TMA needs a non-empty tensor whose rows fit its signed 32-bit coordinates.
        // The zero boxes start at the row past the end and span up to 128 rows.
        let rows_fit = |blocks: usize, bm: usize| blocks.checked_mul(bm).is_some_and(|r| r + 128 < i32::MAX as usize);
        let fits = |p: &Pattern| p.nnzb() > 0 && rows_fit(p.nnzb(), p.block.bm);
        let hopper = wgmma_tile_index(bm as u32).filter(|_| {
            bk.is_multiple_of(WG_K as usize) && bn.is_multiple_of(WG_K as usize) && fits(a) && fits(b) && rows_fit(c_blocks, bm)
        });
        if let Some(rows) = hopper {
            // 128 rows: the column-split tile (one A slice per stage for the tile's two
            // 128-column halves, each consumer warpgroup skipping the stages its half lacks);
            // 64 rows: the grouped-A twin of the tile (each 128-column group streams its own
            // list).
            let tile = blocksparse_abi::WGMMA_SPGEMM_TILES[rows];
            let key = KernelKey { op: OpKind::Spgemm, family: KernelFamily::Hopper, input: T::DTYPE, tile, output: T::DTYPE };
            if self.kernels.has(key) {
                return Ok(TileChoice { family: KernelFamily::Hopper, tile });
            }
        }
        let tile = mma_tile_index(bm as u32).ok_or(Error::UnsupportedBlockSize { bm, bk })?;
        Ok(TileChoice { family: KernelFamily::Portable, tile })
    }

    /// Checks A, B and the output kind against each other.
    fn spgemm_check<T>(&self, a: &DeviceBsr<T>, b: &DeviceBsr<T>, out: &SpgemmOutput) -> Result<()> {
        self.same_device("A", a.values.ordinal())?;
        self.same_device("B", b.values.ordinal())?;
        expect("rows of B (= columns of A)", a.ncols(), b.nrows())?;
        expect("block height of B (= block width of A)", a.block().bk, b.block().bm)?;
        expect_batch("B", a.batch, b.batch)?;
        if let SpgemmOutput::Mask(m) = out {
            self.same_device("the mask", m.col_idx.ordinal())?;
            expect("rows of the mask (= rows of A)", a.nrows(), m.nrows)?;
            expect("columns of the mask (= columns of B)", b.ncols(), m.ncols)?;
            expect("block height of the mask (= block height of A)", a.block().bm, m.block.bm)?;
            expect("block width of the mask (= block width of B)", b.block().bk, m.block.bk)?;
        }
        Ok(())
    }

    /// What [`split_tiles`] splits `choice`'s tiles by: the thread blocks of the kernel resident
    /// at once, and the pipeline stages of one record of `bk`-deep A blocks.
    fn spgemm_split_params<T: InputElement>(&self, choice: TileChoice, bk: usize) -> Result<(u32, u32)> {
        let key = KernelKey { op: OpKind::Spgemm, family: choice.family, input: T::DTYPE, tile: choice.tile, output: T::DTYPE };
        let resident = self.resident_blocks(choice, self.kernels.get(key)?)?;
        let stages_per_record = match choice.family {
            KernelFamily::Hopper => bk as u32 / WG_K,
            // (Blocks shallower than a stage share it, `ks / bk` records each: counted as one.)
            KernelFamily::Portable => (bk as u32).div_ceil(choice.ks()),
        };
        Ok((resident, stages_per_record))
    }

    fn spgemm_symbolic<T: InputElement>(
        &self,
        a: &DeviceBsr<T>,
        b: &DeviceBsr<T>,
        out: &SpgemmOutput,
        opts: &PlanOptions,
    ) -> Result<(Symbolic, TileChoice)> {
        self.spgemm_check(a, b, out)?;
        let (ga, gb) = (grid(&a.pattern), grid(&b.pattern));
        let mask = match out {
            SpgemmOutput::Mask(m) => Some(grid(m)),
            _ => None,
        };
        let counts = pairs::count(&ga, &gb, mask.as_ref())?;
        let c_blocks = match out {
            SpgemmOutput::Dense => 0,
            SpgemmOutput::Product => counts.c_blocks,
            SpgemmOutput::Mask(m) => m.nnzb(),
        };
        let choice = self.spgemm_tile::<T>(&a.pattern, &b.pattern, c_blocks)?;
        let bn = b.block().bk;
        // A block-sparse C with blocks: the route gathers them from its product workspace.
        let block_c = c_blocks > 0;
        // B streamed dense: asked for (no records walked), or (the default) where the dense-B
        // route's modeled time is below the records', counted below.
        let may_stream_b = match opts.dense_b {
            Some(true) => {
                // (A merge of A's rows asked for keeps A as stored unless re-blocking is asked
                // for too: the coarse pattern's rows do not merge. The variant is costed as
                // for a dense C.)
                let coarse_a = opts.coarse_a.or(opts.merge_rows.filter(|&m| m > 1).map(|_| false));
                let coarse = route_variant(&a.pattern, b.ncols(), None, coarse_a).0;
                return self.dense_b_symbolic(a, b, out, None, 0, (counts.pairs, counts.c_blocks), choice, coarse);
            }
            Some(false) => false,
            // A knob of the records or of SpMM's merge given keeps the records; so does a B (or
            // a product) too large to stream dense, or whose workspaces would take more than
            // an eighth of the device's memory.
            None => {
                opts.warp_rings.is_none()
                    && opts.pair_columns.is_none()
                    && opts.merge_rows.is_none()
                    && opts.split_rows.is_none()
                    && dense_b_may_pay(self.arch().has(KernelFamily::Hopper), &a.pattern, &b.pattern)
                    && dense_b_device_bytes(a, b, block_c, false).is_ok_and(|(w, _, _)| dense_b_fits(w, self.memory_bytes()))
            }
        };
        let mut layout = Layout2::new(choice, bn, matches!(out, SpgemmOutput::Dense));
        let tile_cols = layout.tile_cols();
        let group_cols = match opts.n_tile_group {
            Some(g) => g.max(1) as u64 * tile_cols,
            None => {
                let column_split = choice.family == KernelFamily::Hopper && WGMMA_TILES[choice.tile].n_split;
                let b_bytes = b.nnzb() as u64 * (b.block().bm * bn * core::mem::size_of::<T>()) as u64;
                default_group_cols(b_bytes, gb.cols as u64, tile_cols, self.l2_bytes() as u64, column_split)
            }
        };
        layout.matching = layout.pair && opts.pair_columns != Some(false);
        layout.window = pair_window(group_cols, gb.cols as u64);
        // C's pattern first for a product-pattern C (the records' tiles are runs of its blocks).
        let product = match out {
            SpgemmOutput::Product => Some(pairs::product_pattern(&ga, &gb, counts.c_blocks)?),
            _ => None,
        };
        let c_grid = match (out, &product) {
            (SpgemmOutput::Product, Some((rp, ci))) => Some(BlockPattern { cols: gb.cols, row_ptr: rp, col_idx: ci }),
            (SpgemmOutput::Mask(_), _) => mask,
            _ => None,
        };
        // A paired plan keeps its tiles whole (the fix-up kernel writes a split tile's columns in
        // order; the test is `split_tiles`'s, with the storing pass's parameters), and pairs only
        // where its tiles are long enough to gain from it; otherwise the blocks go in column
        // order. Where the pairs alone show that its tiles cannot be long enough, the matching
        // is not run at all.
        let split_params = if layout.matching { Some(self.spgemm_split_params::<T>(choice, a.block().bk)?) } else { None };
        if let Some((_, stages_per_record)) = split_params
            && !may_reach_pair_stages(counts.pairs, min_paired_tiles(a.pattern.block_rows(), gb.cols, c_grid.as_ref()), stages_per_record)
        {
            layout.matching = false;
        }
        let threads = crate::par::threads_for(opts.threads, counts.pairs as u64);
        let mut pre = walk_rows(&ga, &gb, c_grid.as_ref(), &layout, None, None, threads)?;
        if let Some((resident, stages_per_record)) = split_params.filter(|_| layout.matching)
            && (splits_any(&pre.tiles, to_u32("batch", a.batch)?, resident, stages_per_record)
                || (pre.n_records as u64 * stages_per_record as u64) < PAIR_MIN_STAGES_PER_TILE * pre.tiles.len() as u64)
        {
            layout.matching = false;
            pre = walk_rows(&ga, &gb, c_grid.as_ref(), &layout, None, None, threads)?;
        }
        // The storing pass holds one row's records before the zip (per thread) beside the
        // zipped ones.
        let row_bytes = if layout.groups > 1 {
            let row = |r: &[[u32; 6]]| 4 * layout.group_words() * r.iter().map(|t| (t[5] - t[4]) as usize).sum::<usize>() + 24 * r.len();
            pre.tiles.chunk_by(|x, y| x[0] == y[0]).map(row).max().unwrap_or(0)
        } else {
            0
        };
        let pre_tiles = pre.tiles.len();
        let rec = zip_groups(pre, &layout, None)?;
        // The counting pass holds the walk's tiles (twice, joining the threads' parts) and the
        // zipped ones.
        let parts = if threads > 1 { 2 } else { 1 };
        let counting = 24 * parts * pre_tiles + 24 * rec.tiles.len();
        // (The default re-blocks A only where that workspace too fits the memory share.)
        let coarse_a = opts.coarse_a.or_else(|| {
            let fits = || dense_b_device_bytes(a, b, block_c, true).is_ok_and(|(w, _, _)| dense_b_fits(w, self.memory_bytes()));
            (may_stream_b && !fits()).then_some(false)
        });
        if may_stream_b
            && let Some(coarse) =
                dense_b_pays(&a.pattern, b.ncols(), c_grid.as_ref().filter(|_| block_c), rec.n_records, counts.pairs, coarse_a)
        {
            return self.dense_b_symbolic(a, b, out, product, counting, (counts.pairs, counts.c_blocks), choice, coarse);
        }
        let w = layout.groups * layout.group_words();
        // The kernels address the records with 32-bit word offsets.
        if rec.n_records.checked_mul(w).is_none_or(|words| words > u32::MAX as usize) {
            return Err(Error::TooLarge { what: "stage record words of the product", value: rec.n_records.saturating_mul(w) });
        }
        let c_blocks = match out {
            SpgemmOutput::Dense => a.pattern.block_rows() * gb.cols,
            _ => counts.c_blocks,
        };
        let product_bytes = product.as_ref().map_or(0, |(rp, ci)| 4 * (rp.len() + ci.len()));
        let batch = a.batch;
        // On the device: the records, one work item per tile and matrix, and a product
        // pattern's column indices.
        let device_bytes = 4 * w * rec.n_records
            + 4 * blocksparse_abi::WORK_ITEM_WORDS * rec.tiles.len() * batch
            + product.as_ref().map_or(0, |(_, ci)| 4 * ci.len());
        // The storing pass holds the records (twice on several threads: each thread's part,
        // then in place), their tiles, one row before the zip per thread, and the work items
        // (the list and its upload); both passes C's product pattern and the counting pass's
        // zipped tiles.
        let storing = 4 * w * rec.n_records * parts
            + 24 * rec.tiles.len() * parts
            + row_bytes.saturating_mul(threads)
            + 2 * 4 * blocksparse_abi::WORK_ITEM_WORDS * rec.tiles.len() * batch;
        let host_bytes = counting.max(storing) + product_bytes + 24 * rec.tiles.len();
        let size = SpgemmSize { pairs: counts.pairs, c_blocks, records: rec.n_records, tiles: rec.tiles.len(), device_bytes, host_bytes };
        // The zipped tiles, kept for the storing pass: where each row's records start, and a
        // paired walk's pairs (not chosen twice; a paired layout has one column group, so
        // `zip_groups` left them as the walk listed them).
        Ok((Symbolic { size, product, layout, group_cols, tiles: rec.tiles, threads, dense_b: None }, choice))
    }

    /// The symbolic phase of a plan that streams B dense (over a re-blocked A where `coarse`):
    /// its sizes (no records) and, for a product-pattern C, C's pattern (`product_blocks`
    /// blocks; `product` where the records' counting pass made it already, whose peak host
    /// bytes were `counting`).
    #[allow(clippy::too_many_arguments)]
    fn dense_b_symbolic<T: InputElement>(
        &self,
        a: &DeviceBsr<T>,
        b: &DeviceBsr<T>,
        out: &SpgemmOutput,
        product: Option<(Vec<u32>, Vec<u32>)>,
        counting: usize,
        (pairs, product_blocks): (usize, usize),
        choice: TileChoice,
        coarse: bool,
    ) -> Result<(Symbolic, TileChoice)> {
        let (product, c_blocks) = match (out, product) {
            (SpgemmOutput::Dense, _) => (None, a.pattern.block_rows() * b.pattern.block_cols()),
            (SpgemmOutput::Product, Some(p)) => (Some(p), product_blocks),
            (SpgemmOutput::Product, None) => {
                (Some(pairs::product_pattern(&grid(&a.pattern), &grid(&b.pattern), product_blocks)?), product_blocks)
            }
            (SpgemmOutput::Mask(m), _) => (None, m.nnzb()),
        };
        let block_c = !matches!(out, SpgemmOutput::Dense) && c_blocks > 0;
        let (workspaces, cells, spmm) = dense_b_device_bytes(a, b, block_c, coarse)?;
        // The SpMM plan's host structures are about the size of its device ones (counted
        // twice: its candidates), beside the cell maps; before them, the counting pass that
        // chose the route (default plans); both beside a product pattern.
        let product_bytes = product.as_ref().map_or(0, |(rp, ci)| 4 * (rp.len() + ci.len()));
        let device_bytes = workspaces + cells + spmm + product.as_ref().map_or(0, |(_, ci)| 4 * ci.len());
        let host_bytes = counting.max(cells + 2 * spmm) + product_bytes;
        let size = SpgemmSize { pairs, c_blocks, records: 0, tiles: 0, device_bytes, host_bytes };
        let layout = Layout2::new(choice, b.block().bk, true);
        Ok((Symbolic { size, product, layout, group_cols: 0, tiles: Vec::new(), threads: 1, dense_b: Some(coarse) }, choice))
    }

    /// The size of the plan [`Context::plan_spgemm`] would make, computed without allocating
    /// its records (the counting pass of the symbolic phase; it holds the tile list, 24 bytes
    /// a tile, as [`SpgemmSize::host_bytes`] counts).
    pub fn spgemm_size<T: InputElement>(&self, a: &DeviceBsr<T>, b: &DeviceBsr<T>, out: &SpgemmOutput) -> Result<SpgemmSize> {
        self.spgemm_size_with(a, b, out, &PlanOptions::default())
    }

    /// [`Context::spgemm_size`] of the plan [`Context::plan_spgemm_with`] would make with
    /// `opts`.
    pub fn spgemm_size_with<T: InputElement>(
        &self,
        a: &DeviceBsr<T>,
        b: &DeviceBsr<T>,
        out: &SpgemmOutput,
        opts: &PlanOptions,
    ) -> Result<SpgemmSize> {
        Ok(self.spgemm_symbolic(a, b, out, opts)?.0.size)
    }

    /// Plans `C = alpha · A · B + beta · C` for A's and B's patterns and batch, and C as `out`
    /// says (A is `(M, K)` in `(bm, bk)` blocks, B `(K, N)` in `(bk, bn)` blocks). The plan's
    /// size is counted first ([`Context::spgemm_size`]); the plan then serves every product of
    /// matrices with these patterns.
    ///
    /// Non-finite values: a Hopper tile (sm_90, bm 64 or 128, bk and bn multiples of 64)
    /// multiplies each A block of its records against every column block of the tile, with
    /// zeros where the two do not pair, so an Inf or NaN in one operand block can make NaN
    /// (0 · Inf) in other C blocks of the same tile. The `mma.sync` tiles (the other shapes, and
    /// every shape on other GPUs) multiply only the pairs. A plan that streams B dense
    /// ([`PlanOptions::dense_b`], chosen by default for some 16×16 and 32×32 products on
    /// Hopper) multiplies A's blocks by B's zeros too. With finite inputs the result is the
    /// plain sum over pairs.
    pub fn plan_spgemm<T: InputElement>(&self, a: &DeviceBsr<T>, b: &DeviceBsr<T>, out: SpgemmOutput) -> Result<SpgemmPlan> {
        self.plan_spgemm_with(a, b, out, &PlanOptions::default())
    }

    /// [`Context::plan_spgemm`] with tuning knobs: [`PlanOptions::n_tile_group`] sets how many
    /// output tiles of a block row the plan walks together (and, on a paired plan, the window
    /// of block columns its pairs are chosen in: the largest even divisor of the group's
    /// columns up to 64), [`PlanOptions::pair_columns`]
    /// whether 128×128 C blocks are paired by shared K, [`PlanOptions::warp_rings`] the 16-row
    /// tile's rings, [`PlanOptions::dense_b`] whether B is streamed dense into the SpMM
    /// kernels (which then take the SpMM knobs) and [`PlanOptions::coarse_a`] whether A is then
    /// re-blocked into 128×128 blocks. The records do not merge block rows:
    /// [`PlanOptions::merge_rows`] other than `None` or `Some(1)` is
    /// [`Error::UnsupportedMerge`].
    pub fn plan_spgemm_with<T: InputElement>(
        &self,
        a: &DeviceBsr<T>,
        b: &DeviceBsr<T>,
        out: SpgemmOutput,
        opts: &PlanOptions,
    ) -> Result<SpgemmPlan> {
        if let Some(rows) = opts.merge_rows.filter(|&m| m != 1) {
            return Err(Error::UnsupportedMerge { rows, why: "the BSR x BSR planner does not merge block rows (only 1)".into() });
        }
        let (sym, choice) = self.spgemm_symbolic(a, b, &out, opts)?;
        let bn = b.block().bk;
        let stream = self.stream();
        let c_pattern = match (&out, sym.product) {
            (SpgemmOutput::Mask(m), _) => Some(m.clone()),
            (SpgemmOutput::Product, Some((row_ptr, col_idx_host))) => {
                let col_idx = stream.clone_htod(if col_idx_host.is_empty() { &[0u32][..] } else { &col_idx_host })?;
                let block = BlockShape { bm: a.block().bm, bk: bn };
                Some(Arc::new(Pattern { nrows: a.nrows(), ncols: b.ncols(), block, row_ptr, col_idx_host, col_idx }))
            }
            _ => None,
        };
        if let Some(coarse) = sym.dense_b {
            let d = self.plan_dense_b(a, b, c_pattern.as_deref(), opts, coarse)?;
            return Ok(SpgemmPlan {
                a_pattern: a.pattern.clone(),
                b_pattern: b.pattern.clone(),
                product_pattern: matches!(out, SpgemmOutput::Product),
                c_pattern,
                batch: a.batch,
                size: sym.size,
                choice: d.spmm.tile(),
                route: Route::DenseB(d),
            });
        }
        let (ga, gb) = (grid(&a.pattern), grid(&b.pattern));
        let (_, tn) = choice.shape();
        let (layout, group_cols) = (sym.layout, sym.group_cols);
        let c_grid = c_pattern.as_deref().map(grid);
        let given = layout.pair.then_some(&sym.tiles[..]);
        let mut rec = walk_rows(&ga, &gb, c_grid.as_ref(), &layout, Some((&sym.tiles, sym.size.records)), given, sym.threads)?;
        let tile_cols = layout.tile_cols();
        let first_col = |t: &[u32; 6]| match &c_grid {
            // A paired tile's first block (its two lie in one window of the group's columns).
            Some(c) if layout.pair => c.col_idx[t[2] as usize] as u64,
            None if layout.pair => t[2] as u64,
            Some(c) if t[2] < t[3] => c.col_idx[t[2] as usize] as u64,
            Some(_) => 0,
            None => t[1] as u64 * tile_cols,
        };
        group_tiles_by_columns(&mut rec.tiles, first_col, group_cols);
        let (resident, stages_per_record) = self.spgemm_split_params::<T>(choice, a.block().bk)?;
        let mut work = split_tiles(&rec.tiles, to_u32("batch", a.batch)?, resident, stages_per_record, layout.pair)?;
        if choice.family == KernelFamily::Hopper {
            let tile = WGMMA_TILES[choice.tile];
            if tile.n_split {
                // The column-split tile's items differ in what their stages move (one or two
                // B blocks beside each A block): cost them in bytes, and deal the tail longest
                // first (perf notes v33).
                let cost = |i: &WorkItem| item_bytes(&rec.words, &layout, tile, a.block().bk, bn, i);
                schedule_persistent_lpt_tail(&mut work, resident, cost, 2 * resident as usize);
            } else {
                schedule_persistent(&mut work, resident, |i| (i.k_end - i.k_begin) as u64 + 1);
            }
        }
        let warp_rings = choice.family == KernelFamily::Portable && {
            let t = MMA_TILES[choice.tile];
            t.warp_rings()
                || (t.warp_rings_by_plan()
                    && opts.warp_rings.unwrap_or_else(|| {
                        let rec_words = layout.group_words();
                        warp_stage_share(&rec.words, &work.items, rec_words, a.block().bk, bn, t) < WARP_RINGS_BELOW
                    }))
        };
        let (tm, _) = choice.shape();
        let device = DeviceWork::upload(stream, &work, (tm, tn))?;
        let records = stream.clone_htod(if rec.words.is_empty() { &[0u32][..] } else { &rec.words })?;
        Ok(SpgemmPlan {
            a_pattern: a.pattern.clone(),
            b_pattern: b.pattern.clone(),
            product_pattern: matches!(out, SpgemmOutput::Product),
            c_pattern,
            batch: a.batch,
            size: sym.size,
            choice,
            route: Route::Records(RecordsRoute {
                rec_words: (layout.groups * layout.group_words()) as u32,
                group_words: layout.group_words() as u32,
                paired: layout.pair,
                pairs_columns: layout.matching,
                warp_rings,
                zero_rows: match choice.family {
                    KernelFamily::Hopper => {
                        (to_u32("rows of A's values", a.nnzb() * a.block().bm)?, to_u32("rows of B's values", b.nnzb() * b.block().bm)?)
                    }
                    KernelFamily::Portable => (0, 0),
                },
                records,
                work,
                device,
            }),
        })
    }

    /// A zero-filled block-sparse C for `plan` (its batch, C's pattern: the product's own or
    /// the mask). Fails with [`Error::PlanMismatch`] for a plan of a dense C.
    pub fn spgemm_output<O: Element>(&self, plan: &SpgemmPlan) -> Result<DeviceBsr<O>> {
        let Some(pattern) = plan.c_pattern.clone() else {
            return Err(Error::PlanMismatch("the plan was made for a dense C".into()));
        };
        self.same_device("the plan", plan.ordinal())?;
        let len = (pattern.nnzb() * pattern.block.elems()).checked_mul(plan.batch).ok_or(Error::Overflow { what: "batch values" })?;
        let values = self.stream().alloc_zeros::<O>(len.max(1))?;
        Ok(DeviceBsr { pattern, values, batch: plan.batch })
    }

    /// `C = alpha · A · B + beta · C` into a dense C (`c.t_mut()` for a column-major one), with
    /// a plan made for [`SpgemmOutput::Dense`]. Every element of C is written; every argument
    /// is checked before anything is launched.
    pub fn spgemm<'c, T: InputElement, O: Element>(
        &self,
        plan: &SpgemmPlan,
        alpha: f32,
        a: &DeviceBsr<T>,
        b: &DeviceBsr<T>,
        beta: f32,
        c: impl Into<MatMut<'c, O>>,
    ) -> Result<()> {
        if plan.c_pattern.is_some() {
            return Err(Error::PlanMismatch("the plan was made for a block-sparse C (use spgemm_bsr)".into()));
        }
        check_scalars(alpha, beta)?;
        let mut c = c.into();
        self.spgemm_check_operands(plan, a, b)?;
        self.same_device("C", c.buf.ordinal())?;
        let cs = c.shape();
        expect("rows of C (= rows of A)", a.nrows(), cs.rows)?;
        expect("columns of C (= columns of B)", b.ncols(), cs.cols)?;
        expect_batch("C", plan.batch, cs.batch)?;
        let r = match &plan.route {
            Route::DenseB(d) => return self.run_dense_b(d, alpha, a, b, beta, c),
            Route::Records(r) => r,
        };
        let stream = self.stream();
        let (c_ptr, _gc) = c.device_ptr_mut(stream);
        let out = dense_out(c_ptr, &cs, alpha, beta)?;
        let tmap_c = match plan.choice.family {
            KernelFamily::Hopper => c_store_map::<O>(c_ptr, &cs, WGMMA_TILES[plan.choice.tile])?,
            KernelFamily::Portable => [0; 16],
        };
        self.run_spgemm::<T, O>(plan.choice, r, a, b, FIXUP_TO_DENSE, out, BlockOut::default(), tmap_c)
    }

    /// `C = alpha · A · B + beta · C` into a block-sparse C with the plan's pattern (from
    /// [`Context::spgemm_output`] for a product-pattern plan, or the C whose pattern was the
    /// mask). Every block of C is written; every argument is checked before anything is
    /// launched.
    pub fn spgemm_bsr<T: InputElement, O: Element>(
        &self,
        plan: &SpgemmPlan,
        alpha: f32,
        a: &DeviceBsr<T>,
        b: &DeviceBsr<T>,
        beta: f32,
        c: &mut DeviceBsr<O>,
    ) -> Result<()> {
        let Some(c_pattern) = &plan.c_pattern else {
            return Err(Error::PlanMismatch("the plan was made for a dense C (use spgemm)".into()));
        };
        check_scalars(alpha, beta)?;
        if !Arc::ptr_eq(c_pattern, &c.pattern) {
            return Err(Error::PlanMismatch("C's pattern is not the plan's output pattern".into()));
        }
        self.spgemm_check_operands(plan, a, b)?;
        self.same_device("C", c.values.ordinal())?;
        expect_batch("C", plan.batch, c.batch)?;
        let r = match &plan.route {
            Route::DenseB(d) => return self.run_dense_b_bsr(d, alpha, a, b, beta, c),
            Route::Records(r) => r,
        };
        let c_stride = c.values_per_matrix();
        let stream = self.stream();
        let (c_values, _gc) = c.values_ptr_mut(stream);
        let blocks = BlockOut {
            values: c_values,
            batch_stride: c_stride as u64,
            bm_log2: c_pattern.block.bm.trailing_zeros(),
            bn_log2: c_pattern.block.bk.trailing_zeros(),
            alpha,
            beta,
        };
        // A Hopper tile with staging chunks stores C's blocks through TMA: its values as an
        // (nnz · bm, bn) matrix per batch entry, boxes of (128 bytes, 64 rows) in the chunks'
        // swizzle.
        let tmap_c = match plan.choice.family {
            KernelFamily::Hopper if WGMMA_TILES[plan.choice.tile].c_buffers > 0 && c_pattern.nnzb() > 0 => {
                let chunk_cols = (128 / core::mem::size_of::<O>()) as u32;
                c_pattern.values_map::<O>(plan.batch, c_values, c_pattern.block.bk, [chunk_cols, WG_M], true)?
            }
            _ => [0; 16],
        };
        self.run_spgemm::<T, O>(plan.choice, r, a, b, FIXUP_TO_BLOCKS, DenseOut::default(), blocks, tmap_c)
    }

    fn spgemm_check_operands<T>(&self, plan: &SpgemmPlan, a: &DeviceBsr<T>, b: &DeviceBsr<T>) -> Result<()> {
        if !Arc::ptr_eq(&plan.a_pattern, &a.pattern) {
            return Err(Error::PlanMismatch("the plan was made for another pattern of A".into()));
        }
        if !Arc::ptr_eq(&plan.b_pattern, &b.pattern) {
            return Err(Error::PlanMismatch("the plan was made for another pattern of B".into()));
        }
        self.same_device("the plan", plan.ordinal())?;
        self.same_device("A", a.values.ordinal())?;
        self.same_device("B", b.values.ordinal())?;
        expect_batch("A", plan.batch, a.batch)?;
        expect_batch("B", plan.batch, b.batch)
    }

    /// One product on the records' route `r` of a plan on tile `choice` (arguments checked).
    #[allow(clippy::too_many_arguments)]
    fn run_spgemm<T: InputElement, O: Element>(
        &self,
        choice: TileChoice,
        r: &RecordsRoute,
        a: &DeviceBsr<T>,
        b: &DeviceBsr<T>,
        to: u32,
        out: DenseOut,
        blocks: BlockOut,
        tmap_c: [u64; 16],
    ) -> Result<()> {
        if r.work.items.is_empty() {
            return Ok(()); // no output blocks
        }
        let stream = self.stream();
        let (kernel, fixup) = self.op_kernels::<T, O>(OpKind::Spgemm, choice, r.device.fixup_grid)?;
        let workspace = r.device.workspace(self.cuda(), stream)?;
        let (work, _work_guards) = r.device.params(stream);
        let (records, _gr) = r.records.device_ptr(stream);
        let (a_values, _ga) = a.values_ptr(stream);
        let (b_values, _gb) = b.values_ptr(stream);
        let (ab, bb) = (a.block(), b.block());
        let (a_stride, b_stride) = (a.values_per_matrix(), b.values_per_matrix());
        let params = SpgemmParams {
            work,
            a_values,
            b_values,
            records,
            a_batch_stride: a_stride as u64,
            b_batch_stride: b_stride as u64,
            rec_words: r.rec_words,
            bm_log2: ab.bm.trailing_zeros(),
            bk_log2: ab.bk.trailing_zeros(),
            bn_log2: bb.bk.trailing_zeros(),
            to,
            b_rows: r.zero_rows.1,
            a_rows: r.zero_rows.0,
            group_words: r.group_words,
            paired: r.paired as u32,
            warp_rings: r.warp_rings as u32,
            out,
            blocks,
        };
        match choice.family {
            KernelFamily::Portable => {
                // SAFETY: the parameter block is the kernel's; A's and B's values and C are live
                // allocations of the checked shapes, guarded until the launches are queued; the
                // plan's records index only blocks of A's and B's patterns (fewer than 2³² words
                // of records, checked by the planner), its items only C's tiles (or blocks) and
                // its partial slots.
                unsafe { launch(stream, kernel, r.device.grid, params) }?;
            }
            KernelFamily::Hopper => {
                let t = WGMMA_TILES[choice.tile];
                // A: the values as an (nnzA · bm, bk) matrix per batch entry, K-major boxes
                // (64 K, tm); B: the values as an (nnzB · bk, bn) matrix, MN-major boxes (64, 64).
                let tmap_a = a.values_map(a_values, a.pattern.block.bk, [WG_K, t.tm], true)?;
                let tmap_b = b.values_map(b_values, b.pattern.block.bk, [WG_K, WG_K], true)?;
                let hp = HopperParams { tmap_a, tmap_b, tmap_c, p: params };
                // SAFETY: as above; the tensor maps describe exactly A's and B's values and C;
                // every box the kernel loads either starts inside them or lies wholly past the
                // end (rows `a_rows` / `b_rows`, with 128 rows of margin below i32::MAX), which
                // TMA fills with zeros without reading memory.
                unsafe { launch(stream, kernel, r.device.grid, hp) }?;
            }
        }
        r.device.launch_fixup(stream, fixup, work.partials, choice.shape(), to, out, blocks)?;
        workspace.release()
    }
}

/// Below this share of live warp-stages ([`warp_stage_share`]) a plan on a tile of
/// [`MmaTile::warp_rings_by_plan`] runs a ring per warp ([`PlanOptions::warp_rings`]). Measured
/// on the 16-row tile with 16×16 blocks at 8192³ (perf notes v42): warp rings took 0.85× the
/// block ring's time at a share of 0.71 (uniform 12.5 % × 12.5 %) and 1.28× at 0.995 (50 % ×
/// 50 %); a line through the two crosses 1 at 0.81. Fitted on square 16×16 blocks only: 16-row
/// blocks 32 to 128 deep or wide (one record per stage, other copy shapes) take the same rule
/// unmeasured; validate runs them with both rings.
const WARP_RINGS_BELOW: f64 = 0.8;

/// Items [`warp_stage_share`] counts at most, spread evenly over the plan.
const WARP_SHARE_SAMPLE: usize = 1024;

/// The share of a portable plan's warp-stages (one warp's [`WARP_N`] columns of one `ks`-deep
/// stage) where the warp's columns hold a B block in one of the stage's records: the stages a
/// ring per warp copies and multiplies, of those the block ring steps every warp through.
/// Counted on up to [`WARP_SHARE_SAMPLE`] items, each stage as the kernel forms it from the
/// item's first record: `ks / bk` records per stage below `ks`; a deeper record spans `bk / ks`
/// stages that all hold its blocks, so it counts once (the same weight for every record of the
/// plan). 1 where nothing is counted.
fn warp_stage_share(words: &[u32], items: &[WorkItem], rec_words: usize, bk: usize, bn: usize, t: MmaTile) -> f64 {
    let (ks, warps) = (t.ks as usize, t.warps_n as usize);
    let warp_n = WARP_N as usize;
    // The warps that B word `j` of a record (tile columns `j · bn ..`) covers.
    let warp_bits: Vec<u32> = (0..rec_words.saturating_sub(1))
        .map(|j| {
            let (first, last) = ((j * bn / warp_n).min(warps), (((j + 1) * bn).div_ceil(warp_n)).min(warps));
            (first..last).fold(0, |m, w| m | 1 << w)
        })
        .collect();
    let records_per_stage = (ks / bk).max(1);
    let (mut live, mut all) = (0u64, 0u64);
    for it in items.iter().step_by(items.len().div_ceil(WARP_SHARE_SAMPLE).max(1)) {
        let (mut r, end) = (it.k_begin as usize, it.k_end as usize);
        while r < end {
            let next = (r + records_per_stage).min(end);
            let stage = words.get(r * rec_words..next * rec_words).unwrap_or(&[]);
            let held = stage
                .chunks_exact(rec_words)
                .flat_map(|rec| rec[1..].iter().zip(&warp_bits))
                .filter(|&(&q, _)| q != NO_BLOCK)
                .fold(0u32, |m, (_, &bits)| m | bits);
            live += held.count_ones() as u64;
            all += warps as u64;
            r = next;
        }
    }
    if all == 0 { 1.0 } else { live as f64 / all as f64 }
}

/// The block columns of C an SpGEMM plan walks together by default ([`group_tiles_by_columns`]),
/// a multiple of `tile_cols`, for B's stored blocks of `b_bytes` over `b_cols` block columns:
/// as many columns as B strips fit in a sixth of L2 (as SpMM's N-tile groups, perf notes v9
/// and v22: the thread blocks running at one time share those strips of B, and each A row is
/// read from DRAM once per group). On the column-split tile, where all of B fits in half of L2
/// (it stays there anyway), every column (`u64::MAX`): the rows in order, each with all of its
/// tiles (perf notes v29: 128×128 blocks, banded × uniform 12.5 %, 1.05–1.09× faster; the
/// 64-row tile measured 0.98–1.01× and keeps groups).
fn default_group_cols(b_bytes: u64, b_cols: u64, tile_cols: u64, l2_bytes: u64, column_split: bool) -> u64 {
    if column_split && b_bytes <= l2_bytes / 2 {
        return u64::MAX;
    }
    let per_col = b_bytes.div_ceil(b_cols.max(1)).max(1);
    let cols = (l2_bytes / 6 / per_col).max(1);
    cols.div_ceil(tile_cols.max(1)) * tile_cols.max(1)
}

/// Orders an SpGEMM plan's tiles (listed row by row) in groups of `group_cols` block columns
/// of C, by their first column: group by group, and within a group row by row, every other
/// group's rows backwards (a group starts on the A rows its predecessor read last); a row's
/// tiles of one group keep their order.
fn group_tiles_by_columns(tiles: &mut [[u32; 6]], first_col: impl Fn(&[u32; 6]) -> u64, group_cols: u64) {
    let group_cols = group_cols.max(1);
    tiles.sort_by_cached_key(|t| {
        let g = first_col(t) / group_cols;
        let row = t[0] as u64;
        (g, if g.is_multiple_of(2) { row } else { u64::MAX - row })
    });
}

/// What SpGEMM item `i` of a Hopper plan costs the persistent schedule, in bytes: those its
/// stages move from L2 to the SM, each stage of each record counted as the kernel's producer
/// loads it ([`SpgemmStage::bytes`]: on the column-split tile the A slice and the boxes of the
/// consumers that multiply it, on a zero-fill tile the present boxes and the A slices it
/// needs), plus its C store at 1.5 × a 16-bit tile's bytes (perf notes v21: a 128 × 256 store
/// took the time of two 48 KB stages).
fn item_bytes(words: &[u32], l: &Layout2, tile: WgmmaTile, bk: usize, bn: usize, i: &WorkItem) -> u64 {
    let (gw, rw) = (l.group_words().max(1), (l.groups * l.group_words()).max(1));
    let (bn_log2, group_cols) = (bn.trailing_zeros(), SpgemmStage::group_cols(tile));
    let stages_per_record = (bk as u64 / WG_K as u64).max(1);
    let records = words.get(i.k_begin as usize * rw..i.k_end as usize * rw).unwrap_or(&[]);
    let stages: u64 = records
        .chunks_exact(rw)
        .map(|r| {
            let mut s = SpgemmStage { a_blk: [NO_BLOCK; MAX_A_GROUPS], boxes: 0 };
            for (g, a) in s.a_blk.iter_mut().enumerate().take(l.groups) {
                *a = r.get(g * gw).copied().unwrap_or(NO_BLOCK);
            }
            for j in 0..tile.tn() / BOX {
                let w = SpgemmStage::box_word(j, gw as u32, bn_log2, group_cols) as usize;
                if r.get(w).is_some_and(|&q| q != NO_BLOCK) {
                    s.boxes |= 1 << j;
                }
            }
            stages_per_record * s.bytes(tile) as u64
        })
        .sum();
    stages + 3 * tile.tm as u64 * tile.tn() as u64
}

/// The work list of an SpGEMM plan: one item per output tile and matrix, with the tiles whose
/// records would dominate the launch (more than twice a resident thread block's fair share, and
/// at least 8 stages) split into near-equal pieces summed by the fix-up kernel in piece order.
/// Items are ordered matrix by matrix, in the order of `tiles` ([`group_tiles_by_columns`]);
/// the longest pieces come first where lengths differ a lot.
fn split_tiles(tiles: &[[u32; 6]], batch: u32, resident: u32, stages_per_record: u32, paired: bool) -> Result<WorkList> {
    let limit = split_limit(tiles, batch, resident, stages_per_record);
    let mut items = Vec::new();
    items.try_reserve_exact(tiles.len() * batch as usize).map_err(|_| Error::Allocation { what: "work items", elements: tiles.len() })?;
    let mut groups = Vec::new();
    let mut n_slots = 0u32;
    for bt in 0..batch {
        for t in tiles {
            let [tile_row, n_tile, blk_begin, blk_end, begin, end] = *t;
            let base = WorkItem { tile_row, n_tile, blk_begin, blk_end, partial_slot: NO_SLOT, batch: bt, k_begin: begin, k_end: end };
            let len = end - begin;
            if len <= limit {
                items.push(base);
                continue;
            }
            let pieces = len.div_ceil(limit);
            // A paired layout's split tile holds neighbours (the planner pairs only plans
            // without splits): the fix-up kernel's C blocks `blk_begin..` (a dense C: N tile
            // `n_tile`).
            let (blk_begin, blk_end) = if paired {
                debug_assert!(blk_end == NO_BLOCK || blk_end == blk_begin + 1, "a split tile of a paired plan holds neighbours");
                (blk_begin, if blk_end == NO_BLOCK { blk_begin + 1 } else { blk_end + 1 })
            } else {
                (blk_begin, blk_end)
            };
            groups.push(SplitGroup { tile_row, n_tile, first_slot: n_slots, n_slots: pieces, batch: bt, blk_begin, blk_end });
            for c in 0..pieces {
                let lo = begin + (len as u64 * c as u64 / pieces as u64) as u32;
                let hi = begin + (len as u64 * (c + 1) as u64 / pieces as u64) as u32;
                items.push(WorkItem { partial_slot: n_slots + c, k_begin: lo, k_end: hi, ..base });
            }
            n_slots = n_slots.checked_add(pieces).ok_or(Error::Overflow { what: "split-K slots" })?;
        }
    }
    if items.len() > i32::MAX as usize {
        return Err(Error::TooLarge { what: "work items", value: items.len() });
    }
    heavy_first(&mut items, |i| (i.k_end - i.k_begin) as u64, |_| 0);
    let max_item_blocks = items.iter().map(|i| i.k_end - i.k_begin).max().unwrap_or(0);
    Ok(WorkList { items, groups, n_slots, max_item_blocks, schedule: Vec::new() })
}

#[path = "spgemm_pairing.rs"]
mod pairing;

#[cfg(test)]
#[path = "spgemm_tests.rs"]
mod tests;
