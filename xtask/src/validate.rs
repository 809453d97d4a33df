//! `cargo xtask validate`: every op in every layout (BSR × BSR too: `--filter spgemm`) against
//! the f64 CPU reference. Each case draws fresh random data (never zeros), poisons the output
//! (NaN with beta = 0, random values otherwise, so an unwritten element is caught either way),
//! runs the GPU product twice (the two results must agree bit for bit), and compares every
//! element of every matrix of the batch.

use blocksparse::kernels::Arch;
use blocksparse::{
    BlockShape, Bsr, Context, DType, DeviceBsr, DeviceMatrix, Element, InputElement, KernelPath, Layout, PlanOptions, SpgemmOutput,
    Transpose,
};
use blocksparse_testkit::reference::{
    HostMat, dense_sparse_reference, rel_error, sddmm_reference, spgemm_bsr_reference, spgemm_product_pattern, spgemm_reference,
    spmm_reference,
};
use blocksparse_testkit::testgen::{
    MaskFamily, TestRng, banded_mask, block_diagonal_mask, random_mask, random_values, seeded_rng, skewed_mask,
};
use half::{bf16, f16};
use indicatif::{ProgressBar, ProgressStyle};
use rand::Rng;

use crate::PathArg;

#[derive(clap::Args)]
pub struct Args {
    /// Kernel path.
    #[arg(long, value_enum, default_value_t = PathArg::Auto)]
    path: PathArg,
    /// Seed of the random data (default: fresh).
    #[arg(long)]
    seed: Option<u64>,
    /// Only the cases whose label contains this text.
    #[arg(long)]
    filter: Option<String>,
    /// Relative-error bound ‖C − ref‖ / ‖ref‖.
    #[arg(long, default_value_t = 1e-2)]
    tol: f64,
    /// Skip running the examples (`examples/` binaries beside this one, built with
    /// `cargo build --release --examples`); a missing example otherwise fails the run.
    #[arg(long)]
    no_examples: bool,
}

/// With two GPUs: a matrix, a BSR and a plan made on device 0, handed to device 1's context,
/// must give `Error::DeviceMismatch` before any launch. With one GPU there is nothing to check
/// (said in the detail, and counted as passed).
fn cross_device(ctx0: &Context) -> (bool, String) {
    let count = blocksparse::cudarc::driver::CudaContext::device_count().unwrap_or(0);
    if count < 2 {
        return (true, format!("not run: {count} device(s)"));
    }
    let run = || -> Result<String, String> {
        let e = |e: blocksparse::Error| e.to_string();
        let ctx1 = Context::with_path(1, KernelPath::Portable).map_err(e)?;
        let mask = vec![true, false, false, true];
        let a = Bsr::from_block_mask(128, 128, BlockShape::square(64), &mask, vec![f16::ONE; 2 * 64 * 64]).map_err(e)?;
        let a0 = ctx0.upload_bsr(&a).map_err(e)?;
        let b0 = ctx0.upload_matrix(128, 64, &vec![f16::ONE; 128 * 64]).map_err(e)?;
        let mut c1 = ctx1.zeros_matrix::<f16>(128, 64).map_err(e)?;
        let plan0 = ctx0.plan_spmm(&a0, Transpose::No, 64).map_err(e)?;
        let mut found = Vec::new();
        match ctx1.spmm(&plan0, 1.0, &a0, &b0, 0.0, &mut c1) {
            Err(blocksparse::Error::DeviceMismatch { what, .. }) => found.push(what),
            other => return Err(format!("spmm across devices gave {other:?}")),
        }
        match ctx1.plan_spmm(&a0, Transpose::No, 64) {
            Err(blocksparse::Error::DeviceMismatch { what, .. }) => found.push(what),
            other => return Err(format!("plan across devices gave {:?}", other.map(|_| ()))),
        }
        match ctx1.download_matrix(&b0) {
            Err(blocksparse::Error::DeviceMismatch { what, .. }) => found.push(what),
            other => return Err(format!("download across devices gave {:?}", other.map(|_| ()))),
        }
        Ok(format!("typed errors for {found:?}"))
    };
    match run() {
        Ok(d) => (true, d),
        Err(d) => (false, d),
    }
}

/// The examples validate runs (each must exit 0 on the GPU).
const EXAMPLES: [&str; 5] = ["sparse_linear", "basic", "npy_interop", "two_streams", "sparse_sparse"];

/// Runs each example binary from `<dir of this binary>/examples/`: (name, passed, detail).
fn run_examples() -> Vec<(String, bool, String)> {
    let dir = std::env::current_exe().ok().and_then(|p| p.parent().map(|d| d.join("examples")));
    EXAMPLES
        .iter()
        .map(|name| {
            let Some(path) = dir.as_ref().map(|d| d.join(name)).filter(|p| p.is_file()) else {
                return (name.to_string(), false, "not built (cargo build --release --examples)".to_string());
            };
            match std::process::Command::new(&path).output() {
                Ok(out) => {
                    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
                    println!("{text}");
                    (name.to_string(), out.status.success(), text.lines().last().unwrap_or("").to_string())
                }
                Err(e) => (name.to_string(), false, format!("could not run {}: {e}", path.display())),
            }
        })
        .collect()
}

#[derive(Clone, Copy, Debug)]
enum Pattern {
    Uniform(f64),
    /// (density, heavy rows, share of blocks in them)
    Skewed(f64, usize, f64),
    /// Every block in one block row.
    OneRow,
    /// Exactly one nonzero block.
    OneBlock,
    /// Sliding-window band of this density around the diagonal.
    Banded(f64),
    /// Groups of rows on the same columns.
    BlockDiagonal(f64),
    /// A mask family of real workloads (causal, window, BigBird-like, heavy-tailed rows, top-k).
    Family(MaskFamily),
    /// Uniform at this density, with every third block row (1, 4, 7, ...) empty.
    EmptyRows(f64),
    /// The mixed mask ([`MaskFamily::Mixed`]) with every fifth block row (2, 7, 12, ...) empty.
    MixedHoles,
}

/// Which product, and how its dense operands lie (the layout of the view the op receives:
/// `ColMajor` is the transposed view of a row-major buffer).
#[derive(Clone, Copy, Debug)]
enum Op {
    /// `C = alpha · op(A) · op(B) + beta · C`.
    Spmm { op_a: Transpose, b: Layout, c: Layout },
    /// `C = alpha · op(X) · op(A) + beta · C`.
    DenseSparse { x: Layout, op_a: Transpose, c: Layout },
    /// `C.values = alpha · op(X) · op(Y) + beta · C.values`.
    Sddmm { x: Layout, y: Layout },
    /// `C = alpha · A · B + beta · C` with A and B block-sparse (BSR × BSR).
    Spgemm(Spgemm),
}

/// The BSR × BSR part of a case: A is the case's sparse matrix (`(sm, sk)` in `(bm, bk)`
/// blocks, the case's pattern), B is `(sk, n)` in `(bk, bn)` blocks with its own pattern.
#[derive(Clone, Copy, Debug)]
struct Spgemm {
    bn: usize,
    b: Pattern,
    c: SpC,
}

/// What C of a BSR × BSR case is.
#[derive(Clone, Copy, Debug)]
enum SpC {
    /// Dense, this layout (`ColMajor`: the transposed view of a row-major buffer).
    Dense(Layout),
    /// Block-sparse with the product's own pattern.
    Product,
    /// Block-sparse with a mask.
    Mask(SpMask),
}

/// Masks of a masked BSR × BSR case.
#[derive(Clone, Copy, Debug)]
enum SpMask {
    /// Each block present with this probability: blocks without pairs, pairs masked out.
    Random(f64),
    /// By block row: `r % 3 == 0` the complement of the product's row (every pair of the row
    /// masked out, every block without pairs), `1` the product's row plus random blocks without
    /// pairs, `2` half of the product's row.
    Mixed,
}

/// A case: the sparse matrix is `(sm, sk)` in `(bm, bk)` blocks; `n` is the dense dimension
/// (SpMM: columns of B and C; dense × sparse: rows of X and C; SDDMM: K).
#[derive(Clone, Debug)]
struct Case {
    label: String,
    op: Op,
    sm: usize,
    sk: usize,
    n: usize,
    bm: usize,
    bk: usize,
    input: DType,
    output: DType,
    pattern: Pattern,
    alpha: f32,
    beta: f32,
    batch: usize,
    /// SpMM / dense × sparse: what the plan is asked for (the planner's choice by default).
    plan: CasePlan,
}

/// The plan options an SpMM / dense × sparse case asks for.
#[derive(Clone, Copy, Debug, Default)]
struct CasePlan {
    /// The stream rows per tile the plan must merge (`PlanOptions::merge_rows`).
    merge: Option<u32>,
    /// `PlanOptions::reorder_rows` (`Some(true)`: the plan must be reordered where some rows
    /// are heavy).
    reorder: Option<bool>,
    /// Merged: `PlanOptions::skip_absent` (the plan must skip, or not, wherever it is merged
    /// on the Hopper kernels).
    skip: Option<bool>,
    /// `PlanOptions::split_rows` (`Some(true)`: a stream of A's rows on the Hopper kernels must
    /// be split into a merged and an unmerged part).
    split: Option<bool>,
    /// BSR × BSR: `PlanOptions::pair_columns` (`Some(false)`: the column-split tile's C blocks
    /// in column order; `Some(true)`: a plan for the Hopper kernels must pair them).
    pair: Option<bool>,
    /// BSR × BSR: `PlanOptions::warp_rings` (16-row blocks: the plan must run the ring asked
    /// for).
    warp: Option<bool>,
    /// BSR × BSR: `PlanOptions::dense_b` (the plan must stream B dense, or not).
    dense_b: Option<bool>,
    /// `PlanOptions::coarse_a` (SpMM and dense × sparse: `Some(true)`, the plan must be
    /// re-blocked where A's shape allows, and only there; BSR × BSR streaming B dense: as asked).
    coarse: Option<bool>,
}

fn short(l: Layout) -> &'static str {
    match l {
        Layout::RowMajor => "R",
        Layout::ColMajor => "C",
    }
}

fn op_label(op: Op) -> String {
    let t = |t: Transpose| if t == Transpose::Yes { "T" } else { "N" };
    match op {
        Op::Spmm { op_a, b, c } => format!("spmm A{} B{} C{}", t(op_a), short(b), short(c)),
        Op::DenseSparse { x, op_a, c } => format!("dxs X{} A{} C{}", short(x), t(op_a), short(c)),
        Op::Sddmm { x, y } => format!("sddmm X{} Y{}", short(x), short(y)),
        Op::Spgemm(s) => match s.c {
            SpC::Dense(l) => format!("spgemm C{}", short(l)),
            SpC::Product => "spgemm Cprod".into(),
            SpC::Mask(m) => format!("spgemm Cmask:{m:?}"),
        },
    }
}

struct Cases(Vec<Case>);

impl Cases {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        op: Op,
        (sm, sk, n): (usize, usize, usize),
        (bm, bk): (usize, usize),
        (input, output): (DType, DType),
        pattern: Pattern,
        (alpha, beta): (f32, f32),
        batch: usize,
    ) {
        let label = format!("{} {sm}x{sk} n{n} b{bm}x{bk} {input}->{output} {pattern:?} a={alpha} b={beta} batch{batch}", op_label(op));
        self.0.push(Case { label, op, sm, sk, n, bm, bk, input, output, pattern, alpha, beta, batch, plan: CasePlan::default() });
    }

    /// The last case, planned with `m` stream rows merged per tile (1: unmerged). Merged
    /// cases alternate between skipping the stages a consumer's rows lack and multiplying
    /// their zeros (`PlanOptions::skip_absent`), so both run on every kind of merged case.
    fn merged(&mut self, m: u32) {
        let merged_before = self.0.iter().filter(|c| c.plan.merge.is_some_and(|m| m > 1)).count();
        if let Some(c) = self.0.last_mut() {
            c.plan.merge = Some(m);
            c.label += &format!(" merge{m}");
            if m > 1 {
                let skip = merged_before % 2 == 0;
                c.plan.skip = Some(skip);
                c.label += if skip { " skip" } else { " noskip" };
            }
        }
    }

    /// The last case's BSR × BSR plan with its C blocks in column order (`false`), or paired
    /// by shared K (`true`: the case fails if the planner does not pair them).
    fn paired(&mut self, pair: bool) {
        if let Some(c) = self.0.last_mut() {
            c.plan.pair = Some(pair);
            c.label += if pair { " paired" } else { " unpaired" };
        }
    }

    /// The last case's plan is split where the model finds a merged and an unmerged part
    /// (`PlanOptions::split_rows`).
    fn split(&mut self) {
        if let Some(c) = self.0.last_mut() {
            c.plan.split = Some(true);
            c.label += " split";
        }
    }

    /// The last case's plan streams A re-blocked into 128×128 blocks where its shape allows
    /// (`PlanOptions::coarse_a`).
    fn re_blocked(&mut self) {
        if let Some(c) = self.0.last_mut() {
            c.plan.coarse = Some(true);
            c.label += " reblocked";
        }
    }

    /// The last case's plan merges its heavy rows first (`PlanOptions::reorder_rows`).
    fn reordered(&mut self) {
        if let Some(c) = self.0.last_mut() {
            c.plan.reorder = Some(true);
            c.label += " reordered";
        }
    }

    /// A BSR × BSR case: A `(m, k)` in `(bm, bk)` blocks with pattern `a`, B `(k, n)` in
    /// `(bk, bn)` blocks with pattern `b`.
    #[allow(clippy::too_many_arguments)]
    fn spgemm(
        &mut self,
        c: SpC,
        (m, k, n): (usize, usize, usize),
        (bm, bk, bn): (usize, usize, usize),
        (input, output): (DType, DType),
        (a, b): (Pattern, Pattern),
        (alpha, beta): (f32, f32),
        batch: usize,
    ) {
        let op = Op::Spgemm(Spgemm { bn, b, c });
        let label =
            format!("{} {m}x{k}x{n} b{bm}x{bk}x{bn} {input}->{output} A:{a:?} B:{b:?} a={alpha} b={beta} batch{batch}", op_label(op));
        self.0.push(Case { label, op, sm: m, sk: k, n, bm, bk, input, output, pattern: a, alpha, beta, batch, plan: CasePlan::default() });
    }
}

