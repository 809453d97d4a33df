//! SpMM: `C = alpha · op(A) · op(B) + beta · C` with A block-sparse, and the dense × sparse
//! product `C = alpha · op(X) · op(A) + beta · C`, which is the same kernel on transposed views
//! (`Cᵀ = op(A)ᵀ · op(X)ᵀ`).
//!
//! Semantics (A `(M, K)` in bm×bk blocks, op(B) `(K', N)`, C `(M', N)`, for every matrix of
//! the batch):
//! ```text
//! op(A) = A:   for r in 0..M/bm, i in 0..bm, j in 0..N:
//!                  acc = Σ_{p in row_ptr[r]..row_ptr[r+1]} Σ_{kk<bk} values[p][i][kk] · opB[col_idx[p]·bk + kk][j]
//!                  C[r·bm + i][j] = alpha·acc + beta·C[r·bm + i][j]       (C not read when beta == 0)
//! op(A) = Aᵀ:  for c in 0..K/bk, i in 0..bk, j in 0..N:
//!                  acc = Σ_{p : col_idx[p] = c} Σ_{kk<bm} values[p][kk][i] · opB[row(p)·bm + kk][j]
//!                  C[c·bk + i][j] = alpha·acc + beta·C[c·bk + i][j]
//! ```
//! For Aᵀ the plan holds the transposed pattern (the blocks column by column: their block rows
//! and positions), built once; the values are read in place, transposed on their way into the
//! tensor cores. A merged plan (`PlanOptions::merge_rows`, or the planner's choice) stacks `m`
//! adjacent rows of that stream in one tile over the union of their block columns (crate
//! `merge`): the same sums, with zeros where a row lacks a block of the union. A re-blocked
//! plan (`PlanOptions::coarse_a`, or the planner's choice) copies A's blocks into 128×128
//! blocks each product (zeros where a 128×128 cell lacks one of A's blocks; crate `reblock`)
//! and streams those: the same sums again, with more zeros.

use std::sync::Arc;

use blocksparse_abi::{
    BOX, BlockOut, FIXUP_TO_DENSE, HopperParams, KernelFamily, MAX_ITEM_BLOCKS, MMA_TILES, NO_SLOT, OpKind, PACKED_ROW, SpmmParams, WG_K,
    WG_M, WGMMA_SHALLOW_TILES, WGMMA_TILE_ROWS, WGMMA_TILES, flags, mma_tile_index, wgmma_tile_index,
};
use cudarc::driver::{CudaSlice, DevicePtr};

use super::reblock::{COARSE, CoarseA, coarse_bytes, coarse_elements, coarse_fits, coarse_pattern, group_rows};
use super::{PlanOptions, TileChoice, Transpose, c_store_map_rows, check_dim, check_scalars, dense_out, expect, expect_batch, to_u32};
use crate::context::Context;
use crate::device_bsr::{DeviceBsr, Pattern};
use crate::element::{Element, InputElement};
use crate::error::{Error, Result};
use crate::kernels::KernelKey;
use crate::launch::{Params, launch, tensor_map};
use crate::matrix::{Layout, MatMut, MatRef, MatShape};
use crate::merge::{COPY_BYTES_PER_ELEMENT, merge_counts, merge_rows, shallow_time, skip_tile_costs, split_groups, tile_cost, tile_costs};
use crate::plan::{
    DeviceWork, RowsSpec, WorkList, b_live_fraction, default_tile_group, heavy_first, plan_live_rows, row_item_cost, schedule_persistent,
};

// SAFETY: the op's `#[repr(C)]` parameter block from `blocksparse-abi`, taken by value by its
// kernels.
unsafe impl Params for SpmmParams {}

/// The op an SpMM plan is made for: op(A) as the user wrote it, the side of the sparse
/// matrix, op(A) as the kernel streams it, and the dense dimension (N, or M for dense ×
/// sparse).
#[derive(Clone, Copy, Debug)]
struct SparseOp {
    op_a: Transpose,
    side: Side,
    kernel_op: Transpose,
    n: usize,
}

/// The sparse operand a plan is made for: its pattern object and batch (the plan serves its
/// products whatever their values and 16-bit element type).
#[derive(Clone, Copy)]
struct Operand<'a> {
    pattern: &'a Arc<Pattern>,
    batch: usize,
}

/// The only blocks of C that an SpMM plan's tiles must cover (`(row_ptr, col_idx, bn)`, see
/// [`Context::plan_spmm_at_blocks`]), or `None` for all of C.
type CBlocks<'a> = Option<(&'a [u32], &'a [u32], usize)>;

/// Which side of the dense operand the sparse matrix is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    /// `op(A) · op(B)`.
    Left,
    /// `op(X) · op(A)`.
    Right,
}

/// A plan for the products of one sparsity pattern (and batch size) with dense matrices of
/// `N` columns (rows, for dense × sparse): the work list, the transposed pattern when the
/// kernel streams Aᵀ, and the split-K workspace, uploaded once and reused for every product
/// with that pattern (new values welcome). One plan serves one product at a time: its split-K
/// workspace (and a re-blocked A's coarse blocks, [`PlanOptions::coarse_a`]) is written by each
/// product, so a product queued on another stream (a context from [`Context::with_stream`])
/// waits for the previous product of the same plan.
pub struct SpmmPlan {
    pattern: Arc<Pattern>,
    /// op(A) as the user wrote it.
    op_a: Transpose,
    side: Side,
    /// op(A) as the kernel streams it (sparse on the left).
    kernel_op: Transpose,
    /// Columns of the kernel's product (N, or M for dense × sparse).
    n: usize,
    batch: usize,
    /// The launches, over disjoint stream rows: one, or (a split plan,
    /// [`PlanOptions::split_rows`]) the merged groups where merging pays and then the other
    /// rows unmerged.
    parts: Vec<Part>,
    /// log2 of the rows of one stream row (a row-mapped part's unit).
    row_unit_log2: u32,
    /// A re-blocked A ([`PlanOptions::coarse_a`]): the parts stream its coarse blocks, which
    /// each product first copies from A's.
    coarse: Option<CoarseA>,
}

/// One launch of an SpMM plan: a tile, its work list and the stream it walks.
struct Part {
    choice: TileChoice,
    work: WorkList,
    device: DeviceWork,
    /// Stream rows per tile, log2 (0: not merged).
    merge_log2: u32,
    /// N tiles walked together ([`PlanOptions::n_tile_group`]).
    tile_group: u32,
    /// A merged Hopper part whose consumer warpgroups skip the stages where their rows hold no
    /// block ([`PlanOptions::skip_absent`]).
    skips: bool,
    /// Aᵀ or a merged part: per stream position, the K-block index and the block of each
    /// merged row (`1 << merge_log2` words, `NO_BLOCK` where the row has none).
    stream: Option<(CudaSlice<u32>, CudaSlice<u32>)>,
    /// A reordered or split merged part: per stream row (in the part's order), the row of
    /// op(A) it is (C's row block). Rows the part does not list are not written by it.
    row_map: Option<CudaSlice<u32>>,
    /// Whether the stream was reordered (the heavy rows first).
    reordered: bool,
    /// Tile rows.
    rows: usize,
}

impl Part {
    fn device_bytes(&self) -> usize {
        self.device.bytes()
            + self.stream.as_ref().map_or(0, |(a, b)| 4 * (a.len() + b.len()))
            + self.row_map.as_ref().map_or(0, |m| 4 * m.len())
    }
}

impl SpmmPlan {
    /// op(A) the plan was made for.
    pub fn op_a(&self) -> Transpose {
        self.op_a
    }
    /// N (SpMM) or M (dense × sparse): the dense dimension the plan was made for.
    pub fn dense_dim(&self) -> usize {
        self.n
    }
    /// Matrices per product.
    pub fn batch(&self) -> usize {
        self.batch
    }
    /// The first part's (of a split plan: the merged part's, [`SpmmPlan::split`]).
    fn first(&self) -> &Part {
        &self.parts[0]
    }
    /// The kernel family and tile it launches (a split plan: its merged part's tile; the other
    /// part's is [`SpmmPlan::split`]).
    pub fn tile(&self) -> TileChoice {
        self.first().choice
    }
    /// The host-side work list (for inspection and tests; a split plan: its merged part's).
    pub fn work(&self) -> &WorkList {
        &self.first().work
    }
    /// Adjacent block rows of op(A) (as the kernel streams it: columns of op(A) for dense ×
    /// sparse) that share one output tile: 1 unless the plan merged them
    /// ([`PlanOptions::merge_rows`], which also says how merged plans treat non-finite
    /// values). A split plan: its merged part's.
    pub fn merged_rows(&self) -> usize {
        1 << self.first().merge_log2
    }
    /// How many N tiles the plan walks together, row by row ([`PlanOptions::n_tile_group`]: the
    /// one asked for or the planner's, at most the N tiles there are). A split plan: its merged
    /// part's.
    pub fn n_tile_group(&self) -> usize {
        self.first().tile_group as usize
    }
    /// Whether the consumer warpgroups of a merged plan on the Hopper kernels pass over the
    /// stages where all of their rows lack a block instead of multiplying zeros
    /// ([`PlanOptions::skip_absent`]).
    pub fn skips_absent(&self) -> bool {
        self.first().skips
    }
    /// Whether the plan merges the block rows of op(A) in another order than A's (the heavy
    /// rows first, so that they share tiles: [`PlanOptions::reorder_rows`]); C is written in
    /// A's order either way.
    pub fn reordered(&self) -> bool {
        self.first().reordered
    }
    /// A split plan ([`PlanOptions::split_rows`]): the tile of its second launch, which runs
    /// the stream rows that merging does not pay for unmerged, and how many stream rows it
    /// holds. `None` for a plan of one launch. The two launches write disjoint rows of C, one
    /// after the other on the context's stream; should the second fail to launch (a CUDA
    /// error), the first one's rows are already written.
    pub fn split(&self) -> Option<(TileChoice, usize)> {
        self.parts.get(1).map(|p| (p.choice, p.rows))
    }
    /// Whether the plan streams A re-blocked into 128×128 blocks, which each product first
    /// copies from A's ([`PlanOptions::coarse_a`]); its tile, merge and work list are then the
    /// coarse pattern's.
    pub fn coarse_a(&self) -> bool {
        self.coarse.is_some()
    }
    /// Bytes of device memory the plan holds (work lists, transposed or merged streams, row
    /// maps, workspaces, a re-blocked A).
    pub fn device_bytes(&self) -> usize {
        self.parts.iter().map(Part::device_bytes).sum::<usize>() + self.coarse.as_ref().map_or(0, |c| c.bytes)
    }
    /// Output tiles the plan computes per matrix (every part's; a split tile once).
    pub(crate) fn output_tiles(&self) -> usize {
        let tiles = |w: &WorkList| w.items.iter().filter(|i| i.partial_slot == NO_SLOT).count() + w.groups.len();
        self.parts.iter().map(|p| tiles(&p.work)).sum::<usize>() / self.batch.max(1)
    }
}

