//! Block-sparse matrices on the device: a sparsity [`Pattern`] shared by every matrix and plan
//! made from it, and [`DeviceBsr`], the block values of one matrix or of a batch of matrices
//! with that pattern (heads, experts).
//!
//! A [`DeviceBsr`] comes from host data ([`Context::upload_bsr`]) or from parts already on the
//! device ([`Context::bsr_from_device`]: the values are moved in, not copied, and handed back
//! by [`DeviceBsr::into_values`]).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};

use crate::bsr::{BlockShape, Bsr, check_pattern, check_shape};
use crate::context::Context;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::index::{BsrIndex, to_u32_indices};

/// The sparsity pattern of a device BSR matrix, shared by the matrices and the plans made for
/// it. `row_ptr` and `col_idx` are kept on the host too, for the planners.
pub struct Pattern {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) block: BlockShape,
    pub(crate) row_ptr: Vec<u32>,
    pub(crate) col_idx_host: Vec<u32>,
    pub(crate) col_idx: CudaSlice<u32>,
}

impl Pattern {
    /// [`DeviceBsr::values_map`] of `batch` matrices of `T` with this pattern, for a caller that
    /// holds the values' pointer (and its guard) already.
    pub(crate) fn values_map<T: Element>(&self, batch: usize, ptr: u64, row: usize, boxdim: [u32; 2], swizzle: bool) -> Result<[u64; 16]> {
        let e = core::mem::size_of::<T>() as u64;
        let per_matrix = self.nnzb() * self.block.elems();
        let dims = [row as u64, (per_matrix / row.max(1)) as u64, batch as u64];
        crate::launch::tensor_map::<T>(ptr, dims, [row as u64 * e, per_matrix as u64 * e], boxdim, swizzle)
    }
    /// Stored blocks.
    pub fn nnzb(&self) -> usize {
        self.col_idx_host.len()
    }
    /// Block rows.
    pub fn block_rows(&self) -> usize {
        self.row_ptr.len().saturating_sub(1)
    }
    /// Block columns.
    pub fn block_cols(&self) -> usize {
        self.ncols / self.block.bk
    }
    /// Rows of a matrix with this pattern.
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Columns of a matrix with this pattern.
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// The block shape.
    pub fn block(&self) -> BlockShape {
        self.block
    }
    /// The block-row pointers.
    pub fn row_ptr(&self) -> &[u32] {
        &self.row_ptr
    }
    /// The block column indices.
    pub fn col_idx(&self) -> &[u32] {
        &self.col_idx_host
    }
}

/// The host half of [`Context::bsr_from_device`]: the downloaded index arrays converted and
/// validated as [`Bsr::from_index_arrays`] does, and the batch that `values_len` elements hold.
fn device_parts<I: BsrIndex>(
    nrows: usize,
    ncols: usize,
    block: BlockShape,
    row_ptr: &[I],
    col_idx: &[I],
    values_len: usize,
) -> Result<(Vec<u32>, Vec<u32>, usize)> {
    check_shape(nrows, ncols, block)?;
    let row_ptr = to_u32_indices("row_ptr", row_ptr)?;
    let col_idx = to_u32_indices("col_idx", col_idx)?;
    let nnzb = check_pattern(nrows, ncols, block, &row_ptr, &col_idx)?;
    let per_matrix = crate::bsr::values_len(nnzb, block)?;
    if per_matrix == 0 {
        return Ok((row_ptr, col_idx, 1));
    }
    let batch = values_len / per_matrix;
    if batch == 0 || !values_len.is_multiple_of(per_matrix) {
        return Err(Error::ValuesLength { expected: per_matrix * batch.max(1), got: values_len });
    }
    Ok((row_ptr, col_idx, batch))
}

/// A BSR matrix on the device: a pattern and `batch` sets of block values, each
/// `(nnzb, bm, bk)` in the layout of [`Bsr`], one set after the other.
pub struct DeviceBsr<T> {
    pub(crate) pattern: Arc<Pattern>,
    pub(crate) values: CudaSlice<T>,
    pub(crate) batch: usize,
}

