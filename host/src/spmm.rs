//! `C = alpha · A · B + beta · C` with A block-sparse: plans and launches.
//!
//! Semantics, with A of `(M, K)` in bm×bk blocks, B `(K, N)` and C `(M, N)` dense row-major:
//! ```text
//! for r in 0..M/bm:                       # block rows
//!     for i in 0..bm, j in 0..N:
//!         acc = 0                          # f32
//!         for p in row_ptr[r]..row_ptr[r+1]:
//!             for kk in 0..bk:
//!                 acc += values[p][i][kk] * B[col_idx[p]*bk + kk][j]
//!         C[r*bm+i][j] = alpha*acc + beta*C[r*bm+i][j]     # C not read when beta == 0
//! ```

use std::sync::Arc;

use blocksparse_abi::{
    FIXUP_THREADS, FixupParams, MMA_TILES, MmaTile, SpmmParams, SplitGroup, TMA_B_BOX_N, WG_K, WG_M, WGMMA_BLOCK_SIZES, WGMMA_TILES, WgmmaParams,
    WorkItem, default_tile_index,
};
use cudarc::driver::sys::{self as cu, CUtensorMap};
use cudarc::driver::{CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg};

use crate::device::{Context, DeviceBsr, DeviceMatrix, Pattern};
use crate::element::{Element, InputElement};
use crate::error::{Error, Result};
use crate::kernels::MmaKey;
use crate::plan::{WorkList, plan_work, schedule_persistent};

/// A launch-parameter block passed by value (the device `Params` types live in
/// `blocksparse-abi`; this wrapper lets cudarc push them).
#[repr(transparent)]
#[derive(Clone, Copy)]
struct KernelParam<P>(P);
// SAFETY: P is a `#[repr(C)]` plain-data struct whose layout the device crate shares.
unsafe impl DeviceRepr for KernelParam<SpmmParams> {}
unsafe impl DeviceRepr for KernelParam<FixupParams> {}
unsafe impl DeviceRepr for KernelParam<WgmmaParams> {}

/// The work list for one sparsity pattern and one N, uploaded once and reused for every
/// product with that pattern (new values welcome).
pub struct Plan {
    pattern: Arc<Pattern>,
    n: usize,
    kernel: PlanKernel,
    /// The tile as the planner sees it.
    tile: MmaTile,
    work: WorkList,
    items: CudaSlice<u32>,
    schedule: Option<CudaSlice<u32>>,
    groups: Option<CudaSlice<u32>>,
    partials: Option<CudaSlice<f32>>,
}

/// Which kernel family a plan launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanKernel {
    /// The portable `mma.sync` kernel with tile `MMA_TILES[index]`.
    Mma(usize),
    /// The Hopper `wgmma` + TMA kernel with tile `WGMMA_TILES[index]` (persistent grid).
    Wgmma(usize),
}

impl Plan {
    /// The kernel this plan launches.
    pub fn kernel(&self) -> PlanKernel {
        self.kernel
    }
    pub fn n(&self) -> usize {
        self.n
    }
    /// The host-side work list (for inspection and tests).
    pub fn work(&self) -> &WorkList {
        &self.work
    }
    pub fn tile(&self) -> MmaTile {
        self.tile
    }
}

fn to_u32(what: &'static str, value: usize) -> Result<u32> {
    u32::try_from(value).map_err(|_| Error::TooLarge { what, value })
}

fn flatten_items(items: &[WorkItem]) -> Vec<u32> {
    items.iter().flat_map(|i| [i.block_row, i.n_tile, i.blk_begin, i.blk_end, i.partial_slot]).collect()
}

fn flatten_groups(groups: &[SplitGroup]) -> Vec<u32> {
    groups.iter().flat_map(|g| [g.block_row, g.n_tile, g.first_slot, g.n_slots]).collect()
}

impl Context {
    /// Plans products of `a`'s pattern with dense matrices of `n` columns.
    ///
    /// On the Hopper module, blocks with bm, bk ∈ {64, 128} run the wgmma + TMA kernel; other
    /// block shapes (and the portable module) run the mma.sync kernel.
    pub fn plan<T: InputElement>(&self, a: &DeviceBsr<T>, n: usize) -> Result<Plan> {
        self.plan_grouped(a, n, None)
    }

