//! The embedded kernel modules and typed handles to their kernels. The handles come from the
//! kernel list in `blocksparse-abi` (`for_each_kernel!`), the same list that generates the
//! device entry points, so the two cannot drift.
//!
//! The modules are built by `cargo xtask build-ptx` (PTX from rustc's NVPTX backend, cubins
//! from ptxas) and committed in `host/kernels/`; this crate only embeds them. There is one
//! module per op and family ([`Module`]), loaded the first time one of its kernels is asked for:
//! the `sm_80` cubin on compute capability 8.x, the `sm_90a` cubin on 9.0, and the PTX (compiled
//! by the driver) on other devices. Every module carries the hash of the shared ABI it was
//! built against, which is checked (in its PTX, on the host) before it loads
//! ([`Error::AbiMismatch`]).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use blocksparse_abi::{ABI_HASH, ABI_HASH_SYMBOL, KernelFamily, MMA_TILES, OpKind, WGMMA_TILES};
use cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;

use crate::element::DType;
use crate::error::{Error, Result};

/// Which compiled modules a context runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    /// `sm_80`: Ampere and newer; portable kernels only.
    Sm80,
    /// `sm_90a`: Hopper (compute capability 9.0) only; portable and Hopper kernels.
    Sm90a,
}

impl Arch {
    /// Every architecture the kernels are built for.
    pub const ALL: [Arch; 2] = [Arch::Sm80, Arch::Sm90a];

    /// The PTX target (`-arch` of ptxas).
    pub fn target(self) -> &'static str {
        match self {
            Arch::Sm80 => "sm_80",
            Arch::Sm90a => "sm_90a",
        }
    }
    /// The PTX ISA the build asks for, where the target's default lacks an instruction the
    /// kernels use: 7.8 on sm_80 for `movmatrix` (sm_90a's default, 8.0, has it).
    pub fn ptx_isa(self) -> Option<&'static str> {
        match self {
            Arch::Sm80 => Some("ptx78"),
            Arch::Sm90a => None,
        }
    }
    /// Whether this architecture's cubins run on a device of compute capability `cc`
    /// (otherwise the driver compiles the PTX).
    pub fn runs_cubin_on(self, cc: (i32, i32)) -> bool {
        match self {
            Arch::Sm80 => cc.0 == 8,
            Arch::Sm90a => cc == (9, 0),
        }
    }
    /// Whether the architecture has kernels of `family`.
    pub fn has(self, family: KernelFamily) -> bool {
        family == KernelFamily::Portable || self == Arch::Sm90a
    }
    /// The modules built for this architecture, in [`Module::ALL`] order.
    pub fn modules(self) -> impl Iterator<Item = Module> {
        Module::ALL.into_iter().filter(move |m| self.has(m.family))
    }
}

/// One kernel module: the entries of the kernel list of one op and one family (the split-K
/// fix-up kernels, the densify kernel and the sparsify kernels form modules of their own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Module {
    /// The op.
    pub op: OpKind,
    /// The instruction family.
    pub family: KernelFamily,
}

impl Module {
    /// Every module, each built for every [`Arch`] that has its family.
    pub const ALL: [Module; 9] = [
        Module { op: OpKind::Spmm, family: KernelFamily::Portable },
        Module { op: OpKind::Sddmm, family: KernelFamily::Portable },
        Module { op: OpKind::Spgemm, family: KernelFamily::Portable },
        Module { op: OpKind::Fixup, family: KernelFamily::Portable },
        Module { op: OpKind::Densify, family: KernelFamily::Portable },
        Module { op: OpKind::Sparsify, family: KernelFamily::Portable },
        Module { op: OpKind::Spmm, family: KernelFamily::Hopper },
        Module { op: OpKind::Sddmm, family: KernelFamily::Hopper },
        Module { op: OpKind::Spgemm, family: KernelFamily::Hopper },
    ];

