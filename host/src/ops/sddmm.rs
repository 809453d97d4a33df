//! SDDMM (sampled dense × dense): `C.values = alpha · (op(X) · op(Y)) at C's blocks +
//! beta · C.values`, with op(X) `(M, K)` and op(Y) `(K, N)` dense views in either layout and
//! C a BSR pattern (`(bm, bn)` blocks) on the device. Every block of C is written; nothing else
//! is touched.
//!
//! ```text
//! for each matrix b, block row r, p in row_ptr[r]..row_ptr[r+1], i < bm, j < bn:
//!     acc = Σ_{k < K} opX[b][r·bm + i][k] · opY[b][k][col_idx[p]·bn + j]
//!     values[b][p][i][j] = alpha·acc + beta·values[b][p][i][j]       (not read when beta == 0)
//! ```

use std::sync::Arc;

use blocksparse_abi::{
    BlockOut, DenseOut, FIXUP_TO_BLOCKS, HopperParams, KernelFamily, OpKind, SddmmParams, WG_K, WGMMA_TILES, flags, mma_tile_index,
    wgmma_tile_index,
};

use super::spmm::dense_map;
use super::{TileChoice, check_dim, check_scalars, expect, expect_batch, to_u32};
use crate::context::Context;
use crate::device_bsr::{DeviceBsr, Pattern};
use crate::element::{DType, Element, InputElement};
use crate::error::{Error, Result};
use crate::kernels::KernelKey;
use crate::launch::{Params, launch};
use crate::matrix::{Layout, MatRef};
use crate::plan::{DeviceWork, WorkList, balance_full_k, min_piece_chunks, plan_blocks};

// SAFETY: the op's `#[repr(C)]` parameter block from `blocksparse-abi`, taken by value by its
// kernels.
unsafe impl Params for SddmmParams {}

/// A plan for SDDMM at one pattern, batch size and K: which thread block computes which run of
/// C's blocks over which part of K (runs that would leave the last wave of the GPU partly idle
/// are split along K and summed by a fix-up kernel, in a fixed order), and the workspace of
/// those partial sums. Every product with that pattern, batch and K can reuse it, one at a
/// time: a product queued on another stream waits for the previous product of the same plan.
pub struct SddmmPlan {
    pattern: Arc<Pattern>,
    k: usize,
    batch: usize,
    choice: TileChoice,
    work: WorkList,
    device: DeviceWork,
}

impl SddmmPlan {
    /// K the plan was made for.
    pub fn k(&self) -> usize {
        self.k
    }
    /// Matrices per product.
    pub fn batch(&self) -> usize {
        self.batch
    }
    /// The kernel family and tile it launches.
    pub fn tile(&self) -> TileChoice {
        self.choice
    }
    /// The host-side work list.
    pub fn work(&self) -> &WorkList {
        &self.work
    }
}

impl Context {
    /// Plans SDDMM into the pattern and batch of `c` with an inner dimension `k` (a multiple of
    /// 16).
    pub fn plan_sddmm<O: Element>(&self, c: &DeviceBsr<O>, k: usize) -> Result<SddmmPlan> {
        check_dim("K", k)?;
        if !k.is_multiple_of(16) {
            return Err(Error::NotBlockMultiple { what: "K of an SDDMM", size: k, block: 16 });
        }
        self.same_device("C", c.values.ordinal())?;
        let pat = &c.pattern;
        let (bm, bn) = (pat.block.bm, pat.block.bk);
        // wgmma + TMA where the blocks are 64 or 128 on both sides and the module has the kernel.
        let hopper = wgmma_tile_index(bm as u32).filter(|&tile| {
            bn % WG_K as usize == 0
                && self.kernels.has(KernelKey {
                    op: OpKind::Sddmm,
                    family: KernelFamily::Hopper,
                    input: DType::F16,
                    tile,
                    output: DType::F16,
                })
        });
        let choice = match hopper {
            Some(tile) => TileChoice { family: KernelFamily::Hopper, tile },
            None => TileChoice {
                family: KernelFamily::Portable,
                tile: mma_tile_index(bm as u32).ok_or(Error::UnsupportedBlockSize { bm, bk: bn })?,
            },
        };
        let (tm, tn) = choice.shape();
        let k_chunks = to_u32("K", k.div_ceil(WG_K as usize))?;
        let mut work = plan_blocks(&pat.row_ptr, tn / bn as u32, to_u32("batch", c.batch)?, k_chunks)?;
        if choice.family == KernelFamily::Hopper {
            // Persistent, one thread block per SM: the plan decides which block runs what, and
            // splits the K of an idle last wave. (One-block-per-item portable launches are left
            // to the hardware's block scheduler: splitting them measured slower, perf notes v13.)
            balance_full_k(&mut work, k_chunks, self.sm_count(), min_piece_chunks(tm, tn, WG_K))?;
        }
        let device = DeviceWork::upload(self.stream(), &work, (tm, tn))?;
        Ok(SddmmPlan { pattern: pat.clone(), k, batch: c.batch, choice, work, device })
    }

