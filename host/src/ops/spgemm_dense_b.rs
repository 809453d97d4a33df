//! BSR × BSR with B streamed dense ([`PlanOptions::dense_b`]): each product writes B's blocks
//! into a dense workspace (the densify kernel, zeros outside the blocks) and runs `A · B` on the
//! SpMM kernels, whose merged tiles run on wgmma on Hopper where A's blocks are 16 or 32 deep;
//! a block-sparse C is then gathered from a product workspace (the sparsify kernel):
//! ```text
//! B_dense[b] = B[b] with zeros outside its blocks             (densify kernel)
//! dense C:  C[b] = alpha · A[b] · B_dense[b] + beta · C[b]     (the SpMM plan of A's pattern)
//! BSR C, beta 0:  P[b] = alpha · A[b] · B_dense[b]           (P in C's type)
//!                 C[b] at C's blocks = P[b]                   (sparsify kernel, a copy)
//! BSR C, else:    P[b] = A[b] · B_dense[b]                    (f32 P)
//!                 C[b] at C's blocks = alpha · P[b] + beta · C[b]  (sparsify kernel)
//! ```
//! For a block-sparse C the SpMM plan computes P only in its output tiles that hold one of C's
//! blocks (`Context::plan_spmm_at_blocks`): a masked product computes no tile outside the
//! mask. With a re-blocked A ([`PlanOptions::coarse_a`]) each product first copies A's blocks
//! into 128×128 blocks (the densify kernel again, through a cell map of the coarse values), and
//! the SpMM plan is the coarse pattern's: the 128-row, 64-deep tile instead of the merged
//! shallow ones.
//! The same sum as the records' (every pair of A's and B's blocks, in increasing K, plus
//! products with zeros: B's, and those filling a re-blocked A's cells), deterministic like both
//! kernels.

use std::sync::Mutex;

use blocksparse_abi::{
    KernelFamily, NO_BLOCK, OpKind, SPARSIFY_CHUNK, SPARSIFY_THREADS, SparsifyParams, WG_M, WGMMA_SHALLOW_TILES, WGMMA_TILES,
    WORK_ITEM_WORDS,
};
use cudarc::driver::{CudaSlice, DevicePtr};

use super::reblock::{COARSE, coarse_bytes, coarse_fits, coarse_pattern, densify_fits};
use super::spmm::{SpmmPlan, live_cells};
use super::{PlanOptions, Transpose};
use crate::context::Context;
use crate::device_bsr::{DeviceBsr, Pattern};
use crate::element::{DType, Element, InputElement};
use crate::error::{Error, Result};
use crate::kernels::KernelKey;
use crate::launch::{Params, launch};
use crate::matrix::{Layout, MatMut, MatRef, MatShape};
use crate::merge::merge_counts;
use crate::pairs::BlockPattern;
use crate::plan::Exclusive;

// SAFETY: the sparsify kernels' `#[repr(C)]` parameter block from `blocksparse-abi`, taken by
// value.
unsafe impl Params for SparsifyParams {}

/// The cost model of the default route ([`dense_b_pays`]) for one square block size, in units
/// of the time the SpMM kernels' merged 16-deep wgmma tile takes for one `(16, 16) · (16, 256)`
/// piece of its dense work (0.283 ns on the H100).
struct RouteModel {
    /// The block size (of A and B, square).
    bs: u32,
    /// One `(bs, bs) · (bs, 256)` piece of the merged `bs`-deep tile's dense work.
    piece: f64,
    /// One stage record of the records' plan.
    record: f64,
    /// One block pair of the records' plan.
    pair: f64,
}

/// Fitted on the H100 at 8192³ (perf notes v44, v46). 16×16: the merged tile ran 0.265–0.288
/// ns per piece (uniform 25 %, 37.5 %, 50 % and banded 12.5 % A); the records, on the portable
/// 16-row tile, about 0.50 ns per record plus 0.089 ns per pair (uniform 12.5 %, 25 %, 50 %;
/// within 5 % of the 37.5 % and banded rows as well). 32×32: the merged 32-deep tile 0.82–0.97
/// ns per piece (the same four cases); the records, on the 32-row tile with warp rings, 0.82
/// ns per record plus 0.27 ns per pair (12.5 % and 50 %; within 9 % of 25 % and 37.5 %).
const ROUTE_MODELS: [RouteModel; 2] =
    [RouteModel { bs: 16, piece: 1.0, record: 1.8, pair: 0.32 }, RouteModel { bs: 32, piece: 3.1, record: 2.9, pair: 0.95 }];
