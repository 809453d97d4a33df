//! The embedded PTX modules and typed handles to their kernels. The handles are generated from
//! the variant lists in `blocksparse-abi`, the same lists that generate the device entry points.

use std::collections::HashMap;
use std::sync::Arc;

use blocksparse_abi::{FIXUP_THREADS, MMA_TILES, MmaTile, WGMMA_TILES, WgmmaTile};
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
    /// Index into [`MMA_TILES`].
    pub tile: usize,
    pub output: DType,
}

/// A loaded main kernel and its tile.
#[derive(Clone)]
pub struct MmaKernel {
    pub func: CudaFunction,
    pub tile: MmaTile,
    pub name: &'static str,
}

/// A loaded Hopper kernel and its tile.
#[derive(Clone)]
pub struct WgmmaKernel {
    pub func: CudaFunction,
    pub tile: WgmmaTile,
    pub name: &'static str,
}

/// Every kernel of one module, loaded.
pub struct Kernels {
    pub arch: Arch,
    _module: Arc<CudaModule>,
    mma: HashMap<MmaKey, MmaKernel>,
    /// Keyed like `mma`, the tile index into `WGMMA_TILES`. Empty outside the sm_90a module.
    wgmma: HashMap<MmaKey, WgmmaKernel>,
    fixup: HashMap<DType, CudaFunction>,
}

impl Kernels {
    /// Loads the module for `arch` and raises each kernel's dynamic shared-memory limit to what
    /// its tile needs, after checking the device allows that much (`max_smem_optin`).
    pub fn load(ctx: &Arc<CudaContext>, arch: Arch, max_smem_optin: u32) -> Result<Self> {
        let module = ctx.load_module(Ptx::from_src(arch.ptx()))?;
        let mut mma = HashMap::new();
        let mut fixup = HashMap::new();
        let mut err: Option<Error> = None;
        macro_rules! load_mma {
            ($name:ident, $input:ident, $tile:literal, $output:ident) => {
                if err.is_none() {
                    match load_mma_kernel(&module, stringify!($name), $tile, max_smem_optin) {
                        Ok(k) => {
                            mma.insert(MmaKey { input: DType::$input, tile: $tile, output: DType::$output }, k);
                        }
                        Err(e) => err = Some(e),
                    }
                }
            };
        }
        blocksparse_abi::for_each_mma_kernel!(load_mma);
        macro_rules! load_fixup {
            ($name:ident, $output:ident) => {
                if err.is_none() {
                    match module.load_function(stringify!($name)) {
                        Ok(f) => {
                            fixup.insert(DType::$output, f);
                        }
                        Err(e) => err = Some(e.into()),
                    }
                }
            };
        }
        blocksparse_abi::for_each_fixup_kernel!(load_fixup);
        let mut wgmma = HashMap::new();
        if arch == Arch::Sm90a {
            macro_rules! load_wgmma {
                ($name:ident, $input:ident, $tile:literal, $output:ident) => {
                    if err.is_none() {
                        match load_wgmma_kernel(&module, stringify!($name), $tile, max_smem_optin) {
                            Ok(k) => {
                                wgmma.insert(MmaKey { input: DType::$input, tile: $tile, output: DType::$output }, k);
                            }
                            Err(e) => err = Some(e),
                        }
                    }
                };
            }
            blocksparse_abi::for_each_wgmma_kernel!(load_wgmma);
        }
        if let Some(e) = err {
            return Err(e);
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

/// Threads per block of the fix-up kernel.
pub const FIXUP_BLOCK: u32 = FIXUP_THREADS;

fn load_mma_kernel(module: &Arc<CudaModule>, name: &'static str, tile: usize, max_smem_optin: u32) -> Result<MmaKernel> {
    let tile = MMA_TILES[tile];
    let smem = tile.smem_bytes();
    if smem > max_smem_optin {
        return Err(Error::UnsupportedDevice(format!(
            "kernel {name} needs {smem} bytes of shared memory per block; the device allows {max_smem_optin}"
        )));
    }
    let func = module.load_function(name)?;
    func.set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)?;
    Ok(MmaKernel { func, tile, name })
}

fn load_wgmma_kernel(module: &Arc<CudaModule>, name: &'static str, tile: usize, max_smem_optin: u32) -> Result<WgmmaKernel> {
    let tile = WGMMA_TILES[tile];
    let smem = tile.smem_bytes();
    if smem > max_smem_optin {
        return Err(Error::UnsupportedDevice(format!(
            "kernel {name} needs {smem} bytes of shared memory per block; the device allows {max_smem_optin}"
        )));
    }
    let func = module.load_function(name)?;
    func.set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)?;
    Ok(WgmmaKernel { func, tile, name })
}