/// The SpMM model's cost of a plan over A re-blocked into 128×128 blocks
/// ([`PlanOptions::coarse_a`]), and the coarse pattern it costed ([`coarse_pattern`]): `choice`'s
/// 128-row tile over the coarse pattern of A's `(row_ptr, col_idx)` (`(bm, bk)` blocks over
/// `k` columns) as the kernel streams it (its block rows, or for Aᵀ its block columns), `n`
/// columns of `elem`-byte values ([`tile_cost`]), plus the copy ([`COPY_BYTES_PER_ELEMENT`]
/// per element of the coarse blocks).
fn reblocked_cost(
    (row_ptr, col_idx): (&[u32], &[u32]),
    (bm, bk): (usize, usize),
    k: usize,
    kernel_op: Transpose,
    (n, elem): (usize, usize),
    choice: TileChoice,
) -> (f64, (Vec<u32>, Vec<u32>)) {
    let (rp, ci) = coarse_pattern(row_ptr, col_idx, bm, bk);
    let col_ptr;
    let stream_rows = match kernel_op {
        Transpose::No => &rp,
        Transpose::Yes => {
            col_ptr = column_ptr(&ci, k.div_ceil(COARSE));
            &col_ptr
        }
    };
    let copy = COPY_BYTES_PER_ELEMENT * coarse_elements(ci.len()) as f64;
    (tile_cost(stream_rows, COARSE as u32, choice, n, elem) + copy, (rp, ci))
}

/// Per column of `cols` (and one more), where a column-by-column order of the blocks whose
/// column indices are `col_idx` starts it: a transposed pattern's `col_ptr`.
fn column_ptr(col_idx: &[u32], cols: usize) -> Vec<u32> {
    let mut col_ptr = vec![0u32; cols + 1];
    for &c in col_idx {
        col_ptr[c as usize + 1] += 1;
    }
    for c in 0..cols {
        col_ptr[c + 1] += col_ptr[c];
    }
    col_ptr
}

/// Whether a plan's failure is its size's (a workspace or index range too large, the device
/// memory exhausted): the default then keeps A as stored instead of re-blocking it.
fn is_size_error(e: &Error) -> bool {
    matches!(e, Error::TooLarge { .. } | Error::Overflow { .. } | Error::Allocation { .. })
        || matches!(e, Error::Driver(d) if d.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY)
}

/// The transposed pattern: `col_ptr` (block columns + 1), and per position in column order the
/// block row and the block.
fn transpose_pattern(p: &Pattern) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let col_ptr = column_ptr(&p.col_idx_host, p.block_cols());
    let mut next = col_ptr.clone();
    let mut rows = vec![0u32; p.nnzb()];
    let mut perm = vec![0u32; p.nnzb()];
    for (r, w) in p.row_ptr.windows(2).enumerate() {
        for q in w[0]..w[1] {
            let c = p.col_idx_host[q as usize] as usize;
            let at = next[c] as usize;
            rows[at] = r as u32;
            perm[at] = q;
            next[c] += 1;
        }
    }
    (col_ptr, rows, perm)
}

/// A candidate plan of the SpMM planner: its tile, rows merged per tile, the model's cost, its
/// order (reordered or A's) and skipping, and (merged candidates) each merged row's cost.
struct Costed {
    choice: TileChoice,
    m: u32,
    total: f64,
    by_len: bool,
    skips: bool,
    groups: Vec<f64>,
}

/// A split plan ([`PlanOptions::split_rows`]) is kept where its modelled cost is below this
/// fraction of the best single plan's. The model does not see what a split adds (the second
/// launch starts after the first one's last wave; a part of a few items does not fill the GPU),
/// nor its own error on one group of random rows. Measured (perf notes v38, 8192³ f16, H100;
/// split ÷ single plan, the model over six draws of the family → measured): kept, the mixed
/// mask at 16×16 0.77 → 0.77, 32×32 0.95 → 0.92, 64×64 0.95 → 0.96, heavy-tailed 16×16 0.96 →
/// 0.93; left single, BigBird-like 64×64 0.98 → 1.15, heavy-tailed 64×64 0.99 → 1.16,
/// uniform 32×32 0.99 → 1.13, heavy-tailed 32×32 1.00 → 1.06, causal 64×64 1.00 → 1.07,
/// BigBird-like 32×32 1.29 → 1.17. The bound lies between the two groups (0.961 and 0.978).
pub(crate) const SPLIT_GAIN: f64 = 0.97;

/// The default re-blocks A ([`PlanOptions::coarse_a`]) only where the coarse blocks take at
/// most this share of the device's memory (as BSR × BSR's dense-B route its workspaces): a
/// plan of A as stored holds no workspace of A's size.
const REBLOCK_MEMORY_SHARE: usize = 8;

/// What the SpMM planner chose ([`choose_plan`]).
struct Decision {
    /// The best single plan.
    best: Costed,
    /// A split that replaces it: its merged candidate and, per merged row of that candidate,
    /// whether the merged part runs it.
    split: Option<(Costed, Vec<bool>)>,
    order: Order,
    /// The model's cost of the plan kept (the split's, where one is) with its parts on a
    /// shallow Hopper tile weighed by [`shallow_time`]: the cost on the scale of the 64-deep
    /// tile, which a re-blocked plan runs on.
    deep_total: f64,
}

impl Decision {
    /// The tile of the plan kept (a split's merged part's).
    fn tile(&self) -> TileChoice {
        self.split.as_ref().map_or(self.best.choice, |(c, _)| c.choice)
    }
}

/// The stream rows' order of the reordered candidates (heavy rows first), and the stream in
/// that order ([`permute_stream`]); `None` where no candidate is reordered.
struct Order {
    reorder: Option<Vec<u32>>,
    reordered: Option<(Vec<u32>, Vec<u32>, Vec<u32>)>,
}

impl Order {
    /// The stream a candidate walks: reordered (`by_len`, with each position's place in A's
    /// stream `row_ptr`, `kidx`) or A's.
    fn stream<'a>(&'a self, row_ptr: &'a [u32], kidx: &'a [u32], by_len: bool) -> (&'a [u32], &'a [u32], Option<&'a [u32]>) {
        match (&self.reordered, by_len) {
            (Some((rp, kx, pos)), true) => (rp, kx, Some(pos)),
            _ => (row_ptr, kidx, None),
        }
    }

    /// The stream row at place `i` of a candidate's order.
    fn row_at(&self, by_len: bool, i: usize) -> u32 {
        match (&self.reorder, by_len) {
            (Some(order), true) => order[i],
            _ => i as u32,
        }
    }
}