/// See [`RouteModel`]: writing one element of the dense B (about 0.85 ps per element of
/// K × N).
const DENSIFY_COST: f64 = 0.003;
/// See [`RouteModel`]: one element of a block-sparse C's blocks (the SpMM kernels' product
/// there and the sparsify kernel reading it and writing C). Fitted on the H100 at 8192³ with C
/// at the product's pattern, beta 0 and an f16 C (perf notes v46: the product written in C's
/// type and copied): 0.09–0.11 ms more than into a dense C where the product's pattern is
/// nearly full, about 1.5 ps per element; into a causal C (half of the elements, v47) about
/// half of that. With beta ≠ 0 or an f32 C the product is f32 and the gather slower (0.18–0.20
/// ms in v45, before its 16-byte stores). (The sparsify kernel's threads of the cells without
/// a block read their cell and end: not counted, unmeasured on their own.)
const SPARSIFY_COST: f64 = 0.005;

/// See [`RouteModel`]: one `(128, 128) · (128, 256)` piece of the SpMM kernels' 128-row,
/// 64-deep tile over a re-blocked A. Fitted on the H100 at 8192³ (perf notes v48): the route
/// over a re-blocked 16×16 uniform 50 % A (every 128×128 cell present, 131,072 pieces) took
/// 1.651 ms into a dense C, 0.114 ms of it the copy and the densify: 11.7 ns per piece, 41.4
/// units of 0.283 ns (SpMM over an A of random values in every 128×128 block ran 13.3 ns per
/// piece, v47: a re-blocked A is half zeros, and the tensor cores run faster under the power
/// cap on zeros; the same re-blocked work at 25 % took 1.531 ms). The merged 16-deep tile
/// ran the same work in 2.25 ms (64 pieces of its own per one of these).
const COARSE_PIECE: f64 = 41.4;

/// The default streams B dense only where the route's workspaces (B dense, and the product
/// of a block-sparse C) take at most this share of the device's memory: the records
/// hold no workspace of the product's size, and the default should not make a plan that the
/// records would have made in a fraction of the memory fail to fit.
const DENSE_B_MEMORY_SHARE: usize = 8;

/// Whether the route's `workspaces` bytes fit the default's share of the device's `memory`
/// ([`DENSE_B_MEMORY_SHARE`]).
pub(super) fn dense_b_fits(workspaces: usize, memory: usize) -> bool {
    workspaces <= memory / DENSE_B_MEMORY_SHARE
}

/// The cost model of `bs`×`bs` blocks, if one was fitted.
fn route_model(bs: usize) -> Option<&'static RouteModel> {
    ROUTE_MODELS.iter().find(|m| m.bs as usize == bs)
}

/// Whether the default route may stream B dense: the Hopper kernels (whose merged shallow
/// tiles the cost model describes: A's block rows in whole warpgroups of them, the SpMM
/// planner's condition for merging them), square blocks of one size in A and B with a fitted
/// model (16×16 and 32×32).
pub(super) fn dense_b_may_pay(hopper: bool, a: &Pattern, b: &Pattern) -> bool {
    let bs = a.block.bm;
    let square = |p: &Pattern| p.block.bm == bs && p.block.bk == bs;
    let whole_warpgroups = a.block_rows().is_multiple_of((WG_M as usize / bs).max(1));
    hopper && route_model(bs).is_some() && square(a) && square(b) && whole_warpgroups
}

/// The dense-B route's variant and modeled time ([`dense_b_pays`]): `true` for a re-blocked A
/// ([`PlanOptions::coarse_a`], `coarse`: `None` where the model puts it below the merged
/// shallow tile), and the time (`None` where the variant has no model).
pub(super) fn route_variant(a: &Pattern, n: usize, c: Option<&BlockPattern>, coarse: Option<bool>) -> (bool, Option<f64>) {
    let model = route_model(a.block.bm);
    let shallow = || model.and_then(|m| dense_b_cost(m, &a.row_ptr, &a.col_idx_host, a.ncols, n, c));
    let deep = || coarse_cost(a, n, c);
    match coarse {
        Some(true) if coarse_fits(a) => (true, deep()),
        Some(_) => (false, shallow()),
        None => match (shallow(), deep()) {
            (Some(s), Some(d)) if d < s => (true, Some(d)),
            (s, _) => (false, s),
        },
    }
}

/// The re-blocked route's modeled time: the 128-row tile over the cells of
/// [`coarse_pattern`] ([`COARSE_PIECE`] per cell and 256 columns, in the N tiles of each group
/// that hold one of C's blocks `c`), the copy of A into the cells and the densify of B
/// ([`DENSIFY_COST`] per element written); `None` where A's shape does not allow it.
fn coarse_cost(a: &Pattern, n: usize, c: Option<&BlockPattern>) -> Option<f64> {
    coarse_fits(a).then(|| coarse_cost_of((&a.row_ptr, &a.col_idx_host), (a.block.bm, a.block.bk), a.ncols, n, c))
}

