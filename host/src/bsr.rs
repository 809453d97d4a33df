//! The host-side block-sparse row (BSR) matrix.
//!
//! An `nrows x ncols` matrix is cut into `bm x bk` dense blocks. Block row `r` stores the blocks
//! at positions `row_ptr[r]..row_ptr[r + 1]`; `col_idx[p]` is the block column of block `p`
//! (strictly increasing within a block row) and `values[p * bm * bk..][..bm * bk]` its elements,
//! row-major. This is exactly the layout of PyTorch's `to_sparse_bsr`
//! (`crow_indices`, `col_indices`, and a `(nnzb, bm, bk)` values tensor).
//!
//! Every constructor validates its input completely and reports the first problem as a typed
//! [`Error`]; no public function panics on bad input, and every size product is checked.

use core::ops::Range;

use rayon::prelude::*;

use crate::element::Element;
use crate::error::{Error, Result};
use crate::index::{BsrIndex, to_u32_indices};

/// The shape of one dense block: `bm` rows by `bk` columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockShape {
    /// Block height (rows of A, and of C, per block).
    pub bm: usize,
    /// Block width (columns of A, rows of B, per block).
    pub bk: usize,
}

impl BlockShape {
    /// A `bm x bk` block.
    pub const fn new(bm: usize, bk: usize) -> Self {
        Self { bm, bk }
    }

    /// A `b x b` block.
    pub const fn square(b: usize) -> Self {
        Self { bm: b, bk: b }
    }

    /// Whether `size` is one of the block sizes the kernels support.
    pub fn is_supported_size(size: usize) -> bool {
        blocksparse_abi::BLOCK_SIZES.iter().any(|&s| s as usize == size)
    }

    /// Checks that both `bm` and `bk` are supported block sizes (16, 32, 64 or 128).
    pub fn validate(self) -> Result<()> {
        if Self::is_supported_size(self.bm) && Self::is_supported_size(self.bk) {
            Ok(())
        } else {
            Err(Error::UnsupportedBlockSize { bm: self.bm, bk: self.bk })
        }
    }

    /// Elements in one block, `bm * bk` (saturating, so it never panics on an unvalidated shape).
    pub const fn elems(self) -> usize {
        self.bm.saturating_mul(self.bk)
    }
}

impl core::fmt::Display for BlockShape {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}x{}", self.bm, self.bk)
    }
}

/// A block-sparse matrix in BSR format (see the [module docs](self)).
///
/// Invariants (established by every constructor):
/// * `block` is supported, `nrows`/`ncols` are positive multiples of `bm`/`bk`, at most
///   `i32::MAX`;
/// * `row_ptr` has `nrows / bm + 1` entries, starts at 0, is monotone and ends at `nnzb`;
/// * the column indices of each block row are strictly increasing and `< ncols / bk`;
/// * `nnzb <= u32::MAX` and `values.len() == nnzb * bm * bk`.
#[derive(Clone, Debug, PartialEq)]
pub struct Bsr<T> {
    nrows: usize,
    ncols: usize,
    block: BlockShape,
    row_ptr: Vec<u32>,
    col_idx: Vec<u32>,
    values: Vec<T>,
}

/// The parts of a [`Bsr`], as returned by [`Bsr::into_parts`].
#[derive(Clone, Debug, PartialEq)]
pub struct BsrParts<T> {
    /// Rows of the matrix.
    pub nrows: usize,
    /// Columns of the matrix.
    pub ncols: usize,
    /// The block shape.
    pub block: BlockShape,
    /// Block-row pointers (block rows + 1).
    pub row_ptr: Vec<u32>,
    /// Block column of each stored block.
    pub col_idx: Vec<u32>,
    /// Block values, `(nnzb, bm, bk)` row-major within each block.
    pub values: Vec<T>,
}