/// The SpMM planner's choice among `candidates` (`(tile, rows merged)`, the unmerged one first)
/// for the stream `row_ptr`, `kidx` of rows of `rb` rows and blocks `kb` deep, `n` columns of
/// `elem`-byte values: the plan (unmerged, or the merge asked for or, by default, the one the
/// cost model (`merge::plan_cost`: L2 traffic plus tensor work) prefers, in A's order or
/// reordered, skipping or not), and where [`PlanOptions::split_rows`] allows, a split
/// ([`split_groups`]) of the merged candidate that models cheapest, kept where it is below
/// [`SPLIT_GAIN`] of the plan's cost. (A merge too large to hold is no candidate.)
fn choose_plan(
    candidates: &[(TileChoice, u32)],
    row_ptr: &[u32],
    kidx: &[u32],
    (rb, kb, n, elem): (usize, usize, usize, usize),
    opts: &PlanOptions,
) -> Result<Decision> {
    let allowed = |m: u32| opts.merge_rows.is_none_or(|want| want.max(1) == m);
    // The stream rows in another order, where a merge may use it: the heavy ones first,
    // longest first, so that they share tiles (`heavy_rows_first`); None where fewer than
    // two rows are heavy.
    let wants_order = opts.reorder_rows != Some(false) && candidates.iter().any(|&(_, m)| m > 1 && allowed(m));
    let reorder = if wants_order { heavy_rows_first(row_ptr) } else { None };
    let reordered = reorder.as_ref().map(|order| permute_stream(row_ptr, kidx, order));
    let order = Order { reorder, reordered };
    // The orders a merged candidate is tried in (`false`: A's): both, or the one asked for.
    let merged_orders: &[bool] = match (&order.reordered, opts.reorder_rows) {
        (None, _) => &[false],
        (Some(_), Some(true)) => &[true],
        (Some(_), _) => &[false, true],
    };
    // A merged Hopper plan is weighed with and without skipping, as asked.
    let skip_choices: &[bool] = match opts.skip_absent {
        None => &[false, true],
        Some(true) => &[true],
        Some(false) => &[false],
    };
    let rows = row_ptr.len().saturating_sub(1);
    // The unmerged candidate (always the first) and its cost per stream row: a split
    // plan's unmerged part.
    let Some(&(base, _)) = candidates.first() else {
        return Err(Error::UnsupportedMerge { rows: opts.merge_rows.unwrap_or(1), why: String::new() });
    };
    let base_rows: Vec<f64> = tile_costs(row_ptr, kb as u32, base, n, elem).collect();
    // The best single plan, and every merged candidate with its cost per merged row (for a
    // split). Each merge is costed from its counts (`merge_counts`); only the one kept is
    // merged, below.
    let mut best: Option<Costed> = None;
    let mut merged_costed: Vec<Costed> = Vec::new();
    for &(choice, m) in candidates {
        if !allowed(m) {
            continue;
        }
        if m == 1 {
            let total = if choice == base { base_rows.iter().sum() } else { tile_cost(row_ptr, kb as u32, choice, n, elem) };
            let c = Costed { choice, m, total, by_len: false, skips: false, groups: Vec::new() };
            if best.as_ref().is_none_or(|b| c.total < b.total) {
                best = Some(c);
            }
            continue;
        }
        for &by_len in merged_orders {
            let (rp, kx, _) = order.stream(row_ptr, kidx, by_len);
            let counts = match merge_counts(rp, kx, m as usize, choice.shape().0) {
                Ok(counts) => counts,
                Err(e) if opts.merge_rows.is_some() => return Err(e),
                Err(_) => continue,
            };
            // Skipping needs the Hopper kernels and rows no taller than a warpgroup's.
            let can_skip = choice.family == KernelFamily::Hopper && rb <= WG_M as usize;
            let mut pick: Option<(Vec<f64>, f64, bool)> = None;
            for &s in skip_choices {
                let groups: Vec<f64> = match (s, can_skip) {
                    (false, _) => tile_costs(&counts.row_ptr, kb as u32, choice, n, elem).collect(),
                    (true, true) => skip_tile_costs(&counts.row_ptr, &counts.groups, kb as u32, choice, n, elem).collect(),
                    (true, false) => continue,
                };
                let total: f64 = groups.iter().sum();
                if pick.as_ref().is_none_or(|p| total < p.1) {
                    pick = Some((groups, total, s));
                }
            }
            // Asked to skip where the kernels cannot: the plan multiplies the zeros.
            let (groups, total, skips) = pick.unwrap_or_else(|| {
                let groups: Vec<f64> = tile_costs(&counts.row_ptr, kb as u32, choice, n, elem).collect();
                let total = groups.iter().sum();
                (groups, total, false)
            });
            if best.as_ref().is_none_or(|b| total < b.total) {
                best = Some(Costed { choice, m, total, by_len, skips, groups: Vec::new() });
            }
            merged_costed.push(Costed { choice, m, total, by_len, skips, groups });
        }
    }
    let Some(best) = best else {
        return Err(Error::UnsupportedMerge { rows: opts.merge_rows.unwrap_or(1), why: String::new() });
    };
    // A split: per merged candidate, its merged rows whose group costs less merged than
    // its rows unmerged (whole groups only), the rest unmerged; the cheapest such split.
    let considers_split = match opts.split_rows {
        Some(s) => s,
        None => opts.merge_rows.is_none(),
    };
    let mut split: Option<(usize, Vec<bool>, f64)> = None;
    if considers_split {
        for (ci, c) in merged_costed.iter().enumerate() {
            let row_cost = |i: usize| base_rows[order.row_at(c.by_len, i) as usize];
            if let Some((take, total)) = split_groups(&c.groups, row_cost, c.m as usize, rows)
                && split.as_ref().is_none_or(|s| total < s.2)
            {
                split = Some((ci, take, total));
            }
        }
    }
    let split = split.filter(|s| opts.split_rows == Some(true) || s.2 < SPLIT_GAIN * best.total);
    let total = split.as_ref().map_or(best.total, |s| s.2);
    let split = split.map(|(ci, take, _)| (merged_costed.swap_remove(ci), take));
    // (A split's unmerged part runs the base tile: only its merged groups are weighed.)
    let deep_total = match &split {
        None => best.total * shallow_time(best.choice),
        Some((c, take)) => {
            let merged: f64 = c.groups.iter().zip(take).filter(|(_, t)| **t).map(|(g, _)| g).sum();
            merged * shallow_time(c.choice) + (total - merged) * shallow_time(base)
        }
    };
    Ok(Decision { best, split, order, deep_total })
}

impl Context {
    /// Plans `C = alpha · op(A) · op(B) + beta · C` for `a`'s pattern and batch, with op(B)
    /// and C of `n` columns. Every product with this pattern, batch and `n` can reuse it.
    pub fn plan_spmm<T: InputElement>(&self, a: &DeviceBsr<T>, op_a: Transpose, n: usize) -> Result<SpmmPlan> {
        self.plan_spmm_with(a, op_a, n, &PlanOptions::default())
    }

    /// As [`Context::plan_spmm`], with tuning options.
    pub fn plan_spmm_with<T: InputElement>(&self, a: &DeviceBsr<T>, op_a: Transpose, n: usize, opts: &PlanOptions) -> Result<SpmmPlan> {
        self.plan_sparse::<T>(self.operand(a)?, SparseOp { op_a, side: Side::Left, kernel_op: op_a, n }, (opts, None))
    }

    /// Plans `C = alpha · op(X) · op(A) + beta · C` (dense × sparse) for `a`'s pattern and
    /// batch, with op(X) and C of `m` rows.
    pub fn plan_dense_sparse<T: InputElement>(&self, a: &DeviceBsr<T>, op_a: Transpose, m: usize) -> Result<SpmmPlan> {
        self.plan_dense_sparse_with(a, op_a, m, &PlanOptions::default())
    }

    /// As [`Context::plan_dense_sparse`], with tuning options.
    pub fn plan_dense_sparse_with<T: InputElement>(
        &self,
        a: &DeviceBsr<T>,
        op_a: Transpose,
        m: usize,
        opts: &PlanOptions,
    ) -> Result<SpmmPlan> {
        // Cᵀ = op(A)ᵀ · op(X)ᵀ: the kernel streams the other op of A.
        self.plan_sparse::<T>(self.operand(a)?, SparseOp { op_a, side: Side::Right, kernel_op: op_a.flip(), n: m }, (opts, None))
    }

    /// The SpMM plan of `C = alpha · A · B + beta · C` (as [`Context::plan_spmm_with`], A not
    /// transposed) whose C is read only at its blocks `c` (`(row_ptr, col_idx, bn)`: per block
    /// row of A's height, the block columns of C's `bn`-wide blocks): the output tiles without
    /// one of them get no work item and are not written (the dense-B route of BSR × BSR into a
    /// block-sparse C).
    pub(crate) fn plan_spmm_at_blocks<T: InputElement>(
        &self,
        a: &DeviceBsr<T>,
        n: usize,
        opts: &PlanOptions,
        c: (&[u32], &[u32], usize),
    ) -> Result<SpmmPlan> {
        if c.0.len() != a.pattern.block_rows() + 1 {
            return Err(Error::Internal(format!(
                "{} rows of C's blocks for A's {} block rows",
                c.0.len().saturating_sub(1),
                a.pattern.block_rows()
            )));
        }
        self.plan_sparse::<T>(
            self.operand(a)?,
            SparseOp { op_a: Transpose::No, side: Side::Left, kernel_op: Transpose::No, n },
            (opts, Some(c)),
        )
    }