fn cases() -> Vec<Case> {
    use DType::*;
    use Layout::{ColMajor as C, RowMajor as R};
    use Transpose::{No as N, Yes as T};
    let plain = Op::Spmm { op_a: N, b: R, c: R };
    let mut v = Cases(Vec::new());
    // ---- plain SpMM: every kernel variant, shapes, densities, tails, alpha/beta, split-K ----
    for bs in [16, 32, 64, 128] {
        for input in [F16, Bf16] {
            for output in [F16, Bf16, F32] {
                v.push(plain, (8 * bs, 6 * bs, 129), (bs, bs), (input, output), Pattern::Uniform(0.3), (1.0, 0.0), 1);
                // The unmerged kernels, whatever the planner's choice for the pattern drawn.
                v.merged(1);
            }
        }
    }
    for (bm, bk) in [(16, 64), (64, 16), (32, 128), (128, 32), (64, 128), (128, 64), (16, 128), (128, 16)] {
        v.push(plain, (4 * bm.max(bk), 8 * bm.max(bk), 200), (bm, bk), (F16, F32), Pattern::Uniform(0.4), (1.5, -0.5), 1);
        v.push(plain, (4 * bm.max(bk), 8 * bm.max(bk), 64), (bm, bk), (Bf16, Bf16), Pattern::Uniform(0.4), (1.0, 0.0), 1);
    }
    for d in [0.0, 0.01, 0.125, 0.5, 1.0] {
        v.push(plain, (1024, 1024, 256), (64, 64), (F16, F16), Pattern::Uniform(d), (1.0, 0.0), 1);
        v.push(plain, (512, 768, 100), (32, 32), (Bf16, F32), Pattern::Uniform(d), (0.75, 1.25), 1);
    }
    v.push(plain, (2048, 2048, 512), (64, 64), (F16, F16), Pattern::Skewed(0.125, 4, 0.5), (1.0, 0.0), 1);
    v.push(plain, (2048, 4096, 96), (16, 16), (F16, F32), Pattern::Skewed(0.05, 2, 0.7), (1.0, 0.5), 1);
    v.push(plain, (1024, 8192, 64), (128, 128), (Bf16, Bf16), Pattern::Skewed(0.25, 1, 0.5), (-1.0, 0.0), 1);
    v.push(plain, (2048, 2048, 300), (64, 64), (F16, F16), Pattern::Banded(0.125), (1.0, 0.0), 1);
    v.push(plain, (1024, 2048, 256), (128, 128), (Bf16, F32), Pattern::BlockDiagonal(0.25), (1.0, 0.5), 1);
    for bs in [16, 32, 64, 128] {
        v.push(plain, (bs, bs, 1), (bs, bs), (F16, F32), Pattern::Uniform(1.0), (1.0, 0.0), 1);
        v.push(plain, (bs, 16 * bs, 3), (bs, bs), (F16, F16), Pattern::OneRow, (2.0, 0.0), 1);
        v.push(plain, (8 * bs, 8 * bs, 77), (bs, bs), (Bf16, F32), Pattern::OneBlock, (1.0, 1.0), 1);
    }
    // Thousands of empty items (C rows that only get beta · C) on a persistent grid: a thread
    // block runs hundreds of items without stages in a row (the consumer skew's start, epilogue
    // after epilogue; a shared item queue deadlocked here, perf notes v20).
    v.push(plain, (32768, 256, 2048), (128, 128), (F16, F16), Pattern::OneRow, (1.0, 0.5), 1);
    v.push(plain, (8192, 128, 8192), (32, 32), (F16, F16), Pattern::OneRow, (1.0, 0.5), 1);
    v.merged(4);
    for n in [1, 2, 7, 8, 9, 63, 65, 129, 255, 257, 1000] {
        v.push(plain, (256, 512, n), (32, 32), (F16, F16), Pattern::Uniform(0.3), (1.0, 0.0), 1);
        v.push(plain, (256, 256, n), (64, 128), (Bf16, F32), Pattern::Uniform(0.5), (0.5, 2.0), 1);
    }
    for (alpha, beta) in [(0.0, 1.0), (0.0, 0.0), (-2.0, 0.25), (1.0, -1.0), (0.125, 3.0)] {
        v.push(plain, (512, 512, 300), (64, 64), (F16, F32), Pattern::Uniform(0.25), (alpha, beta), 1);
        v.push(plain, (512, 512, 33), (128, 128), (F16, F16), Pattern::Uniform(0.25), (alpha, beta), 1);
    }
    v.push(plain, (256, 65536, 64), (64, 64), (F16, F32), Pattern::OneRow, (1.0, 0.5), 1);
    v.push(plain, (512, 32768, 40), (16, 16), (Bf16, Bf16), Pattern::Skewed(0.2, 1, 0.8), (1.0, 0.0), 1);
    v.push(plain, (1024, 16384, 8), (128, 128), (F16, F16), Pattern::Skewed(0.5, 2, 0.5), (1.0, 1.0), 1);
    v.push(plain, (8192, 8192, 64), (64, 64), (F16, F16), Pattern::Uniform(0.125), (1.0, 0.0), 1);
    v.push(plain, (8192, 8192, 33), (128, 128), (Bf16, F32), Pattern::Uniform(0.125), (1.0, -1.0), 1);
    v.push(plain, (4096, 8192, 130), (32, 32), (F16, Bf16), Pattern::Skewed(0.125, 8, 0.5), (1.0, 0.0), 1);
    v.push(plain, (8192, 4096, 17), (16, 16), (F16, F32), Pattern::Uniform(0.05), (1.0, 0.0), 1);

    // ---- SpMM in every layout: op(A) × op(B) × C, square and non-square blocks ----
    let blocks = [(16, 16), (32, 32), (64, 64), (128, 128), (64, 128), (128, 64), (16, 64), (32, 128)];
    let dtypes = [(F16, F16), (Bf16, F32), (F16, Bf16), (Bf16, Bf16)];
    let mut i = 0;
    for op_a in [N, T] {
        for b in [R, C] {
            for c in [R, C] {
                for &(bm, bk) in &blocks {
                    let op = Op::Spmm { op_a, b, c };
                    let dt = dtypes[i % dtypes.len()];
                    let ab = if i % 3 == 0 { (1.5, -0.75) } else { (1.0, 0.0) };
                    let pat = if i % 5 == 0 { Pattern::Skewed(0.3, 1, 0.5) } else { Pattern::Uniform(0.35) };
                    v.push(op, (6 * bm.max(bk), 5 * bm.max(bk), 264 - 7 * (i % 3)), (bm, bk), dt, pat, ab, 1);
                    v.merged(1);
                    i += 1;
                }
                // Long rows (split-K + fix-up) and empty rows in this layout.
                v.push(Op::Spmm { op_a, b, c }, (512, 16384, 72), (64, 64), (F16, F32), Pattern::OneRow, (1.0, 0.5), 1);
                v.push(Op::Spmm { op_a, b, c }, (1024, 1024, 40), (128, 128), (Bf16, Bf16), Pattern::OneBlock, (1.0, 0.0), 1);
            }
        }
    }

    // ---- dense × sparse: op(X) × op(A) × C ----
    let mut i = 0;
    for x in [R, C] {
        for op_a in [N, T] {
            for c in [R, C] {
                for &(bm, bk) in &[(16, 16), (64, 64), (128, 128), (64, 128), (32, 16)] {
                    let op = Op::DenseSparse { x, op_a, c };
                    let dt = dtypes[i % dtypes.len()];
                    let ab = if i % 4 == 1 { (0.5, 2.0) } else { (1.0, 0.0) };
                    v.push(op, (5 * bm.max(bk), 7 * bm.max(bk), 200 + 9 * (i % 4)), (bm, bk), dt, Pattern::Uniform(0.3), ab, 1);
                    i += 1;
                }
            }
        }
    }

    // ---- SDDMM: op(X) × op(Y), K tails (multiples of 16), empty and skewed rows ----
    let mut i = 0;
    for x in [R, C] {
        for y in [R, C] {
            for &(bm, bk) in &[(16, 16), (32, 32), (64, 64), (128, 128), (64, 128), (128, 64), (16, 32), (32, 128)] {
                let op = Op::Sddmm { x, y };
                let k = [16, 48, 272, 1024][i % 4];
                let dt = [(F16, F16), (Bf16, F32), (F16, F32), (Bf16, Bf16)][i % 4];
                let ab = if i % 3 == 2 { (-1.0, 0.5) } else { (1.0, 0.0) };
                let pat = if i % 5 == 4 { Pattern::Skewed(0.2, 1, 0.6) } else { Pattern::Uniform(0.3) };
                v.push(op, (8 * bm, 6 * bk, k), (bm, bk), dt, pat, ab, 1);
                i += 1;
            }
        }
    }
    for (bm, bk) in [(64, 64), (128, 128), (32, 32)] {
        v.push(Op::Sddmm { x: R, y: C }, (1024, 1024, 512), (bm, bk), (F16, F16), Pattern::OneRow, (1.0, 0.0), 1);
        v.push(Op::Sddmm { x: R, y: R }, (1024, 1024, 64), (bm, bk), (Bf16, F32), Pattern::OneBlock, (2.0, 1.0), 1);
        v.push(Op::Sddmm { x: C, y: R }, (2048, 2048, 4096), (bm, bk), (F16, F32), Pattern::Uniform(0.05), (1.0, 0.0), 1);
    }

    // ---- the mask families of real workloads (bench --masks), every op family once ----
    for (i, f) in MaskFamily::REAL.iter().filter(|f| !matches!(f, MaskFamily::Uniform(_))).enumerate() {
        for (j, &(bm, bk)) in [(16, 16), (32, 32), (64, 64), (128, 128)].iter().enumerate() {
            let dt = [(F16, F16), (Bf16, F32), (F16, Bf16), (Bf16, Bf16)][(i + j) % 4];
            let ab = if (i + j) % 3 == 1 { (0.5, 1.5) } else { (1.0, 0.0) };
            v.push(Op::Spmm { op_a: N, b: R, c: R }, (32 * bm, 24 * bk, 136 + 8 * j), (bm, bk), dt, Pattern::Family(*f), ab, 1);
        }
        let op = [Op::Spmm { op_a: T, b: C, c: C }, Op::DenseSparse { x: R, op_a: T, c: R }, Op::Sddmm { x: R, y: C }][i % 3];
        v.push(op, (24 * 64, 32 * 64, 192), (64, 64), (F16, F32), Pattern::Family(*f), (1.0, 0.5), 1 + i % 2);
    }

    // ---- batches sharing one pattern ----
    for (bm, bk) in [(64, 64), (128, 128), (32, 32), (64, 128)] {
        v.push(Op::Spmm { op_a: N, b: R, c: R }, (512, 512, 192), (bm, bk), (F16, F16), Pattern::Uniform(0.3), (1.0, 0.0), 3);
        v.push(Op::Spmm { op_a: T, b: C, c: C }, (512, 256, 100), (bm, bk), (Bf16, F32), Pattern::Uniform(0.3), (1.0, 0.5), 2);
        v.push(Op::DenseSparse { x: R, op_a: T, c: R }, (256, 512, 96), (bm, bk), (F16, F32), Pattern::Uniform(0.4), (1.0, 0.0), 4);
        v.push(Op::Sddmm { x: R, y: C }, (256, 512, 112), (bm, bk), (F16, Bf16), Pattern::Uniform(0.4), (1.0, 0.0), 5);
        v.push(Op::Sddmm { x: C, y: R }, (512, 256, 64), (bm, bk), (Bf16, F32), Pattern::Skewed(0.3, 1, 0.5), (0.5, -1.0), 2);
        // Few runs over a long K: the plan splits their K over the GPU (partial tiles + fix-up).
        v.push(Op::Sddmm { x: C, y: C }, (256, 384, 4112), (bm, bk), (F16, F16), Pattern::Uniform(0.5), (1.5, 0.5), 3);
        v.push(Op::Sddmm { x: R, y: R }, (384, 256, 4096), (bm, bk), (Bf16, F32), Pattern::Skewed(0.3, 1, 0.5), (0.5, -1.0), 1);
    }

    merged_cases(&mut v);
    reblocked_cases(&mut v);
    spgemm_cases(&mut v);
    v.0
}

