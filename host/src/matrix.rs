//! Dense matrices on the device: owned ([`DeviceMatrix`]) and borrowed views ([`MatRef`],
//! [`MatMut`]), row-major or column-major, one matrix or a batch of them at a fixed stride.
//!
//! A view's transpose ([`MatRef::t`]) is the same memory read the other way (rows and columns
//! swapped, layout flipped): every product takes `op(X)` ∈ {X, Xᵀ} as a view, without a copy.
//!
//! Element `(b, i, j)` of a view lies at `b · batch_stride + i · ld + j` (row-major) or
//! `b · batch_stride + j · ld + i` (column-major). Leading dimensions and batch strides are
//! multiples of 8 elements, so rows (columns) start 16-byte aligned.
//!
//! # The caller's buffers
//!
//! Views borrow device memory the caller owns, without a copy: [`MatRef::new`] /
//! [`MatRef::from_view`] over a `&CudaSlice<T>` / `&CudaView<T>` for inputs, [`MatMut::new`] /
//! [`MatMut::from_view`] over a `&mut CudaSlice<T>` / `CudaViewMut<T>` for outputs, each with a
//! [`MatShape`] (rows, cols, ld, layout, and batch and batch stride). Each constructor checks,
//! in this order, with a typed [`Error`]: non-zero dimensions, the leading dimension (at least
//! the contiguous extent, a multiple of 8), the batch stride, that the buffer holds the whole
//! batch (every row of `ld` elements, the last one included: see [`MatShape::matrix_extent`]),
//! and a 16-byte aligned base address. The device is checked against the context's by
//! each product, before anything is launched.

use blocksparse_abi::LD_ALIGN;
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceSlice, SyncOnDrop};

use crate::context::Context;
use crate::element::Element;
use crate::error::{Error, Result};

/// How a dense matrix lies in memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Element `(i, j)` at `i · ld + j`.
    #[default]
    RowMajor,
    /// Element `(i, j)` at `j · ld + i`.
    ColMajor,
}

impl Layout {
    /// The other layout (that of the transpose of the same memory).
    pub fn flip(self) -> Layout {
        match self {
            Layout::RowMajor => Layout::ColMajor,
            Layout::ColMajor => Layout::RowMajor,
        }
    }
}

/// Shape, layout and batch of a dense matrix over a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatShape {
    /// Rows of one matrix.
    pub rows: usize,
    /// Columns of one matrix.
    pub cols: usize,
    /// Leading dimension (elements between rows, or between columns when column-major).
    pub ld: usize,
    /// Row- or column-major.
    pub layout: Layout,
    /// Matrices in the batch (at least 1).
    pub batch: usize,
    /// Elements between consecutive matrices of the batch.
    pub batch_stride: usize,
}

impl MatShape {
    /// A single `(rows, cols)` matrix.
    pub fn new(rows: usize, cols: usize, ld: usize, layout: Layout) -> Self {
        MatShape { rows, cols, ld, layout, batch: 1, batch_stride: 0 }
    }

    /// The same matrix shape as a batch of `batch` matrices, `batch_stride` elements apart.
    pub fn batched(self, batch: usize, batch_stride: usize) -> Self {
        MatShape { batch, batch_stride, ..self }
    }

    /// The transpose: rows and columns swapped, layout flipped, the same memory.
    pub fn t(self) -> Self {
        MatShape { rows: self.cols, cols: self.rows, layout: self.layout.flip(), ..self }
    }

    /// (contiguous extent, strided extent): columns and rows for row-major, the other way
    /// round for column-major.
    pub fn inner_outer(&self) -> (usize, usize) {
        match self.layout {
            Layout::RowMajor => (self.cols, self.rows),
            Layout::ColMajor => (self.rows, self.cols),
        }
    }

    /// Element offset of `(i, j)` of matrix `b` (unchecked; for shapes that passed
    /// [`MatShape::check`]).
    pub fn offset(&self, b: usize, i: usize, j: usize) -> usize {
        let within = match self.layout {
            Layout::RowMajor => i * self.ld + j,
            Layout::ColMajor => j * self.ld + i,
        };
        b * self.batch_stride + within
    }