    /// `a` as a plan's operand, on this context's device.
    fn operand<'a, T>(&self, a: &'a DeviceBsr<T>) -> Result<Operand<'a>> {
        self.same_device("A", a.values.ordinal())?;
        Ok(Operand { pattern: &a.pattern, batch: a.batch })
    }

    /// The plan of an SpMM-like op; `c_blocks` (`Side::Left`, A streamed as stored): the only
    /// blocks of C that are read ([`Context::plan_spmm_at_blocks`]).
    fn plan_sparse<T: InputElement>(&self, a: Operand, op: SparseOp, (opts, c_blocks): (&PlanOptions, CBlocks)) -> Result<SpmmPlan> {
        let SparseOp { op_a, side, kernel_op, n } = op;
        check_dim("dense dimension of the product", n)?;
        // (C's blocks are C's rows as A streams them: `A · B`.)
        debug_assert!(c_blocks.is_none() || (side == Side::Left && kernel_op == Transpose::No));
        let pat = a.pattern;
        let block = pat.block;
        if opts.coarse_a == Some(true) && coarse_fits(pat) {
            return self.plan_reblocked::<T>(a, op, (opts, c_blocks), None);
        }
        // Rows of one block and its K extent, as the kernel streams A.
        let (rb, kb, k_total) = match kernel_op {
            Transpose::No => (block.bm, block.bk, pat.ncols),
            Transpose::Yes => (block.bk, block.bm, pat.nrows),
        };
        // The stream: rows, their K-block indices and (Aᵀ) their blocks.
        let (row_ptr, kidx, perm) = match kernel_op {
            Transpose::No => (pat.row_ptr.clone(), pat.col_idx_host.clone(), None),
            Transpose::Yes => {
                let (col_ptr, rows, perm) = transpose_pattern(pat);
                (col_ptr, rows, Some(perm))
            }
        };
        let block_of = |q: usize| perm.as_ref().map_or(q as u32, |p| p[q]);
        // The plan: unmerged, or the merge asked for or (by default) the one the cost model
        // (`merge::plan_cost`: L2 traffic plus tensor work) prefers, of the stream in A's order
        // or reordered. (A merge too large to hold is no candidate.)
        let candidates = self.merge_candidates::<T>(pat, kernel_op, row_ptr.len().saturating_sub(1), rb, kb)?;
        let decision = choose_plan(&candidates, &row_ptr, &kidx, (rb, kb, n, core::mem::size_of::<T>()), opts).map_err(|e| match e {
            Error::UnsupportedMerge { rows, .. } => {
                let can: Vec<String> = candidates.iter().map(|(_, m)| m.to_string()).collect();
                Error::UnsupportedMerge {
                    rows,
                    why: format!(
                        "the kernels for {}x{} blocks{} can merge {} block row(s) per tile",
                        block.bm,
                        block.bk,
                        if kernel_op == Transpose::Yes { " streamed transposed" } else { "" },
                        can.join(" or ")
                    ),
                }
            }
            e => e,
        })?;
        // (Should the re-blocked plan not fit, its workspace too large for the device memory
        // left, A as stored still serves; any other error is the call's.)
        if let Some(coarse) = self.reblock_pays::<T>(a, kernel_op, n, opts, &decision) {
            match self.plan_reblocked::<T>(a, op, (opts, c_blocks), Some(coarse)) {
                Ok(plan) => return Ok(plan),
                Err(e) if is_size_error(&e) => {}
                Err(e) => return Err(e),
            }
        }
        let Decision { best, split, order, .. } = decision;
        let rows = row_ptr.len().saturating_sub(1);
        let base = candidates[0].0;
        let rb_log2 = rb.trailing_zeros();
        let part = |choice: TileChoice, m: u32, skips: bool, reordered: bool, stream_rows: Option<&[u32]>| -> Result<Part> {
            // The live `(tile row, N tile)` cells where only C's blocks are read: the tile row
            // of stream places `g·m .. g·m + m` holds, per place, A's (and C's) block row
            // `stream_rows[place]` (a split's part) or the plan order's.
            let tile_rows = stream_rows.map_or(rows, <[u32]>::len).div_ceil(m as usize);
            let live = c_blocks.map(|c| {
                let c_row = |place: usize| match stream_rows {
                    Some(sub) => sub.get(place).map(|&r| r as usize),
                    None => (place < rows).then(|| order.row_at(reordered && m > 1, place) as usize),
                };
                live_cells(c, tile_rows, m as usize, c_row, n, choice.shape().1 as usize)
            });
            if m == 1 {
                // Unmerged: A's stream (Aᵀ: the transposed one), all of its rows or, in a split,
                // some of them in A's order, each item naming its row and positions in A's
                // stream (no row map).
                let stream = perm.as_ref().map(|p| (kidx.clone(), p.clone()));
                let permuted;
                let (rp, kx, rows_of) = match stream_rows {
                    None => (row_ptr.clone(), &kidx[..], None),
                    Some(sub) => {
                        let (rp, kx, _) = permute_stream(&row_ptr, &kidx, sub);
                        let offsets: Vec<u32> = sub.iter().zip(&rp).map(|(&r, &at)| row_ptr[r as usize] - at).collect();
                        permuted = (kx, offsets);
                        (rp, &permuted.0[..], Some((sub, &permuted.1[..])))
                    }
                };
                return self.spmm_part::<T>(
                    a,
                    (n, kb, k_total),
                    opts,
                    choice,
                    (0, skips, reordered),
                    rp,
                    kx,
                    stream,
                    None,
                    rows_of,
                    live.as_deref(),
                );
            }
            // Merged: the stream rows in the plan's order (A's, reordered, or a split's merged
            // groups), each merged row's union and blocks; a row map unless in A's order.
            let merged = match stream_rows {
                None => {
                    let (rp, kx, pos) = order.stream(&row_ptr, &kidx, reordered);
                    merge_rows(rp, kx, |q| block_of(pos.map_or(q, |p| p[q] as usize)), m as usize)?
                }
                Some(sub) => {
                    let (rp, kx, pos) = permute_stream(&row_ptr, &kidx, sub);
                    merge_rows(&rp, &kx, |q| block_of(pos[q] as usize), m as usize)?
                }
            };
            let row_map = match stream_rows {
                Some(sub) => Some(sub),
                None if reordered => order.reorder.as_deref(),
                None => None,
            };
            let live_kidx = merged.kidx.clone();
            let stream = Some((merged.kidx, merged.blocks));
            self.spmm_part::<T>(
                a,
                (n, kb, k_total),
                opts,
                choice,
                (m.trailing_zeros(), skips, reordered),
                merged.row_ptr,
                &live_kidx,
                stream,
                row_map,
                None,
                live.as_deref(),
            )
        };
        let parts = match split {
            Some((c, take)) => {
                let m = c.m as usize;
                let (mut merged_rows_of, mut plain_rows) = (Vec::new(), Vec::new());
                for (g, &t) in take.iter().enumerate() {
                    let to = if t { &mut merged_rows_of } else { &mut plain_rows };
                    to.extend((g * m..(g * m + m).min(rows)).map(|i| order.row_at(c.by_len, i)));
                }
                plain_rows.sort_unstable();
                vec![part(c.choice, c.m, c.skips, c.by_len, Some(&merged_rows_of))?, part(base, 1, false, false, Some(&plain_rows))?]
            }
            None => vec![part(best.choice, best.m, best.skips, best.by_len, None)?],
        };
        Ok(SpmmPlan { pattern: pat.clone(), op_a, side, kernel_op, n, batch: a.batch, parts, row_unit_log2: rb_log2, coarse: None })
    }

    /// The plan of an SpMM-like op over A re-blocked into 128×128 blocks
    /// ([`PlanOptions::coarse_a`]; the caller checked [`coarse_fits`]): the coarse copy's
    /// workspace and the plan of its pattern (`opts`' other knobs applied to it), C's blocks
    /// `c_blocks` in groups of `128 / bm` rows. `coarse`: A's coarse pattern where the caller
    /// has it ([`coarse_pattern`]).
    fn plan_reblocked<T: InputElement>(
        &self,
        a: Operand,
        op: SparseOp,
        (opts, c_blocks): (&PlanOptions, CBlocks),
        coarse: Option<(Vec<u32>, Vec<u32>)>,
    ) -> Result<SpmmPlan> {
        let coarse = self.coarse_a(a.pattern, a.batch, coarse)?;
        let grouped = c_blocks.map(|(rp, ci, bn)| (group_rows(rp, ci, COARSE / a.pattern.block.bm, |j| j), bn));
        let c = grouped.as_ref().map(|((rp, ci), bn)| (&rp[..], &ci[..], *bn));
        let inner = PlanOptions { coarse_a: Some(false), ..*opts };
        let mut plan =
            self.plan_sparse::<T>(Operand { pattern: &coarse.pattern, batch: a.batch }, op, (&inner, c)).map_err(|e| match e {
                Error::UnsupportedMerge { rows, why } => {
                    Error::UnsupportedMerge { rows, why: format!("{why} (A re-blocked into 128x128 blocks: PlanOptions::coarse_a)") }
                }
                e => e,
            })?;
        plan.pattern = a.pattern.clone();
        plan.coarse = Some(coarse);
        Ok(plan)
    }

    /// Whether the default ([`PlanOptions::coarse_a`] `None`) re-blocks A: none of the merge
    /// knobs given, the plan `decision` on one of the Hopper kernels' shallow tiles, A's shape
    /// allowing it and the 128-row Hopper tile there, the coarse workspace within
    /// [`REBLOCK_MEMORY_SHARE`] of the device's memory, and the model's cost of the 128-row
    /// tile over the coarse pattern's stream plus the copy ([`COPY_BYTES_PER_ELEMENT`] per
    /// element written) below the decision's cost with its shallow parts times their tile's
    /// [`shallow_time`] ([`Decision::deep_total`]). `Some(A's coarse pattern)` where it does.
    fn reblock_pays<T: InputElement>(
        &self,
        a: Operand,
        kernel_op: Transpose,
        n: usize,
        opts: &PlanOptions,
        decision: &Decision,
    ) -> Option<(Vec<u32>, Vec<u32>)> {
        let asked = opts.merge_rows.is_some() || opts.reorder_rows.is_some() || opts.skip_absent.is_some() || opts.split_rows.is_some();
        let shallow = shallow_time(decision.tile()) > 1.0;
        let pat = a.pattern;
        if opts.coarse_a.is_some() || asked || !shallow || !coarse_fits(pat) || pat.nnzb() == 0 {
            return None;
        }
        let tile = wgmma_tile_index(COARSE as u32)?;
        let choice = TileChoice { family: KernelFamily::Hopper, tile };
        if !self.kernels.has(KernelKey { op: OpKind::Spmm, family: choice.family, input: T::DTYPE, tile, output: T::DTYPE }) {
            return None;
        }
        let (cost, coarse) = reblocked_cost(
            (&pat.row_ptr, &pat.col_idx_host),
            (pat.block.bm, pat.block.bk),
            pat.ncols,
            kernel_op,
            (n, core::mem::size_of::<T>()),
            choice,
        );
        let fits = coarse_bytes(coarse.1.len(), (pat.block.bm, pat.block.bk), a.batch)
            .is_ok_and(|(values, _)| values <= self.memory_bytes() / REBLOCK_MEMORY_SHARE);
        (fits && cost < decision.deep_total).then_some(coarse)
    }

    /// One part of an SpMM plan over the tile rows `row_ptr` delimits (`live_kidx`: their
    /// positions' K-block indices), streaming `stream` (K indices and blocks; `None`: A's
    /// pattern), C's row block per stream row through `row_map`, or, for an unmerged part over
    /// some of the stream's rows without a row map, `rows_of`: per tile row its stream row and
    /// the offset of its positions in the stream. `(merge_log2, skips, reordered)` as
    /// [`Part`]'s. `live`: the `(tile row, N tile)` cells to plan ([`plan_live_rows`]).
    #[allow(clippy::too_many_arguments)]
    fn spmm_part<T: InputElement>(
        &self,
        a: Operand,
        (n, kb, k_total): (usize, usize, usize),
        opts: &PlanOptions,
        choice: TileChoice,
        (merge_log2, skips, reordered): (u32, bool, bool),
        row_ptr: Vec<u32>,
        live_kidx: &[u32],
        stream: Option<(Vec<u32>, Vec<u32>)>,
        row_map: Option<&[u32]>,
        rows_of: Option<(&[u32], &[u32])>,
        live: Option<&[bool]>,
    ) -> Result<Part> {
        let (tm32, tn) = choice.shape();
        let kernel = self.kernels.get(KernelKey {
            op: OpKind::Spmm,
            family: choice.family,
            input: T::DTYPE,
            tile: choice.tile,
            output: T::DTYPE,
        })?;
        let resident = self.resident_blocks(choice, kernel)?;
        let tile_group = opts.n_tile_group.unwrap_or_else(|| {
            // B's strips that fit in L2, counting the part of each that the walk over the
            // stream rows keeps live (`plan::default_tile_group`).
            let strip = (k_total as u64) * tn as u64 * core::mem::size_of::<T>() as u64;
            let live = b_live_fraction(&row_ptr, live_kidx, k_total.div_ceil(kb));
            // A single matrix's rows (the rule of one wave is unmeasured on batches).
            let walk_rows = if a.batch == 1 { row_ptr.len().saturating_sub(1) as u64 } else { 0 };
            default_tile_group(self.l2_bytes() as u64, strip, live, walk_rows, resident, self.sm_count())
        });
        let stream_dev = match &stream {
            Some((k, b)) if !k.is_empty() => {
                let s = self.stream();
                Some((s.clone_htod(k)?, s.clone_htod(b)?))
            }
            _ => None,
        };
        let row_map = row_map.map(|m| self.stream().clone_htod(m)).transpose()?;
        let n_tiles = to_u32("N tiles", n.div_ceil(tn as usize))?;
        let tile_group = tile_group.clamp(1, n_tiles.max(1));
        let spec = RowsSpec {
            row_ptr: &row_ptr,
            n_tiles,
            batch: to_u32("batch", a.batch)?,
            kb: kb as u32,
            ks: choice.ks(),
            resident,
            tile_group,
            // The portable kernel caches an item's blocks in shared memory (`m` words per
            // position of a merged plan); the Hopper kernel reads them as it streams.
            max_item_blocks: if choice.family == KernelFamily::Hopper { u32::MAX } else { MAX_ITEM_BLOCKS >> merge_log2 },
        };
        let mut work = plan_live_rows(spec, live)?;
        if let Some((rows, offsets)) = rows_of {
            // Tile row r is stream row rows[r], its positions `offsets[r]` further on in the
            // stream.
            for it in &mut work.items {
                let r = it.tile_row as usize;
                (it.tile_row, it.blk_begin, it.blk_end) = (rows[r], it.blk_begin + offsets[r], it.blk_end + offsets[r]);
            }
            for g in &mut work.groups {
                g.tile_row = rows[g.tile_row as usize];
            }
        }
        if choice.family == KernelFamily::Hopper {
            schedule_persistent(&mut work, resident, row_item_cost);
        }
        let device = DeviceWork::upload(self.stream(), &work, (tm32, tn))?;
        let rows = row_ptr.len().saturating_sub(1);
        Ok(Part { choice, work, device, merge_log2, tile_group, skips, stream: stream_dev, row_map, reordered, rows })
    }

    /// The plans a stream of `rows` rows of `rb`-row blocks of K extent `kb` can run: `(tile,
    /// rows merged per tile)`, the unmerged plan first. On the Hopper module: 64-row rows in
    /// pairs on the 128-row tile (one `(64, 64)` TMA box each); and, for blocks the 64-deep
    /// tiles cannot take (32 or 16 deep, or rows of 32 or 16), the 128-row tile of the deepest
    /// stages `ks` (32 or 16) that divide the blocks' K extent, with `128 / rb` rows of at least
    /// `ks` (one `(ks, rb)` box each; for Aᵀ, rows of at most 64), where the rows past the last
    /// stream row fill whole warpgroups. On the portable kernel, any taller tile whose
    /// warps' rows each lie inside one stream row. (Rows past the last stream row are skipped
    /// whole by the epilogues.)
    fn merge_candidates<T: InputElement>(
        &self,
        pat: &Pattern,
        kernel_op: Transpose,
        rows: usize,
        rb: usize,
        kb: usize,
    ) -> Result<Vec<(TileChoice, u32)>> {
        let base = self.spmm_tile::<T>(pat, rb, kb)?;
        let mut out = vec![(base, 1u32)];
        let has = |choice: TileChoice| {
            self.kernels.has(KernelKey { op: OpKind::Spmm, family: choice.family, input: T::DTYPE, tile: choice.tile, output: T::DTYPE })
        };
        let tall = WGMMA_TILE_ROWS[WGMMA_TILE_ROWS.len() - 1] as usize;
        // A zero box's row (nnzb · bm, plus kin for Aᵀ) must fit TMA's i32 coordinates.
        let zero_row_fits = pat.nnzb().checked_add(1).and_then(|b| b.checked_mul(pat.block.bm)).is_some_and(|r| r < i32::MAX as usize);
        let hopper_fits = pat.nnzb() > 0 && zero_row_fits;
        match base.family {
            KernelFamily::Hopper => {
                if rb == BOX as usize
                    && hopper_fits
                    && let Some(tile) = wgmma_tile_index(tall as u32)
                {
                    let choice = TileChoice { family: KernelFamily::Hopper, tile };
                    if has(choice) {
                        out.push((choice, (tall / rb) as u32));
                    }
                }
            }
            KernelFamily::Portable => {
                let whole_warpgroups = rb >= WG_M as usize || rows.is_multiple_of(WG_M as usize / rb);
                // The deepest shallow tile whose stages the blocks fill.
                let shallow = WGMMA_SHALLOW_TILES.iter().copied().find(|&tile| {
                    let ks = WGMMA_TILES[tile].ks as usize;
                    kb.is_multiple_of(ks) && rb >= ks
                });
                // (Aᵀ: one `(ks, rb)` MN-major box per merged row, a row of it within one
                // 128-byte swizzle span.)
                if let Some(tile) = shallow
                    && (kernel_op == Transpose::No || rb <= BOX as usize)
                    && hopper_fits
                    && tall.is_multiple_of(rb)
                    && whole_warpgroups
                {
                    let choice = TileChoice { family: KernelFamily::Hopper, tile };
                    if has(choice) {
                        out.push((choice, (tall / rb) as u32));
                    }
                }
                let mut m = 2usize;
                while rb * m <= MMA_TILES[MMA_TILES.len() - 1].tm as usize && (m as u32) < MAX_ITEM_BLOCKS {
                    if let Some(tile) = mma_tile_index((rb * m) as u32)
                        && rb >= MMA_TILES[tile].warp_m() as usize
                    {
                        let choice = TileChoice { family: KernelFamily::Portable, tile };
                        if has(choice) {
                            out.push((choice, m as u32));
                        }
                    }
                    m *= 2;
                }
            }
        }
        Ok(out)
    }

    /// The kernel family for tile height `tm` and block K extent `kb`: wgmma + TMA on the Hopper
    /// module where both are 64 or 128 and TMA's signed 32-bit coordinates cannot overflow,
    /// mma.sync otherwise.
    fn spmm_tile<T: InputElement>(&self, pat: &Pattern, tm: usize, kb: usize) -> Result<TileChoice> {
        let tma_fits = pat.nnzb().checked_mul(pat.block.bm).is_some_and(|r| r < i32::MAX as usize);
        let hopper = wgmma_tile_index(tm as u32).filter(|_| kb.is_multiple_of(WG_K as usize) && pat.nnzb() > 0 && tma_fits);
        if let Some(tile) = hopper {
            let choice = TileChoice { family: KernelFamily::Hopper, tile };
            if self.kernels.has(KernelKey { op: OpKind::Spmm, family: choice.family, input: T::DTYPE, tile, output: T::DTYPE }) {
                return Ok(choice);
            }
        }
        let tile = mma_tile_index(tm as u32).ok_or(Error::UnsupportedBlockSize { bm: pat.block.bm, bk: pat.block.bk })?;
        Ok(TileChoice { family: KernelFamily::Portable, tile })
    }

    /// `C = alpha · op(A) · op(B) + beta · C`, op(A) as planned, op(B) and C as the views are
    /// given (`b.t()` for Bᵀ, `c.t_mut()` for a column-major C). Every argument is checked
    /// before anything is launched. With `beta == 0`, C is only written.
    pub fn spmm<'b, 'c, T: InputElement, O: Element>(
        &self,
        plan: &SpmmPlan,
        alpha: f32,
        a: &DeviceBsr<T>,
        b: impl Into<MatRef<'b, T>>,
        beta: f32,
        c: impl Into<MatMut<'c, O>>,
    ) -> Result<()> {
        if plan.side != Side::Left {
            return Err(Error::PlanMismatch("the plan was made for a dense x sparse product (use dense_sparse)".into()));
        }
        self.run_spmm(plan, alpha, a, b.into(), beta, c.into(), || Ok(()))
    }

    /// `C = alpha · op(X) · op(A) + beta · C` (dense × sparse), op(A) as planned, op(X) and C as
    /// the views are given. Every argument is checked before anything is launched.
    pub fn dense_sparse<'x, 'c, T: InputElement, O: Element>(
        &self,
        plan: &SpmmPlan,
        alpha: f32,
        x: impl Into<MatRef<'x, T>>,
        a: &DeviceBsr<T>,
        beta: f32,
        c: impl Into<MatMut<'c, O>>,
    ) -> Result<()> {
        if plan.side != Side::Right {
            return Err(Error::PlanMismatch("the plan was made for a sparse x dense product (use spmm)".into()));
        }
        // Cᵀ = op(A)ᵀ · op(X)ᵀ, both transposes being views of the same memory.
        self.run_spmm(plan, alpha, a, x.into().t(), beta, c.into().t(), || Ok(()))
    }

    /// The kernel's product `C = alpha · op(A) · B + beta · C` (op(A) = `plan.kernel_op`).
    /// `before` queues what must run before the product's kernels on the stream (BSR × BSR's
    /// densify of B), once every check has passed and before the first launch.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run_spmm<T: InputElement, O: Element>(
        &self,
        plan: &SpmmPlan,
        alpha: f32,
        a: &DeviceBsr<T>,
        b: MatRef<'_, T>,
        beta: f32,
        mut c: MatMut<'_, O>,
        before: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        check_scalars(alpha, beta)?;
        if !Arc::ptr_eq(&plan.pattern, &a.pattern) {
            return Err(Error::PlanMismatch("the plan was made for another sparsity pattern".into()));
        }
        let pat = &a.pattern;
        for part in &plan.parts {
            self.same_device("the plan", part.device.ordinal())?;
        }
        self.same_device("A", a.values.ordinal())?;
        self.same_device("A's pattern", pat.col_idx.ordinal())?;
        self.same_device(if plan.side == Side::Left { "op(B)" } else { "op(X)" }, b.buf.ordinal())?;
        self.same_device("C", c.buf.ordinal())?;
        let (m, k) = match plan.kernel_op {
            Transpose::No => (pat.nrows, pat.ncols),
            Transpose::Yes => (pat.ncols, pat.nrows),
        };
        let (bs, cs) = (b.shape(), c.shape());
        let sparse_left = plan.side == Side::Left;
        // Names in the user's terms: for dense × sparse, the kernel's B is op(X)ᵀ and C is Cᵀ.
        let (what_bk, what_bn, what_cm, what_cn) = if sparse_left {
            (
                "rows of op(B) (= columns of op(A))",
                "columns of op(B) (= N of the plan)",
                "rows of C (= rows of op(A))",
                "columns of C (= N of the plan)",
            )
        } else {
            (
                "columns of op(X) (= rows of op(A))",
                "rows of op(X) (= M of the plan)",
                "columns of C (= columns of op(A))",
                "rows of C (= M of the plan)",
            )
        };
        expect(what_bk, k, bs.rows)?;
        expect(what_bn, plan.n, bs.cols)?;
        expect(what_cm, m, cs.rows)?;
        expect(what_cn, plan.n, cs.cols)?;
        expect_batch("A", plan.batch, a.batch)?;
        expect_batch(if sparse_left { "op(B)" } else { "op(X)" }, plan.batch, bs.batch)?;
        expect_batch("C", plan.batch, cs.batch)?;

        let stream = self.stream();
        // The operand the kernels stream: A, or a re-blocked plan's coarse copy of it (written
        // below, once every check has passed; 16-bit values, read as `T`): its pattern, its
        // values' address (the guard held until every launch is queued, as below) and its
        // values per matrix.
        let (pat, (a_values, _ga), a_batch_stride) = match &plan.coarse {
            Some(coarse) => (&*coarse.pattern, coarse.values.device_ptr(stream), coarse.values_per_matrix()),
            None => (&*a.pattern, a.values_ptr(stream), a.values_per_matrix()),
        };
        let block = pat.block;
        let mut common = 0;
        if plan.kernel_op == Transpose::Yes {
            common |= flags::A_MN_MAJOR | flags::A_PERMUTED;
        }
        if bs.layout == Layout::ColMajor {
            common |= flags::B_K_MAJOR;
        }
        if cs.layout == Layout::ColMajor {
            common |= flags::C_COL_MAJOR;
        }
        let (ldb, k32) = (to_u32("ldb", bs.ld)?, to_u32("K", k)?);
        // Device addresses, their guards held until every part's launches (the fix-ups'
        // included) are queued: read intent (`DevicePtr`) for A (above), op(B) and the plan,
        // write intent (`DevicePtrMut`) for C, so that cudarc orders later work on other streams
        // after our reads and writes.
        let (b_ptr, _gb) = b.device_ptr(stream);
        let (c_ptr, _gc) = c.device_ptr_mut(stream);
        // (C's rows and columns are M and N: checked above.)
        let base_out = dense_out(c_ptr, &cs, alpha, beta)?;
        // Every part's kernels and tensor maps, before anything is launched.
        let mut ready = Vec::with_capacity(plan.parts.len());
        for part in &plan.parts {
            let choice = part.choice;
            let kernels = self.op_kernels::<T, O>(OpKind::Spmm, choice, part.device.fixup_grid)?;
            let maps = match choice.family {
                KernelFamily::Portable => None,
                KernelFamily::Hopper => {
                    let t = WGMMA_TILES[choice.tile];
                    // A: the values as a (nnzb · bm, bk) matrix per batch entry, in boxes of 64 ×
                    // 64 (Aᵀ, 64-deep stages), of `ks` rows of one block (Aᵀ, shallow stages: one
                    // box per merged row), of the whole tile height (K-major, unmerged, 64-deep
                    // stages) or of one block row (K-major, one box per merged row or shallow
                    // stages). A tile that takes A through registers gets K-major A unswizzled;
                    // blocks exactly `ks` wide (K-major, or Aᵀ of ks-row stream blocks) as the
                    // values in rows of PACKED_ROW (a box: whole rows), unswizzled.
                    let tmap_a = if t.a_packed(block.bk as u32) {
                        // A box of whole map rows: a K-major block (bm rows), or ks rows of one
                        // for Aᵀ.
                        let rows = if plan.kernel_op == Transpose::No { block.bm } else { t.ks as usize };
                        pat.values_map::<T>(
                            a.batch,
                            a_values,
                            PACKED_ROW as usize,
                            [PACKED_ROW, (rows * block.bk / PACKED_ROW as usize) as u32],
                            false,
                        )?
                    } else {
                        let a_box = match plan.kernel_op {
                            Transpose::Yes if t.ks < WG_K => [block.bk as u32, t.ks],
                            Transpose::Yes => [WG_K, WG_K],
                            Transpose::No if part.merge_log2 == 0 && t.ks == WG_K => [WG_K, t.tm],
                            Transpose::No => [t.ks, block.bm as u32],
                        };
                        // Swizzled, but K-major A taken through registers (Aᵀ through registers,
                        // blocks wider than ks, is read swizzled by `ldmatrix.trans`).
                        pat.values_map::<T>(a.batch, a_values, block.bk, a_box, !t.a_regs || plan.kernel_op == Transpose::Yes)?
                    };
                    // B: (ks, 64) boxes, rows along N (row-major) or along K (column-major).
                    let b_box = if bs.layout == Layout::RowMajor { [BOX, t.ks] } else { [t.ks, BOX] };
                    let tmap_b = dense_map::<T>(b_ptr, &bs, b_box)?;
                    // A row-mapped C leaves in one TMA store per stream row (of at least 16 rows).
                    let c_rows = if part.row_map.is_some() { 1 << plan.row_unit_log2 } else { WG_M };
                    let tmap_c = c_store_map_rows::<O>(c_ptr, &cs, t, c_rows)?;
                    Some((tmap_a, tmap_b, tmap_c))
                }
            };
            ready.push((kernels, maps));
        }
        // The coarse copy: after the previous product of this plan, wherever it was queued.
        let coarse_use = plan.coarse.as_ref().map(|c| c.busy.acquire(self.cuda(), stream, true)).transpose()?;
        before()?;
        if let Some(coarse) = &plan.coarse {
            self.copy_into_coarse(coarse, a)?;
        }
        // The parts write disjoint rows of C, one after the other.
        for (part, ((kernel, fixup), maps)) in plan.parts.iter().zip(ready) {
            let mut fl = common;
            if part.merge_log2 > 0 {
                fl |= flags::A_MERGED;
            }
            if part.skips {
                fl |= flags::A_SKIPS;
            }
            // The split-K workspace: after the previous product of this plan, wherever it was
            // queued.
            let workspace = part.device.workspace(self.cuda(), stream)?;
            let (work, _work_guards) = part.device.params(stream);
            let (kidx, _gk) = match &part.stream {
                Some((kidx, _)) => kidx.device_ptr(stream),
                None => pat.col_idx.device_ptr(stream),
            };
            let perm_guard = part.stream.as_ref().map(|(_, perm)| perm.device_ptr(stream));
            let perm = perm_guard.as_ref().map_or(0, |(p, _)| *p);
            let mut out = base_out;
            let map_guard = part.row_map.as_ref().map(|m| m.device_ptr(stream));
            if let Some((map, _)) = &map_guard {
                out.row_map = *map;
                out.row_unit_log2 = plan.row_unit_log2;
            }
            let params = SpmmParams {
                work,
                a_values,
                kidx,
                perm,
                b: b_ptr,
                a_batch_stride: a_batch_stride as u64,
                b_batch_stride: bs.batch_stride as u64,
                ldb,
                k: k32,
                bm_log2: block.bm.trailing_zeros(),
                bk_log2: block.bk.trailing_zeros(),
                flags: fl,
                merge_log2: part.merge_log2,
                // (Read only by merged Hopper plans, whose planner checked that it fits TMA's
                // i32 coordinates.)
                a_rows: u32::try_from(pat.nnzb() * block.bm).unwrap_or(u32::MAX),
                _pad: 0,
                out,
            };
            match maps {
                None => {
                    // SAFETY: the parameter block is the kernel's (shared abi type); every pointer
                    // is a live allocation of the size the checks above established, guarded
                    // until the launch is queued; the part's items index only blocks of the
                    // streamed operand (A, or its coarse copy) and tiles of C.
                    unsafe { launch(stream, kernel, part.device.grid, params) }?;
                }
                Some((tmap_a, tmap_b, tmap_c)) => {
                    let hp = HopperParams { tmap_a, tmap_b, tmap_c, p: params };
                    // SAFETY: as above; the tensor maps describe exactly the A values, B and C
                    // allocations (shapes and pitches checked), and out-of-range boxes read zeros.
                    unsafe { launch(stream, kernel, part.device.grid, hp) }?;
                }
            }
            part.device.launch_fixup(stream, fixup, work.partials, part.choice.shape(), FIXUP_TO_DENSE, out, BlockOut::default())?;
            workspace.release()?;
        }
        coarse_use.map_or(Ok(()), |u| u.release())
    }
}

