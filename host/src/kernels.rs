//! The embedded PTX modules and typed handles to their kernels. The handles come from the
//! kernel list in `blocksparse-abi` (`for_each_kernel!`), the same list that generates the
//! device entry points, so the two cannot drift.

use std::collections::HashMap;
use std::sync::Arc;

use blocksparse_abi::{KernelFamily, MMA_TILES, OpKind, WGMMA_TILES};
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
    /// `sm_80` PTX: Ampere and newer; portable kernels only.
    Sm80,
    /// `sm_90a` PTX: Hopper (compute capability 9.0) only; portable and Hopper kernels.
    Sm90a,
}

impl Arch {
    /// The module's PTX.
    pub fn ptx(self) -> &'static str {
        match self {
            Arch::Sm80 => PTX_SM80,
            Arch::Sm90a => PTX_SM90A,
        }
    }
    /// Whether the module holds kernels of `family`.
    pub fn has(self, family: KernelFamily) -> bool {
        family == KernelFamily::Portable || self == Arch::Sm90a
    }
}

/// Identifies one generated kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelKey {
    /// The op.
    pub op: OpKind,
    /// Instruction family.
    pub family: KernelFamily,
    /// Element type of the tensor-core inputs (F16 for the fix-up kernels).
    pub input: DType,
    /// Index into the family's tile table (`MMA_TILES` or `WGMMA_TILES`; 0 for the fix-up).
    pub tile: usize,
    /// Element type of the output.
    pub output: DType,
}

/// One entry point of the kernel list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelEntry {
    /// The PTX entry name.
    pub name: &'static str,
    /// What it computes.
    pub key: KernelKey,
}

/// Every kernel of the list, in list order.
pub fn entries() -> Vec<KernelEntry> {
    let mut v = Vec::new();
    macro_rules! push {
        ($name:ident, $op:ident, $family:ident, $input:ident, $tile:literal, $output:ident) => {
            v.push(KernelEntry {
                name: stringify!($name),
                key: KernelKey {
                    op: OpKind::$op,
                    family: KernelFamily::$family,
                    input: DType::$input,
                    tile: $tile,
                    output: DType::$output,
                },
            });
        };
    }
    blocksparse_abi::for_each_kernel!(push);
    v
}

/// Threads per block and dynamic shared memory of a kernel.
pub fn launch_shape(key: &KernelKey) -> (u32, u32) {
    match (key.op, key.family) {
        (OpKind::Fixup, _) => (blocksparse_abi::FIXUP_THREADS, 0),
        (_, KernelFamily::Portable) => (MMA_TILES[key.tile].threads(), MMA_TILES[key.tile].smem_bytes()),
        (_, KernelFamily::Hopper) => (WGMMA_TILES[key.tile].threads(), WGMMA_TILES[key.tile].smem_bytes()),
    }
}

/// The kernels of `arch`'s module that fit a device allowing `max_smem_optin` bytes of
/// dynamic shared memory per block, and the others with the reason they are left out.
pub fn select(arch: Arch, max_smem_optin: u32) -> (Vec<KernelEntry>, Vec<(KernelKey, String)>) {
    let mut fit = Vec::new();
    let mut skipped = Vec::new();
    for e in entries().into_iter().filter(|e| arch.has(e.key.family)) {
        let (_, smem) = launch_shape(&e.key);
        if smem > max_smem_optin {
            skipped.push((e.key, format!("{} needs {smem} bytes of shared memory per block; the device allows {max_smem_optin}", e.name)));
        } else {
            fit.push(e);
        }
    }
    (fit, skipped)
}

/// A loaded kernel.
#[derive(Clone)]
pub struct Kernel {
    /// The function handle.
    pub func: CudaFunction,
    /// Its entry name.
    pub name: &'static str,
    /// Threads per block.
    pub threads: u32,
    /// Dynamic shared memory per block.
    pub smem: u32,
}

