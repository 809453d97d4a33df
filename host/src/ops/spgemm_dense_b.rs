//! BSR × BSR with B streamed dense ([`PlanOptions::dense_b`]): each product writes B's blocks
//! into a dense workspace (the densify kernel, zeros outside the blocks) and runs `A · B` on the
//! SpMM kernels, whose merged tiles run on wgmma on Hopper where A's blocks are 16 or 32 deep:
//! ```text
//! B_dense[b] = B[b] with zeros outside its blocks             (densify kernel)
//! C[b] = alpha · A[b] · B_dense[b] + beta · C[b]               (the SpMM plan of A's pattern)
//! ```
//! The same sum as the records' (every pair of A's and B's blocks, in increasing K, plus
//! products with B's zeros), deterministic like both kernels; for a dense C only.

use blocksparse_abi::{
    DENSIFY_CHUNK, DENSIFY_THREADS, DensifyParams, KernelFamily, NO_BLOCK, OpKind, WG_M, WGMMA_SHALLOW_TILES, WGMMA_TILES, WORK_ITEM_WORDS,
};
use cudarc::driver::{CudaSlice, DevicePtr};

use super::spgemm::SpgemmOutput;
use super::spmm::SpmmPlan;
use super::{PlanOptions, Transpose};
use crate::context::Context;
use crate::device_bsr::{DeviceBsr, Pattern};
use crate::element::{DType, Element, InputElement};
use crate::error::{Error, Result};
use crate::kernels::KernelKey;
use crate::launch::{Params, launch};
use crate::matrix::{Layout, MatMut, MatRef, MatShape};
use crate::merge::merge_counts;
use crate::plan::Exclusive;

// SAFETY: the densify kernel's `#[repr(C)]` parameter block from `blocksparse-abi`, taken by
// value.
unsafe impl Params for DensifyParams {}

/// The cost model of the default route ([`dense_b_pays`]), in units of the time the SpMM
/// kernels' merged 16-deep wgmma tile takes for one `(16, 16) · (16, 256)` piece of its dense
/// work. Fitted on the H100 at 8192³ with 16×16 blocks (perf notes v44): the merged tile ran
/// 0.265–0.288 ns per piece (uniform 25 %, 37.5 %, 50 % and banded 12.5 % A); the records, on
/// the portable 16-row tile, about 0.50 ns per record plus 0.089 ns per pair (uniform 12.5 %,
/// 25 %, 50 %; within 5 % of the 37.5 % and banded rows as well); densifying B about 0.85 ps
/// per element of K × N.
const RECORD_COST: f64 = 1.8;
/// See [`RECORD_COST`]: one block pair of the records.
const PAIR_COST: f64 = 0.32;
/// See [`RECORD_COST`]: writing one element of the dense B.
const DENSIFY_COST: f64 = 0.003;

/// Whether the default route may stream B dense: a dense C, the Hopper kernels (whose merged
/// 16-deep tile the cost model describes: A's block rows in whole warpgroups of it, the SpMM
/// planner's condition for merging them), 16×16 blocks in A and B (the shape measured).
pub(super) fn dense_b_may_pay(hopper: bool, a: &Pattern, b: &Pattern, out: &SpgemmOutput) -> bool {
    let square16 = |p: &Pattern| p.block.bm == 16 && p.block.bk == 16;
    let whole_warpgroups = a.block_rows().is_multiple_of(WG_M as usize / 16);
    hopper && matches!(out, SpgemmOutput::Dense) && square16(a) && square16(b) && whole_warpgroups
}

/// Whether the dense-B route's modeled time is below the records': the SpMM kernels' merged
/// 16-deep tile over A's rows in groups of eight (each group the union of its rows' block
/// columns, `(128, 16) · (16, N)` per column) plus densifying B, against `records` stage
/// records and `pairs` block pairs ([`RECORD_COST`]). The SpMM planner may choose a plan
/// cheaper than the merged one; the model is the route's bound.
pub(super) fn dense_b_pays(a: &Pattern, n: usize, records: usize, pairs: usize) -> bool {
    dense_b_cost(&a.row_ptr, &a.col_idx_host, a.ncols, n).is_some_and(|route| route < records_cost(records, pairs))
}

/// The dense-B route's modeled time ([`dense_b_pays`]) for A's pattern `(row_ptr, col_idx)` of
/// 16×16 blocks over `k` columns, and `n` columns of B: SpMM's merged 16-deep tile, its
/// positions counted by the SpMM planner's own [`merge_counts`] (`None` where that merge
/// cannot be made).
fn dense_b_cost(row_ptr: &[u32], col_idx: &[u32], k: usize, n: usize) -> Option<f64> {
    let tile = WGMMA_SHALLOW_TILES.iter().map(|&i| WGMMA_TILES[i]).find(|t| t.ks == 16)?;
    let rows = (tile.tm / 16) as usize;
    let positions = *merge_counts(row_ptr, col_idx, rows, tile.tm).ok()?.row_ptr.last()?;
    // Pieces of `(16, 16) · (16, tn)` per position: its rows' blocks, times the N tiles.
    let pieces = positions as f64 * rows as f64 * n.div_ceil(tile.tn() as usize) as f64;
    Some(pieces + DENSIFY_COST * (k as f64 * n as f64))
}

