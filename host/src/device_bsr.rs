//! Block-sparse matrices on the device: a sparsity [`Pattern`] shared by every matrix and plan
//! made from it, and [`DeviceBsr`], the block values of one matrix or of a batch of matrices
//! with that pattern (heads, experts).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};

use crate::bsr::{BlockShape, Bsr};
use crate::context::Context;
use crate::element::Element;
use crate::error::{Error, Result};

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
    /// Whether two matrices share one pattern object (plans made for one serve the other).
    pub fn same_pattern<U>(&self, other: &DeviceBsr<U>) -> bool {
        Arc::ptr_eq(&self.pattern, &other.pattern)
    }
    /// The device buffer of the values.
    pub fn values(&self) -> &CudaSlice<T> {
        &self.values
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
        let col_idx = self.stream().clone_htod(first.col_idx())?;
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
        let pattern = Arc::new(Pattern {
            nrows: first.nrows(),
            ncols: first.ncols(),
            block: first.block(),
            row_ptr: first.row_ptr().to_vec(),
            col_idx_host: first.col_idx().to_vec(),
            col_idx,
        });
        Ok(DeviceBsr { pattern, values, batch: mats.len() })
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
