//! Device access: the [`Context`] (driver, stream, loaded kernels, device limits) and the
//! matrices that live on the GPU.

use std::sync::Arc;

use blocksparse_abi::LD_ALIGN;
use cudarc::driver::sys::CUdevice_attribute_enum as Attr;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr};

use crate::bsr::{BlockShape, Bsr};
use crate::element::{Element, InputElement};
use crate::error::{Error, Result};
use crate::kernels::{Arch, Kernels};

/// Which kernels a context runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelPath {
    /// The best module for the device: `sm_90a` on compute capability 9.0, `sm_80` elsewhere.
    #[default]
    Auto,
    /// The portable `sm_80` module on any device of compute capability 8.0 or newer.
    Portable,
    /// The Hopper `sm_90a` module (compute capability 9.0 only).
    Hopper,
}

impl core::str::FromStr for KernelPath {
    type Err = String;
    fn from_str(s: &str) -> core::result::Result<Self, String> {
        match s {
            "auto" => Ok(KernelPath::Auto),
            "portable" => Ok(KernelPath::Portable),
            "hopper" => Ok(KernelPath::Hopper),
            _ => Err(format!("unknown path {s:?} (expected auto, portable or hopper)")),
        }
    }
}

/// A GPU, its stream and the loaded kernels. Everything the library launches goes through one.
pub struct Context {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    pub(crate) kernels: Kernels,
    name: String,
    compute_capability: (i32, i32),
    sm_count: u32,
    l2_bytes: u32,
}

/// Whether the NVIDIA driver library can be loaded at all (cudarc panics instead of returning an
/// error when it cannot, so this is checked first).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

impl Context {
    /// Opens device `ordinal` with the best kernels for it.
    pub fn new(ordinal: usize) -> Result<Self> {
        Self::with_path(ordinal, KernelPath::Auto)
    }