/// The records' modeled time ([`dense_b_pays`]).
fn records_cost(records: usize, pairs: usize) -> f64 {
    RECORD_COST * records as f64 + PAIR_COST * pairs as f64
}

/// A plan's dense-B route: the SpMM plan of A's pattern, B's block cells and the workspace.
pub(super) struct DenseB {
    /// `A · B_dense` on the SpMM kernels.
    pub spmm: SpmmPlan,
    /// `((K / bk) · (N / bn),)`: per block cell of B, row-major, its block or [`NO_BLOCK`].
    cells: CudaSlice<u32>,
    /// B dense, `(batch, K, N)` row-major, 16-bit elements (f16 or bf16: moved as bits).
    dense: CudaSlice<u16>,
    /// The products that write `dense`, one at a time.
    busy: Exclusive,
}

impl DenseB {
    /// Bytes of device memory the route holds (the SpMM plan's included).
    pub fn device_bytes(&self) -> usize {
        2 * self.dense.len() + 4 * self.cells.len() + self.spmm.device_bytes()
    }
}

/// Device bytes of a dense-B plan, counted before anything is allocated, as `(dense B, cell
/// map, SpMM plan)`: B dense, its cell map, and the SpMM plan's stream and work list at their
/// bounds (a merged stream holds at most nine words per block of A: its K index and up to
/// eight rows' blocks; one work item per 128-column tile of each block row and matrix). Split
/// tiles add a few items and partial tiles per SM: [`crate::SpgemmPlan::device_bytes`] has the
/// exact total. [`Error::TooLarge`] where the densify kernel's 32-bit chunk indices cannot
/// cover one matrix of B (one thread per 8 elements).
pub(super) fn dense_b_device_bytes<T>(a: &DeviceBsr<T>, b: &DeviceBsr<T>) -> Result<(usize, usize, usize)> {
    let elems = b.nrows() as u64 * b.ncols() as u64;
    if elems / DENSIFY_CHUNK as u64 + DENSIFY_THREADS as u64 > u32::MAX as u64 {
        return Err(Error::TooLarge { what: "elements of B streamed dense", value: elems as usize });
    }
    let dense = dense_len(b)?.checked_mul(core::mem::size_of::<T>()).ok_or(Error::Overflow { what: "dense B" })?;
    let cells = 4 * b.pattern.block_rows() * b.pattern.block_cols();
    let stream = 36 * a.nnzb();
    let items = 4 * WORK_ITEM_WORDS * a.pattern.block_rows() * b.ncols().div_ceil(128) * a.batch;
    Ok((dense, cells, stream + items))
}

/// Elements of B dense, the whole batch.
fn dense_len<T>(b: &DeviceBsr<T>) -> Result<usize> {
    b.nrows().checked_mul(b.ncols()).and_then(|e| e.checked_mul(b.batch)).ok_or(Error::Overflow { what: "dense B" })
}

impl Context {
    /// The dense-B route of a plan of `A · B` into a dense C: B's cell map, the workspace, and
    /// the SpMM plan of A's pattern for B's N (`opts`' SpMM knobs passed on).
    pub(super) fn plan_dense_b<T: InputElement>(&self, a: &DeviceBsr<T>, b: &DeviceBsr<T>, opts: &PlanOptions) -> Result<DenseB> {
        let p = &b.pattern;
        let block_cols = p.block_cols();
        let mut cells = vec![NO_BLOCK; p.block_rows() * block_cols];
        for r in 0..p.block_rows() {
            for q in p.row_ptr[r] as usize..p.row_ptr[r + 1] as usize {
                cells[r * block_cols + p.col_idx_host[q] as usize] = q as u32;
            }
        }
        let spmm_opts = PlanOptions {
            n_tile_group: opts.n_tile_group,
            merge_rows: opts.merge_rows,
            reorder_rows: opts.reorder_rows,
            skip_absent: opts.skip_absent,
            split_rows: opts.split_rows,
            ..PlanOptions::default()
        };
        let spmm = self.plan_spmm_with(a, Transpose::No, p.ncols, &spmm_opts)?;
        let stream = self.stream();
        let cells = stream.clone_htod(if cells.is_empty() { &[NO_BLOCK][..] } else { &cells })?;
        // (Zeroed once; every product's densify writes all of it.)
        let dense = stream.alloc_zeros::<u16>(dense_len(b)?)?;
        Ok(DenseB { spmm, cells, dense, busy: Exclusive::default() })
    }

