//! The embedded PTX modules and typed handles to their kernels. The handles are generated from
//! the variant lists in `blocksparse-abi`, the same lists that generate the device entry points.

use std::collections::HashMap;
use std::sync::Arc;

use blocksparse_abi::{MMA_TILES, MmaTile, WGMMA_TILES, WgmmaTile};
use cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;

use crate::element::DType;
use crate::error::{Error, Result};

/// PTX of the portable module (compute capability 8.0 and newer).
pub const PTX_SM80: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels_sm80.ptx"));
/// PTX of the Hopper module (sm_90a).
pub const PTX_SM90A: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels_sm90a.ptx"));

/// Which compiled module a context runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// `sm_80` PTX: Ampere and newer.
    Sm80,
    /// `sm_90a` PTX: Hopper (compute capability 9.0) only.
    Sm90a,
}

impl Arch {
    pub fn ptx(self) -> &'static str {
        match self {
            Arch::Sm80 => PTX_SM80,
            Arch::Sm90a => PTX_SM90A,
        }
    }
}

/// Identifies one generated main kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MmaKey {
    pub input: DType,
    /// Index into the kernel family's tile table (`MMA_TILES` or `WGMMA_TILES`).
    pub tile: usize,
    pub output: DType,
}

/// One entry point of the generated kernel lists in `blocksparse-abi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelEntry {
    pub name: &'static str,
    pub key: MmaKey,
}

macro_rules! collect_entries {
    ($list:ident) => {{
        let mut v = Vec::new();
        macro_rules! push {
            ($name:ident, $input:ident, $tile:literal, $output:ident) => {
                v.push(KernelEntry {
                    name: stringify!($name),
                    key: MmaKey { input: DType::$input, tile: $tile, output: DType::$output },
                });
            };
        }
        blocksparse_abi::$list!(push);
        v
    }};
}

/// The portable kernels (in both modules).
pub fn mma_entries() -> Vec<KernelEntry> {
    collect_entries!(for_each_mma_kernel)
}

/// The Hopper kernels (sm_90a module only).
pub fn wgmma_entries() -> Vec<KernelEntry> {
    collect_entries!(for_each_wgmma_kernel)
}

/// The split-K fix-up kernels, by output type.
pub fn fixup_entries() -> Vec<(&'static str, DType)> {
    let mut v = Vec::new();
    macro_rules! push {
        ($name:ident, $output:ident) => {
            v.push((stringify!($name), DType::$output));
        };
    }
    blocksparse_abi::for_each_fixup_kernel!(push);
    v
}

/// A loaded kernel and its tile configuration.
#[derive(Clone)]
pub struct Kernel<T> {
    pub func: CudaFunction,
    pub tile: T,
    pub name: &'static str,
}

/// A loaded portable kernel.
pub type MmaKernel = Kernel<MmaTile>;
/// A loaded Hopper kernel.
pub type WgmmaKernel = Kernel<WgmmaTile>;

/// Every kernel of one module, loaded.
pub struct Kernels {
    pub arch: Arch,
    _module: Arc<CudaModule>,
    mma: HashMap<MmaKey, MmaKernel>,
    /// Keyed by the tile index into `WGMMA_TILES`. Empty outside the sm_90a module.
    wgmma: HashMap<MmaKey, WgmmaKernel>,
    fixup: HashMap<DType, CudaFunction>,
}

impl Kernels {
    /// Loads the module for `arch` and raises each kernel's dynamic shared-memory limit to what
    /// its tile needs, after checking the device allows that much (`max_smem_optin`).
    pub fn load(ctx: &Arc<CudaContext>, arch: Arch, max_smem_optin: u32) -> Result<Self> {
        let module = ctx.load_module(Ptx::from_src(arch.ptx()))?;
        let mut mma = HashMap::new();
        for e in mma_entries() {
            let tile = MMA_TILES[e.key.tile];
            mma.insert(e.key, load_tiled(&module, e.name, tile, tile.smem_bytes(), max_smem_optin)?);
        }
        let mut wgmma = HashMap::new();
        if arch == Arch::Sm90a {
            for e in wgmma_entries() {
                let tile = WGMMA_TILES[e.key.tile];
                wgmma.insert(e.key, load_tiled(&module, e.name, tile, tile.smem_bytes(), max_smem_optin)?);
            }
        }
        let mut fixup = HashMap::new();
        for (name, output) in fixup_entries() {
            fixup.insert(output, module.load_function(name)?);
        }
        Ok(Kernels { arch, _module: module, mma, wgmma, fixup })
    }

    pub fn mma(&self, key: MmaKey) -> Result<&MmaKernel> {
        self.mma.get(&key).ok_or_else(|| {
            Error::UnsupportedDevice(format!("no kernel for {} x {} -> {} with tile {}", key.input, key.input, key.output, key.tile))
        })
    }

    pub fn wgmma(&self, key: MmaKey) -> Result<&WgmmaKernel> {
        self.wgmma.get(&key).ok_or_else(|| {
            Error::UnsupportedDevice(format!("no Hopper kernel for {} -> {} with tile {}", key.input, key.output, key.tile))
        })
    }

    /// Whether this module has the Hopper kernels.
    pub fn has_wgmma(&self) -> bool {
        !self.wgmma.is_empty()
    }

    pub fn fixup(&self, output: DType) -> Result<&CudaFunction> {
        self.fixup.get(&output).ok_or_else(|| Error::UnsupportedDevice(format!("no fix-up kernel for {output}")))
    }
}

/// Loads `name` and raises its dynamic shared-memory limit to `smem`, once checked against the
/// device's limit.
fn load_tiled<T>(module: &Arc<CudaModule>, name: &'static str, tile: T, smem: u32, max_smem_optin: u32) -> Result<Kernel<T>> {
    if smem > max_smem_optin {
        return Err(Error::UnsupportedDevice(format!(
            "kernel {name} needs {smem} bytes of shared memory per block; the device allows {max_smem_optin}"
        )));
    }
    let func = module.load_function(name)?;
    func.set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)?;
    Ok(Kernel { func, tile, name })
}