/// SpMM and dense × sparse with merged plans (`PlanOptions::merge_rows`): every mask family,
/// every layout, Aᵀ, odd block-row counts (a last tile with rows past M), empty rows and single
/// blocks inside merged groups, long rows (split-K), batches and alpha/beta. (The planner's own
/// choice runs in every other SpMM case.) On the Hopper module, 64-row blocks merge in pairs on
/// the 128-row wgmma tile, 32-row blocks on the 32-deep wgmma tile where their count is even
/// and 16-row blocks on the 16-deep one where it is a multiple of 4 (else on the portable
/// kernel); `--path portable` runs all of them on the portable kernel.
fn merged_cases(v: &mut Cases) {
    use DType::*;
    use Layout::{ColMajor as C, RowMajor as R};
    use Transpose::{No as N, Yes as T};
    let plain = Op::Spmm { op_a: N, b: R, c: R };
    // (block, rows merged per tile)
    let merges = [(64usize, 2u32), (32, 2), (32, 4)];
    for (i, f) in MaskFamily::REAL.iter().enumerate() {
        for (j, &(bs, m)) in merges.iter().enumerate() {
            let dt = [(F16, F16), (Bf16, F32), (F16, Bf16), (Bf16, Bf16)][(i + j) % 4];
            let ab = if (i + j) % 3 == 1 { (0.5, 1.5) } else { (1.0, 0.0) };
            // 33 block rows: the last tile holds fewer rows than it merges.
            v.push(plain, (33 * bs, 24 * bs, 136 + 8 * j), (bs, bs), dt, Pattern::Family(*f), ab, 1);
            v.merged(m);
        }
    }
    // Reordered plans (the heavy rows merged first, C written in A's order): heavy-tailed,
    // BigBird-like and skewed masks, every merge of each path, an odd row count (a last tile
    // with rows past M), Aᵀ, dense × sparse, both C layouts, alpha/beta, long rows (split-K)
    // and batches.
    let heavy = [Pattern::Family(MaskFamily::Zipf(0.1)), Pattern::Family(MaskFamily::BigBird), Pattern::Skewed(0.15, 5, 0.6)];
    let mut i = 0;
    for (bs, m) in [(64usize, 2u32), (32, 2), (32, 4), (16, 8)] {
        for &pat in &heavy {
            let dt = [(F16, F16), (Bf16, F32), (F16, Bf16), (Bf16, Bf16)][i % 4];
            let ab = if i % 3 == 1 { (0.5, 1.5) } else { (1.0, 0.0) };
            // Streams of Aᵀ (Aᵀ · B, X · A) and of A (X · Aᵀ) in turn.
            let ops = if m == 2 {
                [plain, Op::Spmm { op_a: N, b: C, c: C }, Op::Spmm { op_a: T, b: R, c: R }, Op::DenseSparse { x: R, op_a: N, c: C }]
            } else {
                [plain, Op::Spmm { op_a: T, b: C, c: R }, Op::DenseSparse { x: C, op_a: T, c: R }, Op::DenseSparse { x: R, op_a: N, c: C }]
            };
            let op = ops[i % ops.len()];
            let rows = if bs == 16 { 64 } else { 33 };
            // N of 264 - 8 j: the 256-wide wgmma tiles are the cost model's choice.
            v.push(op, (rows * bs, 24 * bs, 264 - 8 * (i % 3)), (bs, bs), dt, pat, ab, 1 + i % 2);
            v.merged(m);
            v.reordered();
            i += 1;
        }
    }
    let mut i = 0;
    for op_a in [N, T] {
        for b in [R, C] {
            for c in [R, C] {
                // (bm, bk) with the stream's row extent (bm for A, bk for Aᵀ) 64 or 32.
                let shapes: &[((usize, usize), u32)] = if op_a == N {
                    &[((64, 64), 2), ((64, 128), 2), ((32, 32), 4), ((32, 64), 2)]
                } else {
                    &[((64, 64), 2), ((128, 64), 2), ((32, 32), 2), ((16, 32), 4)]
                };
                for &((bm, bk), m) in shapes {
                    let dt = [(F16, F16), (Bf16, F32), (F16, Bf16), (Bf16, Bf16)][i % 4];
                    let ab = if i % 3 == 0 { (1.5, -0.75) } else { (1.0, 0.0) };
                    let pat = [Pattern::EmptyRows(0.4), Pattern::Banded(0.3), Pattern::Uniform(0.35)][i % 3];
                    v.push(Op::Spmm { op_a, b, c }, (7 * bm.max(bk), 5 * bm.max(bk), 264 - 7 * (i % 3)), (bm, bk), dt, pat, ab, 1 + i % 2);
                    v.merged(m);
                    i += 1;
                }
            }
        }
    }
    for (x, op_a, c) in [(R, N, R), (C, T, R), (R, T, C), (C, N, C)] {
        for &(bs, m) in &merges {
            v.push(Op::DenseSparse { x, op_a, c }, (9 * bs, 11 * bs, 200), (bs, bs), (F16, F32), Pattern::Banded(0.3), (1.0, 0.5), 2);
            v.merged(m);
        }
    }
    // The Hopper tiles of 32- and 16-deep stages (blocks 32 / 16 deep or 32 / 16 rows, K-major
    // A, and below streams of Aᵀ; a block-row count that fills whole warpgroups): every family, both layouts of B and C,
    // one, two and four stages per block, unmerged 128-row blocks, dense × sparse, split-K,
    // batches. (`--path portable` runs them on the portable tiles, 16-row blocks unmerged.)
    // (block side, [((bm, bk), rows merged)])
    type Shapes = &'static [((usize, usize), u32)];
    let shallow: [(usize, Shapes); 2] = [
        (32, &[((32, 32), 4), ((64, 32), 2), ((32, 64), 4), ((128, 32), 1)]),
        (16, &[((16, 16), 8), ((32, 16), 4), ((16, 32), 8), ((64, 16), 2), ((128, 16), 1), ((16, 64), 8)]),
    ];
    let mut i = 0;
    for (bs, shapes) in shallow {
        let m = (128 / bs) as u32;
        for (j, f) in MaskFamily::REAL.iter().enumerate() {
            let dt = [(F16, F16), (Bf16, F32), (F16, Bf16), (Bf16, Bf16)][(i + j) % 4];
            v.push(plain, (1088, 768, 264), (bs, bs), dt, Pattern::Family(*f), if (i + j) % 2 == 0 { (1.0, 0.0) } else { (0.5, 1.5) }, 1);
            v.merged(m);
        }
        for b in [R, C] {
            for c in [R, C] {
                for &((bm, bk), m) in shapes {
                    let dt = [(F16, F32), (Bf16, Bf16), (F16, F16), (Bf16, F32)][i % 4];
                    let pat = [Pattern::EmptyRows(0.4), Pattern::Banded(0.3), Pattern::Uniform(0.35)][i % 3];
                    let ab = if i % 3 == 1 { (1.5, -0.75) } else { (1.0, 0.0) };
                    // 64-row blocks: 9 block rows, the last tile's second warpgroup past M.
                    let rows = if bm == 64 { 9 * 64 } else { 10 * 64 };
                    v.push(Op::Spmm { op_a: N, b, c }, (rows, 9 * bk.max(32), 200 + 9 * (i % 4)), (bm, bk), dt, pat, ab, 1 + i % 2);
                    v.merged(m);
                    i += 1;
                }
            }
        }
        for x in [R, C] {
            v.push(Op::DenseSparse { x, op_a: T, c: R }, (384, 320, 136), (bs, bs), (F16, F32), Pattern::Banded(0.3), (1.0, 0.5), 2);
            v.merged(m);
        }
        // Streams of Aᵀ (MN-major boxes of `rb ≤ 64` rows): Aᵀ · B in both layouts of B and
        // C and X · A, with the stream's rows (bk) and K extent (bm) 16, 32 or 64 apart, every
        // family once at square blocks.
        let transposed: Shapes = if bs == 32 {
            &[((32, 32), 4), ((32, 64), 2), ((64, 32), 4)]
        } else {
            &[((16, 16), 8), ((16, 32), 4), ((32, 16), 8), ((16, 64), 2)]
        };
        for (j, &((bm, bk), m)) in transposed.iter().enumerate() {
            for (b, c) in [(R, R), (C, C), (R, C)] {
                let dt = [(F16, F32), (Bf16, Bf16), (F16, F16), (Bf16, F32)][i % 4];
                let pat = [Pattern::EmptyRows(0.4), Pattern::Banded(0.3), Pattern::Uniform(0.35)][(i + j) % 3];
                let ab = if i % 3 == 1 { (1.5, -0.75) } else { (1.0, 0.0) };
                // Stream rows (A's block columns): 10 · 64 / bk of them, whole warpgroups.
                v.push(Op::Spmm { op_a: T, b, c }, (9 * bm.max(32), 640, 200 + 9 * (i % 4)), (bm, bk), dt, pat, ab, 1 + i % 2);
                v.merged(m);
                i += 1;
            }
            // 576 / bk stream rows: the last tile's second warpgroup past M.
            v.push(
                Op::DenseSparse { x: R, op_a: N, c: C },
                (5 * bm.max(32), 576, 136),
                (bm, bk),
                (Bf16, F32),
                Pattern::Banded(0.3),
                (1.0, 0.5),
                2,
            );
            v.merged(m);
        }
        for (j, f) in MaskFamily::REAL.iter().enumerate() {
            let dt = [(F16, F16), (Bf16, F32), (F16, Bf16), (Bf16, Bf16)][(i + j) % 4];
            v.push(Op::Spmm { op_a: T, b: R, c: R }, (1088, 640, 264), (bs, bs), dt, Pattern::Family(*f), (1.0, 0.0), 1);
            v.merged(m);
        }
        // (N past 128: at one N tile of 128 or fewer columns the model prefers the portable tile.)
        v.push(plain, (128, 32768, 200), (bs, bs), (F16, F32), Pattern::OneRow, (1.0, 0.5), 1);
        v.merged(m);
        v.push(plain, (192, 512 * bs, 136), (bs, bs), (Bf16, Bf16), Pattern::Uniform(0.9), (1.0, 0.0), 3);
        v.merged(m);
        v.push(plain, (64, 8 * bs, 264), (bs, bs), (Bf16, F32), Pattern::OneBlock, (1.0, 1.0), 1);
        v.merged(m);
    }

    // Split plans (`PlanOptions::split_rows`): the mixed mask (8 bands of block rows, window
    // ±8 and top-16 in turn), its window bands merged and its top-16 bands unmerged in a second
    // launch, at 16-, 32- and 64-row blocks: both layouts of B and C, streams of A (A · B, X ·
    // Aᵀ) and of Aᵀ (Aᵀ · B, X · A), alpha/beta (each part writes only its rows), batches, and
    // at 16×16 rows split along K (partial tiles and the fix-up in the unmerged part).
    let mut i = 0;
    // (block side, block rows, block columns: where the top-16 bands are sparse enough that
    // the model leaves them unmerged)
    for (bs, rows, cols) in [(16usize, 128usize, 128usize), (32, 64, 128), (64, 64, 64)] {
        let ops = [
            plain,
            Op::Spmm { op_a: N, b: C, c: C },
            Op::DenseSparse { x: R, op_a: T, c: R },
            Op::Spmm { op_a: T, b: R, c: R },
            Op::DenseSparse { x: C, op_a: N, c: C },
        ];
        for (j, &op) in ops.iter().enumerate() {
            let dt = [(F16, F16), (Bf16, F32), (F16, Bf16), (Bf16, Bf16)][i % 4];
            let ab = if i % 2 == 1 { (0.5, 1.5) } else { (1.0, 0.0) };
            // (N of 256 would favour the merged tile for every band at 64×64: the unmerged one
            // is 512 wide.)
            let n = [264, 280, 296][j % 3];
            v.push(op, (rows * bs, cols * bs, n), (bs, bs), dt, Pattern::Family(MaskFamily::Mixed), ab, 1 + i % 2);
            v.split();
            i += 1;
        }
    }

    // Split plans with empty rows and a last group short of the merge (132 and 66 block rows:
    // whole warpgroups, as the shallow tiles need) in the unmerged part, and reordered split
    // plans (heavy-tailed rows, the heavy ones merged first).
    let holes = Pattern::MixedHoles;
    v.push(plain, (132 * 16, 128 * 16, 264), (16, 16), (F16, F32), holes, (0.5, 1.5), 1);
    v.split();
    v.push(Op::DenseSparse { x: C, op_a: T, c: C }, (132 * 16, 128 * 16, 280), (16, 16), (Bf16, Bf16), holes, (1.0, 0.0), 2);
    v.split();
    v.push(Op::Spmm { op_a: N, b: C, c: R }, (66 * 32, 128 * 32, 264), (32, 32), (F16, F16), holes, (1.5, -0.75), 1);
    v.split();
    let zipf = Pattern::Family(MaskFamily::Zipf(0.1));
    v.push(plain, (128 * 16, 128 * 16, 264), (16, 16), (Bf16, F32), zipf, (1.0, 0.5), 1);
    v.split();
    v.reordered();
    v.push(Op::DenseSparse { x: R, op_a: T, c: R }, (64 * 32, 128 * 32, 264), (32, 32), (F16, Bf16), zipf, (1.0, 0.0), 2);
    v.split();
    v.reordered();

    for &(bs, m) in &merges {
        // Long rows with empty partners (split-K + fix-up, the fix-up's last tile past M).
        v.push(plain, (3 * bs, 512 * bs, 72), (bs, bs), (F16, F32), Pattern::OneRow, (1.0, 0.5), 1);
        v.merged(m);
        v.push(plain, (5 * bs, 1024 * bs, 40), (bs, bs), (Bf16, Bf16), Pattern::Uniform(0.9), (1.0, 0.0), 2);
        v.merged(m);
        // One block; one block row (a group of one row); every block.
        v.push(plain, (9 * bs, 9 * bs, 77), (bs, bs), (Bf16, F32), Pattern::OneBlock, (1.0, 1.0), 1);
        v.merged(m);
        v.push(plain, (bs, 16 * bs, 3), (bs, bs), (F16, F16), Pattern::OneRow, (2.0, 0.0), 1);
        v.merged(m);
        v.push(plain, (6 * bs, 6 * bs, 129), (bs, bs), (F16, F16), Pattern::Uniform(1.0), (-1.0, 0.25), 3);
        v.merged(m);
        v.push(plain, (16 * bs, 16 * bs, 257), (bs, bs), (F16, F16), Pattern::Uniform(0.0), (1.0, 0.5), 1);
        v.merged(m);
    }
}

/// SpMM and dense × sparse over A re-blocked into 128×128 blocks (`PlanOptions::coarse_a`):
/// every mask family at 16×16 and 32×32, blocks 16 to 128 high and wide (square and not),
/// streams of A and of Aᵀ, both layouts of the dense operand and of C, alpha/beta, batches,
/// empty rows, one block, one long row (split along K), every block and none, and shapes the
/// copy does not take (rows or columns not multiples of 128: the plan keeps A as stored).
fn reblocked_cases(v: &mut Cases) {
    use DType::*;
    use Layout::{ColMajor as C, RowMajor as R};
    use Transpose::{No as N, Yes as T};
    let plain = Op::Spmm { op_a: N, b: R, c: R };
    let dts = [(F16, F16), (Bf16, F32), (F16, Bf16), (Bf16, Bf16)];
    let mut i = 0;
    for bs in [16usize, 32] {
        for f in MaskFamily::REAL {
            let ab = if i % 3 == 1 { (0.5, 1.5) } else { (1.0, 0.0) };
            v.push(plain, (1024, 768, 264 - 8 * (i % 3)), (bs, bs), dts[i % 4], Pattern::Family(f), ab, 1 + i % 2);
            v.re_blocked();
            i += 1;
        }
    }
    let ops = [
        Op::Spmm { op_a: N, b: C, c: C },
        Op::Spmm { op_a: T, b: R, c: R },
        Op::Spmm { op_a: T, b: C, c: R },
        Op::DenseSparse { x: R, op_a: N, c: C },
        Op::DenseSparse { x: C, op_a: T, c: R },
    ];
    let shapes = [(16usize, 16usize), (32, 32), (64, 64), (16, 32), (32, 16), (64, 16), (16, 64), (128, 32), (32, 128), (128, 128)];
    for (j, &(bm, bk)) in shapes.iter().enumerate() {
        for (o, &op) in ops.iter().enumerate() {
            if (j + o) % 2 == 1 {
                continue;
            }
            let pat = [Pattern::EmptyRows(0.4), Pattern::Banded(0.3), Pattern::Uniform(0.35), Pattern::Family(MaskFamily::Causal)][i % 4];
            let ab = if i % 3 == 0 { (1.5, -0.75) } else { (1.0, 0.0) };
            v.push(op, (640, 384, 200 + 9 * (i % 4)), (bm, bk), dts[i % 4], pat, ab, 1 + i % 2);
            v.re_blocked();
            i += 1;
        }
    }
    for (bs, dt) in [(16usize, (F16, F32)), (32, (Bf16, Bf16))] {
        v.push(plain, (9 * 128, 5 * 128, 77), (bs, bs), dt, Pattern::OneBlock, (1.0, 1.0), 1);
        v.re_blocked();
        v.push(plain, (128, 256 * 128, 136), (bs, bs), dt, Pattern::OneRow, (1.0, 0.5), 1);
        v.re_blocked();
        v.push(plain, (384, 256, 129), (bs, bs), dt, Pattern::Uniform(1.0), (-1.0, 0.25), 3);
        v.re_blocked();
        v.push(plain, (256, 256, 257), (bs, bs), dt, Pattern::Uniform(0.0), (1.0, 0.5), 1);
        v.re_blocked();
        // Rows (and, below, columns) not multiples of 128: A as stored.
        v.push(plain, (33 * bs, 256, 136), (bs, bs), dt, Pattern::Banded(0.3), (1.0, 0.0), 1);
        v.re_blocked();
        v.push(Op::Spmm { op_a: T, b: R, c: R }, (256, 9 * bs, 136), (bs, bs), dt, Pattern::Banded(0.3), (1.0, 0.0), 2);
        v.re_blocked();
    }
}