/// [`coarse_cost`] of A's pattern `(row_ptr, col_idx)` in `(bm, bk)` blocks over `k` columns.
fn coarse_cost_of((row_ptr, col_idx): (&[u32], &[u32]), (bm, bk): (usize, usize), k: usize, n: usize, c: Option<&BlockPattern>) -> f64 {
    let (rp, ci) = coarse_pattern(row_ptr, col_idx, bm, bk);
    let tiles = live_tiles(c, rp.len() - 1, COARSE / bm, n, 256);
    let pieces: f64 = rp.windows(2).zip(tiles).map(|(w, t)| (w[1] - w[0]) as f64 * t as f64).sum();
    let copy = DENSIFY_COST * (ci.len() * COARSE * COARSE) as f64;
    COARSE_PIECE * pieces + copy + DENSIFY_COST * (k as f64 * n as f64)
}

/// Whether the dense-B route's modeled time is below the records': the SpMM kernels' merged
/// tile as deep as A's blocks over A's rows in groups of its height (each group the union of
/// its rows' block columns, `(128, bs) · (bs, N)` per column; for a block-sparse C with
/// blocks, `c`, only in the tiles that hold one of them) plus densifying B (and, for `c`, the
/// product gathered into C's blocks), against `records` stage records and `pairs` block pairs
/// ([`RouteModel`]). The SpMM planner may choose a plan cheaper than the merged one (then the
/// model bounds the route's time), or, for a block-sparse C, one that merges rows in another
/// order (heavy rows first), whose tiles may hold C's blocks in more N tiles than the model's
/// groups in A's order count. Or, re-blocked (`coarse`, [`route_variant`]), the 128-row tile
/// over A's 128×128 cells. `Some(re-blocked)` where the route pays.
pub(super) fn dense_b_pays(
    a: &Pattern,
    n: usize,
    c: Option<&BlockPattern>,
    records: usize,
    pairs: usize,
    coarse: Option<bool>,
) -> Option<bool> {
    let model = route_model(a.block.bm)?;
    let gather = c.map_or(0.0, |c| SPARSIFY_COST * (c.col_idx.len() * model.bs as usize * model.bs as usize) as f64);
    let (coarse, route) = route_variant(a, n, c, coarse);
    route.filter(|route| route + gather < records_cost(model, records, pairs)).map(|_| coarse)
}

/// The dense-B route's modeled time ([`dense_b_pays`]) for A's pattern `(row_ptr, col_idx)` of
/// `model`'s blocks over `k` columns, `n` columns of B and C's blocks `c` (`None`: a dense C):
/// SpMM's merged tile of that depth, its positions counted by the SpMM planner's own
/// [`merge_counts`] (`None` where that merge cannot be made), in the N tiles of each group of
/// rows that hold a block of C (all for a dense C).
fn dense_b_cost(model: &RouteModel, row_ptr: &[u32], col_idx: &[u32], k: usize, n: usize, c: Option<&BlockPattern>) -> Option<f64> {
    let tile = WGMMA_SHALLOW_TILES.iter().map(|&i| WGMMA_TILES[i]).find(|t| t.ks == model.bs)?;
    let rows = (tile.tm / model.bs) as usize;
    let counts = merge_counts(row_ptr, col_idx, rows, tile.tm).ok()?;
    // The live N tiles of each group of rows (A's order).
    let tiles = live_tiles(c, counts.row_ptr.len().saturating_sub(1), rows, n, tile.tn() as usize);
    // Pieces of `(bs, bs) · (bs, tn)` per position: its rows' blocks, times the live N tiles.
    let pieces: f64 = counts.row_ptr.windows(2).zip(tiles).map(|(w, t)| (w[1] - w[0]) as f64 * rows as f64 * t as f64).sum();
    Some(model.piece * pieces + DENSIFY_COST * (k as f64 * n as f64))
}

/// Per group of `per` block rows of A (C's block rows are A's), the N tiles of `tn` columns
/// of `n` that hold one of C's blocks `c` (all `⌈n / tn⌉` for a dense C, `None`), for
/// `groups` groups.
fn live_tiles(c: Option<&BlockPattern>, groups: usize, per: usize, n: usize, tn: usize) -> Vec<usize> {
    let n_tiles = n.div_ceil(tn);
    let Some(c) = c else {
        return vec![n_tiles; groups];
    };
    let c_rows = c.row_ptr.len().saturating_sub(1);
    let live = live_cells((c.row_ptr, c.col_idx, n / c.cols.max(1)), groups, per, |r| (r < c_rows).then_some(r), n, tn);
    live.chunks(n_tiles.max(1)).map(|tiles| tiles.iter().filter(|&&x| x).count()).collect()
}

/// The records' modeled time ([`dense_b_pays`]).
fn records_cost(model: &RouteModel, records: usize, pairs: usize) -> f64 {
    model.record * records as f64 + model.pair * pairs as f64
}

/// A plan's dense-B route: the SpMM plan of A's pattern, B's block cells and the workspace
/// (and, for a block-sparse C, C's block cells and the product workspace).
pub(super) struct DenseB {
    /// `A · B_dense` on the SpMM kernels.
    pub spmm: SpmmPlan,
    /// `((K / bk) · (N / bn),)`: per block cell of B, row-major, its block or [`NO_BLOCK`].
    cells: CudaSlice<u32>,
    /// B dense, `(batch, K, N)` row-major, 16-bit elements (f16 or bf16: moved as bits).
    dense: CudaSlice<u16>,
    /// A block-sparse C's part.
    block_c: Option<BlockC>,
    /// The products that write `dense` (and `block_c`'s product), one at a time.
    busy: Exclusive,
}