/// Checks the block shape and the matrix dimensions (the first four steps of
/// [`Bsr::from_parts`]'s validation). Returns `(block_rows, block_cols)`.
pub(crate) fn check_shape(nrows: usize, ncols: usize, block: BlockShape) -> Result<(usize, usize)> {
    block.validate()?;
    if nrows == 0 {
        return Err(Error::ZeroDimension { what: "rows" });
    }
    if ncols == 0 {
        return Err(Error::ZeroDimension { what: "cols" });
    }
    if !nrows.is_multiple_of(block.bm) {
        return Err(Error::NotBlockMultiple { what: "rows", size: nrows, block: block.bm });
    }
    if !ncols.is_multiple_of(block.bk) {
        return Err(Error::NotBlockMultiple { what: "cols", size: ncols, block: block.bk });
    }
    let limit = i32::MAX as usize;
    if nrows > limit {
        return Err(Error::TooLarge { what: "rows", value: nrows });
    }
    if ncols > limit {
        return Err(Error::TooLarge { what: "cols", value: ncols });
    }
    Ok((nrows / block.bm, ncols / block.bk))
}

/// `nnzb * bm * bk`, checked: `nnzb` must fit the kernels' 32-bit block indices and the
/// element count must fit `usize`.
pub(crate) fn values_len(nnzb: usize, block: BlockShape) -> Result<usize> {
    if nnzb > u32::MAX as usize {
        return Err(Error::TooLarge { what: "blocks", value: nnzb });
    }
    nnzb.checked_mul(block.elems()).ok_or(Error::TooLarge { what: "values", value: nnzb })
}

/// Validates a pattern as [`Bsr::from_parts`] does (everything but the values) and returns its
/// number of blocks.
pub(crate) fn check_pattern(nrows: usize, ncols: usize, block: BlockShape, row_ptr: &[u32], col_idx: &[u32]) -> Result<usize> {
    let (block_rows, block_cols) = check_shape(nrows, ncols, block)?;
    let nnzb = col_idx.len();
    if nnzb > u32::MAX as usize {
        return Err(Error::TooLarge { what: "blocks", value: nnzb });
    }
    let expected_ptr = block_rows + 1;
    if row_ptr.len() != expected_ptr {
        return Err(Error::RowPtrLength { expected: expected_ptr, got: row_ptr.len() });
    }
    // Non-empty: checked just above.
    let first = row_ptr.first().copied().unwrap_or(0) as usize;
    if first != 0 {
        return Err(Error::RowPtrStart { got: first });
    }
    for (row, w) in row_ptr.windows(2).enumerate() {
        if w[0] > w[1] {
            return Err(Error::RowPtrNotMonotone { row, start: w[0] as usize, end: w[1] as usize });
        }
    }
    let last = row_ptr.last().copied().unwrap_or(0) as usize;
    if last != nnzb {
        return Err(Error::RowPtrEnd { expected: nnzb, got: last });
    }
    for (row, w) in row_ptr.windows(2).enumerate() {
        // In bounds: row_ptr is monotone and ends at col_idx.len().
        let cols = col_idx.get(w[0] as usize..w[1] as usize).unwrap_or(&[]);
        let mut prev: Option<usize> = None;
        for &c in cols {
            let col = c as usize;
            if col >= block_cols {
                return Err(Error::ColumnOutOfRange { row, col, block_cols });
            }
            if let Some(prev) = prev {
                if col == prev {
                    return Err(Error::DuplicateColumn { row, col });
                }
                if col < prev {
                    return Err(Error::ColumnsUnsorted { row, prev, col });
                }
            }
            prev = Some(col);
        }
    }
    Ok(nnzb)
}

impl<T: Element> Bsr<T> {
    /// Builds a matrix from its BSR arrays, validating everything (in this order): the block
    /// shape, non-zero dimensions, dimensions that are block multiples, the 32-bit limits,
    /// `row_ptr`'s length, start, monotonicity and end, each block row's column indices
    /// (in range, strictly increasing), and the length of `values`.
    pub fn from_parts(nrows: usize, ncols: usize, block: BlockShape, row_ptr: Vec<u32>, col_idx: Vec<u32>, values: Vec<T>) -> Result<Self> {
        let nnzb = check_pattern(nrows, ncols, block, &row_ptr, &col_idx)?;
        let expected_values = values_len(nnzb, block)?;
        if values.len() != expected_values {
            return Err(Error::ValuesLength { expected: expected_values, got: values.len() });
        }
        Ok(Self { nrows, ncols, block, row_ptr, col_idx, values })
    }