    /// As [`Context::plan`], walking `tile_group` N tiles together instead of the number the
    /// planner derives from the L2 size (for tuning).
    #[doc(hidden)]
    pub fn plan_grouped<T: InputElement>(&self, a: &DeviceBsr<T>, n: usize, tile_group: Option<u32>) -> Result<Plan> {
        let block = a.block();
        let hopper_tile = WGMMA_BLOCK_SIZES.iter().position(|&b| b as usize == block.bm);
        let hopper_k = WGMMA_BLOCK_SIZES.contains(&(block.bk as u32));
        // TMA box coordinates are signed 32-bit: the rows of the A values seen as one matrix
        // (nnzb · bm) must stay below 2^31 (the portable kernel addresses A with 64-bit offsets
        // and takes the rest; N is limited to 2^31 - 1 for both).
        let tma_fits = a.nnzb().checked_mul(block.bm).is_some_and(|r| r < i32::MAX as usize);
        if let (true, Some(tile), true, true) = (self.kernels.has_wgmma(), hopper_tile, hopper_k, a.nnzb() > 0 && tma_fits) {
            return self.plan_wgmma(a, n, tile, tile_group);
        }
        let tile = default_tile_index(block.bm as u32).ok_or(Error::UnsupportedBlockSize { bm: block.bm, bk: block.bk })?;
        self.plan_mma(a, n, tile, tile_group)
    }

    fn plan_wgmma<T: InputElement>(&self, a: &DeviceBsr<T>, n: usize, tile_index: usize, tile_group: Option<u32>) -> Result<Plan> {
        check_n(n)?;
        let tile = WGMMA_TILES[tile_index].as_mma_tile();
        // Persistent grid: one resident thread block per SM, items dealt out by the planner.
        let grid = self.sm_count();
        let group = self.tile_group(a, tile, tile_group);
        let mut work = plan_work(&a.pattern.row_ptr, n, tile, a.block().bk as u32, grid, group);
        schedule_persistent(&mut work, grid);
        self.upload_plan(a, n, PlanKernel::Wgmma(tile_index), tile, work)
    }

    /// As [`Context::plan`], with tile configuration `MMA_TILES[tile]` instead of the default
    /// for the block height (for tuning: the candidates exist for f16 → f16 only).
    #[doc(hidden)]
    pub fn plan_with_tile<T: InputElement>(&self, a: &DeviceBsr<T>, n: usize, tile_index: usize) -> Result<Plan> {
        self.plan_mma(a, n, tile_index, None)
    }

    fn plan_mma<T: InputElement>(&self, a: &DeviceBsr<T>, n: usize, tile_index: usize, tile_group: Option<u32>) -> Result<Plan> {
        let block = a.block();
        match MMA_TILES.get(tile_index) {
            Some(t) if t.bm as usize == block.bm => {}
            _ => return Err(Error::PlanMismatch(format!("tile {tile_index} does not fit block height {}", block.bm))),
        }
        check_n(n)?;
        let kernel = self.kernels.mma(MmaKey { input: T::DTYPE, tile: tile_index, output: T::DTYPE })?;
        let tile = kernel.tile;
        let per_sm = kernel
            .func
            .occupancy_max_active_blocks_per_multiprocessor(tile.threads(), tile.smem_bytes() as usize, None)?
            .max(1);
        let resident = self.sm_count().saturating_mul(per_sm);
        let group = self.tile_group(a, tile, tile_group);
        let work = plan_work(&a.pattern.row_ptr, n, tile, block.bk as u32, resident, group);
        self.upload_plan(a, n, PlanKernel::Mma(tile_index), tile, work)
    }

    /// N tiles to walk together: as many B column strips (`K × bn` elements) as fit in a sixth
    /// of L2 — a third of one of the two L2 halves, each of which keeps its own copy of what
    /// the SMs beside it read — leaving the rest to A and to C on its way out. (Measured on
    /// H100, docs/perf-notes.md v9: a third of the whole L2 re-fetched B strips from DRAM.)
    /// `requested` (tuning) overrides it.
    fn tile_group<T: InputElement>(&self, a: &DeviceBsr<T>, tile: MmaTile, requested: Option<u32>) -> u32 {
        if let Some(g) = requested {
            return g;
        }
        let strip = (a.ncols() as u64) * tile.bn as u64 * core::mem::size_of::<T>() as u64;
        ((self.l2_bytes() as u64 / 6) / strip.max(1)).clamp(1, u32::MAX as u64) as u32
    }