/// The dense-B route's part for a block-sparse C: the SpMM kernels write `A · B` into a
/// workspace (f32; with beta 0, `alpha · A · B` in C's type), and the sparsify kernel gathers
/// C's blocks from it.
struct BlockC {
    /// `((M / bm) · (N / bn),)`: per block cell of C, row-major, its block or [`NO_BLOCK`].
    cells: CudaSlice<u32>,
    /// The product, `(batch, M, N)` row-major, f32 elements (or C's, in their first half;
    /// locked by the product holding `busy`: the SpMM path writes it through a `&mut`),
    /// written in the SpMM plan's tiles (those that hold C's blocks).
    product: Mutex<CudaSlice<f32>>,
    /// f32 elements of `product`.
    product_len: usize,
}

impl DenseB {
    /// Whether A is re-blocked ([`PlanOptions::coarse_a`]: the SpMM plan's copy).
    pub fn coarse_a(&self) -> bool {
        self.spmm.coarse_a()
    }

    /// The device the route lives on.
    pub fn ordinal(&self) -> usize {
        self.cells.ordinal()
    }

    /// Bytes of device memory the route holds (the SpMM plan's included).
    pub fn device_bytes(&self) -> usize {
        let block_c = self.block_c.as_ref().map_or(0, |c| 4 * (c.cells.len() + c.product_len));
        2 * self.dense.len() + 4 * self.cells.len() + block_c + self.spmm.device_bytes()
    }
}

/// Device bytes of a dense-B plan, counted before anything is allocated, as `(workspaces, cell
/// maps, SpMM plan)`: B dense and its cell map; for a block-sparse C with blocks (`block_c`),
/// the product workspace (`M · N` f32 per matrix) and C's cell map; for a re-blocked A
/// (`coarse`), its 128×128 blocks, their column indices and the copy's cell map; and the SpMM
/// plan's stream and work list at their bounds (a merged stream holds at most nine words per
/// block of A: its K index and up to eight rows' blocks; one work item per 128-column tile of
/// each block row and matrix). Split tiles add a few items and partial tiles per SM:
/// [`crate::SpgemmPlan::device_bytes`] has the exact total. [`Error::TooLarge`] where the
/// densify kernel's 32-bit chunk indices cannot cover one matrix of B or of the re-blocked A
/// (one thread per 8 elements), or the sparsify kernel's one matrix of `A · B` (one per 8).
pub(super) fn dense_b_device_bytes<T>(a: &DeviceBsr<T>, b: &DeviceBsr<T>, block_c: bool, coarse: bool) -> Result<(usize, usize, usize)> {
    let fits = |elems: u64, chunk: u32, threads: u32| elems / chunk as u64 + threads as u64 <= u32::MAX as u64;
    let elems = b.nrows() as u64 * b.ncols() as u64;
    if !densify_fits(elems) {
        return Err(Error::TooLarge { what: "elements of B streamed dense", value: elems as usize });
    }
    let product_elems = a.nrows() as u64 * b.ncols() as u64;
    if block_c && !fits(product_elems, SPARSIFY_CHUNK, SPARSIFY_THREADS) {
        return Err(Error::TooLarge { what: "elements of A · B gathered into C's blocks", value: product_elems as usize });
    }
    // A re-blocked A: its 128×128 blocks (values, one cell word per `(bm, bk)` cell of each,
    // a column index) and its SpMM plan's stream rows of 128.
    let (a_blocks, a_rows, coarse_bytes) = if coarse {
        let p = &a.pattern;
        let blocks = coarse_pattern(&p.row_ptr, &p.col_idx_host, p.block.bm, p.block.bk).1.len();
        (blocks, p.nrows / COARSE, Some(coarse_bytes(blocks, (p.block.bm, p.block.bk), a.batch)?))
    } else {
        (a.nnzb(), a.pattern.block_rows(), Some((0, 0)))
    };
    let dense = dense_len(b.nrows(), b.ncols(), b.batch, "dense B")?.checked_mul(core::mem::size_of::<T>());
    let product = if block_c { dense_len(a.nrows(), b.ncols(), a.batch, "A · B")?.checked_mul(4) } else { Some(0) };
    let workspaces = dense
        .zip(product)
        .zip(coarse_bytes)
        .and_then(|((d, p), (c, _))| d.checked_add(p)?.checked_add(c))
        .ok_or(Error::Overflow { what: "dense-B workspaces" })?;
    let c_cells = if block_c { a.pattern.block_rows() * b.pattern.block_cols() } else { 0 };
    let cells = 4 * (b.pattern.block_rows() * b.pattern.block_cols() + c_cells) + coarse_bytes.map_or(0, |(_, c)| c);
    let stream = 36 * a_blocks;
    let items = 4 * WORK_ITEM_WORDS * a_rows * b.ncols().div_ceil(128) * a.batch;
    Ok((workspaces, cells, stream + items))
}