    /// As [`Bsr::from_parts`], with index arrays of any [`BsrIndex`] type: PyTorch's int64
    /// `crow_indices` / `col_indices`, scipy's int32 `indptr` / `indices`. Each entry is
    /// converted first ([`Error::NegativeIndex`], [`Error::TooLarge`] above `u32::MAX`), then
    /// everything is validated as [`Bsr::from_parts`] does.
    pub fn from_index_arrays<I: BsrIndex>(
        nrows: usize,
        ncols: usize,
        block: BlockShape,
        row_ptr: &[I],
        col_idx: &[I],
        values: Vec<T>,
    ) -> Result<Self> {
        check_shape(nrows, ncols, block)?;
        let row_ptr = to_u32_indices("row_ptr", row_ptr)?;
        let col_idx = to_u32_indices("col_idx", col_idx)?;
        Self::from_parts(nrows, ncols, block, row_ptr, col_idx, values)
    }

    /// A matrix with no stored blocks (all zeros).
    pub fn empty(nrows: usize, ncols: usize, block: BlockShape) -> Result<Self> {
        let (block_rows, _) = check_shape(nrows, ncols, block)?;
        Self::from_parts(nrows, ncols, block, vec![0; block_rows + 1], Vec::new(), Vec::new())
    }

    /// Converts a row-major dense `nrows x ncols` matrix, keeping exactly the blocks that hold
    /// at least one non-zero element (NaN counts as non-zero; `-0.0` as zero).
    pub fn from_dense(dense: &[T], nrows: usize, ncols: usize, block: BlockShape) -> Result<Self> {
        let (block_rows, block_cols) = check_shape(nrows, ncols, block)?;
        let expected = nrows.checked_mul(ncols).ok_or(Error::TooLarge { what: "dense elements", value: nrows })?;
        if dense.len() != expected {
            return Err(Error::ShapeMismatch { what: "dense length", expected, got: dense.len() });
        }
        let BlockShape { bm, bk } = block;
        // One task per block row: (block columns kept, their values).
        let rows: Vec<(Vec<u32>, Vec<T>)> = dense
            .par_chunks(bm * ncols)
            .map(|strip| {
                let mut cols = Vec::new();
                let mut vals = Vec::new();
                for bc in 0..block_cols {
                    let nonzero = strip.chunks(ncols).any(|row| row[bc * bk..(bc + 1) * bk].iter().any(|x| x.to_f64() != 0.0));
                    if nonzero {
                        cols.push(bc as u32);
                        for row in strip.chunks(ncols) {
                            vals.extend_from_slice(&row[bc * bk..(bc + 1) * bk]);
                        }
                    }
                }
                (cols, vals)
            })
            .collect();
        debug_assert_eq!(rows.len(), block_rows);
        Self::assemble(nrows, ncols, block, rows)
    }

    /// Builds a matrix from a row-major `(nrows / bm) x (ncols / bk)` block mask. `values` holds
    /// the blocks of the `true` entries, in row-major mask order, each `bm * bk` row-major.
    pub fn from_block_mask(nrows: usize, ncols: usize, block: BlockShape, mask: &[bool], values: Vec<T>) -> Result<Self> {
        let (block_rows, block_cols) = check_shape(nrows, ncols, block)?;
        // Cannot overflow: both are at most i32::MAX / 16.
        let expected = block_rows * block_cols;
        if mask.len() != expected {
            return Err(Error::ShapeMismatch { what: "mask length", expected, got: mask.len() });
        }
        let nnzb = mask.iter().filter(|&&m| m).count();
        if nnzb > u32::MAX as usize {
            return Err(Error::TooLarge { what: "blocks", value: nnzb });
        }
        let mut row_ptr = Vec::with_capacity(block_rows + 1);
        let mut col_idx = Vec::with_capacity(nnzb);
        row_ptr.push(0u32);
        for mask_row in mask.chunks(block_cols) {
            col_idx.extend(mask_row.iter().enumerate().filter(|(_, m)| **m).map(|(c, _)| c as u32));
            row_ptr.push(col_idx.len() as u32);
        }
        Self::from_parts(nrows, ncols, block, row_ptr, col_idx, values)
    }

