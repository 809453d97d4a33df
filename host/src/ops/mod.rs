//! The products. Each op is one module that plans (once per pattern), validates its arguments,
//! builds the device parameters and workspace, and launches:
//! - [`spmm`]: `C = alpha · op(A) · op(B) + beta · C` and `C = alpha · op(X) · op(A) + beta · C`
//!   (A block-sparse);
//! - [`sddmm`]: `C.values = alpha · (op(X) · op(Y)) at C's blocks + beta · C.values`.
//!
//! Dense operands are views ([`crate::MatRef`], [`crate::MatMut`]): `op(X)` is chosen by passing
//! the view or its transpose (`x.t()`), in either layout, without a copy.

mod reblock;
pub mod sddmm;
pub mod spgemm;
mod spgemm_dense_b;
pub mod spmm;

use blocksparse_abi::{DenseOut, KernelFamily, MMA_TILES, OpKind, WG_M, WGMMA_TILES, WgmmaTile, flags};

use crate::context::Context;
use crate::element::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::{Kernel, KernelKey};
use crate::matrix::{Layout, MatShape};

/// Whether a sparse operand enters a product as it is or transposed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Transpose {
    /// `op(A) = A`.
    #[default]
    No,
    /// `op(A) = Aᵀ`.
    Yes,
}

impl Transpose {
    /// The other one.
    pub fn flip(self) -> Transpose {
        match self {
            Transpose::No => Transpose::Yes,
            Transpose::Yes => Transpose::No,
        }
    }
}