/// The kernels of one module that fit the device, loaded.
pub struct Kernels {
    /// The module.
    pub arch: Arch,
    _module: Arc<CudaModule>,
    loaded: HashMap<KernelKey, Kernel>,
    /// Kernels of the module left out, with the reason.
    skipped: Vec<(KernelKey, String)>,
}

impl Kernels {
    /// Loads the module for `arch`, and each of its kernels whose shared memory fits the device
    /// (`max_smem_optin` bytes per block) with its dynamic shared-memory limit raised to what
    /// its tile needs. Kernels that do not fit are left out (and reported by [`Kernels::get`]).
    pub fn load(ctx: &Arc<CudaContext>, arch: Arch, max_smem_optin: u32) -> Result<Self> {
        let module = ctx.load_module(Ptx::from_src(arch.ptx()))?;
        let mut loaded = HashMap::new();
        let (fit, skipped) = select(arch, max_smem_optin);
        for e in fit {
            let (threads, smem) = launch_shape(&e.key);
            let func = module.load_function(e.name)?;
            if smem > 48 * 1024 {
                func.set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)?;
            }
            loaded.insert(e.key, Kernel { func, name: e.name, threads, smem });
        }
        Ok(Kernels { arch, _module: module, loaded, skipped })
    }

    /// The kernel for `key`, or why there is none.
    pub fn get(&self, key: KernelKey) -> Result<&Kernel> {
        if let Some(k) = self.loaded.get(&key) {
            return Ok(k);
        }
        if let Some((_, why)) = self.skipped.iter().find(|(k, _)| *k == key) {
            return Err(Error::KernelUnavailable(why.clone()));
        }
        Err(Error::KernelUnavailable(format!(
            "the {:?} module has no {:?} {:?} kernel for {} -> {} with tile {}",
            self.arch, key.family, key.op, key.input, key.output, key.tile
        )))
    }

    /// Whether `key` is loaded.
    pub fn has(&self, key: KernelKey) -> bool {
        self.loaded.contains_key(&key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernels a device of each compute capability loads, at its shared-memory limit per
    /// block (`cudaDevAttrMaxSharedMemoryPerBlockOptin`): every portable kernel fits every one
    /// of them, so every block shape runs; the Hopper kernels load on sm_90 only.
    #[test]
    fn every_block_shape_has_a_kernel_within_each_devices_limit() {
        let devices = [
            ("sm_80", Arch::Sm80, 163 * 1024),
            ("sm_86", Arch::Sm80, 99 * 1024),
            ("sm_89", Arch::Sm80, 99 * 1024),
            ("sm_90", Arch::Sm90a, 227 * 1024),
            ("sm_120", Arch::Sm80, 99 * 1024),
        ];
        for (name, arch, limit) in devices {
            let (fit, skipped) = select(arch, limit);
            assert!(skipped.is_empty(), "{name}: {skipped:?}");
            for op in [OpKind::Spmm, OpKind::Sddmm] {
                for tile in 0..MMA_TILES.len() {
                    for input in [DType::F16, DType::Bf16] {
                        for output in [DType::F16, DType::Bf16, DType::F32] {
                            let key = KernelKey { op, family: KernelFamily::Portable, input, tile, output };
                            assert!(fit.iter().any(|e| e.key == key), "{name}: no {key:?}");
                        }
                    }
                }
            }
            let hopper = fit.iter().filter(|e| e.key.family == KernelFamily::Hopper).count();
            assert_eq!(hopper > 0, arch == Arch::Sm90a, "{name}: Hopper kernels only in the sm_90a module");
        }
        // A device below a tile's needs loses exactly the kernels above its limit, with the
        // reason.
        let t64 = MMA_TILES[2].smem_bytes();
        let (fit, skipped) = select(Arch::Sm80, t64 - 1);
        assert!(!skipped.is_empty());
        assert!(skipped.iter().all(|(k, why)| launch_shape(k).1 > t64 - 1 && why.contains("shared memory")));
        assert!(fit.iter().all(|e| launch_shape(&e.key).1 < t64));
    }
}
