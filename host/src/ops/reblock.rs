//! A re-blocked A ([`PlanOptions::coarse_a`](super::PlanOptions::coarse_a)): each product of a
//! plan that holds one first copies A's blocks into the 128×128 blocks of a coarse pattern
//! (every 128×128 cell that holds one of A's blocks, zeros elsewhere in it), and the plan's
//! SpMM kernels stream the coarse BSR: the 128-row, 64-deep tile instead of the merged shallow
//! ones. The copy is the densify kernel, writing the coarse values viewed as a row-major
//! `(blocks · 128, 128)` matrix through a cell map of that view:
//! ```text
//! for coarse block q at (group g, cell column j), r < 128/bm, c < 128/bk:
//!     coarse[q][r·bm .. r·bm + bm][c·bk .. c·bk + bk] = A's block (g·128/bm + r, j·128/bk + c), or zeros
//! ```
//! Also here: the densify launch itself (BSR × BSR's dense B uses it too) and A's cell map.

use std::any::Any;
use std::sync::Arc;

use blocksparse_abi::{DENSIFY_CHUNK, DENSIFY_THREADS, DensifyParams, KernelFamily, NO_BLOCK, OpKind};
use cudarc::driver::{CudaSlice, DevicePtr};

use crate::bsr::BlockShape;
use crate::context::Context;
use crate::device_bsr::{DeviceBsr, Pattern};
use crate::element::{DType, InputElement};
use crate::error::{Error, Result};
use crate::kernels::{Kernel, KernelKey};
use crate::launch::{Params, launch};
use crate::plan::Exclusive;

// SAFETY: the densify kernel's `#[repr(C)]` parameter block from `blocksparse-abi`, taken by
// value.
unsafe impl Params for DensifyParams {}

/// The cells of a re-blocked A: 128×128.
pub(crate) const COARSE: usize = 128;

/// Whether A's shape allows a re-blocked copy: rows and columns multiples of 128, blocks at
/// most 128 high and wide.
pub(crate) fn coarse_fits(a: &Pattern) -> bool {
    a.nrows.is_multiple_of(COARSE) && a.ncols.is_multiple_of(COARSE) && a.block.bm <= COARSE && a.block.bk <= COARSE
}

/// The re-blocked A's pattern: per group of `128 / bm` block rows of `(row_ptr, col_idx)`
/// (blocks `bk` wide), the 128-column cells that its blocks touch, in increasing order.
pub(crate) fn coarse_pattern(row_ptr: &[u32], col_idx: &[u32], bm: usize, bk: usize) -> (Vec<u32>, Vec<u32>) {
    group_rows(row_ptr, col_idx, COARSE / bm.max(1), |c| (c as usize * bk / COARSE) as u32)
}

/// Elements a re-blocked copy of A writes per matrix: its coarse blocks' (`pattern`'s, see
/// [`coarse_pattern`]).
pub(crate) fn coarse_elements(blocks: usize) -> usize {
    blocks * COARSE * COARSE
}

/// Per group of `per` rows of `(row_ptr, col_idx)`, the union of its rows' columns mapped by
/// `col`, in increasing order: a `(row_ptr, col_idx)` of the groups.
pub(crate) fn group_rows(row_ptr: &[u32], col_idx: &[u32], per: usize, col: impl Fn(u32) -> u32) -> (Vec<u32>, Vec<u32>) {
    let per = per.max(1);
    let rows = row_ptr.len().saturating_sub(1);
    let (mut rp, mut ci) = (vec![0u32], Vec::new());
    let mut cols = Vec::new();
    for g in 0..rows.div_ceil(per) {
        cols.clear();
        let (lo, hi) = (row_ptr[g * per] as usize, row_ptr[((g + 1) * per).min(rows)] as usize);
        cols.extend(col_idx[lo..hi].iter().map(|&c| col(c)));
        cols.sort_unstable();
        cols.dedup();
        ci.extend_from_slice(&cols);
        rp.push(ci.len() as u32);
    }
    (rp, ci)
}

/// Per block cell of `p`, row-major, its block or [`NO_BLOCK`].
pub(crate) fn cell_map(p: &Pattern) -> Vec<u32> {
    let block_cols = p.block_cols();
    let mut cells = vec![NO_BLOCK; p.block_rows() * block_cols];
    for r in 0..p.block_rows() {
        for q in p.row_ptr[r] as usize..p.row_ptr[r + 1] as usize {
            cells[r * block_cols + p.col_idx_host[q] as usize] = q as u32;
        }
    }
    cells
}