/// Tuning knobs of the planners. The defaults are what the measurements in
/// `docs/perf-notes.md` chose; every field is optional.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlanOptions {
    /// SpMM and SpGEMM: how many N tiles the plan walks together, row by row (each group
    /// re-reads A once, and the thread blocks running at one time share its B columns in L2).
    /// Default: as many `K × tn` strips of B (of B's stored blocks, for SpGEMM) as fit in a
    /// sixth of the L2 cache; for SpMM, counting of each strip only the part that the walk
    /// over A's rows keeps live (a K block from the first row that uses it to the last: about
    /// half for causal masks, a band's width for banded ones), at most 8 tiles where that
    /// allows more than whole strips do, and where B's strips are all live and one wave of
    /// resident thread blocks holds every block row of a single matrix, no more than the SMs
    /// spread those rows over (`⌊SMs / rows⌋`, at least 1: one on the portable 16- and
    /// 32-row tiles at 8192³); SpGEMM with 128-row blocks on Hopper: all of a row's tiles
    /// where B's stored blocks fit in half of it.
    pub n_tile_group: Option<u32>,
    /// SpMM and dense × sparse: how many adjacent rows of the stream of A's blocks (block rows
    /// of op(A) as the kernel streams it) share one output tile, over the union of their block
    /// columns (zeros where a row lacks one). `Some(1)` never merges; `Some(m)` merges `m` (an
    /// error where the product's kernel cannot: [`Error::UnsupportedMerge`]). Default: the
    /// plan that the cost model of `docs/perf-notes.md` (v15, v16, v19: L2 traffic plus the
    /// tensor work of the tiles, their zero rows included) prefers. It merges where
    /// neighbouring rows share most of their columns (causal, banded, block-diagonal masks).
    /// With 16- and 32-row blocks, whose wgmma tiles outrun the small portable ones, it also
    /// merges where the union is full enough: random masks from about 23 % of the blocks at
    /// 16×16 and 30 % at 32×32 (by the model; measured faster at 25 % and 50 %), and
    /// BigBird-like at 32×32. It does not merge rows that share few columns. Where the merged
    /// rows' unions fill A's 128×128 cells (the structured masks at 16×16 and 32×32, random
    /// ones from about 23 % at 16×16 and 46 % at 32×32), the default re-blocks A instead
    /// ([`PlanOptions::coarse_a`]).
    ///
    /// Non-finite values: a merged tile multiplies explicit zeros where a row lacks a block of
    /// the union, so an Inf or NaN in op(B)'s rows of that block column makes NaN (0 · Inf)
    /// in the merged rows that lack it, where an unmerged plan leaves them finite. With
    /// operands that may hold Inf or NaN, plan with `Some(1)` (for SpMM and dense × sparse it
    /// also keeps A as stored, [`PlanOptions::coarse_a`], whose default re-blocks only where no
    /// merge is given; BSR × BSR's dense-B route takes `coarse_a: Some(false)` for that).
    ///
    /// [`Error::UnsupportedMerge`]: crate::Error::UnsupportedMerge
    pub merge_rows: Option<u32>,
    /// SpMM and dense × sparse, merged plans: whether the planner may merge the rows of the
    /// stream in another order than A's, the heavy rows (at least twice the mean length) first
    /// and longest first, so that full rows share a tile with full rows rather than with their
    /// light neighbours (heavy-tailed row lengths, the global rows of BigBird-like masks). C is
    /// written in A's order either way. `None`: where the cost model prefers it; `Some(false)`:
    /// never; `Some(true)`: every merged candidate is reordered wherever at least two rows are
    /// heavy (in A's order otherwise). Whether the plan merges at all is still `merge_rows`'
    /// or the cost model's choice; an unmerged plan has nothing to reorder.
    pub reorder_rows: Option<bool>,
    /// SpMM and dense × sparse, merged plans on the Hopper kernels (rows of at most 64): whether
    /// a consumer warpgroup of the 128-row tile passes over the stages where all of its 64 rows
    /// lack a block, instead of multiplying the zeros there. It then does no tensor work and
    /// loads no A for those stages (B is still read once for the tile). `None`: where the cost
    /// model prefers it (perf notes v25: rows that share few columns, e.g. BigBird-like and
    /// heavy-tailed masks; not where every row holds most of the union, on the 16- and 32-deep
    /// tiles whose short stages pay for the per-stage bookkeeping); `Some(false)`: never;
    /// `Some(true)`: wherever the plan is merged on the Hopper kernels.
    pub skip_absent: Option<bool>,
    /// SpMM and dense × sparse: whether the plan may run as two launches over disjoint rows
    /// of the stream of A's blocks: the merged groups of rows where merging pays (the cost
    /// model of `merge_rows`, group by group: each group's cost merged against its rows'
    /// unmerged), then the other rows on the unmerged tile ([`SpmmPlan::split`]). For masks
    /// that mix structured rows with random ones (at 16×16 and 32×32 the random rows run
    /// faster on the portable tiles, the structured ones merged on wgmma; at 64×64 too, by
    /// less). `None`: where the model puts the split below 0.97 of the best single plan, and
    /// `merge_rows` is not given (perf notes v38: the splits it put closer ran up to 17 %
    /// slower); `Some(false)`:
    /// never; `Some(true)`: wherever some whole group is cheaper merged and another unmerged
    /// (with `merge_rows`, its merge for the merged part).
    ///
    /// [`SpmmPlan::split`]: crate::SpmmPlan::split
    pub split_rows: Option<bool>,
    /// SpGEMM with 128×128 C blocks on the Hopper kernels (the column-split tile, one C block
    /// per consumer warpgroup): whether the two C blocks of each tile are any two blocks of the
    /// row that share the most K (the A blocks both meet B under), chosen within each N-tile
    /// group, instead of neighbours. The tile streams the union of its blocks' K lists, so
    /// pairs that share more K load fewer A slices (perf notes v31). `None` or `Some(true)`:
    /// paired wherever the paired tiles average at least 8 stages (below that their C stores
    /// hold the kernel, and pairing measured slower) and no output tile of the plan is split
    /// along K (the fix-up kernel writes a split tile's blocks in column order);
    /// `Some(false)`: neighbours.
    pub pair_columns: Option<bool>,
    /// SpGEMM with 16-row blocks (the portable 16-row tile, also on Hopper): whether each warp
    /// runs a ring of its own, copying and multiplying only the stages where its 64 columns
    /// hold a B block (with its own copy of the stage's A slice), instead of the block ring
    /// that all four warps step through together. `None`: where the warps' share of live
    /// stages in the plan is below 0.8 (perf notes v42, 16×16 blocks: warp rings took 0.85× the
    /// block ring's time at 12.5 % × 12.5 %, a share of 0.71, and 1.28× at 50 % × 50 %, 0.995);
    /// `Some(true)`: always; `Some(false)`: never. Other tiles do not choose: the 32-row one
    /// always runs warp rings, the taller ones and the Hopper tiles never.
    pub warp_rings: Option<bool>,
    /// SpGEMM: whether each product writes B's blocks into a dense workspace
    /// (zeros elsewhere; `K · N` 16-bit elements per matrix, held by the plan) and runs `A · B`
    /// on the SpMM kernels, whose merged tiles run on wgmma on Hopper where A's blocks are 16
    /// or 32 deep, instead of streaming the plan's records of block pairs. It pays where A's
    /// block rows in groups of 128 rows share most of their columns (dense enough operands, banded or
    /// causal A), so that the SpMM kernels' dense B costs less than the records' small-block
    /// stages. The SpMM plan is made for A's pattern with this struct's SpMM knobs
    /// (`n_tile_group`, `reorder_rows`, `skip_absent`, `split_rows`, and `merge_rows`, which
    /// BSR × BSR takes as `None` or `Some(1)` only). `None`: on the Hopper kernels with 16×16
    /// or 32×32 blocks in A and B (A's block rows a multiple of 64 / bs, as the merged tile
    /// needs), where a cost model fitted on the H100 puts the dense-B route's time (the merged
    /// tile as deep as the blocks over A's rows in groups of 128 / bs, densifying B, and for a
    /// block-sparse C only the output tiles that hold its blocks, and gathering them) below the
    /// records' (per record and per pair), its
    /// workspaces take at most an eighth of the device's memory, and none of `warp_rings`,
    /// `pair_columns` (the records' knobs), `merge_rows` or `split_rows` is given (perf notes
    /// v44–v48, 8192³, 16×16 into a dense C: the dense-B route took 0.33× the records' time at
    /// 50 % × 50 %, 0.85× at 25 % and 0.47× with a banded 12.5 % A (over A re-blocked,
    /// `coarse_a`), 1.8× at 12.5 %, where the records run; 32×32: 0.78× at 50 %, 1.3× or more
    /// on the others);
    /// `Some(true)`: always, the records' knobs unused; `Some(false)`: never. A block-sparse C
    /// (the product's pattern or a mask) is gathered from an `A · B` the plan holds (`M · N`
    /// f32 elements per matrix, beside B dense; with beta 0 the product is written in C's type
    /// and copied): the SpMM plan computes the output tiles of `A · B` (128 × 256 on the merged
    /// tiles) that hold one of C's blocks, every element of those, and no other tile (perf
    /// notes v47: into a causal C, about half of the tiles and of the time). The model's
    /// gather is the copy's (beta 0, a 16-bit C); with beta ≠ 0 or an f32 C the gather takes
    /// about twice as long (perf notes v45, v46), so near the model's boundary (32×32 50 % ×
    /// 50 % into a block-sparse C) the route is then no faster than the records.
    ///
    /// Non-finite values: the SpMM kernels multiply A's blocks by B's zeros where B has no
    /// block, and a merged SpMM plan B's rows by zeros where a merged row of A has no block
    /// (`merge_rows`), so an Inf or NaN in either operand can make NaN (Inf · 0) in C elements
    /// that no pair reaches, where the records leave them `beta · C`. With operands that may
    /// hold Inf or NaN, plan with `Some(false)`.
    pub dense_b: Option<bool>,
    /// SpMM, dense × sparse, and SpGEMM streaming B dense ([`PlanOptions::dense_b`]): whether
    /// each product first copies A's blocks into a coarse BSR workspace of 128×128 blocks
    /// (every 128×128 cell of A that holds one of its blocks, zeros elsewhere in it; A's rows
    /// and columns multiples of 128, its blocks at most 128 high and wide) and runs the SpMM
    /// kernels' 128-row, 64-deep tile on it, instead of merging A's 16- or 32-row (or deep)
    /// blocks onto the 16- or 32-deep tiles. The deep tile runs the same work 1.2–1.4× faster
    /// than the shallow ones (perf notes v48, v49), so this pays where A's blocks fill most of
    /// the 128×128 cells they touch: causal, sliding-window and block-diagonal masks of 16×16
    /// and 32×32 blocks, dense enough or banded BSR × BSR operands. The copy is one pass over
    /// A and the coarse blocks (about 0.03 ms for a causal 8192² A on the H100).
    ///
    /// `None`: SpMM and dense × sparse where the plan of A as stored runs on a shallow Hopper
    /// tile, none of `merge_rows`, `reorder_rows`, `skip_absent` or `split_rows` is given, the
    /// coarse blocks take at most an eighth of the device's memory, and the planner's cost
    /// model (perf notes v49: the 128-row tile over the coarse pattern plus the copy, against
    /// the shallow plan's cost times the measured ratio of the two tiles) puts it below A as
    /// stored; BSR × BSR with 16×16 and 32×32 blocks on the dense-B route, where the route's
    /// cost model puts it below the shallow tiles' time and its workspace still fits the
    /// route's share of the device's memory, and not where `merge_rows` asks for a merge.
    /// `Some(true)`: wherever A's shape allows (the SpMM knobs then apply to the coarse
    /// pattern's plan, whose 128-row blocks do not merge); `Some(false)`: never.
    /// [`SpmmPlan::coarse_a`] and [`SpgemmPlan::coarse_a`] say what the plan does.
    ///
    /// A re-blocked plan holds `128² · cells · batch` 16-bit elements of device memory
    /// ([`SpmmPlan::device_bytes`]; it serves f16 and bf16 operands of its pattern alike, as a
    /// plan of A as stored does), and one product at a time (a product queued on another
    /// stream waits for the previous one). Non-finite values: an Inf or NaN in op(B) (or op(X)) then also meets the
    /// zeros that fill A's 128×128 cells (NaN in C elements that no block of A reaches), as
    /// [`PlanOptions::merge_rows`] says of merged plans; with operands that may hold Inf or
    /// NaN, plan with `Some(false)` (and `merge_rows: Some(1)`).
    ///
    /// [`SpmmPlan::coarse_a`]: crate::SpmmPlan::coarse_a
    /// [`SpmmPlan::device_bytes`]: crate::SpmmPlan::device_bytes
    /// [`SpgemmPlan::coarse_a`]: crate::SpgemmPlan::coarse_a
    pub coarse_a: Option<bool>,
    /// SpGEMM: how many host threads walk the product's rows when the plan is made (each a
    /// contiguous range of block rows; the plan's records and work are the same whatever the
    /// count, its [`SpgemmSize::host_bytes`] grows with it). `None`: one below 65,536 block
    /// pairs, else the host's available parallelism up to 8; `Some(n)`: `n`, at least 1 and
    /// at most 64; `Some(1)`: the calling thread only.
    ///
    /// [`SpgemmSize::host_bytes`]: crate::SpgemmSize::host_bytes
    pub threads: Option<usize>,
}