/// The BSR × BSR cases (every label starts with "spgemm"). A is `(M, K)` in `(bm, bk)` blocks,
/// B `(K, N)` in `(bk, bn)` blocks; N is always an odd number of blocks, never a multiple of 256
/// (the tiles' tails).
fn spgemm_cases(v: &mut Cases) {
    use DType::*;
    use Layout::{ColMajor as C, RowMajor as R};
    use Pattern::{EmptyRows, OneBlock, OneRow, Skewed, Uniform};
    use SpC::{Dense, Mask, Product};
    let dts = [(F16, F16), (Bf16, Bf16), (F16, F32), (Bf16, F16), (F16, Bf16), (Bf16, F32)];
    let kinds = [Dense(R), Product, Dense(C), Mask(SpMask::Random(0.35))];
    let sizes = [16, 32, 64, 128];
    let first = v.0.len();

    // Every block shape (bm, bk, bn), small (6 x 5 blocks of A); dtypes and C kinds rotate.
    let mut i = 0;
    for bm in sizes {
        for bk in sizes {
            for bn in sizes {
                let nb = [7, 19, 5, 11, 3][i % 5];
                let ab = if i % 5 == 2 { (1.5, -0.5) } else { (1.0, 0.0) };
                v.spgemm(kinds[i % 4], (6 * bm, 5 * bk, nb * bn), (bm, bk, bn), dts[i % 6], (Uniform(0.4), Uniform(0.4)), ab, 1);
                i += 1;
            }
        }
    }

    // Every C kind on mid-size shapes: the Hopper ones (bm 64 or 128, bk and bn multiples of
    // 64) and portable ones.
    let shapes = [(64, 64, 64), (128, 64, 64), (64, 128, 128), (128, 128, 128), (128, 64, 128), (64, 64, 128), (32, 32, 32), (16, 64, 32)];
    for (s, &(bm, bk, bn)) in shapes.iter().enumerate() {
        for (c, &kind) in kinds.iter().enumerate() {
            let nb = [11, 13, 15][(s + c) % 3];
            let ab = if (s + c) % 3 == 1 { (0.75, 1.25) } else { (1.0, 0.0) };
            v.spgemm(kind, (12 * bm, 10 * bk, nb * bn), (bm, bk, bn), dts[(s + c) % 6], (Uniform(0.3), Uniform(0.3)), ab, 1);
        }
    }

    // Empty block rows in A (C rows of beta · C only), then in B (A blocks that meet nothing).
    for (c, &kind) in kinds.iter().enumerate() {
        let ab = if c % 2 == 0 { (1.0, 0.0) } else { (1.0, 0.5) };
        v.spgemm(kind, (16 * 64, 12 * 64, 7 * 64), (64, 64, 64), dts[c], (EmptyRows(0.5), Uniform(0.4)), ab, 1);
        v.spgemm(kind, (16 * 32, 12 * 16, 9 * 64), (32, 16, 64), dts[c + 1], (EmptyRows(0.5), Uniform(0.4)), ab, 1);
        v.spgemm(kind, (10 * 128, 12 * 128, 7 * 64), (128, 128, 64), dts[c + 2], (Uniform(0.4), EmptyRows(0.5)), ab, 1);
        v.spgemm(kind, (16 * 16, 12 * 32, 23 * 16), (16, 32, 16), dts[(c + 3) % 6], (Uniform(0.4), EmptyRows(0.5)), ab, 1);
    }

    // Masks with rows whose pairs are all masked out and blocks without pairs: with beta = 0
    // (NaN poison: those blocks must be written as 0) and beta != 0.
    for (s, &(bm, bk, bn)) in [(64, 64, 64), (128, 128, 128), (32, 32, 32), (16, 128, 64), (128, 64, 128)].iter().enumerate() {
        for ab in [(1.0, 0.0), (-0.5, 2.0)] {
            v.spgemm(Mask(SpMask::Mixed), (12 * bm, 8 * bk, 9 * bn), (bm, bk, bn), dts[s], (Uniform(0.3), Uniform(0.3)), ab, 1);
        }
    }

    // Skewed rows of A over a long K.
    for &(bm, bk, bn) in &[(64, 64, 64), (128, 128, 128), (32, 32, 32)] {
        v.spgemm(Dense(R), (16 * bm, 64 * bk, 9 * bn), (bm, bk, bn), (F16, F32), (Skewed(0.1, 2, 0.6), Uniform(0.3)), (1.0, 0.0), 1);
        v.spgemm(Product, (16 * bm, 64 * bk, 9 * bn), (bm, bk, bn), (Bf16, Bf16), (Skewed(0.1, 1, 0.8), Uniform(0.3)), (1.0, 0.5), 1);
    }
    // One dense A row over a long K: its tiles hold far more than a fair share of the records,
    // so the plan splits them (partial tiles summed by the fix-up).
    v.spgemm(Dense(R), (8 * 64, 256 * 64, 5 * 64), (64, 64, 64), (F16, F32), (OneRow, Uniform(0.5)), (1.0, 0.5), 1);
    // Thousands of empty output tiles on the persistent grid (see the SpMM case of the same kind).
    v.spgemm(Dense(R), (256 * 128, 2 * 128, 15 * 128), (128, 128, 128), (F16, F16), (OneRow, Uniform(0.5)), (1.0, 0.5), 1);
    v.spgemm(Product, (4 * 128, 128 * 128, 3 * 128), (128, 128, 128), (Bf16, F32), (OneRow, Uniform(0.5)), (1.0, 0.0), 1);
    v.spgemm(Dense(C), (8 * 16, 512 * 16, 33 * 16), (16, 16, 16), (F16, F16), (OneRow, Uniform(0.3)), (2.0, 0.0), 1);
    v.spgemm(Mask(SpMask::Random(0.5)), (8 * 64, 256 * 128, 7 * 64), (64, 128, 64), (Bf16, Bf16), (OneRow, Uniform(0.5)), (1.0, -1.0), 1);
    v.spgemm(Dense(R), (8 * 128, 96 * 64, 5 * 128), (128, 64, 128), (F16, Bf16), (OneRow, Uniform(0.4)), (1.0, 0.0), 3);

    // Many long tiles, none of them split: about 300 records each (more than the 256 block
    // indices the portable SpMM kernel caches per item) when the fair share of a resident
    // thread block is larger still (300 block rows of 16 x 16 blocks, 60 % of 512 blocks each).
    v.spgemm(Dense(R), (300 * 16, 512 * 16, 15 * 16), (16, 16, 16), (F16, F32), (Uniform(0.6), Uniform(0.3)), (1.0, 0.0), 1);
    v.spgemm(Product, (300 * 16, 512 * 16, 15 * 16), (16, 16, 16), (Bf16, Bf16), (Uniform(0.6), Uniform(0.3)), (1.0, 0.5), 1);

    // N tails in both layouts of a dense C.
    for (t, &(bm, bk, bn, nb)) in
        [(32, 32, 16, 17), (64, 64, 64, 5), (128, 128, 128, 3), (16, 16, 32, 9), (64, 128, 64, 13), (128, 64, 128, 7)].iter().enumerate()
    {
        for (l, layout) in [R, C].into_iter().enumerate() {
            v.spgemm(
                Dense(layout),
                (8 * bm, 8 * bk, nb * bn),
                (bm, bk, bn),
                dts[(2 * t + l) % 6],
                (Uniform(0.4), Uniform(0.5)),
                (1.0, 0.0),
                1,
            );
        }
    }

    // A single block (1 x 1 block grids), and one A block meeting a full B row.
    let single = [Dense(R), Product, Dense(C), Mask(SpMask::Random(1.0))];
    for (s, &(bm, bk, bn)) in [(16, 16, 16), (64, 64, 64), (128, 128, 128), (32, 64, 128)].iter().enumerate() {
        v.spgemm(single[s], (bm, bk, bn), (bm, bk, bn), dts[s], (Uniform(1.0), Uniform(1.0)), (1.0, 0.0), 1);
        v.spgemm(single[(s + 1) % 4], (8 * bm, 8 * bk, 5 * bn), (bm, bk, bn), dts[s + 1], (OneBlock, Uniform(1.0)), (1.0, 1.0), 1);
    }

    // No pairs at all: A or B without blocks (a dense C is beta · C; a product C has no blocks).
    v.spgemm(Dense(R), (8 * 64, 8 * 64, 5 * 64), (64, 64, 64), (F16, F32), (Uniform(0.0), Uniform(0.5)), (1.0, 0.5), 1);
    v.spgemm(Dense(C), (8 * 32, 8 * 32, 9 * 32), (32, 32, 32), (Bf16, Bf16), (Uniform(0.5), Uniform(0.0)), (1.0, 0.0), 1);
    v.spgemm(Product, (8 * 64, 8 * 64, 5 * 64), (64, 64, 64), (F16, F16), (Uniform(0.5), Uniform(0.0)), (1.0, 0.0), 1);
    v.spgemm(
        Mask(SpMask::Random(0.5)),
        (8 * 128, 8 * 128, 5 * 128),
        (128, 128, 128),
        (F16, F32),
        (Uniform(0.0), Uniform(0.5)),
        (1.0, 2.0),
        1,
    );

    // Batches of 3 matrices sharing the patterns.
    let batched = [
        (Dense(R), (64, 64, 64)),
        (Product, (128, 128, 128)),
        (Mask(SpMask::Mixed), (32, 32, 32)),
        (Dense(C), (64, 128, 64)),
        (Product, (16, 16, 16)),
    ];
    for (s, &(kind, (bm, bk, bn))) in batched.iter().enumerate() {
        let ab = if s % 2 == 1 { (1.0, -0.5) } else { (1.0, 0.0) };
        v.spgemm(kind, (10 * bm, 8 * bk, 9 * bn), (bm, bk, bn), dts[s], (Uniform(0.3), Skewed(0.3, 1, 0.5)), ab, 3);
    }

    // 128-wide C blocks on the column-split tile, with tiles long enough to be paired: each
    // row's blocks paired by shared K (perf notes v31), every C kind, an odd number of block
    // columns (a lone block per row), batches, empty rows of B; and the same in column order.
    // (Enough block rows that no tile is split on a GPU of up to ~200 SMs: a split plan keeps
    // its blocks in column order.)
    for (s, &kind) in kinds.iter().enumerate() {
        // A masked C at 80 %: at 35 % a row keeps about three blocks, the plan about 60 tiles,
        // and a tile's records can exceed twice a GPU block's fair share (split: not paired).
        let kind = if let Mask(_) = kind { Mask(SpMask::Random(0.8)) } else { kind };
        let dt = dts[(s + 2) % 6];
        v.spgemm(kind, (32 * 128, 32 * 64, 9 * 128), (128, 64, 128), dt, (Uniform(0.6), Uniform(0.6)), (1.0, 0.5), 1 + s % 2);
        v.paired(true);
        v.spgemm(kind, (32 * 128, 32 * 64, 9 * 128), (128, 64, 128), dt, (Uniform(0.6), Uniform(0.6)), (1.0, 0.5), 1);
        v.paired(false);
        v.spgemm(
            kind,
            (32 * 128, 24 * 128, 13 * 128),
            (128, 128, 128),
            dts[s],
            (Uniform(0.6), EmptyRows(0.6)),
            (0.5, 0.0),
            1 + (s + 1) % 2,
        );
        v.paired(true);
    }

    // alpha / beta.
    for (alpha, beta) in [(0.0, 1.0), (0.0, 0.0), (-2.0, 0.25), (1.0, -1.0), (0.125, 3.0)] {
        v.spgemm(Dense(R), (8 * 64, 8 * 64, 9 * 64), (64, 64, 64), (F16, F32), (Uniform(0.3), Uniform(0.3)), (alpha, beta), 1);
        v.spgemm(Product, (8 * 128, 8 * 128, 5 * 128), (128, 128, 128), (Bf16, Bf16), (Uniform(0.3), Uniform(0.3)), (alpha, beta), 1);
        v.spgemm(Mask(SpMask::Mixed), (8 * 32, 8 * 32, 9 * 32), (32, 32, 32), (F16, F16), (Uniform(0.3), Uniform(0.3)), (alpha, beta), 1);
    }

    // The 16-row tile runs either ring, the plan choosing by the share of stages its warps pass
    // over (perf notes v42): every case of 16-row blocks once more with each ring asked for.
    let sixteen: Vec<Case> = v.0[first..].iter().filter(|c| c.bm == 16).cloned().collect();
    for c in sixteen {
        for warp in [true, false] {
            let label = c.label.clone() + if warp { " warp-rings" } else { " block-ring" };
            v.0.push(Case { label, plan: CasePlan { warp: Some(warp), dense_b: Some(false), ..c.plan }, ..c.clone() });
        }
    }

    // A product may stream B dense into the SpMM kernels (perf notes v44; a block-sparse C
    // gathered from the product workspace, v45, v46): every case (but the copies with a ring
    // asked for) once more on that route (by default only 16×16 and 32×32 products on Hopper
    // where its cost model prefers it), the records' knobs left to their defaults.
    let streamed: Vec<Case> = v.0[first..].iter().filter(|c| matches!(c.op, Op::Spgemm(_)) && c.plan.warp.is_none()).cloned().collect();
    for c in streamed {
        // And, where A's shape allows, with A re-blocked into 128×128 blocks (v48).
        if c.sm.is_multiple_of(128) && c.sk.is_multiple_of(128) && c.bm <= 128 && c.bk <= 128 {
            let plan = CasePlan { dense_b: Some(true), pair: None, coarse: Some(true), ..c.plan };
            v.0.push(Case { label: c.label.clone() + " dense-b coarse", plan, ..c.clone() });
        }
        let plan = CasePlan { dense_b: Some(true), pair: None, coarse: Some(false), ..c.plan };
        v.0.push(Case { label: c.label.clone() + " dense-b", plan, ..c });
    }
}

struct Outcome {
    kernel: String,
    rel_err: f64,
    non_finite: usize,
    deterministic: bool,
    /// The element farthest from the reference: (index in the output, got, want).
    worst: (usize, f64, f64),
    /// Elements off by more than 5 % of the largest reference value.
    bad: usize,
}

fn make_mask(c: &Case, rng: &mut TestRng) -> Vec<bool> {
    pattern_mask(c.pattern, c.sm / c.bm, c.sk / c.bk, rng)
}

/// A `(br, bc)` block mask of `pattern`.
fn pattern_mask(pattern: Pattern, br: usize, bc: usize, rng: &mut TestRng) -> Vec<bool> {
    match pattern {
        Pattern::Uniform(d) => random_mask(br, bc, d, rng),
        Pattern::Skewed(d, rows, share) => skewed_mask(br, bc, d, rows, share, rng),
        Pattern::Banded(d) => banded_mask(br, bc, d),
        Pattern::Family(f) => f.mask(br, bc, rng),
        Pattern::BlockDiagonal(d) => block_diagonal_mask(br, bc, d),
        Pattern::OneRow => {
            let row = rng.random_range(0..br);
            (0..br * bc).map(|i| i / bc == row).collect()
        }
        Pattern::OneBlock => {
            let at = rng.random_range(0..br * bc);
            (0..br * bc).map(|i| i == at).collect()
        }
        Pattern::EmptyRows(d) => {
            let mut m = random_mask(br, bc, d, rng);
            for r in (1..br).step_by(3) {
                m[r * bc..(r + 1) * bc].fill(false);
            }
            m
        }
        Pattern::MixedHoles => {
            let mut m = MaskFamily::Mixed.mask(br, bc, rng);
            for r in (2..br).step_by(5) {
                m[r * bc..(r + 1) * bc].fill(false);
            }
            m
        }
    }
}

/// A dense batch for a logical `(rows, cols)` view in `layout`: the row-major storage buffer
/// (`(rows, cols)`, or `(cols, rows)` whose transpose the view is) on the device, and its packed
/// host copy.
struct Dense<T> {
    dev: DeviceMatrix<T>,
    host: Vec<T>,
    rows: usize,
    cols: usize,
    layout: Layout,
}

