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
//! Also here: the densify launch itself (BSR × BSR's dense B uses it too).

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

/// Device bytes of a re-blocked copy of `blocks` coarse blocks over A's `(bm, bk)` blocks, for
/// `batch` matrices, counted before anything is allocated: `(values, cell map and column
/// indices)` (what [`CoarseA`] holds). [`Error::TooLarge`] where the densify kernel cannot
/// cover one matrix of it ([`densify_fits`]).
pub(crate) fn coarse_bytes(blocks: usize, (bm, bk): (usize, usize), batch: usize) -> Result<(usize, usize)> {
    let elems = coarse_elements(blocks);
    if !densify_fits(elems as u64) {
        return Err(Error::TooLarge { what: "elements of the re-blocked A", value: elems });
    }
    let values = elems.checked_mul(batch).and_then(|e| e.checked_mul(2)).ok_or(Error::Overflow { what: "re-blocked A" })?;
    Ok((values, 4 * blocks * (COARSE / bm) * (COARSE / bk) + 4 * blocks))
}

/// Per group of `per` rows of `(row_ptr, col_idx)`, the union of its rows' columns mapped by
/// `col`, in increasing order: a `(row_ptr, col_idx)` of the groups. (Each mapped column is
/// listed once per group through a stamp of the last group that listed it, one word per
/// column up to the largest mapped one, and only the group's distinct columns are sorted.)
pub(crate) fn group_rows(row_ptr: &[u32], col_idx: &[u32], per: usize, col: impl Fn(u32) -> u32) -> (Vec<u32>, Vec<u32>) {
    let per = per.max(1);
    let rows = row_ptr.len().saturating_sub(1);
    let (mut rp, mut ci) = (vec![0u32], Vec::new());
    // Per mapped column, 1 + the last group that listed it (0: none yet).
    let mut stamp: Vec<usize> = Vec::new();
    for g in 0..rows.div_ceil(per) {
        let start = ci.len();
        let (lo, hi) = (row_ptr[g * per] as usize, row_ptr[((g + 1) * per).min(rows)] as usize);
        for &c in &col_idx[lo..hi] {
            let m = col(c);
            let at = m as usize;
            if at >= stamp.len() {
                stamp.resize(at + 1, 0);
            }
            if stamp[at] != g + 1 {
                stamp[at] = g + 1;
                ci.push(m);
            }
        }
        ci[start..].sort_unstable();
        rp.push(ci.len() as u32);
    }
    (rp, ci)
}