/// The kernel family and tile a plan launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileChoice {
    /// `mma.sync` (one thread block per item) or `wgmma` + TMA (persistent grid).
    pub family: KernelFamily,
    /// Index into `MMA_TILES` or `WGMMA_TILES`.
    pub tile: usize,
}

impl TileChoice {
    /// (rows, columns) of the output tile.
    pub fn shape(&self) -> (u32, u32) {
        match self.family {
            KernelFamily::Portable => (MMA_TILES[self.tile].tm, MMA_TILES[self.tile].tn),
            KernelFamily::Hopper => (WGMMA_TILES[self.tile].tm, WGMMA_TILES[self.tile].tn()),
        }
    }
    /// K depth of one stage.
    pub fn ks(&self) -> u32 {
        match self.family {
            KernelFamily::Portable => MMA_TILES[self.tile].ks,
            KernelFamily::Hopper => WGMMA_TILES[self.tile].ks,
        }
    }
}

/// `Portable64`, `Hopper128`, `Hopper128k32` (a Hopper tile of 32-deep stages; `k16`: 16-deep): the family and
/// the tile's rows.
impl std::fmt::Display for TileChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}{}", self.family, self.shape().0)?;
        if self.family == KernelFamily::Hopper && self.ks() != blocksparse_abi::WG_K {
            write!(f, "k{}", self.ks())?;
        }
        Ok(())
    }
}