/// Elements of a `(batch, rows, cols)` workspace.
fn dense_len(rows: usize, cols: usize, batch: usize, what: &'static str) -> Result<usize> {
    rows.checked_mul(cols).and_then(|e| e.checked_mul(batch)).ok_or(Error::Overflow { what })
}

/// Per block cell of `p`, row-major, its block or [`NO_BLOCK`].
fn cell_map(p: &Pattern) -> Vec<u32> {
    let block_cols = p.block_cols();
    let mut cells = vec![NO_BLOCK; p.block_rows() * block_cols];
    for r in 0..p.block_rows() {
        for q in p.row_ptr[r] as usize..p.row_ptr[r + 1] as usize {
            cells[r * block_cols + p.col_idx_host[q] as usize] = q as u32;
        }
    }
    cells
}

impl Context {
    /// The dense-B route of a plan of `A · B`: B's cell map, the workspace, the SpMM plan of
    /// A's pattern for B's N (`opts`' SpMM knobs passed on), and for a block-sparse C with
    /// pattern `c` (with blocks), C's cell map and the product workspace (the SpMM plan then
    /// holds only the output tiles with one of C's blocks).
    pub(super) fn plan_dense_b<T: InputElement>(
        &self,
        a: &DeviceBsr<T>,
        b: &DeviceBsr<T>,
        c: Option<&Pattern>,
        opts: &PlanOptions,
        coarse: bool,
    ) -> Result<DenseB> {
        let spmm_opts = PlanOptions {
            n_tile_group: opts.n_tile_group,
            merge_rows: opts.merge_rows,
            reorder_rows: opts.reorder_rows,
            skip_absent: opts.skip_absent,
            split_rows: opts.split_rows,
            // (The route's own choice: re-blocked where its model or `opts` says so, the
            // caller having checked that A's shape allows it.)
            coarse_a: Some(coarse),
            ..PlanOptions::default()
        };
        // (A block-sparse C is read only at its blocks: the SpMM plan computes only the tiles
        // that hold one, none for a C without blocks.)
        let n = b.ncols();
        let spmm = match c {
            Some(c) => self.plan_spmm_at_blocks(a, n, &spmm_opts, (&c.row_ptr, &c.col_idx_host, c.block.bk))?,
            None => self.plan_spmm_with(a, Transpose::No, n, &spmm_opts)?,
        };
        let c = c.filter(|c| c.nnzb() > 0);
        let stream = self.stream();
        let upload_cells = |p: &Pattern| {
            let cells = cell_map(p);
            stream.clone_htod(if cells.is_empty() { &[NO_BLOCK][..] } else { &cells })
        };
        let cells = upload_cells(&b.pattern)?;
        // (Zeroed once; every product's densify writes all of it. The product below is zeroed
        // too: the SpMM kernels write only its tiles that hold C's blocks, and the sparsify
        // kernel reads only those.)
        let dense = stream.alloc_zeros::<u16>(dense_len(b.nrows(), b.ncols(), b.batch, "dense B")?)?;
        // (A C without blocks has nothing to gather: no workspace.)
        let block_c = match c {
            Some(c) => {
                let product_len = dense_len(a.nrows(), b.ncols(), a.batch, "A · B")?;
                let product = stream.alloc_zeros::<f32>(product_len)?;
                Some(BlockC { cells: upload_cells(c)?, product: Mutex::new(product), product_len })
            }
            None => None,
        };
        Ok(DenseB { spmm, cells, dense, block_c, busy: Exclusive::default() })
    }

    /// `C = alpha · A · B + beta · C` into a dense C on the dense-B route (arguments checked by
    /// the caller: patterns, devices, batch and C's shape; the SpMM path checks the rest before
    /// the densify is queued).
    pub(super) fn run_dense_b<T: InputElement, O: Element>(
        &self,
        d: &DenseB,
        alpha: f32,
        a: &DeviceBsr<T>,
        b: &DeviceBsr<T>,
        beta: f32,
        c: MatMut<'_, O>,
    ) -> Result<()> {
        let workspace = d.busy.acquire(self.cuda(), self.stream(), true)?;
        self.spmm_dense_b(d, alpha, a, b, beta, c)?;
        workspace.release()
    }