    /// Elements one matrix spans: `outer · ld`, its last row (column) padded to `ld` like the
    /// others. The kernels copy 16-byte chunks, with only the chunk's elements inside the
    /// matrix used; a chunk that starts at the end of the last row reaches up to 7 elements past
    /// its last column, which must still be inside the buffer.
    pub fn matrix_extent(&self) -> Result<usize> {
        let (_, outer) = self.inner_outer();
        outer.checked_mul(self.ld).ok_or(Error::Overflow { what: "matrix extent" })
    }

    /// Elements the whole batch spans.
    pub fn extent(&self) -> Result<usize> {
        let one = self.matrix_extent()?;
        (self.batch - 1).checked_mul(self.batch_stride).and_then(|x| x.checked_add(one)).ok_or(Error::Overflow { what: "batch extent" })
    }

    /// Checks the shape against a buffer of `len` elements: non-zero dimensions, a leading
    /// dimension and batch stride that are multiples of 8 and cover one row (column) and one
    /// matrix (`rows · ld` for row-major), and a buffer that holds the whole batch.
    pub fn check(&self, what: &'static str, len: usize) -> Result<()> {
        if self.rows == 0 {
            return Err(Error::ZeroDimension { what: "rows" });
        }
        if self.cols == 0 {
            return Err(Error::ZeroDimension { what: "cols" });
        }
        if self.batch == 0 {
            return Err(Error::ZeroDimension { what: "batch" });
        }
        let align = LD_ALIGN as usize;
        let (inner, _) = self.inner_outer();
        if self.ld < inner || !self.ld.is_multiple_of(align) {
            return Err(Error::LeadingDimension { what, ld: self.ld, min: inner, align });
        }
        self.matrix_extent()?;
        let (_, outer) = self.inner_outer();
        let one = outer.checked_mul(self.ld).ok_or(Error::Overflow { what: "matrix extent" })?;
        if self.batch > 1 && (self.batch_stride < one || !self.batch_stride.is_multiple_of(align)) {
            return Err(Error::BatchStride { what, stride: self.batch_stride, min: one, align });
        }
        let needed = self.extent()?;
        if len < needed {
            return Err(Error::BufferTooSmall { what, needed, got: len });
        }
        Ok(())
    }
}

/// A dense matrix (or batch) that owns its device buffer.
pub struct DeviceMatrix<T> {
    pub(crate) buf: CudaSlice<T>,
    shape: MatShape,
}

impl<T: Element> DeviceMatrix<T> {
    /// Wraps an existing allocation as one `(rows, cols)` matrix, validating the shape.
    pub fn from_slice(buf: CudaSlice<T>, rows: usize, cols: usize, ld: usize, layout: Layout) -> Result<Self> {
        Self::from_slice_batched(buf, MatShape::new(rows, cols, ld, layout))
    }

    /// Wraps an existing allocation with any [`MatShape`] (batches included), validating it
    /// as [`MatRef::new`] does.
    pub fn from_slice_batched(buf: CudaSlice<T>, shape: MatShape) -> Result<Self> {
        check_buffer("matrix", &shape, &buf)?;
        Ok(DeviceMatrix { buf, shape })
    }