/// The kernels' view of a dense C at device address `c` with (checked) shape `cs`, scaled as
/// `alpha · acc + beta · C`.
fn dense_out(c: u64, cs: &MatShape, alpha: f32, beta: f32) -> Result<DenseOut> {
    Ok(DenseOut {
        c,
        batch_stride: cs.batch_stride as u64,
        ld: to_u32("ldc", cs.ld)?,
        rows: to_u32("M", cs.rows)?,
        cols: to_u32("N", cs.cols)?,
        col_major: if cs.layout == Layout::ColMajor { flags::C_COL_MAJOR } else { 0 },
        alpha,
        beta,
        ..Default::default()
    })
}

/// The TMA map a Hopper tile stores a dense C through: its `(WG_M, 128 bytes)` staging chunks,
/// for tiles that have them and a row-major C; zeros (unused) otherwise.
fn c_store_map<O: Element>(c: u64, cs: &MatShape, tile: WgmmaTile) -> Result<[u64; 16]> {
    c_store_map_rows::<O>(c, cs, tile, WG_M)
}

/// [`c_store_map`] with boxes of `rows` rows (a row-mapped C: one stream row per store).
fn c_store_map_rows<O: Element>(c: u64, cs: &MatShape, tile: WgmmaTile, rows: u32) -> Result<[u64; 16]> {
    if tile.c_buffers > 0 && cs.layout == Layout::RowMajor {
        let ce = core::mem::size_of::<O>() as u32;
        spmm::dense_map::<O>(c, cs, [128 / ce, rows])
    } else {
        Ok([0; 16])
    }
}