    /// `C = alpha · A · B + beta · C` on the dense-B route (arguments checked by the caller:
    /// patterns, devices, batch and C's shape; the SpMM path checks the rest before the densify
    /// is queued).
    pub(super) fn run_dense_b<T: InputElement, O: Element>(
        &self,
        d: &DenseB,
        alpha: f32,
        a: &DeviceBsr<T>,
        b: &DeviceBsr<T>,
        beta: f32,
        c: MatMut<'_, O>,
    ) -> Result<()> {
        let kernel = self.kernels.get(KernelKey {
            op: OpKind::Densify,
            family: KernelFamily::Portable,
            input: DType::F16,
            tile: 0,
            output: DType::F16,
        })?;
        let p = &b.pattern;
        let (rows, cols) = (p.nrows, p.ncols);
        // f16 and bf16 alike: densify moves their bits (`InputElement`s are 16-bit).
        let len = d.dense.len();
        // SAFETY: reinterprets the plan's 16-bit workspace as `T`, a 16-bit plain-data element
        // (f16 or bf16: every bit pattern is a value), over the same `len` elements.
        let view = unsafe { d.dense.transmute::<T>(len) }.ok_or(Error::Internal("the dense B workspace is not 16-bit".into()))?;
        let shape = MatShape::new(rows, cols, cols, Layout::RowMajor).batched(b.batch, rows * cols);
        let dense = MatRef::from_view(&view, shape)?;
        let stream = self.stream();
        let workspace = d.busy.acquire(self.cuda(), stream, true)?;
        let densify = || -> Result<()> {
            let (values, _gv) = b.values_ptr(stream);
            let (cells, _gc) = d.cells.device_ptr(stream);
            // The plan's own buffer: the write is ordered by `busy` (its guard through `&self`
            // records a read only).
            let (out, _go) = d.dense.device_ptr(stream);
            let params = DensifyParams {
                values,
                cells,
                out,
                values_batch_stride: b.values_per_matrix() as u64,
                rows: rows as u32,
                cols: cols as u32,
                bm_log2: p.block.bm.trailing_zeros(),
                bn_log2: p.block.bk.trailing_zeros(),
                batch: b.batch as u32,
                _pad: 0,
            };
            let chunks = (rows * cols / DENSIFY_CHUNK as usize) as u32;
            // SAFETY: the densify kernel's parameter block; B's values are a live allocation of
            // its pattern's blocks (`batch` matrices), `cells` names only those blocks (or
            // NO_BLOCK) for each of B's block cells, and `out` is the plan's `(batch, K, N)`
            // row-major workspace, exclusively this product's (`busy`); one thread per 8-element
            // chunk of a matrix (the grid's tail checks the count; fewer than 2³² chunks,
            // checked by the planner), each 16-byte access aligned (blocks at least 16 wide,
            // allocations and batch strides multiples of 16 bytes).
            unsafe { launch(stream, kernel, chunks.div_ceil(DENSIFY_THREADS), params) }
        };
        self.run_spmm(&d.spmm, alpha, a, dense, beta, c, densify)?;
        workspace.release()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocksparse_testkit::testgen::{banded_mask, exact_mask, seeded_rng};

    fn pattern(mask: &[bool], cols: usize) -> (Vec<u32>, Vec<u32>) {
        let (mut row_ptr, mut col_idx) = (vec![0u32], Vec::new());
        for row in mask.chunks(cols) {
            col_idx.extend(row.iter().enumerate().filter(|(_, x)| **x).map(|(c, _)| c as u32));
            row_ptr.push(col_idx.len() as u32);
        }
        (row_ptr, col_idx)
    }

    /// The model's choice on each 16×16 case of perf notes v44 (8192³, H100, the records and
    /// pairs its plans counted): the route measured faster is the one chosen.
    #[test]
    fn the_cost_model_chooses_the_route_measured_faster() {
        let mut rng = seeded_rng(777);
        let g = 512;
        // (A's mask, records, pairs, B dense measured faster)
        let cases = [
            ("uniform 12.5 %", exact_mask(g, g, 0.125, &mut rng), 923_240, 2_097_070, false),
            ("uniform 25 %", exact_mask(g, g, 0.25, &mut rng), 2_078_511, 8_386_006, false),
            ("uniform 37.5 %", exact_mask(g, g, 0.375, &mut rng), 3_144_980, 18_874_222, true),
            ("uniform 50 %", exact_mask(g, g, 0.5, &mut rng), 4_194_304, 33_552_643, true),
            ("banded 12.5 %", banded_mask(g, g, 0.125), 925_952, 2_097_152, true),
        ];
        for (what, mask, records, pairs, dense_b) in cases {
            let (row_ptr, col_idx) = pattern(&mask, g);
            let route = dense_b_cost(&row_ptr, &col_idx, 16 * g, 16 * g).expect("the merged tile's plan");
            let recs = records_cost(records, pairs);
            assert_eq!(route < recs, dense_b, "{what}: dense-B route {route:.3e}, records {recs:.3e}");
        }
    }
}