    fn upload_plan<T: InputElement>(&self, a: &DeviceBsr<T>, n: usize, kernel: PlanKernel, tile: MmaTile, work: WorkList) -> Result<Plan> {
        // One thread block per item at most: the grid's x extent is below 2^31.
        if work.items.len() > i32::MAX as usize {
            return Err(Error::TooLarge { what: "work items", value: work.items.len() });
        }
        let stream = self.stream();
        let items = stream.clone_htod(&flatten_items(&work.items))?;
        let schedule = if work.schedule.is_empty() { None } else { Some(stream.clone_htod(&work.schedule)?) };
        let groups = if work.groups.is_empty() { None } else { Some(stream.clone_htod(&flatten_groups(&work.groups))?) };
        let partials = if work.n_slots == 0 {
            None
        } else {
            let elems = (work.n_slots as usize)
                .checked_mul((tile.bm * tile.bn) as usize)
                .ok_or(Error::TooLarge { what: "split-K workspace", value: usize::MAX })?;
            Some(stream.alloc_zeros::<f32>(elems)?)
        };
        Ok(Plan { pattern: a.pattern.clone(), n, kernel, tile, work, items, schedule, groups, partials })
    }

    /// `C = alpha · A · B + beta · C`. Every argument is checked before anything is launched.
    /// With `beta == 0`, C is only written.
    pub fn spmm<T: InputElement, O: Element>(
        &self,
        plan: &Plan,
        alpha: f32,
        a: &DeviceBsr<T>,
        b: &DeviceMatrix<T>,
        beta: f32,
        c: &mut DeviceMatrix<O>,
    ) -> Result<()> {
        if !alpha.is_finite() {
            return Err(Error::NotFinite { what: "alpha", value: alpha });
        }
        if !beta.is_finite() {
            return Err(Error::NotFinite { what: "beta", value: beta });
        }
        if !Arc::ptr_eq(&plan.pattern, &a.pattern) {
            return Err(Error::PlanMismatch("the plan was made for another sparsity pattern".into()));
        }
        let (m, k, n) = (a.nrows(), a.ncols(), plan.n);
        let expect = |what, expected: usize, got: usize| {
            if expected == got { Ok(()) } else { Err(Error::ShapeMismatch { what, expected, got }) }
        };
        expect("rows of B (= columns of A)", k, b.rows())?;
        expect("columns of B (= N of the plan)", n, b.cols())?;
        expect("rows of C (= rows of A)", m, c.rows())?;
        expect("columns of C (= N of the plan)", n, c.cols())?;
        let block = a.block();
        let stream = self.stream();
        let n_items = plan.work.items.len() as u32;
        let params = SpmmParams {
            a_values: a.values_ptr(stream),
            col_idx: a.col_idx_ptr(stream),
            items: plan.items.device_ptr_u64(stream),
            b: b.ptr(stream),
            c: c.ptr(stream),
            partials: plan.partials.as_ref().map_or(0, |p| p.device_ptr_u64(stream)),
            schedule: plan.schedule.as_ref().map_or(0, |p| p.device_ptr_u64(stream)),
            ldb: to_u32("ldb", b.ld())?,
            ldc: to_u32("ldc", c.ld())?,
            n: to_u32("N", n)?,
            bk_log2: block.bk.trailing_zeros(),
            alpha,
            beta,
        };
        let tile = plan.tile;
        match plan.kernel {
            PlanKernel::Mma(tile_index) => {
                let kernel = self.kernels.mma(MmaKey { input: T::DTYPE, tile: tile_index, output: O::DTYPE })?;
                // SAFETY: the parameter block is the kernel's (shared abi type); every pointer is
                // a live allocation of the size the checks above established; the plan's items
                // index only blocks of `a` and tiles of C.
                unsafe { launch(stream, &kernel.func, (n_items, tile.threads(), tile.smem_bytes()), params) }?;
            }
            PlanKernel::Wgmma(tile_index) => {
                let kernel = self.kernels.wgmma(MmaKey { input: T::DTYPE, tile: tile_index, output: O::DTYPE })?;
                let wt = kernel.tile;
                let nnzb = a.nnzb();
                let tmap_a = encode_tmap_2d::<T>(
                    params.a_values,
                    [block.bk as u64, (nnzb * block.bm) as u64],
                    (block.bk * std::mem::size_of::<T>()) as u64,
                    [WG_K, wt.bm],
                )?;
                let tmap_b = encode_tmap_2d::<T>(params.b, [n as u64, k as u64], (b.ld() * std::mem::size_of::<T>()) as u64, [TMA_B_BOX_N, WG_K])?;
                let tmap_c = if wt.c_buffers > 0 {
                    let elem = std::mem::size_of::<O>();
                    encode_tmap_2d::<O>(params.c, [n as u64, m as u64], (c.ld() * elem) as u64, [(128 / elem) as u32, WG_M])?
                } else {
                    [0; 16]
                };
                let wp = WgmmaParams { tmap_a, tmap_b, tmap_c, base: params };
                let grid = plan.work.schedule.len().saturating_sub(1) as u32;
                // SAFETY: as above; the tensor maps describe exactly the A values and B
                // allocations (shapes and pitches checked), and out-of-range boxes read zeros.
                unsafe { launch(stream, &kernel.func, (grid, wt.threads(), wt.smem_bytes()), wp) }?;
            }
        }

        if let (Some(groups), Some(partials)) = (&plan.groups, &plan.partials) {
            let fix = FixupParams {
                partials: partials.device_ptr_u64(stream),
                groups: groups.device_ptr_u64(stream),
                c: params.c,
                ldc: params.ldc,
                n: params.n,
                bm: tile.bm,
                bn: tile.bn,
                alpha,
                beta,
            };
            let func = self.kernels.fixup(O::DTYPE)?;
            // SAFETY: as above; the fix-up reads the partial tiles the main kernel wrote.
            unsafe { launch(stream, func, (plan.work.groups.len() as u32, FIXUP_THREADS, 0), fix) }?;
        }
        Ok(())
    }
}