/// Per `(tile row, N tile)` of a part, row-major: whether one of C's blocks (`(row_ptr,
/// col_idx)`, blocks `bn` columns wide) lies in the tile, whose rows are the block rows
/// `c_row(place)` of its `m` stream places `g·m .. g·m + m` (`None`: a place past the last
/// stream row) and whose columns are `t·tn .. (t + 1)·tn` of `n` (at least one N tile, as
/// [`plan_live_rows`] counts them).
///
/// ```text
/// for each tile row g, place s in g·m .. g·m + m, block (c_row(s), j) of C:
///     live[g][t] = true for each N tile t that columns j·bn .. j·bn + bn overlap
/// ```
pub(crate) fn live_cells(
    (row_ptr, col_idx, bn): (&[u32], &[u32], usize),
    tile_rows: usize,
    m: usize,
    c_row: impl Fn(usize) -> Option<usize>,
    n: usize,
    tn: usize,
) -> Vec<bool> {
    let n_tiles = n.div_ceil(tn.max(1)).max(1);
    let mut live = vec![false; tile_rows * n_tiles];
    for g in 0..tile_rows {
        let row = &mut live[g * n_tiles..][..n_tiles];
        for r in (g * m..g * m + m).filter_map(&c_row) {
            let Some(cols) = row_ptr.get(r..r + 2).and_then(|w| col_idx.get(w[0] as usize..w[1] as usize)) else {
                continue;
            };
            for &j in cols {
                let first = j as usize * bn;
                let (t0, t1) = (first / tn, ((first + bn - 1) / tn).min(n_tiles - 1));
                row[t0.min(n_tiles - 1)..=t1].fill(true);
            }
        }
    }
    live
}