impl<T: Element> Dense<T> {
    fn new(ctx: &Context, batch: usize, rows: usize, cols: usize, layout: Layout, host: Vec<T>) -> Result<Self, String> {
        let (sr, sc) = if layout == Layout::RowMajor { (rows, cols) } else { (cols, rows) };
        let dev = ctx.upload_matrix_batch(batch, sr, sc, &host).map_err(|e| e.to_string())?;
        Ok(Dense { dev, host, rows, cols, layout })
    }
    fn random(ctx: &Context, batch: usize, rows: usize, cols: usize, layout: Layout, rng: &mut TestRng) -> Result<Self, String> {
        let host = random_values::<T>(batch * rows * cols, rng);
        Self::new(ctx, batch, rows, cols, layout, host)
    }
    /// Matrix `b` as the reference reads it.
    fn host(&self, b: usize) -> HostMat<'_, T> {
        let len = self.rows * self.cols;
        let data = &self.host[b * len..(b + 1) * len];
        match self.layout {
            Layout::RowMajor => HostMat { data, rows: self.rows, cols: self.cols, ld: self.cols, layout: Layout::RowMajor },
            Layout::ColMajor => HostMat { data, rows: self.rows, cols: self.cols, ld: self.rows, layout: Layout::ColMajor },
        }
    }
    fn view(&self) -> blocksparse::MatRef<'_, T> {
        if self.layout == Layout::RowMajor { self.dev.view() } else { self.dev.t() }
    }
    fn view_mut(&mut self) -> blocksparse::MatMut<'_, T> {
        if self.layout == Layout::RowMajor { self.dev.view_mut() } else { self.dev.t_mut() }
    }
    /// The device contents, in storage order (as `host`).
    fn download(&self, ctx: &Context) -> Result<Vec<T>, String> {
        ctx.download_matrix(&self.dev).map_err(|e| e.to_string())
    }
    /// The device contents as logical row-major matrices, one after the other.
    fn download_logical(&self, ctx: &Context) -> Result<Vec<T>, String> {
        let got = self.download(ctx)?;
        let len = self.rows * self.cols;
        let mut logical = Vec::with_capacity(got.len());
        for b in 0..got.len() / len.max(1) {
            let h = HostMat { data: &got[b * len..(b + 1) * len], ..self.host(b) };
            for i in 0..self.rows {
                for j in 0..self.cols {
                    logical.push(T::from_f64(h.get(i, j)));
                }
            }
        }
        Ok(logical)
    }
}

/// The old output: NaN poison when beta == 0 (must be overwritten, never read), random values
/// otherwise (an unwritten element then keeps a wrong value).
fn old_output<O: Element>(len: usize, beta: f32, rng: &mut TestRng) -> Vec<O> {
    if beta == 0.0 { vec![O::nan(); len] } else { random_values::<O>(len, rng) }
}

fn run_case<T: InputElement, O: Element>(ctx: &Context, c: &Case, rng: &mut TestRng) -> Result<Outcome, String> {
    if let Op::Spgemm(s) = c.op {
        return run_spgemm::<T, O>(ctx, c, s, rng);
    }
    let e = |e: blocksparse::Error| format!("{e}");
    let mask = make_mask(c, rng);
    let nnzb = mask.iter().filter(|&&x| x).count();
    let block = BlockShape { bm: c.bm, bk: c.bk };
    let (alpha, beta) = (c.alpha as f64, c.beta as f64);
    let mut want = Vec::new();
    let mut results: Vec<Vec<O>> = Vec::new();
    let kernel;
    match c.op {
        Op::Spmm { .. } | Op::DenseSparse { .. } => {
            let mats: Vec<Bsr<T>> = (0..c.batch)
                .map(|_| Bsr::from_block_mask(c.sm, c.sk, block, &mask, random_values::<T>(nnzb * c.bm * c.bk, rng)))
                .collect::<Result<_, _>>()
                .map_err(e)?;
            let a_dev = ctx.upload_bsr_batch(&mats).map_err(e)?;
            let (op_a, m_dense, k_dense, n_out, c_layout, d_layout);
            let spmm_side = matches!(c.op, Op::Spmm { .. });
            match c.op {
                Op::Spmm { op_a: oa, b, c: cl } => {
                    op_a = oa;
                    let (rows, cols) = if oa == Transpose::No { (c.sm, c.sk) } else { (c.sk, c.sm) };
                    (m_dense, k_dense, n_out, c_layout, d_layout) = (rows, cols, c.n, cl, b);
                }
                Op::DenseSparse { x, op_a: oa, c: cl } => {
                    op_a = oa;
                    let (rows, cols) = if oa == Transpose::No { (c.sm, c.sk) } else { (c.sk, c.sm) };
                    // op(X) is (n, rows of op(A)); C is (n, cols of op(A)).
                    (m_dense, k_dense, n_out, c_layout, d_layout) = (rows, cols, c.n, cl, x);
                }
                Op::Sddmm { .. } | Op::Spgemm(_) => unreachable!(),
            }
            // The dense operand and C, as logical views.
            let (d_rows, d_cols, c_rows, c_cols) =
                if spmm_side { (k_dense, n_out, m_dense, n_out) } else { (n_out, m_dense, n_out, k_dense) };
            let dense = Dense::<T>::random(ctx, c.batch, d_rows, d_cols, d_layout, rng)?;
            let c0 = old_output::<O>(c.batch * c_rows * c_cols, c.beta, rng);
            let c0_dense = Dense::<O>::new(ctx, c.batch, c_rows, c_cols, c_layout, c0.clone())?;
            for (b, mat) in mats.iter().enumerate() {
                want.extend(if spmm_side {
                    spmm_reference(alpha, mat, op_a, dense.host(b), beta, c0_dense.host(b))
                } else {
                    dense_sparse_reference(alpha, dense.host(b), mat, op_a, beta, c0_dense.host(b))
                });
            }
            let plan_with = |merge_rows: Option<u32>| {
                let opts = PlanOptions {
                    merge_rows,
                    reorder_rows: c.plan.reorder,
                    skip_absent: c.plan.skip,
                    split_rows: c.plan.split,
                    coarse_a: c.plan.coarse,
                    ..Default::default()
                };
                if spmm_side {
                    ctx.plan_spmm_with(&a_dev, op_a, n_out, &opts)
                } else {
                    ctx.plan_dense_sparse_with(&a_dev, op_a, n_out, &opts)
                }
            };
            // A merge of 16-row blocks runs on the Hopper module's 16-deep tile only (a portable
            // warp's rows would span two blocks): on the sm_80 module those cases run unmerged,
            // and the kernel column says so. On sm_90a every merge asked for must be planned.
            let (plan, merge) = match plan_with(c.plan.merge) {
                Err(blocksparse::Error::UnsupportedMerge { .. }) if ctx.arch() == Arch::Sm80 => (plan_with(Some(1)), Some(1)),
                plan => (plan, c.plan.merge),
            };
            let plan = plan.map_err(e)?;
            if let Some(m) = merge
                && plan.merged_rows() != m as usize
            {
                return Err(format!("asked for {m} rows merged per tile, the plan merged {}", plan.merged_rows()));
            }
            // A merged plan asked to reorder must do so where at least two stream rows are
            // heavy (twice the mean length over the non-empty rows, rounded down), and only
            // then.
            if c.plan.reorder == Some(true) && plan.merged_rows() > 1 {
                let (gr, gc) = (c.sm / c.bm, c.sk / c.bk);
                let streams_rows = matches!(c.op, Op::Spmm { op_a: Transpose::No, .. } | Op::DenseSparse { op_a: Transpose::Yes, .. });
                let lens: Vec<usize> = if streams_rows {
                    (0..gr).map(|r| (0..gc).filter(|&k| mask[r * gc + k]).count()).collect()
                } else {
                    (0..gc).map(|k| (0..gr).filter(|&r| mask[r * gc + k]).count()).collect()
                };
                let nonempty = lens.iter().filter(|&&l| l > 0).count().max(1);
                let heavy = (2 * (lens.iter().sum::<usize>() / nonempty)).max(1);
                let expect = lens.iter().filter(|&&l| l >= heavy).count() >= 2;
                if plan.reordered() != expect {
                    return Err(format!("reorder asked: plan reordered {}, heavy stream rows {expect}", plan.reordered()));
                }
            }
            // Skipping as asked, wherever the plan is merged on the Hopper kernels (rows of at
            // most 64), and never elsewhere.
            let can_skip = plan.merged_rows() > 1 && plan.tile().family == blocksparse::abi::KernelFamily::Hopper;
            if let Some(s) = c.plan.skip
                && plan.skips_absent() != (s && can_skip)
            {
                return Err(format!("skip_absent {s} asked: the plan skips {} ({})", plan.skips_absent(), crate::plan_label(&plan)));
            }
            // Asked to split a stream of A's rows (the mixed mask's bands) on the Hopper
            // kernels: the plan must run its window bands merged and its top-16 bands unmerged.
            let streams_rows = matches!(c.op, Op::Spmm { op_a: Transpose::No, .. } | Op::DenseSparse { op_a: Transpose::Yes, .. });
            if c.plan.split == Some(true) && streams_rows && ctx.arch() == Arch::Sm90a && plan.split().is_none() {
                return Err(format!("split asked: the plan is not split ({})", crate::plan_label(&plan)));
            }
            // Re-blocked as asked, where A's shape allows (rows and columns multiples of 128),
            // and never where it does not or was not asked.
            if let Some(asked) = c.plan.coarse {
                let fits = c.sm.is_multiple_of(128) && c.sk.is_multiple_of(128);
                if plan.coarse_a() != (asked && fits) {
                    return Err(format!("coarse_a {asked} asked (shape allows: {fits}): the plan re-blocked {}", plan.coarse_a()));
                }
            }
            kernel = crate::plan_label(&plan);
            for _ in 0..2 {
                let mut out = Dense::<O>::new(ctx, c.batch, c_rows, c_cols, c_layout, c0.clone())?;
                if spmm_side {
                    ctx.spmm(&plan, c.alpha, &a_dev, dense.view(), c.beta, out.view_mut()).map_err(e)?;
                } else {
                    ctx.dense_sparse(&plan, c.alpha, dense.view(), &a_dev, c.beta, out.view_mut()).map_err(e)?;
                }
                // Storage order → logical row-major, matrix by matrix.
                results.push(out.download_logical(ctx)?);
            }
        }
        Op::Sddmm { x, y } => {
            let k = c.n;
            let pattern = Bsr::from_block_mask(c.sm, c.sk, block, &mask, vec![O::zero(); nnzb * c.bm * c.bk]).map_err(e)?;
            let xd = Dense::<T>::random(ctx, c.batch, c.sm, k, x, rng)?;
            let yd = Dense::<T>::random(ctx, c.batch, k, c.sk, y, rng)?;
            let per = nnzb * c.bm * c.bk;
            let c0 = old_output::<O>(c.batch * per, c.beta, rng);
            for b in 0..c.batch {
                want.extend(sddmm_reference(alpha, xd.host(b), yd.host(b), &pattern, beta, &c0[b * per..(b + 1) * per]));
            }
            // The plan is made for a pattern on the device; each run writes a fresh copy of
            // the old values with that pattern.
            let template = ctx.upload_bsr(&pattern).map_err(e)?;
            let plan = ctx.plan_sddmm(&ctx.zeros_bsr_like::<O, O>(&template, c.batch).map_err(e)?, k).map_err(e)?;
            kernel = format!("{:?}{}", plan.tile().family, plan.tile().shape().0);
            for _ in 0..2 {
                let mut out = ctx.zeros_bsr_like::<O, O>(&template, c.batch).map_err(e)?;
                ctx.update_values(&mut out, &c0).map_err(e)?;
                ctx.sddmm(&plan, c.alpha, xd.view(), yd.view(), c.beta, &mut out).map_err(e)?;
                results.push(ctx.download_values(&out).map_err(e)?);
            }
        }
        Op::Spgemm(_) => unreachable!(),
    }
    Ok(outcome(kernel, &results, &want))
}

/// The comparison of a case's two results with each other and with the reference.
fn outcome<O: Element>(kernel: String, results: &[Vec<O>], want: &[f64]) -> Outcome {
    let deterministic = results[0].len() == results[1].len()
        && results[0].iter().zip(&results[1]).all(|(x, y)| bytemuck::bytes_of(x) == bytemuck::bytes_of(y));
    let got = &results[0];
    let non_finite = got.iter().filter(|x| !x.to_f64().is_finite()).count();
    let rel_err = rel_error(got.iter().map(|x| x.to_f64()), want);
    let worst = got
        .iter()
        .zip(want)
        .enumerate()
        .map(|(i, (g, w))| (i, g.to_f64(), *w))
        .max_by(|a, b| (a.1 - a.2).abs().total_cmp(&(b.1 - b.2).abs()))
        .unwrap_or((0, 0.0, 0.0));
    let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs()));
    let bad = got.iter().zip(want).filter(|(g, w)| (g.to_f64() - **w).abs() > 0.05 * scale).count();
    Outcome { kernel, rel_err, non_finite, deterministic, worst, bad }
}

