//! The [`Context`]: one GPU, the stream every operation is ordered on, the loaded kernels and
//! the device limits the planners read. Data movement lives with the types it moves
//! ([`crate::matrix`], [`crate::device_bsr`]); products with their ops ([`crate::ops`]).
//!
//! # Streams
//!
//! Every call of a context (uploads, downloads, plans, products) is queued on **its** stream,
//! [`Context::stream`]: the device's legacy default stream for [`Context::new`] and
//! [`Context::with_path`], the caller's stream for [`Context::from_stream`] and
//! [`Context::with_stream`] (which shares the loaded kernels: one context per stream costs
//! nothing). Device buffers are accessed through cudarc's guards (`DevicePtr` for what a
//! launch reads, `DevicePtrMut` for what it writes) held until the launches are queued, so
//! when cudarc manages stream synchronization (it does once the process has made a stream of
//! its own, e.g. with `CudaContext::new_stream`, unless event tracking was turned off), work
//! queued later on any other stream that reads an output waits for the product that writes
//! it, and a product waits for earlier writes of its inputs and earlier reads and writes of
//! its outputs. Downloads (`download_matrix`, `download_values`) return once the copy is done.

use std::sync::Arc;

use cudarc::driver::sys::CUdevice_attribute_enum as Attr;
use cudarc::driver::{CudaContext, CudaStream};

use crate::error::{Error, Result};
use crate::kernels::{Arch, Kernels};

/// Which kernels a context runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelPath {
    /// The best module for the device: `sm_90a` on compute capability 9.0, `sm_80` elsewhere.
    #[default]
    Auto,
    /// The portable `sm_80` module (`mma.sync`) on any device of compute capability 8.0 or newer.
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

/// A GPU, its stream and its kernels (each module loaded on first use). Everything the library
/// launches goes through one, on the context's stream (see the [module docs](self)).
pub struct Context {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    pub(crate) kernels: Arc<Kernels>,
    name: String,
    compute_capability: (i32, i32),
    sm_count: u32,
    l2_bytes: u32,
    memory_bytes: usize,
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
    /// device, or when the device cannot run the requested path. The context runs on the
    /// device's legacy default stream.
    pub fn with_path(ordinal: usize, path: KernelPath) -> Result<Self> {
        if !driver_present() {
            return Err(Error::NoDevice("the NVIDIA driver library (libcuda) could not be loaded".into()));
        }
        let count = CudaContext::device_count().map_err(|e| Error::NoDevice(e.to_string()))?;
        if count <= 0 || ordinal >= count as usize {
            return Err(Error::NoDevice(format!("device {ordinal} requested, {count} present")));
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| Error::NoDevice(e.to_string()))?;
        Self::from_stream(ctx.default_stream(), path)
    }

    /// A context on the caller's `stream` (of any cudarc context), with the kernels of `path`
    /// for its device loaded: every call of the returned context is queued on `stream`.
    /// Errors as [`Context::with_path`].
    ///
    /// ```no_run
    /// # fn main() -> blocksparse::Result<()> {
    /// use blocksparse::{Context, KernelPath, cudarc::driver::CudaContext};
    /// let cuda = CudaContext::new(0)?;
    /// let ctx = Context::from_stream(cuda.new_stream()?, KernelPath::Auto)?;
    /// # Ok(()) }
    /// ```
    pub fn from_stream(stream: Arc<CudaStream>, path: KernelPath) -> Result<Self> {
        let ctx = stream.context().clone();
        let compute_capability = ctx.compute_capability()?;
        let name = ctx.name()?;
        let sm_count = ctx.attribute(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?.max(1) as u32;
        let l2_bytes = ctx.attribute(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?.max(0) as u32;
        let memory_bytes = ctx.total_mem()?;
        let max_smem_optin = ctx.attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?.max(0) as u32;
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
        // Nothing is loaded yet: each module loads when a product first needs it.
        let kernels = Arc::new(Kernels::new(ctx.clone(), arch, compute_capability, max_smem_optin));
        Ok(Context { ctx, stream, kernels, name, compute_capability, sm_count, l2_bytes, memory_bytes })
    }

    /// This context's device and kernels on another `stream`, which must belong to the same
    /// cudarc context ([`Error::DeviceMismatch`] otherwise). Nothing is loaded again; plans,
    /// matrices and BSR values made by either context serve both (one product at a time per
    /// plan: a plan used on several streams orders each product after the previous one).
    /// `stream` first waits for the work already queued on this context's stream.
    pub fn with_stream(&self, stream: Arc<CudaStream>) -> Result<Self> {
        if stream.context() != &self.ctx {
            return Err(Error::DeviceMismatch { what: "the stream", expected: self.ctx.ordinal(), got: stream.context().ordinal() });
        }
        // Work already queued on this context's stream (uploads, plans, products) comes first:
        // cudarc orders buffers across streams only once the process has several, which a
        // stream made after those uploads does not cover.
        stream.join(&self.stream)?;
        Ok(Context { ctx: self.ctx.clone(), stream, kernels: self.kernels.clone(), name: self.name.clone(), ..*self })
    }

    /// The device's name.
    pub fn device_name(&self) -> &str {
        &self.name
    }
    /// The device's compute capability (major, minor).
    pub fn compute_capability(&self) -> (i32, i32) {
        self.compute_capability
    }
    /// Streaming multiprocessors.
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }
    /// L2 cache size in bytes.
    pub fn l2_bytes(&self) -> u32 {
        self.l2_bytes
    }
    /// The device's memory in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.memory_bytes
    }
    /// The architecture of the modules this context launches from.
    pub fn arch(&self) -> Arch {
        self.kernels.arch
    }
    /// The stream every operation of this context is queued on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
    /// The underlying cudarc context.
    pub fn cuda(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
    /// Waits for all queued work.
    pub fn synchronize(&self) -> Result<()> {
        Ok(self.stream.synchronize()?)
    }
}