    /// The module holding `key`'s kernel.
    pub fn of(key: &KernelKey) -> Module {
        Module { op: key.op, family: key.family }
    }
    /// `op_family`, lower case (e.g. `spmm_portable`).
    pub fn name(self) -> String {
        format!("{:?}_{:?}", self.op, self.family).to_lowercase()
    }
    /// The file name of the module built for `arch`, without extension (e.g.
    /// `spmm_portable.sm_80`).
    pub fn file_stem(self, arch: Arch) -> String {
        format!("{}.{}", self.name(), arch.target())
    }
    fn index(self) -> usize {
        Module::ALL.iter().position(|&m| m == self).unwrap_or(0)
    }
}

/// One module as built for one architecture, embedded in the library.
#[derive(Clone, Copy, Debug)]
pub struct Embedded {
    /// The architecture.
    pub arch: Arch,
    /// The module.
    pub module: Module,
    /// The PTX (compiled by the driver on devices the cubin does not run on).
    pub ptx: &'static str,
    /// The cubin ptxas assembled from `ptx` for `arch`.
    pub cubin: &'static [u8],
}

/// Every embedded module (`host/kernels/modules.rs`, written by `cargo xtask build-ptx`).
pub static EMBEDDED: &[Embedded] = &include!("../kernels/modules.rs");

/// The embedded `module` built for `arch`, if there is one.
pub fn embedded(arch: Arch, module: Module) -> Option<&'static Embedded> {
    EMBEDDED.iter().find(|e| e.arch == arch && e.module == module)
}

/// What the driver was given for a module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Image {
    /// The ptxas-assembled machine code.
    Cubin,
    /// The PTX, compiled by the driver when it loads.
    Ptx,
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
        (OpKind::Densify, _) => (blocksparse_abi::DENSIFY_THREADS, 0),
        (OpKind::Sparsify, _) => (blocksparse_abi::SPARSIFY_THREADS, 0),
        (op, KernelFamily::Portable) => {
            let t = MMA_TILES[key.tile];
            // BSR × BSR marks absent B: a ring per warp where the tile takes one (`warp_rings`),
            // room for either ring where the plan chooses (`warp_rings_by_plan`).
            let smem = match op {
                OpKind::Spgemm if t.warp_rings() => t.warp_rings_smem_bytes(),
                OpKind::Spgemm if t.warp_rings_by_plan() => t.warp_rings_smem_bytes().max(t.smem_bytes()),
                _ => t.smem_bytes(),
            };
            (t.threads(), smem)
        }
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

/// One module, loaded, with its kernels that fit the device.
struct Loaded {
    _module: Arc<CudaModule>,
    image: Image,
    kernels: HashMap<KernelKey, Kernel>,
}

/// The kernels of one architecture that fit the device. Nothing is loaded up front: each
/// module loads, once, the first time one of its kernels is asked for ([`Kernels::get`]).
pub struct Kernels {
    /// The architecture the modules are built for.
    pub arch: Arch,
    ctx: Arc<CudaContext>,
    compute_capability: (i32, i32),
    /// The kernels that fit the device, by key (entry names).
    fit: HashMap<KernelKey, &'static str>,
    /// Kernels of the architecture left out, with the reason.
    skipped: Vec<(KernelKey, String)>,
    /// One slot per [`Module::ALL`] entry.
    modules: [OnceLock<Loaded>; Module::ALL.len()],
}

impl Kernels {
    /// The kernels of `arch` whose shared memory fits a device of compute capability
    /// `compute_capability` allowing `max_smem_optin` bytes per block; kernels that do not fit
    /// are left out (and reported by [`Kernels::get`]). Loads nothing yet.
    pub fn new(ctx: Arc<CudaContext>, arch: Arch, compute_capability: (i32, i32), max_smem_optin: u32) -> Self {
        let (fit, skipped) = select(arch, max_smem_optin);
        let fit = fit.into_iter().map(|e| (e.key, e.name)).collect();
        Kernels { arch, ctx, compute_capability, fit, skipped, modules: Default::default() }
    }