/// The cell map of a re-blocked A's values viewed as a row-major `(blocks · 128, 128)` matrix
/// in A's `(bm, bk)` cells: coarse block `q` at (group `g`, cell column `j`) of the coarse
/// pattern `(row_ptr, col_idx)` holds, per cell `(r, c)` of its 128×128, A's block `(g · 128 /
/// bm + r, j · 128 / bk + c)` from `fine` (A's cell map, `fine_cols` block columns), or
/// [`NO_BLOCK`].
fn coarse_view_cells(fine: &[u32], fine_cols: usize, (row_ptr, col_idx): (&[u32], &[u32]), (bm, bk): (usize, usize)) -> Vec<u32> {
    let (per_r, per_c) = (COARSE / bm, COARSE / bk);
    let mut cells = Vec::with_capacity(col_idx.len() * per_r * per_c);
    for (g, w) in row_ptr.windows(2).enumerate() {
        for &j in &col_idx[w[0] as usize..w[1] as usize] {
            for r in 0..per_r {
                cells.extend_from_slice(&fine[(g * per_r + r) * fine_cols + j as usize * per_c..][..per_c]);
            }
        }
    }
    cells
}

/// Whether the densify kernel's 32-bit chunk indices cover `elems` elements of one matrix (one
/// thread per [`DENSIFY_CHUNK`] elements, the grid rounded up to whole thread blocks).
pub(crate) fn densify_fits(elems: u64) -> bool {
    elems / DENSIFY_CHUNK as u64 + DENSIFY_THREADS as u64 <= u32::MAX as u64
}

/// A re-blocked A, held by the SpMM plan that streams it: the coarse BSR (its values the
/// workspace each product's copy writes), the copy's cell map, and the products that write it,
/// one at a time.
pub(crate) struct CoarseA {
    /// The coarse A, a `DeviceBsr<T>` of the plan's input type (its values the workspace the
    /// copy writes; the products that write it hold `busy`).
    bsr: Box<dyn Any + Send + Sync>,
    /// `((rows / bm) · (128 / bk),)`: per `(bm, bk)` cell of the view, row-major, A's block
    /// there or [`NO_BLOCK`].
    cells: CudaSlice<u32>,
    /// Rows of the view (`blocks · 128`).
    rows: usize,
    /// Bytes of device memory it holds (values, cell map, coarse column indices).
    pub bytes: usize,
    /// The products that write the coarse values.
    pub busy: Exclusive,
}

impl CoarseA {
    /// The coarse A, as the plan's input type `T`.
    pub fn bsr<T: InputElement>(&self) -> Result<&DeviceBsr<T>> {
        self.bsr.downcast_ref().ok_or_else(|| Error::PlanMismatch("the plan was made for A of another element type".into()))
    }
}

impl Context {
    /// A re-blocked A for `a`'s pattern and batch ([`CoarseA`]; [`Error::TooLarge`] where the
    /// densify kernel cannot cover one matrix of it; the caller checked [`coarse_fits`]).
    pub(crate) fn coarse_a<T: InputElement>(&self, a: &DeviceBsr<T>) -> Result<CoarseA> {
        let p = &a.pattern;
        let (bm, bk) = (p.block.bm, p.block.bk);
        let (rp, ci) = coarse_pattern(&p.row_ptr, &p.col_idx_host, bm, bk);
        let blocks = ci.len();
        let elems = coarse_elements(blocks);
        if !densify_fits(elems as u64) {
            return Err(Error::TooLarge { what: "elements of the re-blocked A", value: elems });
        }
        let cells = coarse_view_cells(&cell_map(p), p.block_cols(), (&rp, &ci), (bm, bk));
        let stream = self.stream();
        let values_len = elems.checked_mul(a.batch).ok_or(Error::Overflow { what: "re-blocked A" })?;
        let col_idx = stream.clone_htod(if ci.is_empty() { &[0u32][..] } else { &ci })?;
        let pattern = Pattern { nrows: p.nrows, ncols: p.ncols, block: BlockShape::square(COARSE), row_ptr: rp, col_idx_host: ci, col_idx };
        // (Zeroed once; every product's copy writes all of it.)
        let values = stream.alloc_zeros::<T>(values_len.max(1))?;
        let bytes = core::mem::size_of::<T>() * values.len() + 4 * (cells.len() + blocks);
        let cells = stream.clone_htod(if cells.is_empty() { &[NO_BLOCK][..] } else { &cells })?;
        let bsr = DeviceBsr { pattern: Arc::new(pattern), values, batch: a.batch };
        Ok(CoarseA { bsr: Box::new(bsr), cells, rows: blocks * COARSE, bytes, busy: Exclusive::default() })
    }

    /// The densify kernel (16-bit elements moved as bits: f16 and bf16 alike).
    pub(crate) fn densify_kernel(&self) -> Result<&Kernel> {
        self.kernels.get(KernelKey { op: OpKind::Densify, family: KernelFamily::Portable, input: DType::F16, tile: 0, output: DType::F16 })
    }