    /// `C.values = alpha · (op(X) · op(Y)) at C's blocks + beta · C.values`, with op(X) and
    /// op(Y) as the views are given (`x.t()` for Xᵀ). Every argument is checked before anything
    /// is launched.
    pub fn sddmm<'x, 'y, T: InputElement, O: Element>(
        &self,
        plan: &SddmmPlan,
        alpha: f32,
        x: impl Into<MatRef<'x, T>>,
        y: impl Into<MatRef<'y, T>>,
        beta: f32,
        c: &mut DeviceBsr<O>,
    ) -> Result<()> {
        check_scalars(alpha, beta)?;
        if !Arc::ptr_eq(&plan.pattern, &c.pattern) {
            return Err(Error::PlanMismatch("the plan was made for another sparsity pattern".into()));
        }
        let (x, y) = (x.into(), y.into());
        self.same_device("the plan", plan.device.ordinal())?;
        self.same_device("op(X)", x.buf.ordinal())?;
        self.same_device("op(Y)", y.buf.ordinal())?;
        self.same_device("C", c.values.ordinal())?;
        let (xs, ys) = (x.shape(), y.shape());
        let pat = c.pattern.clone();
        expect("rows of op(X) (= rows of C)", pat.nrows, xs.rows)?;
        expect("columns of op(X) (= K of the plan)", plan.k, xs.cols)?;
        expect("rows of op(Y) (= K of the plan)", plan.k, ys.rows)?;
        expect("columns of op(Y) (= columns of C)", pat.ncols, ys.cols)?;
        expect_batch("op(X)", plan.batch, xs.batch)?;
        expect_batch("op(Y)", plan.batch, ys.batch)?;
        expect_batch("C", plan.batch, c.batch)?;
        if plan.work.items.is_empty() {
            return Ok(()); // no blocks: nothing to write
        }
        let stream = self.stream();
        let choice = plan.choice;
        let (kernel, fixup) = self.op_kernels::<T, O>(OpKind::Sddmm, choice, plan.device.fixup_grid)?;
        let mut fl = 0;
        if xs.layout == Layout::ColMajor {
            fl |= flags::A_MN_MAJOR;
        }
        if ys.layout == Layout::ColMajor {
            fl |= flags::B_K_MAJOR;
        }
        let c_stride = c.values_per_matrix();
        // The split-K workspace: after the previous product of this plan, wherever it was queued.
        let workspace = plan.device.workspace(self.cuda(), stream)?;
        let (work, _work_guards) = plan.device.params(stream);
        let (col_idx, _gi) = cudarc::driver::DevicePtr::device_ptr(&pat.col_idx, stream);
        let (x_ptr, _gx) = x.device_ptr(stream);
        let (y_ptr, _gy) = y.device_ptr(stream);
        let (c_values, _gc) = c.values_ptr_mut(stream);
        let params = SddmmParams {
            work,
            x: x_ptr,
            y: y_ptr,
            c_values,
            col_idx,
            x_batch_stride: xs.batch_stride as u64,
            y_batch_stride: ys.batch_stride as u64,
            c_batch_stride: c_stride as u64,
            ldx: to_u32("ldx", xs.ld)?,
            ldy: to_u32("ldy", ys.ld)?,
            k: to_u32("K", plan.k)?,
            bm_log2: pat.block.bm.trailing_zeros(),
            bn_log2: pat.block.bk.trailing_zeros(),
            flags: fl,
            alpha,
            beta,
        };
        let blocks =
            BlockOut { values: c_values, batch_stride: c_stride as u64, bm_log2: params.bm_log2, bn_log2: params.bn_log2, alpha, beta };
        match choice.family {
            KernelFamily::Portable => {
                // SAFETY: the parameter block is the kernel's; X, Y and C's values are live
                // allocations of the checked shapes, guarded until the launch is queued; the
                // plan's items index only C's blocks and its partial slots.
                unsafe { launch(stream, kernel, plan.device.grid, params) }?;
            }
            KernelFamily::Hopper => {
                let t = WGMMA_TILES[choice.tile];
                let x_box = if xs.layout == Layout::RowMajor { [WG_K, t.tm] } else { [WG_K, WG_K] };
                let tmap_a = dense_map::<T>(x_ptr, &xs, x_box)?;
                let tmap_b = dense_map::<T>(y_ptr, &ys, [WG_K, WG_K])?;
                let hp = HopperParams { tmap_a, tmap_b, tmap_c: [0; 16], p: params };
                // SAFETY: as above; the maps describe exactly X and Y (out-of-range boxes read
                // zeros).
                unsafe { launch(stream, kernel, plan.device.grid, hp) }?;
            }
        }
        plan.device.launch_fixup(stream, fixup, work.partials, choice.shape(), FIXUP_TO_BLOCKS, DenseOut::default(), blocks)?;
        workspace.release()
    }
}