/// Launches `func` on `stream` with `(grid, threads per block, dynamic shared memory)` and one
/// parameter block passed by value.
///
/// # Safety
/// `P` must be the kernel's parameter type, and every device pointer in it valid for the
/// accesses the kernel makes with these launch dimensions.
unsafe fn launch<P: Copy>(
    stream: &cudarc::driver::CudaStream,
    func: &cudarc::driver::CudaFunction,
    (grid, threads, smem): (u32, u32, u32),
    params: P,
) -> Result<()>
where
    KernelParam<P>: DeviceRepr,
{
    let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: smem };
    let arg = KernelParam(params);
    let mut builder = stream.launch_builder(func);
    builder.arg(&arg);
    // SAFETY: the caller's contract.
    unsafe { builder.launch(cfg) }?;
    Ok(())
}

/// Device address of a slice (the launch is ordered on the same stream).
trait DevicePtrU64 {
    fn device_ptr_u64(&self, stream: &cudarc::driver::CudaStream) -> u64;
}
impl<T> DevicePtrU64 for CudaSlice<T> {
    fn device_ptr_u64(&self, stream: &cudarc::driver::CudaStream) -> u64 {
        cudarc::driver::DevicePtr::device_ptr(self, stream).0
    }
}

impl<T> DeviceBsr<T> {
    fn values_ptr(&self, stream: &cudarc::driver::CudaStream) -> u64 {
        self.values.device_ptr_u64(stream)
    }
    fn col_idx_ptr(&self, stream: &cudarc::driver::CudaStream) -> u64 {
        self.pattern.col_idx.device_ptr_u64(stream)
    }
}

fn check_n(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::ZeroDimension { what: "N (columns of B and C)" });
    }
    // Column indices (and tile starts past the last column) are 32-bit signed on the device.
    if n > i32::MAX as usize {
        return Err(Error::TooLarge { what: "N", value: n });
    }
    Ok(())
}

/// A 2D tiled TMA descriptor over a row-major matrix at device address `ptr`: `dims` =
/// (columns, rows), `row_pitch` in bytes, `boxdim` = (columns, rows) of one box, 128-byte
/// swizzle, zero fill out of range.
fn encode_tmap_2d<T: Element>(ptr: u64, dims: [u64; 2], row_pitch: u64, boxdim: [u32; 2]) -> Result<[u64; 16]> {
    let dtype = match T::DTYPE {
        crate::DType::F16 => cu::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        crate::DType::Bf16 => cu::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        crate::DType::F32 => cu::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
    };
    let mut map = CUtensorMap { opaque: [0; 16] };
    let strides = [row_pitch];
    let elem_strides = [1u32, 1];
    // SAFETY: all arrays have the rank's length; the map is written by the driver.
    let res = unsafe {
        cu::cuTensorMapEncodeTiled(
            &mut map,
            dtype,
            2,
            ptr as *mut core::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxdim.as_ptr(),
            elem_strides.as_ptr(),
            cu::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            cu::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            cu::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            cu::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    res.result()?;
    Ok(map.opaque)
}