impl<T> DeviceBsr<T> {
    /// Rows of one matrix.
    pub fn nrows(&self) -> usize {
        self.pattern.nrows
    }
    /// Columns of one matrix.
    pub fn ncols(&self) -> usize {
        self.pattern.ncols
    }
    /// The block shape.
    pub fn block(&self) -> BlockShape {
        self.pattern.block
    }
    /// Stored blocks per matrix.
    pub fn nnzb(&self) -> usize {
        self.pattern.nnzb()
    }
    /// The block-row pointers (host copy).
    pub fn row_ptr(&self) -> &[u32] {
        &self.pattern.row_ptr
    }
    /// The block column indices (host copy).
    pub fn col_idx(&self) -> &[u32] {
        &self.pattern.col_idx_host
    }
    /// Matrices in the batch.
    pub fn batch(&self) -> usize {
        self.batch
    }
    /// Elements of one matrix's values (`nnzb · bm · bk`).
    pub fn values_per_matrix(&self) -> usize {
        self.pattern.nnzb() * self.pattern.block.elems()
    }
    /// The pattern object (shared by the matrices and plans made with it; e.g. the mask of a
    /// masked [`Context::spgemm_bsr`]).
    pub fn pattern(&self) -> &Arc<Pattern> {
        &self.pattern
    }
    /// Whether two matrices share one pattern object (plans made for one serve the other).
    pub fn same_pattern<U>(&self, other: &DeviceBsr<U>) -> bool {
        Arc::ptr_eq(&self.pattern, &other.pattern)
    }
    /// The device buffer of the values.
    pub fn values(&self) -> &CudaSlice<T> {
        &self.values
    }
    /// Gives the values' buffer back (e.g. the one moved in by [`Context::bsr_from_device`]).
    pub fn into_values(self) -> CudaSlice<T> {
        self.values
    }
    /// The TMA map of the values at device address `ptr` (this matrix's, guarded by the caller)
    /// as one row-major matrix of rows of `row` elements per matrix of the batch: `(nnzb · bm,
    /// bk)` with `row` = bk, or the same elements in rows of another length that divides a
    /// block (`nnzb · bm · bk / row` rows); boxes `boxdim`, swizzled or not.
    pub(crate) fn values_map(&self, ptr: u64, row: usize, boxdim: [u32; 2], swizzle: bool) -> Result<[u64; 16]>
    where
        T: Element,
    {
        self.pattern.values_map::<T>(self.batch, ptr, row, boxdim, swizzle)
    }
    pub(crate) fn values_ptr<'a>(&'a self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        self.values.device_ptr(stream)
    }
    pub(crate) fn values_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        self.values.device_ptr_mut(stream)
    }
}

impl Context {
    /// Copies a BSR matrix to the device.
    pub fn upload_bsr<T: Element>(&self, a: &Bsr<T>) -> Result<DeviceBsr<T>> {
        self.upload_bsr_batch(std::slice::from_ref(a))
    }

    /// Copies matrices that share one sparsity pattern (shape, block shape, `row_ptr`,
    /// `col_idx`) to the device as one batch.
    pub fn upload_bsr_batch<T: Element>(&self, mats: &[Bsr<T>]) -> Result<DeviceBsr<T>> {
        let Some(first) = mats.first() else {
            return Err(Error::ZeroDimension { what: "batch" });
        };
        for (i, m) in mats.iter().enumerate().skip(1) {
            if m.nrows() != first.nrows()
                || m.ncols() != first.ncols()
                || m.block() != first.block()
                || m.row_ptr() != first.row_ptr()
                || m.col_idx() != first.col_idx()
            {
                return Err(Error::PlanMismatch(format!("matrix {i} of the batch has another sparsity pattern than matrix 0")));
            }
        }
        let pattern = self.pattern(first.nrows(), first.ncols(), first.block(), first.row_ptr().to_vec(), first.col_idx().to_vec())?;
        let values = if mats.len() == 1 {
            self.stream().clone_htod(first.values())?
        } else {
            let total = first.values().len().checked_mul(mats.len()).ok_or(Error::Overflow { what: "batch values" })?;
            let mut all = Vec::new();
            all.try_reserve_exact(total).map_err(|_| Error::Allocation { what: "batch values", elements: total })?;
            for m in mats {
                all.extend_from_slice(m.values());
            }
            self.stream().clone_htod(&all)?
        };
        Ok(DeviceBsr { pattern, values, batch: mats.len() })
    }