    /// Opens device `ordinal`, forcing a kernel path. Errors (never panics) without a driver or
    /// device, or when the device cannot run the requested path.
    pub fn with_path(ordinal: usize, path: KernelPath) -> Result<Self> {
        if !driver_present() {
            return Err(Error::NoDevice("the NVIDIA driver library (libcuda) could not be loaded".into()));
        }
        let count = CudaContext::device_count().map_err(|e| Error::NoDevice(e.to_string()))?;
        if count <= 0 || ordinal >= count as usize {
            return Err(Error::NoDevice(format!("device {ordinal} requested, {count} present")));
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| Error::NoDevice(e.to_string()))?;
        let compute_capability = ctx.compute_capability()?;
        let name = ctx.name()?;
        let sm_count = ctx.attribute(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let l2_bytes = ctx.attribute(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?.max(0) as u32;
        let max_smem_optin = ctx.attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as u32;
        if compute_capability.0 < 8 {
            return Err(Error::UnsupportedDevice(format!(
                "{name} has compute capability {}.{}; the kernels need 8.0 or newer",
                compute_capability.0, compute_capability.1
            )));
        }
        let is_hopper = compute_capability == (9, 0);
        let arch = match path {
            KernelPath::Auto if is_hopper => Arch::Sm90a,
            KernelPath::Auto | KernelPath::Portable => Arch::Sm80,
            KernelPath::Hopper if is_hopper => Arch::Sm90a,
            KernelPath::Hopper => {
                return Err(Error::UnsupportedDevice(format!(
                    "the Hopper path needs compute capability 9.0; {name} has {}.{}",
                    compute_capability.0, compute_capability.1
                )));
            }
        };
        let kernels = Kernels::load(&ctx, arch, max_smem_optin)?;
        let stream = ctx.default_stream();
        Ok(Context { ctx, stream, kernels, name, compute_capability, sm_count, l2_bytes })
    }

    pub fn device_name(&self) -> &str {
        &self.name
    }
    pub fn compute_capability(&self) -> (i32, i32) {
        self.compute_capability
    }
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }
    /// L2 cache size in bytes.
    pub fn l2_bytes(&self) -> u32 {
        self.l2_bytes
    }
    /// The module this context launches from.
    pub fn arch(&self) -> Arch {
        self.kernels.arch
    }
    /// The stream every operation of this context is ordered on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
    pub fn cuda(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
    /// Waits for all queued work.
    pub fn synchronize(&self) -> Result<()> {
        Ok(self.stream.synchronize()?)
    }

    /// Copies a dense row-major `(rows, cols)` matrix to the device, padding rows to a leading
    /// dimension that is a multiple of 8 elements.
    pub fn upload_matrix<T: Element>(&self, rows: usize, cols: usize, data: &[T]) -> Result<DeviceMatrix<T>> {
        check_dims(rows, cols)?;
        let len = checked_mul(rows, cols, "matrix elements")?;
        if data.len() != len {
            return Err(Error::ShapeMismatch { what: "dense data length", expected: len, got: data.len() });
        }
        let ld = padded_ld(cols)?;
        let buf = if ld == cols {
            self.stream.clone_htod(data)?
        } else {
            let mut padded = vec![T::zero(); checked_mul(rows, ld, "matrix elements")?];
            for (dst, src) in padded.chunks_exact_mut(ld).zip(data.chunks_exact(cols)) {
                dst[..cols].copy_from_slice(src);
            }
            self.stream.clone_htod(&padded)?
        };
        Ok(DeviceMatrix { buf, rows, cols, ld })
    }

    /// A zero-filled `(rows, cols)` device matrix.
    pub fn zeros_matrix<T: Element>(&self, rows: usize, cols: usize) -> Result<DeviceMatrix<T>> {
        check_dims(rows, cols)?;
        let ld = padded_ld(cols)?;
        let buf = self.stream.alloc_zeros::<T>(checked_mul(rows, ld, "matrix elements")?)?;
        Ok(DeviceMatrix { buf, rows, cols, ld })
    }

    /// Copies a device matrix back as dense row-major `(rows, cols)`.
    pub fn download_matrix<T: Element>(&self, m: &DeviceMatrix<T>) -> Result<Vec<T>> {
        let all = self.stream.clone_dtoh(&m.buf)?;
        if m.ld == m.cols {
            return Ok(all);
        }
        let mut out = Vec::with_capacity(m.rows * m.cols);
        for row in all.chunks(m.ld).take(m.rows) {
            out.extend_from_slice(&row[..m.cols]);
        }
        Ok(out)
    }

    /// Overwrites a device matrix (the padding too) with a dense row-major host matrix.
    pub fn write_matrix<T: Element>(&self, m: &mut DeviceMatrix<T>, data: &[T]) -> Result<()> {
        let fresh = self.upload_matrix(m.rows, m.cols, data)?;
        debug_assert_eq!(fresh.ld, m.ld);
        self.stream.memcpy_dtod(&fresh.buf, &mut m.buf)?;
        Ok(())
    }

    /// Copies a BSR matrix to the device.
    pub fn upload_bsr<T: InputElement>(&self, a: &Bsr<T>) -> Result<DeviceBsr<T>> {
        let col_idx = self.stream.clone_htod(a.col_idx())?;
        let values = self.stream.clone_htod(a.values())?;
        let pattern = Arc::new(Pattern {
            nrows: a.nrows(),
            ncols: a.ncols(),
            block: a.block(),
            row_ptr: a.row_ptr().to_vec(),
            col_idx,
        });
        Ok(DeviceBsr { pattern, values })
    }

    /// Replaces the block values of `a` (same pattern: plans made for it stay valid).
    pub fn update_values<T: InputElement>(&self, a: &mut DeviceBsr<T>, values: &[T]) -> Result<()> {
        if values.len() != a.values.len() {
            return Err(Error::ValuesLength { expected: a.values.len(), got: values.len() });
        }
        self.stream.memcpy_htod(values, &mut a.values)?;
        Ok(())
    }
}

fn check_dims(rows: usize, cols: usize) -> Result<()> {
    if rows == 0 {
        return Err(Error::ZeroDimension { what: "rows" });
    }
    if cols == 0 {
        return Err(Error::ZeroDimension { what: "cols" });
    }
    Ok(())
}

fn checked_mul(a: usize, b: usize, what: &'static str) -> Result<usize> {
    a.checked_mul(b).ok_or(Error::TooLarge { what, value: usize::MAX })
}

fn padded_ld(cols: usize) -> Result<usize> {
    let align = LD_ALIGN as usize;
    cols.checked_next_multiple_of(align).ok_or(Error::TooLarge { what: "cols", value: cols })
}

/// A dense row-major matrix on the device: `(rows, ld)` elements of which the first `cols` of
/// each row are the matrix. `ld` is a multiple of 8, so every row starts 16-byte aligned.
pub struct DeviceMatrix<T> {
    pub(crate) buf: CudaSlice<T>,
    rows: usize,
    cols: usize,
    ld: usize,
}

impl<T: Element> DeviceMatrix<T> {
    /// Wraps an existing allocation, validating shape, leading dimension and size.
    pub fn from_slice(buf: CudaSlice<T>, rows: usize, cols: usize, ld: usize) -> Result<Self> {
        check_dims(rows, cols)?;
        let align = LD_ALIGN as usize;
        if ld < cols || ld % align != 0 {
            return Err(Error::LeadingDimension { what: "matrix", ld, min: cols, align });
        }
        let needed = checked_mul(rows - 1, ld, "matrix elements")? + cols;
        if buf.len() < needed {
            return Err(Error::BufferTooSmall { what: "matrix", needed, got: buf.len() });
        }
        Ok(DeviceMatrix { buf, rows, cols, ld })
    }
    pub fn rows(&self) -> usize {
        self.rows
    }
    pub fn cols(&self) -> usize {
        self.cols
    }
    pub fn ld(&self) -> usize {
        self.ld
    }
    pub fn slice(&self) -> &CudaSlice<T> {
        &self.buf
    }
    pub fn into_slice(self) -> CudaSlice<T> {
        self.buf
    }
    pub(crate) fn ptr(&self, stream: &CudaStream) -> u64 {
        self.buf.device_ptr(stream).0
    }
}

/// The sparsity pattern of a device BSR matrix, shared by the matrix and the plans made for it.
pub struct Pattern {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) block: BlockShape,
    pub(crate) row_ptr: Vec<u32>,
    pub(crate) col_idx: CudaSlice<u32>,
}

impl Pattern {
    pub fn nnzb(&self) -> usize {
        self.col_idx.len()
    }
}

/// A BSR matrix on the device (pattern + block values).
pub struct DeviceBsr<T> {
    pub(crate) pattern: Arc<Pattern>,
    pub(crate) values: CudaSlice<T>,
}

impl<T> DeviceBsr<T> {
    pub fn nrows(&self) -> usize {
        self.pattern.nrows
    }
    pub fn ncols(&self) -> usize {
        self.pattern.ncols
    }
    pub fn block(&self) -> BlockShape {
        self.pattern.block
    }
    pub fn nnzb(&self) -> usize {
        self.pattern.nnzb()
    }
    pub fn row_ptr(&self) -> &[u32] {
        &self.pattern.row_ptr
    }
}