    /// `C = alpha · A · B + beta · C` into a block-sparse C on the dense-B route: `A · B` into
    /// the plan's product workspace (f32; with beta 0, `alpha · A · B` in C's type), then C's
    /// blocks gathered from it (arguments checked by the caller: patterns, C's pattern,
    /// devices, batch, alpha and beta).
    pub(super) fn run_dense_b_bsr<T: InputElement, O: Element>(
        &self,
        d: &DenseB,
        alpha: f32,
        a: &DeviceBsr<T>,
        b: &DeviceBsr<T>,
        beta: f32,
        c: &mut DeviceBsr<O>,
    ) -> Result<()> {
        if c.nnzb() == 0 {
            return Ok(()); // no output blocks
        }
        let Some(block_c) = &d.block_c else {
            return Err(Error::Internal("a dense-B plan of a dense C ran for a block-sparse C".into()));
        };
        let sparsify = self.kernels.get(KernelKey {
            op: OpKind::Sparsify,
            family: KernelFamily::Portable,
            input: DType::F16,
            tile: 0,
            output: O::DTYPE,
        })?;
        let stream = self.stream();
        let workspace = d.busy.acquire(self.cuda(), stream, true)?;
        // Uncontended: `busy` serializes the plan's products.
        let mut product = block_c.product.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (rows, cols) = (a.nrows(), b.ncols());
        let shape = MatShape::new(rows, cols, cols, Layout::RowMajor).batched(a.batch, rows * cols);
        // With beta 0 the SpMM epilogue writes `alpha · A · B` in C's type, rounded as the
        // gather from f32 would round it, and the gather copies it (half the bytes of an f32
        // product for a 16-bit C); otherwise `A · B` in f32, and the gather scales.
        let as_blocks = beta == 0.0;
        if as_blocks {
            let len = product.len();
            // SAFETY: views the plan's f32 workspace as `len` elements of `O` (f16, bf16 or
            // f32: plain data, every bit pattern a value), at most its size in bytes.
            let view = unsafe { product.transmute_mut::<O>(len) }.ok_or(Error::Internal("the product workspace is too small".into()))?;
            self.spmm_dense_b(d, alpha, a, b, 0.0, MatMut::from_view(view, shape)?)?;
        } else {
            self.spmm_dense_b(d, 1.0, a, b, 0.0, MatMut::new(&mut product, shape)?)?;
        }
        let (bm_log2, bn_log2) = (c.pattern.block.bm.trailing_zeros(), c.pattern.block.bk.trailing_zeros());
        let values_batch_stride = c.values_per_matrix() as u64;
        let (dense, _gd) = product.device_ptr(stream);
        let (cells, _gc) = block_c.cells.device_ptr(stream);
        let (values, _gv) = c.values_ptr_mut(stream);
        let params = SparsifyParams {
            dense,
            cells,
            values,
            values_batch_stride,
            rows: rows as u32,
            cols: cols as u32,
            bm_log2,
            bn_log2,
            batch: a.batch as u32,
            alpha,
            beta,
            dense_as_blocks: as_blocks as u32,
        };
        let chunks = (rows * cols / SPARSIFY_CHUNK as usize) as u32;
        // SAFETY: the sparsify kernel's parameter block for output type `O`; `dense` is the
        // plan's `(batch, M, N)` product (f32, or `O` where `dense_as_blocks`), written by the
        // SpMM launch queued before on this stream, `cells` names only blocks of C's pattern
        // (or NO_BLOCK) for each of its block cells, and `values` is C's live allocation of
        // `batch` matrices of that pattern; one thread per 8-element chunk of a matrix (the
        // grid's tail checks the count; fewer than 2³² chunks, checked by the planner), each
        // 16-byte access aligned (rows and blocks at least 16 wide, chunks at multiples of 8
        // columns, allocations 256-byte aligned, batch strides multiples of 256 elements).
        unsafe { launch(stream, sparsify, chunks.div_ceil(SPARSIFY_THREADS), params) }?;
        workspace.release()
    }