/// A BSR × BSR case: A and B with fresh patterns and values (a batch shares them), C as the
/// case says. The plan's sizes and C's pattern are checked against counts on the host first.
fn run_spgemm<T: InputElement, O: Element>(ctx: &Context, c: &Case, s: Spgemm, rng: &mut TestRng) -> Result<Outcome, String> {
    let e = |e: blocksparse::Error| format!("{e}");
    let (m, k, n, bm, bk, bn) = (c.sm, c.sk, c.n, c.bm, c.bk, s.bn);
    let (mb, kb, nb) = (m / bm, k / bk, n / bn);
    let (alpha, beta) = (c.alpha as f64, c.beta as f64);
    let a_mask = pattern_mask(c.pattern, mb, kb, rng);
    let b_mask = pattern_mask(s.b, kb, nb, rng);
    let random_bsr = |rows: usize, cols: usize, block: BlockShape, mask: &[bool], rng: &mut TestRng| {
        let nnzb = mask.iter().filter(|&&x| x).count();
        Bsr::from_block_mask(rows, cols, block, mask, random_values::<T>(nnzb * block.elems(), rng)).map_err(e)
    };
    let a_mats: Vec<Bsr<T>> = (0..c.batch).map(|_| random_bsr(m, k, BlockShape { bm, bk }, &a_mask, rng)).collect::<Result<_, _>>()?;
    let b_mats: Vec<Bsr<T>> =
        (0..c.batch).map(|_| random_bsr(k, n, BlockShape { bm: bk, bk: bn }, &b_mask, rng)).collect::<Result<_, _>>()?;
    let a_dev = ctx.upload_bsr_batch(&a_mats).map_err(e)?;
    let b_dev = ctx.upload_bsr_batch(&b_mats).map_err(e)?;
    let (prod_rp, prod_ci) = spgemm_product_pattern(&a_mats[0], &b_mats[0]);
    let mut product = vec![false; mb * nb];
    for i in 0..mb {
        for &j in &prod_ci[prod_rp[i] as usize..prod_rp[i + 1] as usize] {
            product[i * nb + j as usize] = true;
        }
    }
    // A masked C: the mask as the pattern of a (zero) C, whose pattern object the plan takes.
    let c_mask: Option<Vec<bool>> = match s.c {
        SpC::Mask(SpMask::Random(d)) => Some(random_mask(mb, nb, d, rng)),
        SpC::Mask(SpMask::Mixed) => Some(
            (0..mb * nb)
                .map(|x| match (x / nb) % 3 {
                    0 => !product[x],
                    1 => product[x] || rng.random_bool(0.3),
                    _ => product[x] && rng.random_bool(0.5),
                })
                .collect(),
        ),
        _ => None,
    };
    let template: Option<DeviceBsr<O>> = match &c_mask {
        Some(mask) => {
            let nnz = mask.iter().filter(|&&x| x).count();
            let bsr = Bsr::from_block_mask(m, n, BlockShape { bm, bk: bn }, mask, vec![O::zero(); nnz * bm * bn]).map_err(e)?;
            Some(ctx.upload_bsr(&bsr).map_err(e)?)
        }
        None => None,
    };
    let out = match (s.c, &template) {
        (SpC::Dense(_), _) => SpgemmOutput::Dense,
        (SpC::Mask(_), Some(t)) => SpgemmOutput::Mask(t.pattern().clone()),
        _ => SpgemmOutput::Product,
    };
    let opts = PlanOptions {
        pair_columns: c.plan.pair,
        warp_rings: c.plan.warp,
        dense_b: c.plan.dense_b,
        coarse_a: c.plan.coarse,
        ..Default::default()
    };
    let size = ctx.spgemm_size_with(&a_dev, &b_dev, &out, &opts).map_err(e)?;
    let plan = ctx.plan_spgemm_with(&a_dev, &b_dev, out, &opts).map_err(e)?;
    if c.plan.pair == Some(true) && plan.tile().family == blocksparse::abi::KernelFamily::Hopper && !plan.pairs_columns() {
        return Err("the plan does not pair the C blocks (its tiles are too short, or one is split)".into());
    }
    if c.plan.warp.is_some_and(|w| w != plan.warp_rings()) {
        return Err("the plan does not run the ring asked for".into());
    }
    if c.plan.dense_b.is_some_and(|d| d != plan.dense_b()) {
        return Err("the plan does not stream B as asked for".into());
    }
    if c.plan.coarse.is_some_and(|r| r != plan.coarse_a()) {
        return Err("the plan does not re-block A as asked for".into());
    }
    // C's blocks as the reference sees them (a block-sparse C).
    let (c_rp, c_ci) = match &template {
        Some(t) => (t.row_ptr().to_vec(), t.col_idx().to_vec()),
        None => (prod_rp, prod_ci),
    };
    // The plan against counts on the host.
    let in_c = |i: usize, j: usize| c_mask.as_ref().is_none_or(|mask| mask[i * nb + j]);
    let (a0, b0) = (&a_mats[0], &b_mats[0]);
    let mut pairs = 0usize;
    for i in 0..mb {
        for p in a0.row_range(i).unwrap_or(0..0) {
            let kk = a0.col_idx()[p] as usize;
            pairs += b0.row_range(kk).unwrap_or(0..0).filter(|&q| in_c(i, b0.col_idx()[q] as usize)).count();
        }
    }
    let c_blocks = if matches!(s.c, SpC::Dense(_)) { mb * nb } else { c_ci.len() };
    let flops = 2.0 * (pairs * bm * bk * bn * c.batch) as f64;
    if plan.size() != size
        || size.pairs != pairs
        || size.c_blocks != c_blocks
        || plan.pairs() != pairs
        || plan.flops() != flops
        || plan.batch() != c.batch
    {
        return Err(format!(
            "plan sizes: spgemm_size {size:?}, plan {:?} (pairs {}, flops {}, batch {}); host count: {pairs} pairs, {c_blocks} C blocks, {flops} flops",
            plan.size(),
            plan.pairs(),
            plan.flops(),
            plan.batch()
        ));
    }
    match (s.c, plan.output_pattern(), &template) {
        (SpC::Dense(_), None, _) => {}
        (SpC::Product, Some(p), _) => {
            if p.row_ptr() != c_rp || p.col_idx() != c_ci || p.block() != (BlockShape { bm, bk: bn }) || (p.nrows(), p.ncols()) != (m, n) {
                return Err("the plan's output pattern is not the product's pattern".into());
            }
        }
        (SpC::Mask(_), Some(p), Some(t)) if std::sync::Arc::ptr_eq(p, t.pattern()) => {}
        _ => return Err("the plan's output pattern is not C's".into()),
    }
    let kernel = crate::bench::spgemm::kernel_label(&plan);
    let mut want = Vec::new();
    let mut results: Vec<Vec<O>> = Vec::new();
    match s.c {
        SpC::Dense(layout) => {
            let c0 = old_output::<O>(c.batch * m * n, c.beta, rng);
            let c0_dense = Dense::<O>::new(ctx, c.batch, m, n, layout, c0.clone())?;
            for (bt, (a, b)) in a_mats.iter().zip(&b_mats).enumerate() {
                want.extend(spgemm_reference(alpha, a, b, beta, c0_dense.host(bt)));
            }
            for _ in 0..2 {
                let mut out = Dense::<O>::new(ctx, c.batch, m, n, layout, c0.clone())?;
                ctx.spgemm(&plan, c.alpha, &a_dev, &b_dev, c.beta, out.view_mut()).map_err(e)?;
                results.push(out.download_logical(ctx)?);
            }
        }
        SpC::Product | SpC::Mask(_) => {
            let per = c_ci.len() * bm * bn;
            let c0 = old_output::<O>(c.batch * per, c.beta, rng);
            for (bt, (a, b)) in a_mats.iter().zip(&b_mats).enumerate() {
                want.extend(spgemm_bsr_reference(alpha, a, b, &c_rp, &c_ci, beta, &c0[bt * per..(bt + 1) * per]));
            }
            for _ in 0..2 {
                let mut out = match &template {
                    Some(t) => ctx.zeros_bsr_like::<O, O>(t, c.batch),
                    None => ctx.spgemm_output::<O>(&plan),
                }
                .map_err(e)?;
                ctx.update_values(&mut out, &c0).map_err(e)?;
                ctx.spgemm_bsr(&plan, c.alpha, &a_dev, &b_dev, c.beta, &mut out).map_err(e)?;
                results.push(ctx.download_values(&out).map_err(e)?);
            }
        }
    }
    Ok(outcome(kernel, &results, &want))
}

/// One line of validate's results: the verdict, the case or check, and what was found.
fn result_line(ok: bool, label: &str, detail: &str) -> String {
    format!("{:<4} {:<92} {}", if ok { "ok" } else { "FAIL" }, label, detail)
}

/// The name of an error's variant, for the typed-error checks.
fn error_kind(e: &blocksparse::Error) -> &'static str {
    use blocksparse::Error::*;
    match e {
        ShapeMismatch { .. } => "ShapeMismatch",
        BatchMismatch { .. } => "BatchMismatch",
        PlanMismatch(_) => "PlanMismatch",
        NotFinite { .. } => "NotFinite",
        _ => "another error",
    }
}

/// Each call's typed error against the one expected (`(what, result, error kind)`): the calls
/// that got another result, or none.
fn expect_errors(checks: &[(&str, blocksparse::Result<()>, &str)]) -> Result<(), String> {
    let wrong: Vec<String> = checks
        .iter()
        .filter(|(_, got, want)| got.as_ref().err().map(error_kind) != Some(*want))
        .map(|(what, got, want)| format!("{what}: {want} expected, got {got:?}"))
        .collect();
    if wrong.is_empty() { Ok(()) } else { Err(wrong.join("; ")) }
}

/// The label of [`spgemm_value_types`] (`--filter spgemm` selects it).
const SPGEMM_TYPES: &str = "spgemm: plans made with f16 values run bf16 ones of the same patterns (records, B dense)";

/// BSR × BSR plans are made for patterns: a plan made with f16 values runs bf16 values of the
/// same pattern objects (`zeros_bsr_like` + `update_values`), on the records and with B
/// streamed dense (16-bit workspace), against the f64 reference.
fn spgemm_value_types(ctx: &Context, seed: u64, tol: f64) -> (bool, String) {
    let run = || -> Result<String, String> {
        let e = |e: blocksparse::Error| e.to_string();
        let mut rng = seeded_rng(seed);
        let (m, k, n, bs) = (16 * 12, 16 * 20, 16 * 18, 16);
        let (ma, mb) = (random_mask(m / bs, k / bs, 0.5, &mut rng), random_mask(k / bs, n / bs, 0.5, &mut rng));
        let count = |mask: &[bool]| mask.iter().filter(|&&x| x).count() * bs * bs;
        let block = BlockShape::square(bs);
        let a16 = Bsr::from_block_mask(m, k, block, &ma, random_values::<f16>(count(&ma), &mut rng)).map_err(e)?;
        let b16 = Bsr::from_block_mask(k, n, block, &mb, random_values::<f16>(count(&mb), &mut rng)).map_err(e)?;
        let abf = Bsr::from_block_mask(m, k, block, &ma, random_values::<bf16>(count(&ma), &mut rng)).map_err(e)?;
        let bbf = Bsr::from_block_mask(k, n, block, &mb, random_values::<bf16>(count(&mb), &mut rng)).map_err(e)?;
        let (a_dev, b_dev) = (ctx.upload_bsr(&a16).map_err(e)?, ctx.upload_bsr(&b16).map_err(e)?);
        let mut a_other = ctx.zeros_bsr_like::<bf16, f16>(&a_dev, 1).map_err(e)?;
        let mut b_other = ctx.zeros_bsr_like::<bf16, f16>(&b_dev, 1).map_err(e)?;
        ctx.update_values(&mut a_other, abf.values()).map_err(e)?;
        ctx.update_values(&mut b_other, bbf.values()).map_err(e)?;
        let zeros = vec![0f32; m * n];
        let want = spgemm_reference(1.0, &abf, &bbf, 0.0, HostMat::row_major(&zeros, m, n));
        let mut errs = Vec::new();
        for dense_b in [false, true] {
            let opts = PlanOptions { dense_b: Some(dense_b), ..Default::default() };
            let plan = ctx.plan_spgemm_with(&a_dev, &b_dev, SpgemmOutput::Dense, &opts).map_err(e)?;
            let mut c = ctx.upload_matrix(m, n, &vec![f32::NAN; m * n]).map_err(e)?;
            ctx.spgemm(&plan, 1.0, &a_other, &b_other, 0.0, &mut c).map_err(e)?;
            let got = ctx.download_matrix(&c).map_err(e)?;
            let err = rel_error(got.iter().map(|&x| x as f64), &want);
            if err.is_nan() || err >= tol {
                return Err(format!("{}: relative error {err:.2e}", crate::bench::spgemm::kernel_label(&plan)));
            }
            errs.push(format!("{} {err:.2e}", crate::bench::spgemm::kernel_label(&plan)));
        }
        Ok(errs.join(", "))
    };
    match run() {
        Ok(d) => (true, d),
        Err(d) => (false, d),
    }
}

/// The label of [`spgemm_gather`] (`--filter spgemm` and `--filter dense-b` select it).
const SPGEMM_GATHER: &str =
    "spgemm dense-b: C's blocks are the dense C's at them, bit for bit (beta 0), one plan for f16 / f32 C and beta != 0";