    /// Rows of one matrix.
    pub fn rows(&self) -> usize {
        self.shape.rows
    }
    /// Columns of one matrix.
    pub fn cols(&self) -> usize {
        self.shape.cols
    }
    /// Leading dimension.
    pub fn ld(&self) -> usize {
        self.shape.ld
    }
    /// Layout.
    pub fn layout(&self) -> Layout {
        self.shape.layout
    }
    /// Matrices in the batch.
    pub fn batch(&self) -> usize {
        self.shape.batch
    }
    /// The whole shape.
    pub fn shape(&self) -> MatShape {
        self.shape
    }
    /// The device buffer.
    pub fn slice(&self) -> &CudaSlice<T> {
        &self.buf
    }
    /// Gives the buffer back.
    pub fn into_slice(self) -> CudaSlice<T> {
        self.buf
    }
    /// The matrix as a read view.
    pub fn view(&self) -> MatRef<'_, T> {
        MatRef { buf: ReadBuf::Slice(&self.buf), shape: self.shape }
    }
    /// The matrix as a write view.
    pub fn view_mut(&mut self) -> MatMut<'_, T> {
        MatMut { buf: WriteBuf::Slice(&mut self.buf), shape: self.shape }
    }
    /// Its transpose, as a read view of the same memory.
    pub fn t(&self) -> MatRef<'_, T> {
        self.view().t()
    }
    /// Its transpose, as a write view of the same memory.
    pub fn t_mut(&mut self) -> MatMut<'_, T> {
        self.view_mut().t()
    }
}

/// Checks `shape` over `buf` (see the [module docs](self)): the shape against its length, then
/// its base address.
fn check_buffer<T, B: DevicePtr<T>>(what: &'static str, shape: &MatShape, buf: &B) -> Result<()> {
    shape.check(what, buf.len())?;
    // The address through the buffer's own stream (in multi-stream mode this records a read of
    // the buffer on that stream: a later write elsewhere waits for the work queued there now).
    let (address, _guard) = buf.device_ptr(buf.stream());
    check_aligned(what, address)
}

/// [`Error::Misaligned`] unless `address` is 16-byte aligned (what the kernels' 16-byte loads,
/// `cp.async` and TMA need of every row start).
fn check_aligned(what: &'static str, address: u64) -> Result<()> {
    let align = 16;
    if address.is_multiple_of(align as u64) { Ok(()) } else { Err(Error::Misaligned { what, address, align }) }
}

/// The memory behind a [`MatRef`]: a whole allocation or a cudarc view into one.
#[derive(Clone, Copy)]
pub(crate) enum ReadBuf<'a, T> {
    Slice(&'a CudaSlice<T>),
    View(&'a CudaView<'a, T>),
}

impl<T> ReadBuf<'_, T> {
    /// The device the memory lives on.
    pub(crate) fn ordinal(&self) -> usize {
        match self {
            ReadBuf::Slice(s) => s.ordinal(),
            ReadBuf::View(v) => v.stream().context().ordinal(),
        }
    }
}

/// The memory behind a [`MatMut`]: a whole allocation or a cudarc view into one.
pub(crate) enum WriteBuf<'a, T> {
    Slice(&'a mut CudaSlice<T>),
    View(CudaViewMut<'a, T>),
}

impl<T> WriteBuf<'_, T> {
    /// The device the memory lives on.
    pub(crate) fn ordinal(&self) -> usize {
        match self {
            WriteBuf::Slice(s) => s.ordinal(),
            WriteBuf::View(v) => v.stream().context().ordinal(),
        }
    }
}

/// A borrowed read view of a dense device matrix (or batch): the input operands of every
/// product. Made from a [`DeviceMatrix`] (`&m`, `m.view()`, `m.t()`) or from the caller's own
/// device memory ([`MatRef::new`], [`MatRef::from_view`]), never copied.
#[derive(Clone, Copy)]
pub struct MatRef<'a, T> {
    pub(crate) buf: ReadBuf<'a, T>,
    pub(crate) shape: MatShape,
}