    /// `out = alpha · A · B_dense + beta · out` on the SpMM kernels (which copy A into its
    /// coarse blocks first where the SpMM plan re-blocks it), B's densify queued once the SpMM
    /// path's checks have passed (the product holds `d.busy`).
    fn spmm_dense_b<T: InputElement, O: Element>(
        &self,
        d: &DenseB,
        alpha: f32,
        a: &DeviceBsr<T>,
        b: &DeviceBsr<T>,
        beta: f32,
        out: MatMut<'_, O>,
    ) -> Result<()> {
        let densify = self.densify_kernel()?;
        let (rows, cols) = (b.nrows(), b.ncols());
        // f16 and bf16 alike: densify moves their bits (`InputElement`s are 16-bit).
        let len = d.dense.len();
        // SAFETY: reinterprets the plan's 16-bit workspace as `T`, a 16-bit plain-data element
        // (f16 or bf16: every bit pattern is a value), over the same `len` elements.
        let view = unsafe { d.dense.transmute::<T>(len) }.ok_or(Error::Internal("the dense B workspace is not 16-bit".into()))?;
        let shape = MatShape::new(rows, cols, cols, Layout::RowMajor).batched(b.batch, rows * cols);
        let dense = MatRef::from_view(&view, shape)?;
        let stream = self.stream();
        // B dense: the plan's own buffer, its write ordered by `busy` (its guard through `&self`
        // records a read only).
        self.run_spmm(&d.spmm, alpha, a, dense, beta, out, || {
            let (out, _go) = d.dense.device_ptr(stream);
            let (cells, _gc) = d.cells.device_ptr(stream);
            self.densify(densify, b, cells, out, (rows, cols))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::tests::csr;
    use blocksparse_testkit::testgen::{banded_mask, exact_mask, seeded_rng, topk_mask};

    /// The default's memory share on an 80 GB device (10 GB): with a block-sparse C (B dense and
    /// the f32 product, 6 bytes per element of N²), 8192² (0.4 GB) and 32768² (6.4 GB) stream
    /// B dense, 65536² (25.8 GB) keeps the records.
    #[test]
    fn the_default_keeps_the_records_where_the_workspaces_are_large() {
        let memory = 80 << 30;
        let bytes = |n: usize| 2 * n * n + 4 * n * n;
        assert!(dense_b_fits(bytes(8192), memory));
        assert!(dense_b_fits(bytes(32768), memory));
        assert!(!dense_b_fits(bytes(65536), memory));
    }

    /// A block-sparse C costs the route only the N tiles of each group of rows that hold one of
    /// its blocks: a causal C (the blocks on and below the diagonal) about half of a dense C's,
    /// a block diagonal of 256-column blocks one tile per group, an empty row group none.
    #[test]
    fn the_route_costs_only_the_tiles_of_cs_blocks() {
        let mut rng = seeded_rng(7);
        let g = 256; // 4096² in 16×16 blocks
        let (row_ptr, col_idx) = csr(&exact_mask(g, g, 0.25, &mut rng), g);
        let model = route_model(16).expect("a fitted model");
        let n = 4096;
        let densify = DENSIFY_COST * (n * n) as f64;
        let cost = |c: Option<&BlockPattern>| dense_b_cost(model, &row_ptr, &col_idx, n, n, c).expect("the merged tile's plan") - densify;
        let dense = cost(None);
        let pattern = |keep: &dyn Fn(usize, usize) -> bool| csr(&(0..g * g).map(|i| keep(i / g, i % g)).collect::<Vec<_>>(), g);
        let (rp, ci) = pattern(&|r, c| c <= r);
        let causal = cost(Some(&BlockPattern { cols: g, row_ptr: &rp, col_idx: &ci }));
        // Group i of 8 rows (128 rows) reaches column 128·i + 127: tiles 0 ..= ⌊i / 2⌋, 8.5
        // of 16 on average (A's rows alike).
        assert!((causal / dense - 8.5 / 16.0).abs() < 0.04, "causal C: {causal:.3e} of a dense C's {dense:.3e}");
        let (rp, ci) = pattern(&|r, c| r / 16 == c / 16);
        let diagonal = cost(Some(&BlockPattern { cols: g, row_ptr: &rp, col_idx: &ci }));
        let tiles = n / 256;
        assert!((diagonal * tiles as f64 / dense - 1.0).abs() < 1e-9, "block-diagonal C: {diagonal:.3e}, dense {dense:.3e}");
        let (rp, ci) = pattern(&|_, _| false);
        assert_eq!(cost(Some(&BlockPattern { cols: g, row_ptr: &rp, col_idx: &ci })), 0.0);
    }

    /// The route's modeled time at `bs`×`bs` blocks over `n`³ (A's pattern `a`, C's blocks
    /// `c`): the cheaper of its variants, A as stored or re-blocked.
    fn route_cost(bs: usize, a: (&[u32], &[u32]), n: usize, c: Option<&BlockPattern>) -> f64 {
        let shallow = dense_b_cost(route_model(bs).expect("a fitted model"), a.0, a.1, n, n, c).expect("the merged tile's plan");
        shallow.min(coarse_cost_of(a, (bs, bs), n, n, c))
    }

    /// The model's choice on each case of perf notes v44 (16×16, C dense), v45 (16×16, C at
    /// the product's pattern), v46 (32×32, both C kinds) and v48 (16×16 over a re-blocked A:
    /// uniform 25 % now takes the route) (8192³, H100, the records, pairs and C's blocks its
    /// plans counted): the route measured faster is the one chosen.
    #[test]
    fn the_cost_model_chooses_the_route_measured_faster() {
        let mut rng = seeded_rng(777);
        // (A's mask, pairs, (records, B dense measured faster) with C dense, and with C at the
        // product's pattern)
        let g = 512;
        let cases16 = [
            ("uniform 12.5 %", exact_mask(g, g, 0.125, &mut rng), 2_097_070, (923_240, false), (923_602, 262_059, false)),
            ("uniform 25 %", exact_mask(g, g, 0.25, &mut rng), 8_386_006, (2_078_511, true), (2_078_511, 262_144, true)),
            ("uniform 37.5 %", exact_mask(g, g, 0.375, &mut rng), 18_874_222, (3_144_980, true), (3_144_980, 262_144, true)),
            ("uniform 50 %", exact_mask(g, g, 0.5, &mut rng), 33_552_643, (4_194_304, true), (4_194_304, 262_144, true)),
            ("banded 12.5 %", banded_mask(g, g, 0.125), 2_097_152, (925_952, true), (925_950, 262_124, true)),
        ];
        let g = 256;
        let cases32 = [
            ("uniform 12.5 %", exact_mask(g, g, 0.125, &mut rng), 262_407, (173_267, false), (172_922, 64_380, false)),
            ("uniform 25 %", exact_mask(g, g, 0.25, &mut rng), 1_048_796, (470_409, false), (470_409, 65_536, false)),
            ("uniform 37.5 %", exact_mask(g, g, 0.375, &mut rng), 2_359_173, (767_966, false), (767_966, 65_536, false)),
            ("uniform 50 %", exact_mask(g, g, 0.5, &mut rng), 4_195_179, (1_044_862, true), (1_044_862, 65_536, true)),
            ("top-16", topk_mask(g, g, 16, &mut rng), 65_536, (53_043, false), (47_712, 42_261, false)),
            ("banded 12.5 %", banded_mask(g, g, 0.125), 262_144, (173_152, false), (171_868, 64_554, false)),
        ];
        let n = 8192;
        for (bs, cases) in [(16, &cases16[..]), (32, &cases32[..])] {
            let model = route_model(bs).expect("a fitted model");
            for (what, mask, pairs, dense, block) in cases {
                let (row_ptr, col_idx) = csr(mask, n / bs);
                // (C at the product's pattern: every 128 × 256 tile of these products holds
                // blocks, each of its cells one with probability at least 0.6 (top-16 32×32).)
                let route = route_cost(bs, (&row_ptr, &col_idx), n, None);
                let &(block_records, c_blocks, block_dense_b) = block;
                let gather = SPARSIFY_COST * (c_blocks * bs * bs) as f64;
                for ((records, dense_b), route, c) in
                    [(*dense, route, "dense C"), ((block_records, block_dense_b), route + gather, "block-sparse C")]
                {
                    let recs = records_cost(model, records, *pairs);
                    assert_eq!(route < recs, dense_b, "{bs}×{bs} {what}, {c}: dense-B route {route:.3e}, records {recs:.3e}");
                }
            }
        }
    }

    /// The same into a causal C (C's blocks on and below the diagonal), perf notes v47: 16×16
    /// and 32×32, the records, pairs and C's blocks its plans counted; the route computes the
    /// tiles that hold C's blocks. (32×32 uniform 50 %: B dense 1.036 ms, records 1.047, a tie
    /// that the model also calls close: 0.994 against 1.001 ms.)
    #[test]
    fn the_cost_model_chooses_the_route_measured_faster_into_a_causal_c() {
        let mut rng = seeded_rng(777);
        let n = 8192;
        // (block size, A's mask, pairs, records, C's blocks, B dense measured faster)
        let (g16, g32) = (512, 256);
        let cases = [
            (16, "uniform 12.5 %", exact_mask(g16, g16, 0.125, &mut rng), 1_053_999, 469_495, 131_328, false),
            (16, "uniform 50 %", exact_mask(g16, g16, 0.5, &mut rng), 16_797_602, 2_152_158, 131_328, true),
            (16, "top-16", topk_mask(g16, g16, 16, &mut rng), 65_659, 53_163, 131_328, false),
            (16, "banded 12.5 %", banded_mask(g16, g16, 0.125), 1_048_502, 468_096, 131_328, true),
            (32, "uniform 12.5 %", exact_mask(g32, g32, 0.125, &mut rng), 132_003, 86_666, 32_896, false),
            (32, "uniform 50 %", exact_mask(g32, g32, 0.5, &mut rng), 2_093_891, 534_190, 32_896, true),
            (32, "top-16", topk_mask(g32, g32, 16, &mut rng), 32_994, 27_020, 32_896, false),
            (32, "banded 12.5 %", banded_mask(g32, g32, 0.125), 132_608, 87_316, 32_896, false),
        ];
        for (bs, what, mask, pairs, records, c_blocks, dense_b) in cases {
            let g = n / bs;
            let model = route_model(bs).expect("a fitted model");
            let (row_ptr, col_idx) = csr(&mask, g);
            let (c_rp, c_ci) = csr(&(0..g * g).map(|i| i % g <= i / g).collect::<Vec<_>>(), g);
            assert_eq!(c_ci.len(), c_blocks);
            let c = BlockPattern { cols: g, row_ptr: &c_rp, col_idx: &c_ci };
            let route = route_cost(bs, (&row_ptr, &col_idx), n, Some(&c)) + SPARSIFY_COST * (c_blocks * bs * bs) as f64;
            let recs = records_cost(model, records, pairs);
            assert_eq!(route < recs, dense_b, "{bs}×{bs} {what}, causal C: dense-B route {route:.3e}, records {recs:.3e}");
        }
    }
}