    /// The kernel for `key` (loading its module on first use), or why there is none.
    pub fn get(&self, key: KernelKey) -> Result<&Kernel> {
        if !self.fit.contains_key(&key) {
            if let Some((_, why)) = self.skipped.iter().find(|(k, _)| *k == key) {
                return Err(Error::KernelUnavailable(why.clone()));
            }
            return Err(Error::KernelUnavailable(format!(
                "the {:?} modules have no {:?} {:?} kernel for {} -> {} with tile {}",
                self.arch, key.family, key.op, key.input, key.output, key.tile
            )));
        }
        let loaded = self.module(Module::of(&key))?;
        loaded.kernels.get(&key).ok_or_else(|| Error::KernelUnavailable(format!("{key:?} is not in its module")))
    }

    /// Whether `key` has a kernel that fits the device (its module may not be loaded yet).
    pub fn has(&self, key: KernelKey) -> bool {
        self.fit.contains_key(&key)
    }

    /// What the driver was given for `module`, if it is loaded.
    pub fn image(&self, module: Module) -> Option<Image> {
        self.modules[module.index()].get().map(|l| l.image)
    }

    /// `module`, loaded on first use. Two threads asking at once may both load it; one copy is
    /// kept.
    fn module(&self, module: Module) -> Result<&Loaded> {
        let slot = &self.modules[module.index()];
        if let Some(loaded) = slot.get() {
            return Ok(loaded);
        }
        let loaded = self.load(module)?;
        Ok(slot.get_or_init(|| loaded))
    }

    fn load(&self, module: Module) -> Result<Loaded> {
        let embedded = embedded(self.arch, module).ok_or_else(|| {
            Error::KernelUnavailable(format!("no {} module is embedded (run `cargo xtask build-ptx`)", module.file_stem(self.arch)))
        })?;
        let name = module.file_stem(self.arch);
        // The ABI hash from the embedded PTX (the cubin is assembled from that PTX by the same
        // `build-ptx` run, which CI checks): decided on the host, before loading, with no copy or
        // synchronization on any stream (a caller's stream may be busy or being captured).
        match ptx_abi_hash(embedded.ptx) {
            Some(found) if found == ABI_HASH => {}
            found => return Err(Error::AbiMismatch { module: name, expected: ABI_HASH, found }),
        }
        // The cubin where it runs; the PTX elsewhere, or if the driver refuses the cubin.
        let (cu_module, image) = match self.arch.runs_cubin_on(self.compute_capability) {
            true => match self.ctx.load_module(Ptx::from_binary(embedded.cubin.to_vec())) {
                Ok(m) => (m, Image::Cubin),
                Err(_) => (self.ctx.load_module(Ptx::from_src(embedded.ptx))?, Image::Ptx),
            },
            false => (self.ctx.load_module(Ptx::from_src(embedded.ptx))?, Image::Ptx),
        };
        let mut kernels = HashMap::new();
        for (&key, &entry) in self.fit.iter().filter(|(k, _)| Module::of(k) == module) {
            let (threads, smem) = launch_shape(&key);
            let func = cu_module.load_function(entry)?;
            if smem > 48 * 1024 {
                func.set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)?;
            }
            kernels.insert(key, Kernel { func, name: entry, threads, smem });
        }
        Ok(Loaded { _module: cu_module, image, kernels })
    }
}