    /// A pattern of validated arrays, with its column indices uploaded.
    fn pattern(&self, nrows: usize, ncols: usize, block: BlockShape, row_ptr: Vec<u32>, col_idx_host: Vec<u32>) -> Result<Arc<Pattern>> {
        let col_idx = self.stream().clone_htod(&col_idx_host)?;
        Ok(Arc::new(Pattern { nrows, ncols, block, row_ptr, col_idx_host, col_idx }))
    }

    /// A device BSR matrix (or batch) from parts already on the device: PyTorch's
    /// `crow_indices` / `col_indices` (int64) and `values` of a CUDA BSR tensor, scipy-style
    /// int32 arrays, or the library's own u32. `values` holds `batch` sets of
    /// `nnzb · bm · bk` elements (row-major blocks, one matrix after the other; `batch` is its
    /// length divided by that) and is **moved in**, not copied (cudarc's `CudaSlice` is an
    /// owned allocation; [`DeviceBsr::into_values`] gives it back).
    ///
    /// The planners need the pattern on the host, so `row_ptr` and `col_idx` (cheap next to
    /// the values) are copied to the host on this context's stream (after earlier writes of
    /// them, through their cudarc guards) and validated exactly as [`Bsr::from_index_arrays`]
    /// does, with the same typed errors; the column indices are uploaded again as u32. Errors:
    /// those of [`Bsr::from_index_arrays`], [`Error::ValuesLength`] unless `values` holds a
    /// positive whole number of matrices (any length when there are no blocks: batch 1), and
    /// [`Error::DeviceMismatch`] for a part on another device.
    pub fn bsr_from_device<T: Element, I: BsrIndex>(
        &self,
        nrows: usize,
        ncols: usize,
        block: BlockShape,
        row_ptr: &impl DevicePtr<I>,
        col_idx: &impl DevicePtr<I>,
        values: CudaSlice<T>,
    ) -> Result<DeviceBsr<T>> {
        self.same_device("row_ptr", row_ptr.stream().context().ordinal())?;
        self.same_device("col_idx", col_idx.stream().context().ordinal())?;
        self.same_device("values", values.ordinal())?;
        // The shape first, so that a huge claimed shape is an error before any download, then
        // row_ptr's length, known without one.
        check_shape(nrows, ncols, block)?;
        let expected_ptr = nrows / block.bm + 1;
        if row_ptr.len() != expected_ptr {
            return Err(Error::RowPtrLength { expected: expected_ptr, got: row_ptr.len() });
        }
        let row_ptr = self.stream().clone_dtoh(row_ptr)?;
        let col_idx = self.stream().clone_dtoh(col_idx)?;
        let (row_ptr, col_idx, batch) = device_parts(nrows, ncols, block, &row_ptr, &col_idx, values.len())?;
        let pattern = self.pattern(nrows, ncols, block, row_ptr, col_idx)?;
        Ok(DeviceBsr { pattern, values, batch })
    }

    /// Zero-filled values for `batch` matrices with the pattern of `like` (e.g. the output of
    /// an SDDMM at the pattern of a BSR operand).
    pub fn zeros_bsr_like<T: Element, U>(&self, like: &DeviceBsr<U>, batch: usize) -> Result<DeviceBsr<T>> {
        self.same_device("the pattern", like.pattern.col_idx.ordinal())?;
        if batch == 0 {
            return Err(Error::ZeroDimension { what: "batch" });
        }
        let len = like.values_per_matrix().checked_mul(batch).ok_or(Error::Overflow { what: "batch values" })?;
        let values = self.stream().alloc_zeros::<T>(len.max(1))?;
        Ok(DeviceBsr { pattern: like.pattern.clone(), values, batch })
    }