impl<'a, T: Element> MatRef<'a, T> {
    /// A view of the caller's allocation `buf` with the given shape, checked as the
    /// [module docs](self) say.
    pub fn new(buf: &'a CudaSlice<T>, shape: MatShape) -> Result<Self> {
        check_buffer("matrix view", &shape, buf)?;
        Ok(MatRef { buf: ReadBuf::Slice(buf), shape })
    }
    /// A view of the caller's cudarc view (`slice.slice(range)`) with the given shape, checked
    /// as [`MatRef::new`] (the start of the range must be 16-byte aligned).
    pub fn from_view(view: &'a CudaView<'_, T>, shape: MatShape) -> Result<Self> {
        check_buffer("matrix view", &shape, view)?;
        Ok(MatRef { buf: ReadBuf::View(view), shape })
    }
    /// The transpose: the same memory read the other way.
    pub fn t(self) -> Self {
        MatRef { shape: self.shape.t(), ..self }
    }
    /// Shape and layout.
    pub fn shape(&self) -> MatShape {
        self.shape
    }
    /// Device address, with the read guard (`DevicePtr`: the stream waits for earlier writes,
    /// and the read is recorded on it when the guard drops, after the launch is queued).
    pub(crate) fn device_ptr<'s>(&'s self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>) {
        match &self.buf {
            ReadBuf::Slice(s) => s.device_ptr(stream),
            ReadBuf::View(v) => v.device_ptr(stream),
        }
    }
}

/// A borrowed write view of a dense device matrix (or batch): the dense output of a product.
/// Made from a [`DeviceMatrix`] (`&mut m`, `m.view_mut()`, `m.t_mut()`) or from the caller's own
/// device memory ([`MatMut::new`], [`MatMut::from_view`]), never copied.
pub struct MatMut<'a, T> {
    pub(crate) buf: WriteBuf<'a, T>,
    pub(crate) shape: MatShape,
}

impl<'a, T: Element> MatMut<'a, T> {
    /// A view of the caller's allocation `buf` with the given shape, checked as
    /// [`MatRef::new`]. Matrices of a batch must not overlap (the batch stride is checked).
    pub fn new(buf: &'a mut CudaSlice<T>, shape: MatShape) -> Result<Self> {
        check_buffer("output view", &shape, &*buf)?;
        Ok(MatMut { buf: WriteBuf::Slice(buf), shape })
    }
    /// A view of the caller's cudarc view (`slice.slice_mut(range)`) with the given shape,
    /// checked as [`MatMut::new`].
    pub fn from_view(view: CudaViewMut<'a, T>, shape: MatShape) -> Result<Self> {
        check_buffer("output view", &shape, &view)?;
        Ok(MatMut { buf: WriteBuf::View(view), shape })
    }
    /// The transpose: the same memory written the other way.
    pub fn t(self) -> Self {
        MatMut { shape: self.shape.t(), ..self }
    }
    /// Shape and layout.
    pub fn shape(&self) -> MatShape {
        self.shape
    }
    /// Device address, with the write guard (`DevicePtrMut`: the stream waits for earlier reads
    /// and writes, and the write is recorded on it when the guard drops, after the launches
    /// are queued).
    pub(crate) fn device_ptr_mut<'s>(&'s mut self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>) {
        match &mut self.buf {
            WriteBuf::Slice(s) => s.device_ptr_mut(stream),
            WriteBuf::View(v) => v.device_ptr_mut(stream),
        }
    }
}

impl<'a, T: Element> From<&'a DeviceMatrix<T>> for MatRef<'a, T> {
    fn from(m: &'a DeviceMatrix<T>) -> Self {
        m.view()
    }
}

impl<'a, T: Element> From<&'a mut DeviceMatrix<T>> for MatMut<'a, T> {
    fn from(m: &'a mut DeviceMatrix<T>) -> Self {
        m.view_mut()
    }
}

fn checked_mul(a: usize, b: usize, what: &'static str) -> Result<usize> {
    a.checked_mul(b).ok_or(Error::Overflow { what })
}

/// A leading dimension for `cols` columns: the next multiple of 8.
fn padded_ld(cols: usize) -> Result<usize> {
    cols.checked_next_multiple_of(LD_ALIGN as usize).ok_or(Error::TooLarge { what: "cols", value: cols })
}