/// The order in which a reordered plan merges the stream rows `row_ptr` delimits: the heavy
/// rows ([`heavy_first`], as the planner's heavy items) first, longest first, then the
/// others in A's order; `None` when fewer than two rows are heavy (nothing to bring together).
/// Full rows then share a tile with other full rows instead of with their light neighbours
/// (heavy-tailed and BigBird-like masks).
pub(crate) fn heavy_rows_first(row_ptr: &[u32]) -> Option<Vec<u32>> {
    let rows = row_ptr.len().saturating_sub(1);
    let len = |&r: &u32| (row_ptr[r as usize + 1] - row_ptr[r as usize]) as u64;
    let mut order: Vec<u32> = (0..rows as u32).collect();
    (heavy_first(&mut order, len, |_| 0) >= 2).then_some(order)
}

/// The stream rows in `order`: their `row_ptr`, K indices and, per position, the position in
/// the original stream.
pub(crate) fn permute_stream(row_ptr: &[u32], kidx: &[u32], order: &[u32]) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let mut rp = Vec::with_capacity(order.len() + 1);
    let (mut kx, mut pos) = (Vec::with_capacity(kidx.len()), Vec::with_capacity(kidx.len()));
    rp.push(0);
    for &r in order {
        let (lo, hi) = (row_ptr[r as usize], row_ptr[r as usize + 1]);
        kx.extend_from_slice(&kidx[lo as usize..hi as usize]);
        pos.extend(lo..hi);
        rp.push(kx.len() as u32);
    }
    (rp, kx, pos)
}