    /// Replaces the block values (`batch · nnzb · bm · bk` elements; the pattern is unchanged, so
    /// plans made for it stay valid).
    pub fn update_values<T: Element>(&self, a: &mut DeviceBsr<T>, values: &[T]) -> Result<()> {
        self.same_device("the matrix", a.values.ordinal())?;
        let expected = a.values_per_matrix() * a.batch;
        if values.len() != expected {
            return Err(Error::ValuesLength { expected, got: values.len() });
        }
        if expected > 0 {
            let mut dst = a.values.slice_mut(0..expected);
            self.stream().memcpy_htod(values, &mut dst)?;
        }
        Ok(())
    }

    /// The block values of every matrix of the batch, one matrix after the other.
    pub fn download_values<T: Element>(&self, a: &DeviceBsr<T>) -> Result<Vec<T>> {
        self.same_device("the matrix", a.values.ordinal())?;
        let n = a.values_per_matrix() * a.batch;
        if n == 0 {
            return Ok(Vec::new());
        }
        Ok(self.stream().clone_dtoh(&a.values.slice(0..n))?)
    }
}

#[cfg(test)]
mod tests {
    use half::f16;
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Device-side parts (i64, as PyTorch's) are validated exactly as the host constructor
        /// validates the same arrays, and the values' length gives the batch or
        /// `ValuesLength`.
        #[test]
        fn device_parts_match_the_host_constructor(
            rows in 1usize..5,
            cols in 1usize..5,
            ptr in proptest::collection::vec(prop_oneof![Just(-1i64), Just(1i64 << 32), 0i64..10], 0..7),
            idx in proptest::collection::vec(prop_oneof![Just(-7i64), Just(u32::MAX as i64 + 1), 0i64..6], 0..10),
            batch in 0usize..4,
            extra in prop_oneof![Just(0usize), 1usize..300],
        ) {
            let block = BlockShape::square(16);
            let (nrows, ncols) = (rows * 16, cols * 16);
            let host = Bsr::<f16>::from_index_arrays(nrows, ncols, block, &ptr, &idx, vec![f16::ONE; idx.len() * 256]);
            let len = batch * idx.len() * 256 + extra;
            let got = device_parts(nrows, ncols, block, &ptr, &idx, len);
            match host {
                Err(Error::ValuesLength { .. }) => unreachable!("the host values have the right length"),
                Err(e) => prop_assert_eq!(format!("{:?}", got.map(|_| ())), format!("{:?}", Err::<(), _>(e))),
                Ok(a) => {
                    let want_batch = if a.nnzb() == 0 { Some(1) } else if batch > 0 && extra == 0 { Some(batch) } else { None };
                    match (got, want_batch) {
                        (Ok((rp, ci, b)), Some(w)) => {
                            prop_assert_eq!(rp.as_slice(), a.row_ptr());
                            prop_assert_eq!(ci.as_slice(), a.col_idx());
                            prop_assert_eq!(b, w);
                        }
                        (Err(Error::ValuesLength { got, .. }), None) => prop_assert_eq!(got, len),
                        (other, w) => prop_assert!(false, "got {:?}, want batch {:?}", other.map(|p| p.2), w),
                    }
                }
            }
        }
    }

    #[test]
    fn device_parts_check_the_shape_first() {
        let huge = i32::MAX as usize + 1;
        assert!(matches!(
            device_parts::<i32>(huge, 16, BlockShape::square(16), &[-1], &[], 0),
            Err(Error::NotBlockMultiple { .. } | Error::TooLarge { what: "rows", .. })
        ));
        assert!(matches!(device_parts::<i32>(16, 16, BlockShape::new(16, 8), &[0, 0], &[], 0), Err(Error::UnsupportedBlockSize { .. })));
        assert!(matches!(device_parts::<i32>(16, 16, BlockShape::square(16), &[0, 0], &[], 5), Ok((_, _, 1))));
    }
}