    /// Concatenates per-block-row `(cols, values)` into a validated matrix.
    fn assemble(nrows: usize, ncols: usize, block: BlockShape, rows: Vec<(Vec<u32>, Vec<T>)>) -> Result<Self> {
        let nnzb: usize = rows.iter().map(|(c, _)| c.len()).sum();
        if nnzb > u32::MAX as usize {
            return Err(Error::TooLarge { what: "blocks", value: nnzb });
        }
        let nvals = values_len(nnzb, block)?;
        let mut row_ptr = Vec::with_capacity(rows.len() + 1);
        let mut col_idx = Vec::with_capacity(nnzb);
        let mut values = Vec::with_capacity(nvals);
        row_ptr.push(0u32);
        for (cols, vals) in rows {
            col_idx.extend_from_slice(&cols);
            values.extend_from_slice(&vals);
            row_ptr.push(col_idx.len() as u32);
        }
        Self::from_parts(nrows, ncols, block, row_ptr, col_idx, values)
    }

    /// Rows of the matrix (M).
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Columns of the matrix (K).
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// The block shape.
    pub fn block(&self) -> BlockShape {
        self.block
    }
    /// Block rows, `nrows / bm`.
    pub fn block_rows(&self) -> usize {
        self.nrows / self.block.bm
    }
    /// Block columns, `ncols / bk`.
    pub fn block_cols(&self) -> usize {
        self.ncols / self.block.bk
    }
    /// Number of stored blocks.
    pub fn nnzb(&self) -> usize {
        self.col_idx.len()
    }
    /// `block_rows + 1` offsets into `col_idx` / the blocks.
    pub fn row_ptr(&self) -> &[u32] {
        &self.row_ptr
    }
    /// Block column of each stored block.
    pub fn col_idx(&self) -> &[u32] {
        &self.col_idx
    }
    /// `(nnzb, bm, bk)` block values, row-major.
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// Mutable block values (the pattern cannot change through this).
    pub fn values_mut(&mut self) -> &mut [T] {
        &mut self.values
    }
    /// Fraction of blocks stored: `nnzb / (block_rows * block_cols)`.
    pub fn density(&self) -> f64 {
        self.nnzb() as f64 / (self.block_rows() as f64 * self.block_cols() as f64)
    }
    /// Positions (indices into `col_idx` / blocks) of block row `row`, or `None` past the end.
    pub fn row_range(&self, row: usize) -> Option<Range<usize>> {
        let start = *self.row_ptr.get(row)? as usize;
        let end = *self.row_ptr.get(row.checked_add(1)?)? as usize;
        Some(start..end)
    }
    /// Number of blocks in each block row.
    pub fn row_lengths(&self) -> impl ExactSizeIterator<Item = usize> + '_ {
        self.row_ptr.windows(2).map(|w| (w[1] - w[0]) as usize)
    }
    /// The largest number of blocks in one block row (0 for an empty matrix).
    pub fn max_row_blocks(&self) -> usize {
        self.row_lengths().max().unwrap_or(0)
    }
    /// The `bm * bk` row-major values of stored block `p`, or `None` past the end.
    pub fn block_values(&self, p: usize) -> Option<&[T]> {
        let e = self.block.elems();
        self.values.get(p.checked_mul(e)?..p.checked_add(1)?.checked_mul(e)?)
    }

    /// Takes the matrix apart.
    pub fn into_parts(self) -> BsrParts<T> {
        BsrParts {
            nrows: self.nrows,
            ncols: self.ncols,
            block: self.block,
            row_ptr: self.row_ptr,
            col_idx: self.col_idx,
            values: self.values,
        }
    }

    /// The same sparsity pattern with new values (`nnzb * bm * bk` of them).
    pub fn with_values(&self, values: Vec<T>) -> Result<Self> {
        if values.len() != self.values.len() {
            return Err(Error::ValuesLength { expected: self.values.len(), got: values.len() });
        }
        Ok(Self {
            nrows: self.nrows,
            ncols: self.ncols,
            block: self.block,
            row_ptr: self.row_ptr.clone(),
            col_idx: self.col_idx.clone(),
            values,
        })
    }

    /// The dense row-major `nrows x ncols` matrix, zeros outside the stored blocks.
    /// [`Error::Overflow`] when its size does not fit `usize`, [`Error::Allocation`] when the
    /// host cannot allocate it.
    pub fn try_to_dense(&self) -> Result<Vec<T>> {
        let len = self.nrows.checked_mul(self.ncols).ok_or(Error::Overflow { what: "dense matrix elements" })?;
        let mut dense: Vec<T> = Vec::new();
        dense.try_reserve_exact(len).map_err(|_| Error::Allocation { what: "dense matrix", elements: len })?;
        dense.resize(len, T::zero());
        let BlockShape { bm, bk } = self.block;
        let ncols = self.ncols;
        dense.par_chunks_mut(bm * ncols).enumerate().for_each(|(br, strip)| {
            let range = self.row_range(br).unwrap_or(0..0);
            for p in range {
                let bc = self.col_idx[p] as usize;
                let vals = &self.values[p * bm * bk..(p + 1) * bm * bk];
                for (row, src) in strip.chunks_mut(ncols).zip(vals.chunks(bk)) {
                    row[bc * bk..(bc + 1) * bk].copy_from_slice(src);
                }
            }
        });
        Ok(dense)
    }

    /// The block mask, row-major `(block_rows) x (block_cols)`. [`Error::Overflow`] or
    /// [`Error::Allocation`] when it does not fit the host.
    pub fn block_mask(&self) -> Result<Vec<bool>> {
        let bc = self.block_cols();
        let len = self.block_rows().checked_mul(bc).ok_or(Error::Overflow { what: "block mask entries" })?;
        let mut mask = Vec::new();
        mask.try_reserve_exact(len).map_err(|_| Error::Allocation { what: "block mask", elements: len })?;
        mask.resize(len, false);
        for (br, w) in self.row_ptr.windows(2).enumerate() {
            for &c in &self.col_idx[w[0] as usize..w[1] as usize] {
                mask[br * bc + c as usize] = true;
            }
        }
        Ok(mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    fn b16() -> BlockShape {
        BlockShape::square(16)
    }

    #[test]
    fn block_shape_validate() {
        for &bm in &[16, 32, 64, 128] {
            for &bk in &[16, 32, 64, 128] {
                assert!(BlockShape::new(bm, bk).validate().is_ok());
            }
        }
        for bad in [0, 1, 8, 48, 96, 256, usize::MAX] {
            assert!(matches!(
                BlockShape::new(bad, 16).validate(),
                Err(Error::UnsupportedBlockSize { bm, bk: 16 }) if bm == bad
            ));
            assert!(matches!(
                BlockShape::new(16, bad).validate(),
                Err(Error::UnsupportedBlockSize { bm: 16, bk }) if bk == bad
            ));
        }
        assert_eq!(BlockShape::new(usize::MAX, 2).elems(), usize::MAX);
    }

    #[test]
    fn empty_matrix() {
        let a = Bsr::<f16>::empty(64, 32, BlockShape::new(32, 16)).unwrap();
        assert_eq!(a.nnzb(), 0);
        assert_eq!(a.row_ptr(), &[0, 0, 0]);
        assert_eq!(a.density(), 0.0);
        assert_eq!(a.max_row_blocks(), 0);
        assert!(a.try_to_dense().unwrap().iter().all(|x| x.to_f64() == 0.0));
        assert_eq!(a.try_to_dense().unwrap().len(), 64 * 32);
    }

    #[test]
    fn from_dense_keeps_nan_and_drops_negative_zero() {
        let (m, k) = (32, 48);
        let mut dense = vec![0.0f32; m * k];
        dense[17 * k + 20] = f32::NAN; // block (1, 1)
        dense[3 * k + 40] = -0.0; // block (0, 2): still zero
        dense[0] = 2.5; // block (0, 0)
        let a = Bsr::from_dense(&dense, m, k, b16()).unwrap();
        assert_eq!(a.row_ptr(), &[0, 1, 2]);
        assert_eq!(a.col_idx(), &[0, 1]);
        assert_eq!(a.block_mask().unwrap(), vec![true, false, false, false, true, false]);
        assert!(a.block_values(1).unwrap()[16 + 4].is_nan());
        assert_eq!(a.block_values(0).unwrap()[0], 2.5);
        assert!(a.block_values(2).is_none());
        assert_eq!(a.row_range(1), Some(1..2));
        assert_eq!(a.row_range(2), None);
        assert_eq!(a.row_range(usize::MAX), None);
        let back = a.try_to_dense().unwrap();
        assert!(back[17 * k + 20].is_nan());
        assert_eq!(back[0], 2.5);
        assert_eq!(back.iter().filter(|x| **x != 0.0).count(), 2);
    }

    #[test]
    fn parts_round_trip_and_with_values() {
        // Rows: [0, 2], [], [1].
        let block = BlockShape::new(16, 32);
        let values: Vec<f32> = (0..3 * 16 * 32).map(|i| i as f32 + 1.0).collect();
        let a = Bsr::from_parts(48, 96, block, vec![0, 2, 2, 3], vec![0, 2, 1], values.clone()).unwrap();
        assert_eq!(a.block_rows(), 3);
        assert_eq!(a.block_cols(), 3);
        assert_eq!(a.row_lengths().collect::<Vec<_>>(), vec![2, 0, 1]);
        assert_eq!(a.max_row_blocks(), 2);
        assert!((a.density() - 3.0 / 9.0).abs() < 1e-15);
        let d = a.try_to_dense().unwrap();
        // Block 1 (row 0, col 2), element (5, 7) lands at dense (5, 64 + 7).
        assert_eq!(d[5 * 96 + 71], values[16 * 32 + 5 * 32 + 7]);
        // Block 2 (row 2, col 1), element (15, 31) lands at dense (47, 63).
        assert_eq!(d[47 * 96 + 63], values[2 * 16 * 32 + 15 * 32 + 31]);
        assert!(d[16 * 96..32 * 96].iter().all(|&x| x == 0.0));

        let doubled: Vec<f32> = values.iter().map(|v| v * 2.0).collect();
        let b = a.with_values(doubled.clone()).unwrap();
        assert_eq!(b.values(), &doubled[..]);
        assert_eq!(b.col_idx(), a.col_idx());
        assert!(matches!(
            a.with_values(vec![1.0; 5]),
            Err(Error::ValuesLength { expected, got: 5 }) if expected == 3 * 512
        ));

        let mut c = a.clone();
        c.values_mut()[0] = -7.0;
        assert_eq!(c.try_to_dense().unwrap()[0], -7.0);

        let parts = a.into_parts();
        assert_eq!((parts.nrows, parts.ncols, parts.block), (48, 96, block));
        let again = Bsr::from_parts(parts.nrows, parts.ncols, parts.block, parts.row_ptr, parts.col_idx, parts.values).unwrap();
        assert_eq!(again.try_to_dense().unwrap(), d);
    }

    #[test]
    fn too_large_dimensions() {
        let big = (i32::MAX as usize / 128 + 1) * 128; // > i32::MAX, multiple of 128
        assert!(matches!(Bsr::<f16>::empty(big, 128, BlockShape::square(128)), Err(Error::TooLarge { what: "rows", .. })));
        assert!(matches!(Bsr::<f16>::empty(128, big, BlockShape::square(128)), Err(Error::TooLarge { what: "cols", .. })));
        // The largest legal dimensions are accepted without allocating anything dense.
        let max = i32::MAX as usize / 128 * 128;
        let a = Bsr::<f16>::from_parts(128, max, BlockShape::square(128), vec![0, 0], vec![], vec![]).unwrap();
        assert_eq!(a.block_cols(), max / 128);
        // A mask for huge dimensions is checked for length before anything else is allocated.
        assert!(matches!(
            Bsr::<f16>::from_block_mask(max, max, BlockShape::square(128), &[], vec![]),
            Err(Error::ShapeMismatch { what: "mask length", .. })
        ));
        assert!(matches!(
            Bsr::<f16>::from_dense(&[], max, max, BlockShape::square(128)),
            Err(Error::ShapeMismatch { what: "dense length", got: 0, .. })
        ));
    }
}