/// The ABI hash a module's PTX declares (its `BLOCKSPARSE_ABI_HASH` global), if it has one.
pub fn ptx_abi_hash(ptx: &str) -> Option<u64> {
    let decl = format!(".global .align 8 .b8 {ABI_HASH_SYMBOL}[8] = {{");
    let line = ptx.lines().find_map(|l| l.split_once(&decl).map(|(_, rest)| rest))?;
    let list = line.split('}').next()?;
    let bytes: Vec<u8> = list.split(',').map(|b| b.trim().parse::<u8>()).collect::<core::result::Result<_, _>>().ok()?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A portable kernel gets the shared memory its skeleton lays out: BSR × BSR on a tile with
    /// warp rings an A ring per warp beside the B ring, on a tile where the plan chooses the
    /// larger of that and the block rings with the block cache, every other one the latter;
    /// warp rings are the 32-row tile's, and the 16-row tile's where the plan chooses them
    /// (perf notes v41, v42).
    #[test]
    fn portable_kernels_get_the_shared_memory_of_their_rings() {
        for e in entries().into_iter().filter(|e| e.key.family == KernelFamily::Portable && e.key.op.tensor_core()) {
            let t = MMA_TILES[e.key.tile];
            let (threads, smem) = launch_shape(&e.key);
            assert_eq!(threads, t.threads(), "{}", e.name);
            let warp = blocksparse_abi::WARP_RING_STAGES * (t.warps_n * t.a_stage_bytes() + t.b_stage_bytes());
            let block = t.stages * (t.a_stage_bytes() + t.b_stage_bytes()) + blocksparse_abi::MAX_ITEM_BLOCKS * 8;
            match e.key.op {
                OpKind::Spgemm if t.warp_rings() => assert_eq!(smem, warp, "{}", e.name),
                OpKind::Spgemm if t.warp_rings_by_plan() => assert_eq!(smem, warp.max(block), "{}", e.name),
                _ => assert_eq!(smem, block, "{}", e.name),
            }
        }
        let rows = |f: fn(&blocksparse_abi::MmaTile) -> bool| -> Vec<u32> { MMA_TILES.iter().filter(|t| f(t)).map(|t| t.tm).collect() };
        assert_eq!(rows(blocksparse_abi::MmaTile::warp_rings), [32]);
        assert_eq!(rows(blocksparse_abi::MmaTile::warp_rings_by_plan), [16]);
    }

    /// The committed PTX of every module carries the hash of the current `abi/src/lib.rs`:
    /// editing the ABI without `cargo xtask build-ptx` fails here.
    #[test]
    fn every_embedded_module_carries_the_current_abi_hash() {
        assert_eq!(EMBEDDED.len(), Arch::ALL.iter().map(|a| a.modules().count()).sum::<usize>());
        for arch in Arch::ALL {
            for module in arch.modules() {
                let e = embedded(arch, module).unwrap_or_else(|| panic!("{} is not embedded", module.file_stem(arch)));
                assert_eq!(
                    ptx_abi_hash(e.ptx),
                    Some(ABI_HASH),
                    "{}: the PTX was built against another ABI; run `cargo xtask build-ptx`",
                    module.file_stem(arch)
                );
                assert!(e.ptx.lines().any(|l| l.trim() == format!(".target {}", arch.target())), "{}", module.file_stem(arch));
                // An ELF file.
                assert_eq!(&e.cubin[..4], b"\x7fELF", "{}", module.file_stem(arch));
            }
        }
        assert_eq!(ptx_abi_hash(".visible .global .align 8 .b8 BLOCKSPARSE_ABI_HASH[8] = {1, 0, 0, 0, 0, 0, 0, 2};"), Some(1 | 2 << 56));
        assert_eq!(ptx_abi_hash(".visible .global .align 8 .b8 OTHER[8] = {1, 0, 0, 0, 0, 0, 0, 2};"), None);
    }

    /// Every kernel of the list sits in exactly one module, and each module's PTX defines its
    /// kernels' entries and no other module's.
    #[test]
    fn each_module_holds_exactly_its_entries() {
        for arch in Arch::ALL {
            for module in arch.modules() {
                let Some(e) = embedded(arch, module) else { continue };
                for entry in entries().into_iter().filter(|e| arch.has(e.key.family)) {
                    let defined = e.ptx.contains(&format!(".entry {}(", entry.name));
                    assert_eq!(defined, Module::of(&entry.key) == module, "{} in {}", entry.name, module.file_stem(arch));
                }
            }
        }
    }

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
            for op in [OpKind::Spmm, OpKind::Sddmm, OpKind::Spgemm] {
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