/// The cell map of a re-blocked A's values viewed as a row-major `(blocks · 128, 128)` matrix
/// in A's `(bm, bk)` cells: coarse block `q` at (group `g`, cell column `j`) of the coarse
/// pattern `(row_ptr, col_idx)` holds, per cell `(r, c)` of its 128×128, A's block `(g · 128 /
/// bm + r, j · 128 / bk + c)` of A's pattern `fine` (`(row_ptr, col_idx)`), or [`NO_BLOCK`].
/// Walks A's blocks, each finding its coarse block in its group's sorted cells: memory of the
/// coarse cells only, whatever A's block grid.
fn coarse_view_cells((fine_rp, fine_ci): (&[u32], &[u32]), (row_ptr, col_idx): (&[u32], &[u32]), (bm, bk): (usize, usize)) -> Vec<u32> {
    let (per_r, per_c) = (COARSE / bm, COARSE / bk);
    let mut cells = vec![NO_BLOCK; col_idx.len() * per_r * per_c];
    for (r, w) in fine_rp.windows(2).enumerate() {
        let g = r / per_r;
        let (lo, hi) = (row_ptr[g] as usize, row_ptr[g + 1] as usize);
        for (q, &c) in fine_ci.iter().enumerate().take(w[1] as usize).skip(w[0] as usize) {
            let c = c as usize;
            // (The coarse pattern holds every cell one of A's blocks touches.)
            let found = col_idx[lo..hi].binary_search(&((c / per_c) as u32));
            debug_assert!(found.is_ok(), "block {q}'s cell is not in the coarse pattern");
            if let Ok(at) = found {
                cells[((lo + at) * per_r + r % per_r) * per_c + c % per_c] = q as u32;
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

/// A re-blocked A, held by the SpMM plan that streams it: the coarse pattern, its values (the
/// workspace each product's copy writes, 16-bit elements moved as bits: a plan serves f16 and
/// bf16 operands of its pattern alike), the copy's cell map, and the products that write it,
/// one at a time.
pub(crate) struct CoarseA {
    /// The coarse pattern: 128×128 blocks, A's shape.
    pub pattern: Arc<Pattern>,
    /// `(batch, blocks · 128, 128)`: the coarse blocks' values, written by each product's copy
    /// (the products that write them hold `busy`).
    pub values: CudaSlice<u16>,
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
    /// Values per matrix of the batch.
    pub fn values_per_matrix(&self) -> usize {
        coarse_elements(self.pattern.nnzb())
    }
}

impl Context {
    /// A re-blocked A for the pattern `p` and `batch` ([`CoarseA`]; errors as [`coarse_bytes`];
    /// the caller checked [`coarse_fits`]). `coarse`: `p`'s [`coarse_pattern`] where the
    /// caller has it.
    pub(crate) fn coarse_a(&self, p: &Pattern, batch: usize, coarse: Option<(Vec<u32>, Vec<u32>)>) -> Result<CoarseA> {
        let (bm, bk) = (p.block.bm, p.block.bk);
        let (rp, ci) = coarse.unwrap_or_else(|| coarse_pattern(&p.row_ptr, &p.col_idx_host, bm, bk));
        let blocks = ci.len();
        let (values_bytes, index_bytes) = coarse_bytes(blocks, (bm, bk), batch)?;
        let cells = coarse_view_cells((&p.row_ptr, &p.col_idx_host), (&rp, &ci), (bm, bk));
        let stream = self.stream();
        let col_idx = stream.clone_htod(if ci.is_empty() { &[0u32][..] } else { &ci })?;
        let pattern = Pattern { nrows: p.nrows, ncols: p.ncols, block: BlockShape::square(COARSE), row_ptr: rp, col_idx_host: ci, col_idx };
        // (Zeroed once; every product's copy writes all of it.)
        let values = stream.alloc_zeros::<u16>((values_bytes / 2).max(1))?;
        let bytes = 2 * values.len() + index_bytes;
        let cells = stream.clone_htod(if cells.is_empty() { &[NO_BLOCK][..] } else { &cells })?;
        Ok(CoarseA { pattern: Arc::new(pattern), values, cells, rows: blocks * COARSE, bytes, busy: Exclusive::default() })
    }

    /// The densify kernel (16-bit elements moved as bits: f16 and bf16 alike).
    pub(crate) fn densify_kernel(&self) -> Result<&Kernel> {
        self.kernels.get(KernelKey { op: OpKind::Densify, family: KernelFamily::Portable, input: DType::F16, tile: 0, output: DType::F16 })
    }

    /// Queues the copy of `a`'s blocks into `coarse`'s (made for `a`'s pattern and batch; the
    /// product holds `coarse.busy`).
    pub(crate) fn copy_into_coarse<T: InputElement>(&self, coarse: &CoarseA, a: &DeviceBsr<T>) -> Result<()> {
        let kernel = self.densify_kernel()?;
        let stream = self.stream();
        // The coarse values: the plan's own buffer, its write ordered by `busy` (its guard
        // through `&self` records a read only).
        let (out, _go) = coarse.values.device_ptr(stream);
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
    use crate::pairs::tests::{csr, csr_at};

    /// The re-blocked A: 64×64 blocks of a 256 × 384 A in 128×128 cells (2 × 3), each cell
    /// present where one of its four blocks is, and the copy's view of each present cell
    /// listing its four blocks row by row (NO_BLOCK where absent).
    #[test]
    fn the_coarse_cells_hold_a_blocks_in_order() {
        // A's blocks (4 × 6 grid): row 0: 0, 5; row 1: 1; row 2: (none); row 3: 2, 3.
        let (rp, ci) = csr_at(4, 6, &[(0, 0), (0, 5), (1, 1), (3, 2), (3, 3)]);
        let (crp, cci) = coarse_pattern(&rp, &ci, 64, 64);
        assert_eq!((crp.clone(), cci.clone()), (vec![0, 2, 3], vec![0, 2, 1]));
        let x = NO_BLOCK;
        // Cells (0, 0): blocks 0, 2 of rows 0–1 → [0, x, x, 2]; (0, 2): [x, 1, x, x]; (1, 1): [x, x, 3, 4].
        assert_eq!(coarse_view_cells((&rp, &ci), (&crp, &cci), (64, 64)), [0, x, x, 2, x, 1, x, x, x, x, 3, 4]);
        // 16×16 blocks: one coarse cell per 8 × 8 of them.
        let (crp, cci) = coarse_pattern(&[0, 1, 1, 2], &[3, 9], 16, 16);
        assert_eq!((crp, cci), (vec![0, 2], vec![0, 1]));
    }

    /// [`coarse_view_cells`] against the cells read off A's whole cell map, on random patterns of
    /// every block shape from 16 to 128 (empty rows and a last group short of 128 rows
    /// included).
    #[test]
    fn the_coarse_cells_are_a_cell_maps_view() {
        use blocksparse_testkit::testgen::{exact_mask, seeded_rng};
        let seed: u64 = rand::random();
        let mut rng = seeded_rng(seed);
        for bm in [16usize, 32, 64, 128] {
            for bk in [16usize, 32, 64, 128] {
                let (rows, cols) = (3 * COARSE / bm + 1, 2 * COARSE / bk);
                let (rp, ci) = csr(&exact_mask(rows, cols, 0.2, &mut rng), cols);
                let (crp, cci) = coarse_pattern(&rp, &ci, bm, bk);
                let (per_r, per_c) = (COARSE / bm, COARSE / bk);
                let mut fine = vec![NO_BLOCK; rows * cols];
                for r in 0..rows {
                    for q in rp[r] as usize..rp[r + 1] as usize {
                        fine[r * cols + ci[q] as usize] = q as u32;
                    }
                }
                let mut want = Vec::new();
                for (g, w) in crp.windows(2).enumerate() {
                    for &j in &cci[w[0] as usize..w[1] as usize] {
                        for r in 0..per_r {
                            let row = g * per_r + r;
                            want.extend((0..per_c).map(|c| if row < rows { fine[row * cols + j as usize * per_c + c] } else { NO_BLOCK }));
                        }
                    }
                }
                assert_eq!(coarse_view_cells((&rp, &ci), (&crp, &cci), (bm, bk)), want, "seed {seed}: {bm}x{bk}");
            }
        }
    }

    /// [`group_rows`] against sorting and deduplicating each group's mapped columns, on random
    /// rows (empty ones included), every group size and a last group short of it.
    #[test]
    fn grouped_rows_are_each_groups_sorted_union() {
        use blocksparse_testkit::testgen::{exact_mask, seeded_rng};
        let seed: u64 = rand::random();
        let mut rng = seeded_rng(seed);
        for (rows, cols, density) in [(37usize, 50usize, 0.2), (64, 9, 0.5), (5, 300, 0.05), (1, 1, 1.0), (12, 40, 0.0)] {
            let (rp, ci) = csr(&exact_mask(rows, cols, density, &mut rng), cols);
            for per in [1usize, 2, 3, 8, 64] {
                for shift in [0u32, 2, 3] {
                    let want = {
                        let (mut wrp, mut wci) = (vec![0u32], Vec::new());
                        for g in 0..rows.div_ceil(per) {
                            let (lo, hi) = (rp[g * per] as usize, rp[((g + 1) * per).min(rows)] as usize);
                            let mut cols: Vec<u32> = ci[lo..hi].iter().map(|&c| c >> shift).collect();
                            cols.sort_unstable();
                            cols.dedup();
                            wci.extend(cols);
                            wrp.push(wci.len() as u32);
                        }
                        (wrp, wci)
                    };
                    assert_eq!(group_rows(&rp, &ci, per, |c| c >> shift), want, "seed {seed}: {rows}x{cols}, per {per}, shift {shift}");
                }
            }
        }
    }
}