/// BSR × BSR with B streamed dense into a block-sparse C: with beta 0 the blocks of C (the
/// product's pattern, a mask, a causal mask, one block, an empty mask) are those of the same
/// route's dense C at their places, bit for bit (the gather copies a product the SpMM kernels
/// rounded as they round a dense C), for an f16 and an f32 C through one plan, on merged,
/// unmerged, split and reordered SpMM plans and over A re-blocked into 128×128 blocks; each plan
/// computes only the output tiles that hold C's
/// blocks (fewer than the dense C's for the causal mask and the stripes, one for one block,
/// none for an empty C). Then, through the same plan, beta != 0
/// (the f32 product, scaled by the gather) within f32 rounding of `alpha · P + beta · C`. On
/// the Hopper path the default plan of a 16×16 50 % × 50 % product of 1024 × 1024 × 512 takes
/// the route, on the portable path it keeps the records.
fn spgemm_gather(ctx: &Context, seed: u64) -> (bool, String) {
    fn check<O: Element + Copy>(
        ctx: &Context,
        plans: &[(&str, &blocksparse::SpgemmPlan)],
        dense: &blocksparse::SpgemmPlan,
        (a, b): (&DeviceBsr<f16>, &DeviceBsr<f16>),
        (nan, bits): (O, fn(O) -> u32),
    ) -> Result<usize, String> {
        let e = |e: blocksparse::Error| e.to_string();
        let (m, n) = (a.nrows(), b.ncols());
        let alpha = 0.75;
        let mut cd = ctx.upload_matrix(m, n, &vec![nan; m * n]).map_err(e)?;
        ctx.spgemm(dense, alpha, a, b, 0.0, &mut cd).map_err(e)?;
        let want = ctx.download_matrix(&cd).map_err(e)?;
        let mut compared = 0;
        for (what, plan) in plans {
            let mut c = ctx.spgemm_output::<O>(plan).map_err(e)?;
            let len = c.values_per_matrix();
            if len > 0 {
                ctx.update_values(&mut c, &vec![nan; len]).map_err(e)?;
            }
            ctx.spgemm_bsr(plan, alpha, a, b, 0.0, &mut c).map_err(e)?;
            let got = ctx.download_values(&c).map_err(e)?;
            for (at, place) in block_places(c.pattern(), n) {
                let (g, w) = (got[at], want[place]);
                if bits(g) != bits(w) {
                    let (row, col) = (place / n, place % n);
                    return Err(format!("{what}: C ({row}, {col}), value {at}: {:#x}, the dense C's {:#x}", bits(g), bits(w)));
                }
                compared += 1;
            }
        }
        Ok(compared)
    }
    /// Each element of the blocks of a C of pattern `p` and its place in the dense row-major
    /// `(M, n)` C: `(index in the values, in storage order; index in the dense matrix)`.
    fn block_places(p: &blocksparse::Pattern, n: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let (bm, bn) = (p.block().bm, p.block().bk);
        (0..p.block_rows()).flat_map(move |i| {
            (p.row_ptr()[i] as usize..p.row_ptr()[i + 1] as usize).flat_map(move |q| {
                let j = p.col_idx()[q] as usize;
                (0..bm * bn).map(move |e| (q * bm * bn + e, (i * bm + e / bn) * n + j * bn + e % bn))
            })
        })
    }
    /// The output tiles each plan computes: at most the dense C's, fewer where its C leaves
    /// a tile without blocks (`fewer`), one for a single block, none for an empty C.
    fn tiles(dense: &blocksparse::SpgemmPlan, plans: &[(&str, &blocksparse::SpgemmPlan)], fewer: &[&str]) -> Result<String, String> {
        let all = dense.output_tiles();
        let mut out = vec![format!("dense {all}")];
        for (what, plan) in plans {
            let t = plan.output_tiles();
            let as_expected = match *what {
                "one block" => t == 1,
                "empty mask" => t == 0,
                w if fewer.contains(&w) => t < all,
                _ => t <= all,
            };
            if !as_expected || all == 0 {
                return Err(format!("{what}: the route computes {t} output tiles, a dense C's plan {all}"));
            }
            out.push(format!("{what} {t}"));
        }
        Ok(out.join(", "))
    }
    let run = || -> Result<String, String> {
        let e = |e: blocksparse::Error| e.to_string();
        let mut rng = seeded_rng(seed);
        let (m, k, n, bs) = (16 * 12, 16 * 20, 16 * 18, 16);
        let block = BlockShape::square(bs);
        let from_mask = |rows: usize, cols: usize, mask: &[bool], rng: &mut TestRng| -> Result<DeviceBsr<f16>, String> {
            let nnzb = mask.iter().filter(|&&x| x).count();
            let host = Bsr::from_block_mask(rows, cols, block, mask, random_values::<f16>(nnzb * bs * bs, rng)).map_err(e)?;
            ctx.upload_bsr(&host).map_err(e)
        };
        let bsr = |rows: usize, cols: usize, density: f64, rng: &mut TestRng| {
            let mask = random_mask(rows / bs, cols / bs, density, rng);
            from_mask(rows, cols, &mask, rng)
        };
        // C's masks by block place (row, column).
        let pattern = |rows: usize, cols: usize, keep: &dyn Fn(usize, usize) -> bool, rng: &mut TestRng| {
            let (gr, gc) = (rows / bs, cols / bs);
            from_mask(rows, cols, &(0..gr * gc).map(|i| keep(i / gc, i % gc)).collect::<Vec<_>>(), rng)
        };
        let (a, b, mask) = (bsr(m, k, 0.5, &mut rng)?, bsr(k, n, 0.5, &mut rng)?, bsr(m, n, 0.4, &mut rng)?);
        // Causal (on and below the diagonal: the SpMM plan's tiles right of it hold no block),
        // one block in the last corner, none.
        let causal = pattern(m, n, &|r, c| c <= r, &mut rng)?;
        let corner = pattern(m, n, &|r, c| (r, c) == (m / bs - 1, n / bs - 1), &mut rng)?;
        let none = pattern(m, n, &|_, _| false, &mut rng)?;
        let masked = |p: &DeviceBsr<f16>| SpgemmOutput::Mask(p.pattern().clone());
        let opts = PlanOptions { dense_b: Some(true), ..Default::default() };
        let plan = |a: &DeviceBsr<f16>, b: &DeviceBsr<f16>, out: SpgemmOutput, opts: &PlanOptions| {
            ctx.plan_spgemm_with(a, b, out, opts).map_err(e)
        };
        let dense = plan(&a, &b, SpgemmOutput::Dense, &opts)?;
        let product = plan(&a, &b, SpgemmOutput::Product, &opts)?;
        let (by_mask, by_causal) = (plan(&a, &b, masked(&mask), &opts)?, plan(&a, &b, masked(&causal), &opts)?);
        let (by_corner, empty) = (plan(&a, &b, masked(&corner), &opts)?, plan(&a, &b, masked(&none), &opts)?);
        let plans =
            [("product pattern", &product), ("mask", &by_mask), ("causal", &by_causal), ("one block", &by_corner), ("empty mask", &empty)];
        let f16_bits = (f16::NAN, (|x: f16| x.to_bits() as u32) as fn(f16) -> u32);
        let mut compared =
            check::<f16>(ctx, &plans, &dense, (&a, &b), f16_bits)? + check::<f32>(ctx, &plans, &dense, (&a, &b), (f32::NAN, f32::to_bits))?;
        let mut tiles_seen = vec![tiles(&dense, &plans, &["causal"])?];
        // The same on another SpMM plan kind (`opts`): the dense C's plan, then C's two masks
        // `(fewer, one block)` bit for bit against it (an f32 C too where `f32_c`), and the tiles
        // each computes (the first mask's fewer than the dense C's); the dense C's plan and
        // `label: tiles` back.
        let variant = |(a, b): (&DeviceBsr<f16>, &DeviceBsr<f16>),
                       opts: &PlanOptions,
                       [(fewer, c_fewer), (one, c_one)]: [(&str, &DeviceBsr<f16>); 2],
                       f32_c: bool,
                       label: &str|
         -> Result<(usize, blocksparse::SpgemmPlan, String), String> {
            let dense = plan(a, b, SpgemmOutput::Dense, opts)?;
            let (by_fewer, by_one) = (plan(a, b, masked(c_fewer), opts)?, plan(a, b, masked(c_one), opts)?);
            let plans = [(fewer, &by_fewer), (one, &by_one)];
            let mut compared = check::<f16>(ctx, &plans, &dense, (a, b), f16_bits)?;
            if f32_c {
                compared += check::<f32>(ctx, &plans, &dense, (a, b), (f32::NAN, f32::to_bits))?;
            }
            let seen = format!("{label}: {}", tiles(&dense, &plans, &[fewer])?);
            Ok((compared, dense, seen))
        };
        let mut add = |(n, _, seen): (usize, blocksparse::SpgemmPlan, String)| {
            compared += n;
            tiles_seen.push(seen);
        };
        // The unmerged SpMM plan.
        let unmerged = PlanOptions { merge_rows: Some(1), ..opts };
        add(variant((&a, &b), &unmerged, [("causal", &causal), ("one block", &corner)], false, "unmerged")?);
        // A split SpMM plan (the mixed mask of window and top-16 rows: merged groups on wgmma
        // and unmerged rows, on Hopper), into C's blocks in every third group of 8 block rows
        // and the first 256 columns, and into one block.
        let (m2, k2) = (2048, 2048);
        let a2 = from_mask(m2, k2, &MaskFamily::Mixed.mask(m2 / bs, k2 / bs, &mut rng), &mut rng)?;
        let b2 = bsr(k2, n, 0.5, &mut rng)?;
        let split = PlanOptions { split_rows: Some(true), ..opts };
        let spmm_split = ctx.plan_spmm_with(&a2, Transpose::No, n, &split).map_err(e)?.split().is_some();
        if ctx.arch() == Arch::Sm90a && !spmm_split {
            return Err("the mixed mask's SpMM plan does not split on the Hopper path".into());
        }
        let stripes = pattern(m2, n, &|r, c| (r / 8) % 3 == 0 && c < 16, &mut rng)?;
        let corner2 = pattern(m2, n, &|r, c| (r, c) == (m2 / bs - 1, n / bs - 1), &mut rng)?;
        let masks2 = [("stripes", &stripes), ("one block", &corner2)];
        add(variant((&a2, &b2), &split, masks2, false, if spmm_split { "split" } else { "not split" })?);
        // A merged plan in another order than A's (heavy-tailed rows, the heavy ones merged
        // first: tiles whose rows lie far apart in C), into the stripes and one block.
        let a3 = from_mask(m2, k2, &MaskFamily::Zipf(0.1).mask(m2 / bs, k2 / bs, &mut rng), &mut rng)?;
        let reorder = PlanOptions { reorder_rows: Some(true), split_rows: Some(false), ..opts };
        let spmm3 = ctx.plan_spmm_with(&a3, Transpose::No, n, &reorder).map_err(e)?;
        let reordered = spmm3.merged_rows() > 1 && spmm3.reordered();
        if ctx.arch() == Arch::Sm90a && !reordered {
            return Err("the heavy-tailed mask's SpMM plan is not merged in another order on the Hopper path".into());
        }
        add(variant((&a3, &b2), &reorder, masks2, false, if reordered { "reordered" } else { "in A's order" })?);
        // A re-blocked into 128×128 blocks (the mixed mask's A), into the stripes and one block.
        let coarse = PlanOptions { coarse_a: Some(true), ..opts };
        let re_blocked = variant((&a2, &b2), &coarse, masks2, true, "A re-blocked")?;
        if !re_blocked.1.coarse_a() {
            return Err("the plan does not re-block A as asked for".into());
        }
        add(re_blocked);
        // beta != 0 through the same plan: the f32 product scaled by the gather.
        let (alpha, beta) = (-1.5f32, 0.5f32);
        let mut cd = ctx.zeros_matrix::<f32>(m, n).map_err(e)?;
        ctx.spgemm(&dense, 1.0, &a, &b, 0.0, &mut cd).map_err(e)?;
        let p_dense = ctx.download_matrix(&cd).map_err(e)?;
        let mut c = ctx.spgemm_output::<f32>(&product).map_err(e)?;
        let c0: Vec<f32> = (0..c.values_per_matrix()).map(|_| rng.random_range(-1.0..1.0)).collect();
        ctx.update_values(&mut c, &c0).map_err(e)?;
        ctx.spgemm_bsr(&product, alpha, &a, &b, beta, &mut c).map_err(e)?;
        let got = ctx.download_values(&c).map_err(e)?;
        let mut worst = 0f64;
        for (at, place) in block_places(c.pattern(), n) {
            let want = alpha as f64 * p_dense[place] as f64 + beta as f64 * c0[at] as f64;
            worst = worst.max((got[at] as f64 - want).abs() / want.abs().max(1.0));
        }
        if worst.is_nan() || worst > 1e-6 {
            return Err(format!("beta != 0: relative difference {worst:.2e} from alpha · P + beta · C"));
        }
        // The default's choice, on a shape where the route's fixed costs (densifying B,
        // gathering C) are small beside its dense work (1024 × 1024 × 512: the model puts the
        // route at 0.7 of the records; at the shape above it keeps the records).
        let (a, b) = (bsr(1024, 1024, 0.5, &mut rng)?, bsr(1024, 512, 0.5, &mut rng)?);
        let default = ctx.plan_spgemm(&a, &b, SpgemmOutput::Product).map_err(e)?;
        let hopper = ctx.arch() == Arch::Sm90a;
        if default.dense_b() != hopper {
            return Err(format!(
                "the default plan {} B dense on the {} path",
                if default.dense_b() { "streams" } else { "does not stream" },
                if hopper { "Hopper" } else { "portable" }
            ));
        }
        Ok(format!(
            "{compared} elements equal; tiles computed: {}; beta != 0 within {worst:.1e}; default: {}",
            tiles_seen.join("; "),
            crate::bench::spgemm::kernel_label(&default)
        ))
    };
    match run() {
        Ok(d) => (true, d),
        Err(d) => (false, d),
    }
}

/// The label of [`spgemm_errors`] (`--filter spgemm` selects it).
const SPGEMM_ERRORS: &str = "spgemm: invalid arguments rejected with typed errors before launch, C untouched";

/// BSR × BSR arguments that must be rejected with their typed error before anything is
/// launched: C, filled with a sentinel, must come back unchanged.
fn spgemm_errors(ctx: &Context, seed: u64) -> (bool, String) {
    let run = || -> Result<String, String> {
        let e = |e: blocksparse::Error| e.to_string();
        let mut rng = seeded_rng(seed);
        let mut bsr = |rows: usize, cols: usize, bm: usize, bk: usize| -> Result<Bsr<f16>, String> {
            let block = BlockShape { bm, bk };
            let mask = random_mask(rows / bm, cols / bk, 0.5, &mut rng);
            let nnzb = mask.iter().filter(|&&x| x).count();
            Bsr::from_block_mask(rows, cols, block, &mask, random_values::<f16>(nnzb * block.elems(), &mut rng)).map_err(e)
        };
        let (m, k, n) = (256, 384, 320);
        let (a_host, b_host) = (bsr(m, k, 64, 64)?, bsr(k, n, 64, 64)?);
        let (b_short, b_tall) = (bsr(k - 64, n, 64, 64)?, bsr(k, n, 128, 64)?);
        let (mask_host, mask_wide, mask_low) = (bsr(m, n, 64, 64)?, bsr(m, n + 64, 64, 64)?, bsr(m, n, 32, 64)?);
        let up = |x: &Bsr<f16>| ctx.upload_bsr(x).map_err(e);
        let (a, b, a_again, b_again) = (up(&a_host)?, up(&b_host)?, up(&a_host)?, up(&b_host)?);
        let (b_short, b_tall, mask, mask_wide, mask_low) = (up(&b_short)?, up(&b_tall)?, up(&mask_host)?, up(&mask_wide)?, up(&mask_low)?);
        let b2 = ctx.upload_bsr_batch(&[b_host.clone(), b_host.clone()]).map_err(e)?;
        let dense = ctx.plan_spgemm(&a, &b, SpgemmOutput::Dense).map_err(e)?;
        let product = ctx.plan_spgemm(&a, &b, SpgemmOutput::Product).map_err(e)?;
        let product_again = ctx.plan_spgemm(&a, &b, SpgemmOutput::Product).map_err(e)?;
        let masked = ctx.plan_spgemm(&a, &b, SpgemmOutput::Mask(mask.pattern().clone())).map_err(e)?;
        let dense_b = PlanOptions { dense_b: Some(true), ..Default::default() };
        let streamed = ctx.plan_spgemm_with(&a, &b, SpgemmOutput::Dense, &dense_b).map_err(e)?;
        let streamed_product = ctx.plan_spgemm_with(&a, &b, SpgemmOutput::Product, &dense_b).map_err(e)?;
        let streamed_masked = ctx.plan_spgemm_with(&a, &b, SpgemmOutput::Mask(mask.pattern().clone()), &dense_b).map_err(e)?;
        let sentinel = 3.25f32;
        let mut c_streamed = ctx.spgemm_output::<f32>(&streamed_product).map_err(e)?;
        let streamed_len = c_streamed.values_per_matrix();
        ctx.update_values(&mut c_streamed, &vec![sentinel; streamed_len]).map_err(e)?;
        let mut c_streamed2 = ctx.zeros_bsr_like::<f32, f32>(&c_streamed, 2).map_err(e)?;
        let mut c = ctx.upload_matrix(m, n, &vec![sentinel; m * n]).map_err(e)?;
        let mut c_wide = ctx.upload_matrix(m, n + 8, &vec![sentinel; m * (n + 8)]).map_err(e)?;
        let mut c2 = ctx.upload_matrix_batch(2, m, n, &vec![sentinel; 2 * m * n]).map_err(e)?;
        let mut c_prod = ctx.spgemm_output::<f32>(&product).map_err(e)?;
        let prod_len = c_prod.values_per_matrix();
        ctx.update_values(&mut c_prod, &vec![sentinel; prod_len]).map_err(e)?;
        // C with the same pattern's contents, but another pattern object than the plan's.
        let mut c_other = ctx.spgemm_output::<f32>(&product_again).map_err(e)?;
        let dense_out = || SpgemmOutput::Dense;
        let plan = |a: &DeviceBsr<f16>, b: &DeviceBsr<f16>, out: SpgemmOutput| ctx.plan_spgemm(a, b, out).map(drop);
        let checks: Vec<(&str, blocksparse::Result<()>, &str)> = vec![
            ("plan: B with another K", plan(&a, &b_short, dense_out()), "ShapeMismatch"),
            ("size: B with another K", ctx.spgemm_size(&a, &b_short, &dense_out()).map(drop), "ShapeMismatch"),
            ("plan: B's block height is not A's block width", plan(&a, &b_tall, dense_out()), "ShapeMismatch"),
            ("plan: batch of B is not A's", plan(&a, &b2, dense_out()), "BatchMismatch"),
            ("plan: mask of another width", plan(&a, &b, SpgemmOutput::Mask(mask_wide.pattern().clone())), "ShapeMismatch"),
            ("plan: mask of another block height", plan(&a, &b, SpgemmOutput::Mask(mask_low.pattern().clone())), "ShapeMismatch"),
            (
                "size: B dense, B with another K",
                ctx.spgemm_size_with(&a, &b_short, &SpgemmOutput::Mask(mask.pattern().clone()), &dense_b).map(drop),
                "ShapeMismatch",
            ),
            ("spgemm, B dense: a product-pattern plan", ctx.spgemm(&streamed_product, 1.0, &a, &b, 0.0, &mut c), "PlanMismatch"),
            ("spgemm_bsr, B dense: a dense plan", ctx.spgemm_bsr(&streamed, 1.0, &a, &b, 0.0, &mut c_prod), "PlanMismatch"),
            ("spgemm_bsr, B dense: C not the mask's", ctx.spgemm_bsr(&streamed_masked, 1.0, &a, &b, 0.0, &mut c_prod), "PlanMismatch"),
            (
                "spgemm_bsr, B dense: C of another pattern object",
                ctx.spgemm_bsr(&streamed_product, 1.0, &a, &b, 0.0, &mut c_other),
                "PlanMismatch",
            ),
            (
                "spgemm_bsr, B dense: B of another pattern object",
                ctx.spgemm_bsr(&streamed_product, 1.0, &a, &b_again, 0.0, &mut c_prod),
                "PlanMismatch",
            ),
            (
                "spgemm_bsr, B dense: alpha infinite",
                ctx.spgemm_bsr(&streamed_product, f32::INFINITY, &a, &b, 0.0, &mut c_streamed),
                "NotFinite",
            ),
            ("spgemm_bsr, B dense: beta NaN", ctx.spgemm_bsr(&streamed_product, 1.0, &a, &b, f32::NAN, &mut c_streamed), "NotFinite"),
            (
                "spgemm_bsr, B dense: A of another pattern object",
                ctx.spgemm_bsr(&streamed_product, 1.0, &a_again, &b, 0.0, &mut c_streamed),
                "PlanMismatch",
            ),
            (
                "spgemm_bsr, B dense: C of another batch",
                ctx.spgemm_bsr(&streamed_product, 1.0, &a, &b, 0.0, &mut c_streamed2),
                "BatchMismatch",
            ),
            ("spgemm, B dense: A of another pattern object", ctx.spgemm(&streamed, 1.0, &a_again, &b, 0.0, &mut c), "PlanMismatch"),
            ("spgemm, B dense: C of another width", ctx.spgemm(&streamed, 1.0, &a, &b, 0.0, &mut c_wide), "ShapeMismatch"),
            ("spgemm, B dense: C of another batch", ctx.spgemm(&streamed, 1.0, &a, &b, 0.0, &mut c2), "BatchMismatch"),
            ("spgemm, B dense: beta NaN", ctx.spgemm(&streamed, 1.0, &a, &b, f32::NAN, &mut c), "NotFinite"),
            ("spgemm: A of another pattern object", ctx.spgemm(&dense, 1.0, &a_again, &b, 0.0, &mut c), "PlanMismatch"),
            ("spgemm: B of another pattern object", ctx.spgemm(&dense, 1.0, &a, &b_again, 0.0, &mut c), "PlanMismatch"),
            ("spgemm: a product-pattern plan", ctx.spgemm(&product, 1.0, &a, &b, 0.0, &mut c), "PlanMismatch"),
            ("spgemm: a masked plan", ctx.spgemm(&masked, 1.0, &a, &b, 0.0, &mut c), "PlanMismatch"),
            ("spgemm: C of another width", ctx.spgemm(&dense, 1.0, &a, &b, 0.0, &mut c_wide), "ShapeMismatch"),
            ("spgemm: C of another batch", ctx.spgemm(&dense, 1.0, &a, &b, 0.0, &mut c2), "BatchMismatch"),
            ("spgemm: alpha NaN", ctx.spgemm(&dense, f32::NAN, &a, &b, 0.0, &mut c), "NotFinite"),
            ("spgemm_bsr: a dense plan", ctx.spgemm_bsr(&dense, 1.0, &a, &b, 0.0, &mut c_prod), "PlanMismatch"),
            ("spgemm_bsr: C of another pattern object", ctx.spgemm_bsr(&product, 1.0, &a, &b, 0.0, &mut c_other), "PlanMismatch"),
            ("spgemm_bsr: C not the mask's", ctx.spgemm_bsr(&masked, 1.0, &a, &b, 0.0, &mut c_prod), "PlanMismatch"),
            ("spgemm_bsr: A of another pattern object", ctx.spgemm_bsr(&product, 1.0, &a_again, &b, 0.0, &mut c_prod), "PlanMismatch"),
            ("spgemm_bsr: beta infinite", ctx.spgemm_bsr(&product, 1.0, &a, &b, f32::INFINITY, &mut c_prod), "NotFinite"),
            ("spgemm_output: a dense plan", ctx.spgemm_output::<f32>(&dense).map(drop), "PlanMismatch"),
        ];
        expect_errors(&checks)?;
        let untouched = |v: Vec<f32>| v.iter().all(|&x| x == sentinel);
        if !(untouched(ctx.download_matrix(&c).map_err(e)?)
            && untouched(ctx.download_matrix(&c_wide).map_err(e)?)
            && untouched(ctx.download_matrix(&c2).map_err(e)?)
            && untouched(ctx.download_values(&c_prod).map_err(e)?)
            && untouched(ctx.download_values(&c_streamed).map_err(e)?))
        {
            return Err("an output was written by a call that failed".into());
        }
        Ok(format!("{} invalid calls rejected with their typed errors, outputs untouched", checks.len()))
    };
    match run() {
        Ok(d) => (true, d),
        Err(d) => (false, d),
    }
}