fn to_u32(what: &'static str, value: usize) -> Result<u32> {
    u32::try_from(value).map_err(|_| Error::TooLarge { what, value })
}

fn check_scalars(alpha: f32, beta: f32) -> Result<()> {
    if !alpha.is_finite() {
        return Err(Error::NotFinite { what: "alpha", value: alpha });
    }
    if !beta.is_finite() {
        return Err(Error::NotFinite { what: "beta", value: beta });
    }
    Ok(())
}

fn expect(what: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected == got { Ok(()) } else { Err(Error::ShapeMismatch { what, expected, got }) }
}

fn expect_batch(what: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected == got { Ok(()) } else { Err(Error::BatchMismatch { what, expected, got }) }
}

/// A dimension the kernels index with signed 32-bit coordinates (TMA), at least 1.
fn check_dim(what: &'static str, value: usize) -> Result<()> {
    if value == 0 {
        return Err(Error::ZeroDimension { what });
    }
    if value > i32::MAX as usize {
        return Err(Error::TooLarge { what, value });
    }
    Ok(())
}

impl Context {
    /// [`Error::DeviceMismatch`] unless an object of device `got` belongs to this context's
    /// device.
    pub(crate) fn same_device(&self, what: &'static str, got: usize) -> Result<()> {
        let expected = self.cuda().ordinal();
        if expected == got { Ok(()) } else { Err(Error::DeviceMismatch { what, expected, got }) }
    }

    /// The kernel of `op` for `choice`, inputs `T` and outputs `O`, and the split-K fix-up
    /// kernel for outputs `O` when the plan has split tiles (`fixup_grid > 0`): both fetched
    /// (their modules loaded) before the op's first launch, so that a module that cannot load
    /// fails the call before anything runs.
    fn op_kernels<T: Element, O: Element>(&self, op: OpKind, choice: TileChoice, fixup_grid: u32) -> Result<(&Kernel, Option<&Kernel>)> {
        let main = self.kernels.get(KernelKey { op, family: choice.family, input: T::DTYPE, tile: choice.tile, output: O::DTYPE })?;
        let fixup = match fixup_grid {
            0 => None,
            _ => Some(self.kernels.get(KernelKey {
                op: OpKind::Fixup,
                family: KernelFamily::Portable,
                input: DType::F16,
                tile: 0,
                output: O::DTYPE,
            })?),
        };
        Ok((main, fixup))
    }

    /// Thread blocks of `choice` the device runs at once (the planners' notion of "the GPU").
    fn resident_blocks(&self, choice: TileChoice, kernel: &Kernel) -> Result<u32> {
        Ok(match choice.family {
            // Persistent: one resident thread block per SM.
            KernelFamily::Hopper => self.sm_count(),
            KernelFamily::Portable => {
                let per_sm = kernel.func.occupancy_max_active_blocks_per_multiprocessor(kernel.threads, kernel.smem as usize, None)?.max(1);
                self.sm_count().saturating_mul(per_sm)
            }
        })
    }
}
