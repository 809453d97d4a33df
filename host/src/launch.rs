//! Launching: parameter blocks passed by value, the one launch helper, and TMA tensor maps.

use blocksparse_abi::{FixupParams, HopperParams};
use cudarc::driver::sys::{self as cu, CUtensorMap};
use cudarc::driver::{CudaFunction, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};

use crate::element::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::Kernel;

/// A kernel's parameter block: a `#[repr(C)]` plain-data struct from `blocksparse-abi`, whose
/// layout the device crate shares. Each op implements it for its own parameters.
///
/// # Safety
/// The type must be `#[repr(C)]`, `Copy`, hold no pointers to host memory, and be the type the
/// kernels it is launched with take by value.
pub(crate) unsafe trait Params: Copy {}

// SAFETY: the shared abi types, as the device crate declares them.
unsafe impl Params for FixupParams {}
unsafe impl<P: Params> Params for HopperParams<P> {}

/// A launch-parameter block passed by value (this wrapper lets cudarc push it).
#[repr(transparent)]
#[derive(Clone, Copy)]
pub(crate) struct KernelParam<P>(P);
// SAFETY: `P: Params` is a plain-data struct of the kernel's own parameter layout.
unsafe impl<P: Params> DeviceRepr for KernelParam<P> {}

/// Launches `kernel` on `stream` over `grid` thread blocks (its own block size and shared
/// memory) with one parameter block passed by value.
///
/// # Safety
/// `P` must be the kernel's parameter type, and every device pointer in it valid for the
/// accesses the kernel makes with this grid; the guards of those pointers must be held until
/// this returns.
pub(crate) unsafe fn launch<P: Params>(stream: &CudaStream, kernel: &Kernel, grid: u32, params: P) -> Result<()> {
    unsafe { launch_func(stream, &kernel.func, (grid, kernel.threads, kernel.smem), params) }
}

/// As [`launch`] with an explicit `(grid, threads, shared memory)`.
///
/// # Safety
/// As [`launch`].
pub(crate) unsafe fn launch_func<P: Params>(
    stream: &CudaStream,
    func: &CudaFunction,
    (grid, threads, smem): (u32, u32, u32),
    params: P,
) -> Result<()> {
    if grid == 0 {
        return Ok(());
    }
    let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: smem };
    let arg = KernelParam(params);
    let mut builder = stream.launch_builder(func);
    builder.arg(&arg);
    // SAFETY: the caller's contract.
    unsafe { builder.launch(cfg) }?;
    Ok(())
}

/// A 3D tiled TMA descriptor over a batch of matrices at device address `ptr`: `dims` =
/// (contiguous extent, rows, batch), `pitches` = (bytes between rows, bytes between matrices),
/// `boxdim` = (contiguous, rows) of one box (the batch extent of a box is 1), with `swizzle`
/// swizzled over its contiguous extent (128, 64 or 32 bytes), else laid out row-major in
/// shared memory; zero fill out of range.
pub(crate) fn tensor_map<T: Element>(ptr: u64, dims: [u64; 3], pitches: [u64; 2], boxdim: [u32; 2], swizzle: bool) -> Result<[u64; 16]> {
    let dtype = match T::DTYPE {
        DType::F16 => cu::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        DType::Bf16 => cu::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        DType::F32 => cu::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
    };
    // TMA's limits: dimensions up to 2^32, strides multiples of 16 bytes below 2^40. A single
    // matrix gets the batch pitch of a packed batch.
    let pitches = [pitches[0], if dims[2] == 1 { dims[1].saturating_mul(pitches[0]) } else { pitches[1] }];
    if dims.iter().any(|&d| d == 0 || d > u32::MAX as u64) || pitches.iter().any(|&p| p % 16 != 0 || p >= 1 << 40) {
        return Err(Error::TooLarge { what: "TMA tensor extent", value: dims.iter().copied().max().unwrap_or(0) as usize });
    }
    // Swizzled over the box's contiguous extent: 128 bytes (64 f16/bf16, 32 f32), or 64 / 32
    // for the shallow Hopper tiles' A boxes (32- / 16-deep K-major ones, or MN-major ones of
    // 32- / 16-row blocks of a stream of Aᵀ).
    let swizzle = match boxdim[0] as usize * core::mem::size_of::<T>() {
        _ if !swizzle => cu::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        128 => cu::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
        64 => cu::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        32 => cu::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        bytes => return Err(Error::KernelUnavailable(format!("no swizzled TMA layout for a box {bytes} bytes wide"))),
    };
    let mut map = CUtensorMap { opaque: [0; 16] };
    let boxes = [boxdim[0], boxdim[1], 1u32];
    let elem_strides = [1u32, 1, 1];
    // SAFETY: all arrays have the rank's length (pitches: rank - 1); the map is written by the
    // driver.
    let res = unsafe {
        cu::cuTensorMapEncodeTiled(
            &mut map,
            dtype,
            3,
            ptr as *mut core::ffi::c_void,
            dims.as_ptr(),
            pitches.as_ptr(),
            boxes.as_ptr(),
            elem_strides.as_ptr(),
            cu::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            cu::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            cu::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    res.result()?;
    Ok(map.opaque)
}