/// The label of [`reblocked_checks`] (`--filter reblocked` selects it).
const SPMM_REBLOCKED: &str = "spmm reblocked: typed errors before launch, C untouched; bf16 values on an f16 plan; two streams";

/// A re-blocked SpMM plan (`PlanOptions::coarse_a`, 32×32 causal A, made with f16 values)
/// rejects, before any launch and leaving C as it was: A of another pattern object, the plan of
/// a dense × sparse product, op(B) of another height, a NaN alpha. It runs bf16 values of the
/// same pattern object (its coarse blocks hold 16-bit bits of either type), against the f64
/// reference. And its coarse workspace is the plan's, one product at a time: two products of
/// the plan with different A values, queued on two streams back to back, give what each gives
/// alone, bit for bit, and the first the f64 reference's.
fn reblocked_checks(ctx: &Context, seed: u64) -> (bool, String) {
    let run = || -> Result<String, String> {
        let e = |e: blocksparse::Error| e.to_string();
        let mut rng = seeded_rng(seed);
        let (m, k, n, bs) = (1024usize, 1024usize, 512usize, 32usize);
        let mask = MaskFamily::Causal.mask(m / bs, k / bs, &mut rng);
        let nnzb = mask.iter().filter(|&&x| x).count();
        let a_host =
            Bsr::from_block_mask(m, k, BlockShape::square(bs), &mask, random_values::<f16>(nnzb * bs * bs, &mut rng)).map_err(e)?;
        let a = ctx.upload_bsr(&a_host).map_err(e)?;
        let a_again = ctx.upload_bsr(&a_host).map_err(e)?;
        let a_bf_host =
            Bsr::from_block_mask(m, k, BlockShape::square(bs), &mask, random_values::<bf16>(nnzb * bs * bs, &mut rng)).map_err(e)?;
        let mut a_bf = ctx.zeros_bsr_like::<bf16, f16>(&a, 1).map_err(e)?;
        ctx.update_values(&mut a_bf, a_bf_host.values()).map_err(e)?;
        let mut a2 = ctx.zeros_bsr_like::<f16, f16>(&a, 1).map_err(e)?;
        ctx.update_values(&mut a2, &random_values::<f16>(nnzb * bs * bs, &mut rng)).map_err(e)?;
        let opts = PlanOptions { coarse_a: Some(true), ..Default::default() };
        let plan = ctx.plan_spmm_with(&a, Transpose::No, n, &opts).map_err(e)?;
        let xs = ctx.plan_dense_sparse_with(&a, Transpose::No, n, &opts).map_err(e)?;
        if !plan.coarse_a() || !xs.coarse_a() {
            return Err("coarse_a Some(true) on a 1024² A: the plan is not re-blocked".into());
        }
        let b_host = random_values::<f16>(k * n, &mut rng);
        let b = ctx.upload_matrix(k, n, &b_host).map_err(e)?;
        let b_bf_host = random_values::<bf16>(k * n, &mut rng);
        let b_bf = ctx.upload_matrix(k, n, &b_bf_host).map_err(e)?;
        let b_short = ctx.upload_matrix(k - bs, n, &random_values::<f16>((k - bs) * n, &mut rng)).map_err(e)?;
        let sentinel = 3.25f32;
        let mut c = ctx.upload_matrix(m, n, &vec![sentinel; m * n]).map_err(e)?;
        let checks: Vec<(&str, blocksparse::Result<()>, &str)> = vec![
            ("A of another pattern object", ctx.spmm(&plan, 1.0, &a_again, &b, 0.0, &mut c), "PlanMismatch"),
            ("a dense x sparse plan", ctx.spmm(&xs, 1.0, &a, &b, 0.0, &mut c), "PlanMismatch"),
            ("op(B) of another height", ctx.spmm(&plan, 1.0, &a, &b_short, 0.0, &mut c), "ShapeMismatch"),
            ("alpha NaN", ctx.spmm(&plan, f32::NAN, &a, &b, 0.0, &mut c), "NotFinite"),
        ];
        expect_errors(&checks)?;
        if !ctx.download_matrix(&c).map_err(e)?.iter().all(|&x| x == sentinel) {
            return Err("C was written by a call that failed".into());
        }
        // Each product alone, then both queued at once on two streams.
        let alone = |a: &DeviceBsr<f16>| -> Result<Vec<f32>, String> {
            let mut c = ctx.upload_matrix(m, n, &vec![f32::NAN; m * n]).map_err(e)?;
            ctx.spmm(&plan, 1.0, a, &b, 0.0, &mut c).map_err(e)?;
            ctx.download_matrix(&c).map_err(e)
        };
        let (want1, want2) = (alone(&a)?, alone(&a2)?);
        let other = ctx.with_stream(ctx.cuda().new_stream().map_err(|x| x.to_string())?).map_err(e)?;
        let mut c1 = ctx.upload_matrix(m, n, &vec![f32::NAN; m * n]).map_err(e)?;
        let mut c2 = other.upload_matrix(m, n, &vec![f32::NAN; m * n]).map_err(e)?;
        ctx.synchronize().map_err(e)?;
        other.synchronize().map_err(e)?;
        ctx.spmm(&plan, 1.0, &a, &b, 0.0, &mut c1).map_err(e)?;
        other.spmm(&plan, 1.0, &a2, &b, 0.0, &mut c2).map_err(e)?;
        let (got1, got2) = (ctx.download_matrix(&c1).map_err(e)?, other.download_matrix(&c2).map_err(e)?);
        let same = |x: &[f32], y: &[f32]| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits());
        if !(same(&got1, &want1) && same(&got2, &want2)) {
            return Err("two products of one re-blocked plan on two streams differ from each alone".into());
        }
        // The first product against the f64 reference (its result is the others', bit for bit).
        let zeros = vec![0.0f32; m * n];
        let want = spmm_reference(1.0, &a_host, Transpose::No, HostMat::row_major(&b_host, k, n), 0.0, HostMat::row_major(&zeros, m, n));
        let err = rel_error(got1.iter().map(|&x| x as f64), &want);
        // The f16 plan over bf16 values.
        let mut c_bf = ctx.upload_matrix(m, n, &vec![f32::NAN; m * n]).map_err(e)?;
        ctx.spmm(&plan, 1.0, &a_bf, &b_bf, 0.0, &mut c_bf).map_err(e)?;
        let got_bf = ctx.download_matrix(&c_bf).map_err(e)?;
        let want_bf =
            spmm_reference(1.0, &a_bf_host, Transpose::No, HostMat::row_major(&b_bf_host, k, n), 0.0, HostMat::row_major(&zeros, m, n));
        let err_bf = rel_error(got_bf.iter().map(|&x| x as f64), &want_bf);
        if err >= 1e-2 || err_bf >= 1e-2 {
            return Err(format!("rel. error {err:.2e} (f16), {err_bf:.2e} (bf16) against the f64 reference"));
        }
        Ok(format!(
            "{} invalid calls rejected, C untouched; bf16 rel. err {err_bf:.2e}; two streams bit for bit, rel. err {err:.2e}",
            checks.len()
        ))
    };
    match run() {
        Ok(d) => (true, d),
        Err(d) => (false, d),
    }
}

fn dispatch(ctx: &Context, c: &Case, rng: &mut TestRng) -> Result<Outcome, String> {
    use DType::*;
    match (c.input, c.output) {
        (F16, F16) => run_case::<f16, f16>(ctx, c, rng),
        (F16, Bf16) => run_case::<f16, bf16>(ctx, c, rng),
        (F16, F32) => run_case::<f16, f32>(ctx, c, rng),
        (Bf16, F16) => run_case::<bf16, f16>(ctx, c, rng),
        (Bf16, Bf16) => run_case::<bf16, bf16>(ctx, c, rng),
        (Bf16, F32) => run_case::<bf16, f32>(ctx, c, rng),
        (F32, _) => Err("f32 inputs are not supported".into()),
    }
}

pub fn run(args: Args) -> Result<bool, String> {
    let ctx = crate::open_context(args.path.into())?;
    let seed = args.seed.unwrap_or_else(|| rand::rng().random());
    println!(
        "validate: {} (cc {}.{}, {} SMs), module {:?}, seed {seed}",
        ctx.device_name(),
        ctx.compute_capability().0,
        ctx.compute_capability().1,
        ctx.sm_count(),
        ctx.arch()
    );
    let all: Vec<Case> = cases().into_iter().filter(|c| args.filter.as_deref().is_none_or(|f| c.label.contains(f))).collect();
    let bar = ProgressBar::new(all.len() as u64);
    bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()));
    let mut rows = Vec::new();
    let (mut passed, mut failed) = (0, 0);
    for (i, c) in all.iter().enumerate() {
        bar.set_message(c.label.clone());
        let mut rng = seeded_rng(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let (ok, detail) = match dispatch(&ctx, c, &mut rng) {
            Ok(o) => {
                let ok = o.rel_err < args.tol && o.non_finite == 0 && o.deterministic;
                let mut d = format!(
                    "{:<10} {:.2e}  non-finite {}  {}",
                    o.kernel,
                    o.rel_err,
                    o.non_finite,
                    if o.deterministic { "bitwise-repeatable" } else { "NOT REPEATABLE" }
                );
                if !ok {
                    d += &format!("  worst: element {} got {} want {}; {} elements off", o.worst.0, o.worst.1, o.worst.2, o.bad);
                }
                (ok, d)
            }
            Err(err) => (false, format!("error: {err}")),
        };
        if ok {
            passed += 1
        } else {
            failed += 1
        }
        rows.push(result_line(ok, &c.label, &detail));
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!(
        "{:<4} {:<92} kernel     rel. error",
        "", "case (op layouts, sparse shape, dense dim, block, dtypes, pattern, alpha, beta, batch)"
    );
    for r in &rows {
        println!("{r}");
    }
    // The checks after the cases' table, each counted and printed as it ends.
    let mut report = |label: &str, (ok, detail): (bool, String)| {
        if ok {
            passed += 1
        } else {
            failed += 1
        }
        println!("{}", result_line(ok, label, &detail));
    };
    if args.filter.is_none() {
        report("objects of device 0 passed to device 1's context", cross_device(&ctx));
        let checks = [
            ("stream ordering: C written on s1, read on s2 through cudarc, no manual sync", crate::streams::stream_ordering(&ctx, seed)),
            ("caller's buffers: int64 device parts, offset views, typed errors", crate::streams::caller_buffers(&ctx, seed ^ 1)),
            ("padded matrices: write_matrix / download_matrix over from_slice", crate::streams::padded_round_trip(&ctx, seed ^ 2)),
        ];
        for (label, result) in checks {
            report(label, result);
        }
    }
    if args.filter.as_deref().is_none_or(|f| SPGEMM_ERRORS.contains(f)) {
        report(SPGEMM_ERRORS, spgemm_errors(&ctx, seed ^ 3));
    }
    if args.filter.as_deref().is_none_or(|f| SPGEMM_TYPES.contains(f)) {
        report(SPGEMM_TYPES, spgemm_value_types(&ctx, seed ^ 4, args.tol));
    }
    if args.filter.as_deref().is_none_or(|f| SPMM_REBLOCKED.contains(f)) {
        report(SPMM_REBLOCKED, reblocked_checks(&ctx, seed ^ 6));
    }
    if args.filter.as_deref().is_none_or(|f| SPGEMM_GATHER.contains(f)) {
        report(SPGEMM_GATHER, spgemm_gather(&ctx, seed ^ 5));
    }
    if !args.no_examples && args.filter.is_none() {
        for (name, ok, detail) in run_examples() {
            report(&format!("example {name}"), (ok, detail));
        }
    }
    println!("{passed} passed, {failed} failed");
    Ok(failed == 0)
}
