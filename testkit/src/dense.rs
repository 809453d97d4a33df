//! The dense baseline: cuBLAS `GemmEx` (f32 accumulation) on the same device and stream, used by
//! the benchmarks to report ratios measured in the same run.

use cudarc::cublas::sys::{self, cublasComputeType_t, cublasGemmAlgo_t, cublasHandle_t, cublasOperation_t, cublasStatus_t, cudaDataType};

use blocksparse::{Context, DType, DeviceMatrix, Element, InputElement, Layout};

/// What went wrong in the baseline (a message).
pub type Result<T> = std::result::Result<T, String>;

/// Whether the cuBLAS library can be loaded (cudarc panics instead of erroring when it cannot).
pub fn cublas_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { sys::is_culib_present() }
}

/// A cuBLAS handle bound to a context's stream.
pub struct DenseGemm {
    handle: cublasHandle_t,
}

fn check(status: cublasStatus_t, what: &str) -> Result<()> {
    if status == cublasStatus_t::CUBLAS_STATUS_SUCCESS { Ok(()) } else { Err(format!("cuBLAS {what}: {status:?}")) }
}

fn data_type(d: DType) -> cudaDataType {
    match d {
        DType::F16 => cudaDataType::CUDA_R_16F,
        DType::Bf16 => cudaDataType::CUDA_R_16BF,
        DType::F32 => cudaDataType::CUDA_R_32F,
    }
}

impl DenseGemm {
    pub fn new(ctx: &Context) -> Result<Self> {
        if !cublas_present() {
            return Err(
                "libcublas could not be loaded (add the CUDA library folder, e.g. /usr/local/cuda/lib64, to LD_LIBRARY_PATH)".into()
            );
        }
        ctx.cuda().bind_to_thread().map_err(|e| e.to_string())?;
        let mut handle: cublasHandle_t = std::ptr::null_mut();
        // SAFETY: FFI calls with valid out-pointers; the stream outlives the handle (both are
        // owned by `ctx`, which the caller keeps alive while using this).
        unsafe {
            check(sys::cublasCreate_v2(&mut handle), "cublasCreate")?;
            check(sys::cublasSetStream_v2(handle, ctx.stream().cu_stream() as _), "cublasSetStream")?;
        }
        Ok(DenseGemm { handle })
    }

    /// Dense `C = A · B` for every matrix of the batches (row-major `(m, k)` · `(k, n)`, the
    /// same batch size everywhere), f32 accumulation, one strided-batched cuBLAS call.
    pub fn gemm<T: InputElement, O: Element>(
        &self,
        ctx: &Context,
        a: &DeviceMatrix<T>,
        b: &DeviceMatrix<T>,
        c: &mut DeviceMatrix<O>,
    ) -> Result<()> {
        let (m, k, n) = (a.rows(), a.cols(), b.cols());
        if b.rows() != k {
            return Err(format!("rows of B: expected {k}, got {}", b.rows()));
        }
        if c.rows() != m || c.cols() != n {
            return Err(format!("shape of C: expected {m}x{n}, got {}x{}", c.rows(), c.cols()));
        }
        if [a.layout(), b.layout(), c.layout()].iter().any(|&l| l != Layout::RowMajor) {
            return Err("the dense baseline takes row-major matrices".into());
        }
        let batch = a.batch();
        if b.batch() != batch || c.batch() != batch {
            return Err(format!("batches differ: A {batch}, B {}, C {}", b.batch(), c.batch()));
        }
        let int = |v: usize| i32::try_from(v).map_err(|_| format!("dense dimension {v} exceeds i32"));
        let long = |v: usize| i64::try_from(v).map_err(|_| format!("batch stride {v} exceeds i64"));
        let (alpha, beta) = (1.0f32, 0.0f32);
        let s = ctx.stream();
        // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: pass B first.
        // SAFETY: pointers are live device allocations of the checked shapes and batches.
        unsafe {
            check(
                sys::cublasGemmStridedBatchedEx(
                    self.handle,
                    cublasOperation_t::CUBLAS_OP_N,
                    cublasOperation_t::CUBLAS_OP_N,
                    int(n)?,
                    int(m)?,
                    int(k)?,
                    &alpha as *const f32 as *const _,
                    ptr(b.slice(), s) as *const _,
                    data_type(T::DTYPE),
                    int(b.ld())?,
                    long(b.shape().batch_stride)?,
                    ptr(a.slice(), s) as *const _,
                    data_type(T::DTYPE),
                    int(a.ld())?,
                    long(a.shape().batch_stride)?,
                    &beta as *const f32 as *const _,
                    ptr(c.slice(), s) as *mut _,
                    data_type(O::DTYPE),
                    int(c.ld())?,
                    long(c.shape().batch_stride)?,
                    int(batch)?,
                    cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                ),
                "cublasGemmStridedBatchedEx",
            )
        }
    }
}

impl Drop for DenseGemm {
    fn drop(&mut self) {
        // SAFETY: the handle was created by cublasCreate and is destroyed once.
        unsafe {
            let _ = sys::cublasDestroy_v2(self.handle);
        }
    }
}

/// Device address of a buffer (the cuBLAS call is queued on the same stream right after).
fn ptr<T>(s: &cudarc::driver::CudaSlice<T>, stream: &cudarc::driver::CudaStream) -> u64 {
    cudarc::driver::DevicePtr::device_ptr(s, stream).0
}