    /// Queues the copy of `a`'s blocks into `coarse`'s (made for `a`'s pattern and batch; the
    /// product holds `coarse.busy`).
    pub(crate) fn copy_into_coarse<T: InputElement>(&self, coarse: &CoarseA, a: &DeviceBsr<T>) -> Result<()> {
        let kernel = self.densify_kernel()?;
        let bsr = coarse.bsr::<T>()?;
        let stream = self.stream();
        // The coarse values: the plan's own buffer, its write ordered by `busy` (its guard
        // through `&self` records a read only).
        let (out, _go) = bsr.values_ptr(stream);
        let (cells, _gc) = coarse.cells.device_ptr(stream);
        self.densify(kernel, a, cells, out, (coarse.rows, COARSE))
    }

    /// Queues the densify of `src`'s values (16-bit) into the row-major `(rows, cols)` matrix
    /// at `out` (per matrix of the batch, `rows · cols` elements apart), through `cells`: per
    /// `(bm, bk)` cell of it (`src`'s block shape), row-major, the block of `src` there or
    /// [`NO_BLOCK`] (the product holds the exclusive use of the plan workspaces `out` and
    /// `cells` are; fewer than 2³² chunks of 8 elements per matrix, [`densify_fits`], checked
    /// by the planner).
    pub(crate) fn densify<T: InputElement>(
        &self,
        kernel: &Kernel,
        src: &DeviceBsr<T>,
        cells: u64,
        out: u64,
        (rows, cols): (usize, usize),
    ) -> Result<()> {
        let stream = self.stream();
        let p = &src.pattern;
        let (values, _gv) = src.values_ptr(stream);
        let params = DensifyParams {
            values,
            cells,
            out,
            values_batch_stride: src.values_per_matrix() as u64,
            rows: rows as u32,
            cols: cols as u32,
            bm_log2: p.block.bm.trailing_zeros(),
            bn_log2: p.block.bk.trailing_zeros(),
            batch: src.batch as u32,
            _pad: 0,
        };
        let chunks = (rows * cols / DENSIFY_CHUNK as usize) as u32;
        // SAFETY: the densify kernel's parameter block; `src`'s values are a live allocation of
        // its pattern's blocks (`batch` matrices), `cells` names only those blocks (or
        // NO_BLOCK) for each `(bm, bk)` cell of the `(rows, cols)` output, and `out` is a plan
        // workspace of `batch` such matrices, exclusively this product's: B dense, or the
        // re-blocked A's values (its `(blocks · 128, 128)` view); one thread per 8-element
        // chunk of a matrix (the grid's tail checks the count; fewer than 2³² chunks, checked
        // by the planner), each 16-byte access aligned (blocks at least 16 wide, allocations
        // and batch strides multiples of 16 bytes).
        unsafe { launch(stream, kernel, chunks.div_ceil(DENSIFY_THREADS), params) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::tests::csr;

    /// The re-blocked A: 64×64 blocks of a 256 × 384 A in 128×128 cells (2 × 3), each cell
    /// present where one of its four blocks is, and the copy's view of each present cell
    /// listing its four blocks row by row (NO_BLOCK where absent).
    #[test]
    fn the_coarse_cells_hold_a_blocks_in_order() {
        // A's blocks (4 × 6 grid): row 0: 0, 5; row 1: 1; row 2: (none); row 3: 2, 3.
        let mut mask = vec![false; 4 * 6];
        for (r, c) in [(0, 0), (0, 5), (1, 1), (3, 2), (3, 3)] {
            mask[r * 6 + c] = true;
        }
        let (rp, ci) = csr(&mask, 6);
        let (crp, cci) = coarse_pattern(&rp, &ci, 64, 64);
        assert_eq!((crp.clone(), cci.clone()), (vec![0, 2, 3], vec![0, 2, 1]));
        let fine: Vec<u32> = {
            let mut q = 0;
            mask.iter()
                .map(|&x| {
                    if x {
                        q += 1;
                        q - 1
                    } else {
                        NO_BLOCK
                    }
                })
                .collect()
        };
        let x = NO_BLOCK;
        // Cells (0, 0): blocks 0, 2 of rows 0–1 → [0, x, x, 2]; (0, 2): [x, 1, x, x]; (1, 1): [x, x, 3, 4].
        assert_eq!(coarse_view_cells(&fine, 6, (&crp, &cci), (64, 64)), [0, x, x, 2, x, 1, x, x, x, x, 3, 4]);
        // 16×16 blocks: one coarse cell per 8 × 8 of them.
        let (crp, cci) = coarse_pattern(&[0, 1, 1, 2], &[3, 9], 16, 16);
        assert_eq!((crp, cci), (vec![0, 2], vec![0, 1]));
    }
}