/// The TMA map of a dense view: (contiguous extent, strided extent, batch), box `boxdim`.
pub(crate) fn dense_map<T: Element>(ptr: u64, s: &MatShape, boxdim: [u32; 2]) -> Result<[u64; 16]> {
    let (inner, outer) = s.inner_outer();
    let e = core::mem::size_of::<T>() as u64;
    tensor_map::<T>(ptr, [inner as u64, outer as u64, s.batch as u64], [s.ld as u64 * e, s.batch_stride as u64 * e], boxdim, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::tests::{csr, csr_at};
    use blocksparse_testkit::testgen::{MaskFamily, seeded_rng};

    /// The candidates the Hopper module offers a stream of `rows` rows of `bs`-row blocks (as
    /// `merge_candidates` lists them): the unmerged tile first; the shallow wgmma tiles where
    /// the rows fill whole warpgroups.
    fn hopper_candidates(bs: u32, rows: usize) -> Vec<(TileChoice, u32)> {
        let portable = |tm: u32| TileChoice { family: KernelFamily::Portable, tile: mma_tile_index(tm).unwrap() };
        let hopper = |tile: usize| TileChoice { family: KernelFamily::Hopper, tile };
        let whole = rows.is_multiple_of(WG_M as usize / bs as usize);
        let mut c = match bs {
            16 => vec![(portable(16), 1), (hopper(WGMMA_SHALLOW_TILES[1]), 8)],
            32 => vec![(portable(32), 1), (hopper(WGMMA_SHALLOW_TILES[0]), 4), (portable(64), 2), (portable(128), 4)],
            _ => return vec![(hopper(wgmma_tile_index(bs).unwrap()), 1), (hopper(wgmma_tile_index(128).unwrap()), 128 / bs)],
        };
        c.retain(|&(t, _)| whole || t.family == KernelFamily::Portable);
        c
    }

    /// The model's best single plan and best split of `family` at `bs`×`bs`, 8192³ f16.
    fn decide(family: MaskFamily, bs: usize, seed: u64, opts: &PlanOptions) -> (Decision, f64) {
        decide_at(family, bs, (8192 / bs, 8192 / bs, 8192), seed, opts)
    }

    /// [`decide`] on a grid of `(block rows, block columns)` with `n` columns of B.
    fn decide_at(family: MaskFamily, bs: usize, (nb, cols, n): (usize, usize, usize), seed: u64, opts: &PlanOptions) -> (Decision, f64) {
        let (row_ptr, kidx) = csr(&family.mask(nb, cols, &mut seeded_rng(seed)), cols);
        let cands = hopper_candidates(bs as u32, nb);
        let d = choose_plan(&cands, &row_ptr, &kidx, (bs, bs, n, 2), opts).unwrap();
        let split_cost = d.split.as_ref().map_or(f64::NAN, |(c, take)| {
            let base: Vec<f64> = tile_costs(&row_ptr, bs as u32, cands[0].0, n, 2).collect();
            let order = |i: usize| d.order.row_at(c.by_len, i) as usize;
            let m = c.m as usize;
            take.iter()
                .enumerate()
                .map(|(g, &t)| if t { c.groups[g] } else { (g * m..(g * m + m).min(nb)).map(|i| base[order(i)]).sum() })
                .sum()
        });
        (d, split_cost)
    }

    /// The default's re-blocked candidate against each family's plan at 8192³ f16 (the Hopper
    /// module's candidates; A, and a stream of Aᵀ of the transposed mask): `(taken, the
    /// re-blocked cost ÷ the plan's cost times its tile's [`shallow_time`])`.
    fn reblocked_choice(family: MaskFamily, bs: usize, seed: u64, kernel_op: Transpose) -> (bool, f64) {
        let nb = 8192 / bs;
        let mask = family.mask(nb, nb, &mut seeded_rng(seed));
        let (row_ptr, col_idx) = csr(&mask, nb);
        let stream = match kernel_op {
            Transpose::No => (row_ptr.clone(), col_idx.clone()),
            Transpose::Yes => csr(&(0..nb * nb).map(|i| mask[(i % nb) * nb + i / nb]).collect::<Vec<_>>(), nb),
        };
        let d = choose_plan(&hopper_candidates(bs as u32, nb), &stream.0, &stream.1, (bs, bs, 8192, 2), &PlanOptions::default()).unwrap();
        let deep = TileChoice { family: KernelFamily::Hopper, tile: wgmma_tile_index(128).unwrap() };
        let (cost, _) = reblocked_cost((&row_ptr, &col_idx), (bs, bs), 8192, kernel_op, (8192, 2), deep);
        let ratio = cost / d.deep_total;
        (shallow_time(d.tile()) > 1.0 && ratio < 1.0, ratio)
    }

    /// The default re-blocks the causal, sliding-window (±8) and block-diagonal masks at 16×16
    /// and 32×32, streamed as A and as Aᵀ: their merged shallow plans stream A's 128×128
    /// cells whole, which the deep tile runs faster (by less than [`SHALLOW_TIME`] only by the
    /// copy); not BigBird-like, heavy-tailed, top-16 and uniform 12.5 % masks, whose blocks leave
    /// most of their cells' zeros (random masks at 12.5 % run unmerged on the portable tiles).
    #[test]
    fn the_structured_masks_go_reblocked() {
        let seed: u64 = rand::random();
        for bs in [16, 32] {
            for family in MaskFamily::REAL {
                let structured = matches!(family, MaskFamily::Causal | MaskFamily::Window(_) | MaskFamily::BlockDiagonal(_));
                for op in [Transpose::No, Transpose::Yes] {
                    let (taken, ratio) = reblocked_choice(family, bs, seed, op);
                    assert_eq!(taken, structured, "seed {seed}: {bs}x{bs} {family:?} {op:?}: re-blocked at {ratio:.3} of the plan");
                }
            }
        }
    }

    /// Uniformly random masks dense enough that A's 128×128 cells are all present: the default
    /// re-blocks 16×16 at 25 % and 50 % and 32×32 at 50 %, and keeps 12.5 % as stored (it runs
    /// on the portable tiles). Measured (perf notes v48, the SpMM plans of BSR × BSR's dense-B
    /// route, `A · B_dense` at 8192³ f16 on the H100): 16×16 25 % 2.242 ms as stored (merged
    /// k16) against 1.531 re-blocked, 50 % 2.327 against 1.651, 12.5 % 1.163 against 1.472;
    /// 32×32 50 % 1.824 against 1.553 (v47, v48).
    #[test]
    fn dense_enough_random_masks_go_reblocked() {
        let seed: u64 = rand::random();
        for (bs, density, want) in [(16, 0.125, false), (16, 0.25, true), (16, 0.5, true), (32, 0.125, false), (32, 0.5, true)] {
            let (taken, ratio) = reblocked_choice(MaskFamily::Uniform(density), bs, seed, Transpose::No);
            assert_eq!(taken, want, "seed {seed}: {bs}x{bs} uniform {density}: re-blocked at {ratio:.3} of the plan");
        }
    }

    /// A tile row's cells are live where a block of one of its places' rows overlaps the
    /// tile's columns (through the place → row map of a reordered or split part); a block wider
    /// than a tile makes every tile it crosses live; places past the last row hold nothing.
    #[test]
    fn live_cells_follow_the_rows_of_each_place() {
        let (rp, ci) = csr_at(6, 7, &[(0, 0), (2, 3), (3, 6), (4, 1), (4, 2)]);
        let order = [5usize, 0, 3, 1, 4, 2];
        // 32-column blocks, 224 columns in tiles of 64: the last tile half past C's columns.
        let live = live_cells((&rp, &ci, 32), 4, 2, |p| order.get(p).copied(), 224, 64);
        let (t, f) = (true, false);
        assert_eq!(live, [[t, f, f, f], [f, f, f, t], [t, t, f, f], [f, f, f, f]].concat());
        // 128-column blocks in tiles of 64: block column 1 covers tiles 2 and 3.
        let live = live_cells((&[0, 1][..], &[1][..], 128), 1, 1, Some, 256, 64);
        assert_eq!(live, [f, f, t, t]);
    }

    /// The reordered case of `cargo xtask validate`'s dense-B gather check (heavy-tailed rows
    /// at 16×16, 2048 rows, N 288, reordering asked for and splitting not) merges the rows in
    /// another order on the Hopper module, as validate requires there.
    #[test]
    fn validates_the_gather_case_reordered() {
        let seed: u64 = rand::random();
        let opts = PlanOptions { reorder_rows: Some(true), split_rows: Some(false), ..Default::default() };
        let (d, _) = decide_at(MaskFamily::Zipf(0.1), 16, (128, 128, 288), seed, &opts);
        assert!(
            d.best.m > 1 && d.best.by_len && d.best.choice.family == KernelFamily::Hopper,
            "seed {seed}: merged {}, reordered {}",
            d.best.m,
            d.best.by_len
        );
    }

    /// The split the model makes of the mixed mask: at 16×16 it sends the window bands to the
    /// merged 16-deep wgmma tile and the top-16 bands to the portable one (their unmerged
    /// tile, 1.5× faster than merged on top-16 masks, perf notes v19), for well under
    /// [`SPLIT_GAIN`] of the best single plan; at 32×32 and 64×64 (asked here with
    /// `Some(true)`; by default too, at model ratios of about 0.95) the same way, a few top-16
    /// groups either way; `Some(false)` never splits.
    #[test]
    fn the_mixed_masks_window_rows_go_merged_and_random_rows_unmerged() {
        let seed: u64 = rand::random();
        for (bs, opts) in [
            (16, PlanOptions::default()),
            (32, PlanOptions { split_rows: Some(true), ..Default::default() }),
            (64, PlanOptions { split_rows: Some(true), ..Default::default() }),
        ] {
            let (d, split_cost) = decide(MaskFamily::Mixed, bs, seed, &opts);
            let (c, take) = d.split.as_ref().unwrap_or_else(|| panic!("seed {seed}: {bs}x{bs}: no split"));
            assert!(c.m > 1);
            if opts.split_rows.is_none() {
                assert!(split_cost < SPLIT_GAIN * d.best.total, "seed {seed}: {bs}: split {split_cost} vs {}", d.best.total);
            }
            // Group g's rows (A's order: the mask's rows have equal lengths, none heavy) are
            // window rows in the even bands (8 bands).
            // Every window group merged; of the top-16 groups, whose merged and unmerged costs lie
            // closer at 32×32 and 64×64, at most one in ten.
            let nb = 8192 / bs;
            let m = c.m as usize;
            let window = |g: usize| (g * m * 8 / nb).is_multiple_of(2);
            assert!(take.iter().enumerate().all(|(g, &t)| t || !window(g)), "seed {seed}: {bs}x{bs}: a window group unmerged");
            let random_merged = take.iter().enumerate().filter(|&(g, &t)| t && !window(g)).count();
            assert!(10 * random_merged <= take.len() / 2, "seed {seed}: {bs}x{bs}: {random_merged} top-16 groups merged");
            let off = decide(MaskFamily::Mixed, bs, seed, &PlanOptions { split_rows: Some(false), ..opts }).0;
            assert!(off.split.is_none());
        }
    }

    /// The split cases of `cargo xtask validate` (rows streamed) split on the Hopper module, as
    /// validate requires there: the mixed mask at its sizes (N 288: its dense-B gather check); with holes (every fifth row from
    /// the third empty) and a last group short of the merge, empty rows and that group in the
    /// unmerged part; heavy-tailed rows reordered.
    #[test]
    fn validates_mixed_cases_split() {
        let seed: u64 = rand::random();
        let opts = PlanOptions { split_rows: Some(true), ..Default::default() };
        for (bs, rows, cols) in [(16usize, 128usize, 128usize), (32, 64, 128), (64, 64, 64)] {
            for n in [264, 280, 288, 296] {
                let (d, _) = decide_at(MaskFamily::Mixed, bs, (rows, cols, n), seed, &opts);
                let (c, _) = d.split.unwrap_or_else(|| panic!("seed {seed}: {bs}x{bs}, {rows} rows, N {n}: no split"));
                assert_eq!(c.choice.family, KernelFamily::Hopper, "seed {seed}: {bs}x{bs}, N {n}: the merged part");
            }
        }
        for (bs, rows, cols) in [(16usize, 132usize, 128usize), (32, 66, 128)] {
            let mut mask = MaskFamily::Mixed.mask(rows, cols, &mut seeded_rng(seed));
            for r in (2..rows).step_by(5) {
                mask[r * cols..(r + 1) * cols].fill(false);
            }
            let (row_ptr, kidx) = csr(&mask, cols);
            let d = choose_plan(&hopper_candidates(bs as u32, rows), &row_ptr, &kidx, (bs, bs, 264, 2), &opts).unwrap();
            let (c, take) = d.split.unwrap_or_else(|| panic!("seed {seed}: {bs}x{bs} with holes: no split"));
            let m = c.m as usize;
            assert!(!take[take.len() - 1] && rows % m != 0, "seed {seed}: {bs}x{bs}: the short last group");
            let plain_empty = (0..take.len()).filter(|&g| !take[g]).flat_map(|g| g * m..(g * m + m).min(rows));
            assert!(plain_empty.filter(|&r| row_ptr[r] == row_ptr[r + 1]).count() > 0, "seed {seed}: {bs}x{bs}: no empty row unmerged");
        }
        let reorder = PlanOptions { reorder_rows: Some(true), ..opts };
        for (bs, rows) in [(16usize, 128usize), (32, 64)] {
            let (d, _) = decide_at(MaskFamily::Zipf(0.1), bs, (rows, 128, 264), seed, &reorder);
            let (c, _) = d.split.unwrap_or_else(|| panic!("seed {seed}: {bs}x{bs} heavy-tailed: no split"));
            assert!(c.by_len && c.choice.family == KernelFamily::Hopper, "seed {seed}: {bs}x{bs} heavy-tailed: not reordered on Hopper");
        }
    }

    /// The model's split against its best single plan for every family (a listing for perf
    /// notes v38: `cargo test -p blocksparse split_costs -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn split_costs() {
        let mut fams = MaskFamily::REAL.to_vec();
        fams.push(MaskFamily::Mixed);
        for bs in [16, 32, 64] {
            for f in &fams {
                let (d, split) = decide(*f, bs, 7, &PlanOptions { split_rows: Some(true), ..Default::default() });
                let merged = d.split.as_ref().map_or(0, |(_, t)| t.iter().filter(|&&t| t).count());
                println!(
                    "{bs:>3} {:<14} best {:?}/{} {:.3e}  split {:.3e} ({:.3} of best, {merged} merged rows)",
                    f.name(),
                    d.best.choice,
                    d.best.m,
                    d.best.total,
                    split,
                    split / d.best.total
                );
            }
        }
    }
}