/// The row-major shape `upload_matrix` and `zeros_matrix` give a `(batch, rows, cols)` array.
fn packed_shape(batch: usize, rows: usize, cols: usize) -> Result<MatShape> {
    if rows == 0 {
        return Err(Error::ZeroDimension { what: "rows" });
    }
    if cols == 0 {
        return Err(Error::ZeroDimension { what: "cols" });
    }
    if batch == 0 {
        return Err(Error::ZeroDimension { what: "batch" });
    }
    let ld = padded_ld(cols)?;
    let stride = checked_mul(rows, ld, "matrix elements")?;
    checked_mul(batch, stride, "matrix elements")?;
    Ok(MatShape { rows, cols, ld, layout: Layout::RowMajor, batch, batch_stride: stride })
}

/// Packed row-major `(batch, rows, cols)` data laid out in a row-major `shape` (its leading
/// dimension and batch stride), the gaps filled with `fill`; the last row is padded too.
fn pad_rows<T: Copy>(data: &[T], shape: &MatShape, fill: T) -> Result<Vec<T>> {
    let mut padded = vec![fill; shape.extent()?];
    for (r, src) in data.chunks_exact(shape.cols).enumerate() {
        let at = (r / shape.rows) * shape.batch_stride + (r % shape.rows) * shape.ld;
        padded[at..at + shape.cols].copy_from_slice(src);
    }
    Ok(padded)
}

impl Context {
    /// Copies a dense row-major `(rows, cols)` matrix to the device, padding rows to a leading
    /// dimension that is a multiple of 8 elements.
    pub fn upload_matrix<T: Element>(&self, rows: usize, cols: usize, data: &[T]) -> Result<DeviceMatrix<T>> {
        self.upload_matrix_batch(1, rows, cols, data)
    }

    /// Copies `batch` dense row-major `(rows, cols)` matrices (`data` holds them one after the
    /// other) to the device as one batch, rows padded as in [`Context::upload_matrix`].
    pub fn upload_matrix_batch<T: Element>(&self, batch: usize, rows: usize, cols: usize, data: &[T]) -> Result<DeviceMatrix<T>> {
        let shape = packed_shape(batch, rows, cols)?;
        let len = checked_mul(checked_mul(batch, rows, "matrix elements")?, cols, "matrix elements")?;
        if data.len() != len {
            return Err(Error::ShapeMismatch { what: "dense data length", expected: len, got: data.len() });
        }
        let buf = if shape.ld == cols {
            self.stream().clone_htod(data)?
        } else {
            self.stream().clone_htod(&pad_rows(data, &shape, T::zero())?)?
        };
        Ok(DeviceMatrix { buf, shape })
    }

    /// A zero-filled row-major `(rows, cols)` device matrix. (For a column-major one, make the
    /// row-major `(cols, rows)` matrix and use its transposed views.)
    pub fn zeros_matrix<T: Element>(&self, rows: usize, cols: usize) -> Result<DeviceMatrix<T>> {
        self.zeros_matrix_batch(1, rows, cols)
    }

    /// A zero-filled batch of row-major `(rows, cols)` matrices.
    pub fn zeros_matrix_batch<T: Element>(&self, batch: usize, rows: usize, cols: usize) -> Result<DeviceMatrix<T>> {
        let shape = packed_shape(batch, rows, cols)?;
        let buf = self.stream().alloc_zeros::<T>(shape.extent()?)?;
        Ok(DeviceMatrix { buf, shape })
    }

    /// Copies a device matrix (or batch) back as dense row-major `(batch, rows, cols)`,
    /// whatever its layout.
    pub fn download_matrix<T: Element>(&self, m: &DeviceMatrix<T>) -> Result<Vec<T>> {
        self.same_device("the matrix", m.buf.ordinal())?;
        let s = m.shape;
        let all = self.stream().clone_dtoh(&m.buf)?;
        let mut out = Vec::with_capacity(checked_mul(checked_mul(s.batch, s.rows, "matrix elements")?, s.cols, "matrix elements")?);
        for b in 0..s.batch {
            for i in 0..s.rows {
                for j in 0..s.cols {
                    let at = s.offset(b, i, j);
                    out.push(all[at]);
                }
            }
        }
        Ok(out)
    }

    /// Overwrites a device matrix (or batch) with dense row-major `(batch, rows, cols)` host
    /// data. Elements outside the matrices (padding) are left as they are.
    pub fn write_matrix<T: Element>(&self, m: &mut DeviceMatrix<T>, data: &[T]) -> Result<()> {
        self.same_device("the matrix", m.buf.ordinal())?;
        let s = m.shape;
        let len = checked_mul(checked_mul(s.batch, s.rows, "matrix elements")?, s.cols, "matrix elements")?;
        if data.len() != len {
            return Err(Error::ShapeMismatch { what: "dense data length", expected: len, got: data.len() });
        }
        let mut all = self.stream().clone_dtoh(&m.buf)?;
        let mut src = data.iter();
        for b in 0..s.batch {
            for i in 0..s.rows {
                for j in 0..s.cols {
                    let at = s.offset(b, i, j);
                    if let Some(v) = src.next() {
                        all[at] = *v;
                    }
                }
            }
        }
        self.stream().memcpy_htod(&all, &mut m.buf)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_rows_keep_every_row_of_every_matrix() {
        // 2 matrices of 3 × 5: ld 8, stride 24, extent 24 + 3 · 8 = 48.
        let shape = packed_shape(2, 3, 5).unwrap();
        assert_eq!((shape.ld, shape.batch_stride, shape.extent().unwrap()), (8, 24, 48));
        let data: Vec<u32> = (1..=30).collect();
        let p = pad_rows(&data, &shape, 0).unwrap();
        for b in 0..2 {
            for i in 0..3 {
                for j in 0..5 {
                    assert_eq!(p[b * 24 + i * 8 + j], data[(b * 3 + i) * 5 + j], "matrix {b} row {i} col {j}");
                }
            }
        }
        assert_eq!(p.iter().filter(|&&v| v == 0).count(), 48 - 30, "only the gaps are fill");
    }

    #[test]
    fn base_addresses_must_be_16_byte_aligned() {
        for address in [0u64, 16, 256, 0x7f00_0000_0010] {
            assert!(check_aligned("m", address).is_ok(), "{address:#x}");
        }
        for address in [2u64, 8, 14, 0x7f00_0000_0008, u64::MAX] {
            assert!(matches!(check_aligned("m", address), Err(Error::Misaligned { align: 16, address: a, .. }) if a == address));
        }
    }

    #[test]
    fn shapes_check_ld_stride_and_buffer() {
        let s = MatShape::new(4, 6, 8, Layout::RowMajor);
        // Every row of ld elements, the last one included (16-byte chunks may pass its end).
        assert!(s.check("m", 32).is_ok());
        assert!(matches!(s.check("m", 31), Err(Error::BufferTooSmall { needed: 32, got: 31, .. })));
        assert!(matches!(MatShape::new(4, 6, 6, Layout::RowMajor).check("m", 99), Err(Error::LeadingDimension { ld: 6, align: 8, .. })));
        assert!(matches!(MatShape::new(4, 9, 8, Layout::ColMajor).check("m", 99), Ok(())));
        assert!(matches!(MatShape::new(9, 4, 8, Layout::ColMajor).check("m", 99), Err(Error::LeadingDimension { min: 9, .. })));
        let b = MatShape { batch: 3, batch_stride: 24, ..s };
        assert!(matches!(b.check("m", 100), Err(Error::BatchStride { stride: 24, min: 32, .. })));
        let b = MatShape { batch: 3, batch_stride: 32, ..s };
        assert!(b.check("m", 96).is_ok());
        assert!(b.check("m", 95).is_err());
        // The transpose reads the same memory: (6, 4) column-major with the same ld.
        let t = s.t();
        assert_eq!((t.rows, t.cols, t.ld, t.layout), (6, 4, 8, Layout::ColMajor));
        assert_eq!(t.extent().unwrap(), s.extent().unwrap());
    }
}
