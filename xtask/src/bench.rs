//! `cargo xtask bench`: the block-sparse products and dense cuBLAS on the same shapes in one
//! run. Each measurement: warm-up (at least `--warmup-ms` of launches, so that every kernel is
//! timed at the clocks the board sustains under its power cap, as PyTorch's `do_bench` times
//! the peer), then at least `reps` launches spanning at least `--timed-ms`, queued back to
//! back, each bracketed by its own CUDA events (GPU time; `--synced` waits for each), median
//! reported. Dense operands
//! are random (never zeros) and made once per shape. Every ratio to dense cuBLAS is against the
//! fastest dense timing of its shape in the run (dense is power-bound and drifts with the
//! board's state more than the sparse kernels do: conservative ratios).
//!
//! Suites (flags add to the default plain-SpMM sweep):
//! - default: `C = A·B` for each block size × density (× `--skewed`, `--structured` masks;
//!   `--masks`: the families of real workloads, `testgen::MaskFamily::REAL`, with PyTorch on the
//!   same pattern under `--peers`);
//! - `--ops`: every op and layout on the uniform masks: SpMM with op(A) ∈ {A, Aᵀ}, op(B) ∈ {B,
//!   Bᵀ}, C row- or column-major; dense × sparse in its four transpose combinations; SDDMM with
//!   X and Y in either layout; each SpMM-like row also as a time ratio to plain SpMM on the same
//!   pattern, re-timed right before it (the same clock state: under sustained load the GPU's
//!   clocks follow its power cap), dense cuBLAS re-timed before each SDDMM row;
//! - `--transposed`: each plain case again as `Aᵀ · B`, A stored transposed so that op(A) has the
//!   case's pattern (the same work through the kernels' streams of Aᵀ);
//! - `--batched`: 16 matrices of 2048³ sharing one pattern (SpMM and SDDMM), against dense
//!   cuBLAS strided-batched GEMM on the same shapes;
//! - `--spgemm`: BSR × BSR at M×N×K (`bench_spgemm.rs`): uniform 12.5 % and 50 %, top-16 blocks
//!   per row and a banded A times a random B, at `--spgemm-blocks` (64 and 128), C dense and C
//!   at the product's pattern; against dense cuBLAS and the roof of each case (max of flops at
//!   the dense rate and A + B + C bytes at the DRAM bandwidth; both measured right before each
//!   row, the fastest of the run used); with `--peers`, PyTorch's CSR × CSR on the same
//!   patterns;
//! - `--peers`: PyTorch's Triton BSR kernels on the same cases (default parameters and, unless
//!   `--no-tune`, tuned for this GPU by `tune_bsr_dense_addmm`, cached in `--peer-cache`), and
//!   PyTorch's CSR × CSR (cuSPARSE) on the SpGEMM cases.
//!
//! The JSON (`--json`) holds the rows and what is needed to place and reproduce them: GPU,
//! compute capability, CUDA driver, git commit (at run time and at build time), seed (`--seed`
//! draws the same operands and masks again). The charts of `plot.rs` are written beside it.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use blocksparse::{
    BlockShape, Bsr, Context, DType, DeviceBsr, DeviceMatrix, InputElement, KernelPath, Layout, MatMut, MatRef, PlanOptions, Transpose,
};
use blocksparse_testkit::dense::DenseGemm;
use blocksparse_testkit::testgen::{
    MaskFamily, TestRng, banded_mask, block_diagonal_mask, exact_mask, random_values, seeded_rng, skewed_mask,
};
use half::{bf16, f16};
use indicatif::{ProgressBar, ProgressStyle};
use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::{DTypeArg, PathArg};

#[path = "bench_spgemm.rs"]
pub mod spgemm;
pub use spgemm::SpgemmRow;

#[derive(clap::Args)]
pub struct Args {
    /// Kernel path.
    #[arg(long, value_enum, default_value_t = PathArg::Auto)]
    path: PathArg,
    #[arg(long, default_value_t = 8192)]
    m: usize,
    #[arg(long, default_value_t = 8192)]
    n: usize,
    #[arg(long, default_value_t = 8192)]
    k: usize,
    /// Square block sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "32,64,128")]
    blocks: Vec<usize>,
    /// Block densities, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0.125")]
    densities: Vec<f64>,
    /// Input dtypes, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "f16")]
    dtypes: Vec<DTypeArg>,
    /// Also time a skewed pattern (a few block rows hold half the blocks) for each case.
    #[arg(long)]
    skewed: bool,
    /// Also time banded and block-diagonal patterns of the same density for each case.
    #[arg(long)]
    structured: bool,
    /// Also time the mask families of real workloads (causal, sliding window ±8 blocks,
    /// block-diagonal in 8 groups, BigBird-like, heavy-tailed rows at ~10 %, top-16 blocks per
    /// row) at each block size, once (with the first density); each row prints its own density.
    #[arg(long)]
    masks: bool,
    /// Also time every op and layout (see the module docs).
    #[arg(long)]
    ops: bool,
    /// Also time the batched cases (16 × 2048³).
    #[arg(long)]
    batched: bool,
    /// Also time BSR × BSR (SpGEMM) at M×N×K: uniform 12.5 % × 12.5 % and 50 % × 50 %, top-16
    /// blocks per row on both, banded A (12.5 %) × uniform B (12.5 %), at each of
    /// --spgemm-blocks, C dense and C at the product's pattern; against dense cuBLAS and each
    /// case's roof (max of flops ÷ dense rate and A + B + C bytes ÷ DRAM bandwidth of a 1 GiB
    /// copy, both timed right before each row; the fastest of the run used). With --peers:
    /// PyTorch CSR × CSR on the same patterns. Add --no-plain to time only these.
    #[arg(long)]
    spgemm: bool,
    /// Square block sizes of the SpGEMM cases, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "64,128")]
    spgemm_blocks: Vec<usize>,
    /// With --spgemm: also time uniformly random A and B at these block densities (cases
    /// `uniform<d> x uniform<d>` after the four), e.g. to place a planner threshold.
    #[arg(long, value_delimiter = ',')]
    spgemm_uniform: Vec<f64>,
    /// With --peers --spgemm: the longest a PyTorch SpGEMM case may take, in seconds (each case
    /// runs in its own python3, killed after this; the table then says "timeout").
    #[arg(long, default_value_t = 90)]
    peer_timeout: u64,
    /// Skip the plain SpMM sweep (with --ops, --batched or --spgemm).
    #[arg(long)]
    no_plain: bool,
    /// Also time plain SpMM (and, with --spgemm, BSR × BSR: rows "G<g>") with these N-tile
    /// group sizes instead of the planner's; 0: the planner's again (row "G0", the same plan at
    /// a later row position: the first row of a case reads slow, perf notes v36).
    #[arg(long, value_delimiter = ',')]
    groups: Vec<u32>,
    /// With --spgemm: also time each case with C blocks paired in column order
    /// (`PlanOptions::pair_columns = Some(false)`; rows "unpaired", and "G<g> unpaired" per
    /// `--groups` size).
    #[arg(long)]
    unpaired: bool,
    /// With --spgemm: also time each case (C dense and at the product's pattern) on both
    /// routes, streaming the records (`PlanOptions::dense_b = Some(false)`, rows "records")
    /// and with B streamed dense into the SpMM kernels (`Some(true)`), A as stored (rows "B
    /// dense", `PlanOptions::coarse_a = Some(false)`; the kernel column says `/B`) and
    /// re-blocked into 128×128 blocks where its shape allows (rows "B dense c", `Some(true)`;
    /// `/Bc`).
    #[arg(long)]
    routes: bool,
    /// With --spgemm: also time each case into a block-sparse C with a causal mask (C's blocks
    /// on and below the diagonal, `SpgemmOutput::Mask`; rows "bsr causal"): a masked product,
    /// whose plans compute only the pairs (records) or output tiles (B dense) inside the mask.
    #[arg(long)]
    spgemm_causal: bool,
    /// Also time plain SpMM with these block rows merged per tile (`PlanOptions::merge_rows`;
    /// 1: never merged) instead of the planner's choice, where the kernels can (rows "spmm
    /// M<m>"; the kernel column says `/m` for a merged plan).
    #[arg(long, value_delimiter = ',')]
    merge: Vec<u32>,
    /// Also time plain SpMM with the planner's choice kept in A's row order (row "spmm R0") and
    /// each --merge with the heavy rows merged first (`PlanOptions::reorder_rows`, rows "spmm
    /// M<m>R"; the kernel column says `r` for a reordered plan).
    #[arg(long)]
    reorder: bool,
    /// Also time each plain SpMM case as a stream of Aᵀ: A stored transposed (its mask
    /// transposed), so that op(A) = Aᵀ has the case's pattern and `Aᵀ · B` does the same work
    /// (row "spmm At", the planner's choice, and "spmm At M<m>" for each --merge; with --masks,
    /// every family through the merged plans of the streams of Aᵀ).
    #[arg(long)]
    transposed: bool,
    /// Also time plain SpMM never split and split wherever the model finds a merged and an
    /// unmerged part (`PlanOptions::split_rows`: rows "spmm P0" / "spmm P1"; the kernel column
    /// says `+tile:rows` for the unmerged part of a split plan).
    #[arg(long)]
    splits: bool,
    /// Also time plain SpMM (and with --transposed its stream of Aᵀ) with A as stored and
    /// re-blocked into 128×128 blocks where its shape allows (`PlanOptions::coarse_a`: rows
    /// "spmm C0" / "spmm C1", "spmm At C0" / "spmm At C1"; the kernel column says `/c` for a
    /// re-blocked plan).
    #[arg(long)]
    reblock: bool,
    /// With --masks: also time the mixed mask (bands of window ±8 rows and of top-16 rows,
    /// `MaskFamily::Mixed`) at each block size.
    #[arg(long)]
    mixed: bool,
    /// Also time plain SpMM with the consumers of merged Hopper plans never skipping the
    /// stages their rows lack and always skipping them (`PlanOptions::skip_absent`: rows
    /// "spmm S0" / "spmm S1", and "M<m>S0" / "M<m>S1" for each --merge; the kernel column says
    /// `s` for a skipping plan).
    #[arg(long)]
    skips: bool,
    /// Also run PyTorch's BSR kernels on the same cases (python3 with torch and triton), and
    /// with --spgemm its CSR × CSR product (torch.sparse.mm, cuSPARSE) on the same patterns.
    #[arg(long)]
    peers: bool,
    /// With --peers: PyTorch's default parameters only, not also its kernel tuned for this GPU
    /// (by default each plain SpMM case with a peer is timed both ways; tuning a case that
    /// --peer-cache lacks takes 20–180 s).
    #[arg(long, overrides_with = "tune")]
    no_tune: bool,
    /// The default since 2026-11-27 (kept for older command lines): tune as well.
    #[arg(long, hide = true, overrides_with = "no_tune")]
    tune: bool,
    /// Cache of PyTorch's tuned parameters (read and extended across runs).
    #[arg(long, default_value = "target/torch_tuned.json")]
    peer_cache: String,
    /// Timed launches per measurement, at least (median reported; see --timed-ms).
    #[arg(long, default_value_t = 50)]
    reps: usize,
    /// Wait for each timed launch before queuing the next, so that every time also holds the
    /// host's launch latency (default: launches queued back to back, each bracketed by its own
    /// pair of events, i.e. GPU time). The timer of the runs before 2026-11-25 is `--synced
    /// --warmup-ms 0`.
    #[arg(long)]
    synced: bool,
    /// Idle time before each measurement's warm-up, in ms. For A/Bs of variants in one process
    /// with `--warmup-ms 0`: timed in bursts, a row timed right after others ran up to 13 %
    /// slower than the same plan timed first, as the board had reached its power cap (perf notes
    /// v28). With the default warm-up the timed launches run at the capped clocks anyway.
    #[arg(long, default_value_t = 0)]
    settle_ms: u64,
    /// Warm-up before each measurement: launches back to back for at least this many ms (and at
    /// least 5 launches; longer where one launch is long). Under sustained load the H100 holds
    /// its clocks under its power cap, where PyTorch's timer measures the peer (its
    /// `do_bench`, then `do_bench_cudagraph` right after): dense cuBLAS, ours and PyTorch are
    /// then all timed at sustained clocks. 0: a burst after 5 launches, which ran the 8192³ rows
    /// 5–21 % faster (perf notes v28). 1000 since v32: with 100 ms (v28–v31) the rows of one
    /// case read up to 19 % apart for the same plan with their position, the first ones after
    /// the host's pause between cases above the capped clocks and those about a second later in
    /// the power controller's dip; with 1000 ms the same plan reads within ±2 % in every row.
    #[arg(long, default_value_t = 1000)]
    warmup_ms: u64,
    /// Least span of the timed launches, in ms (with a warm-up): more than --reps launches where
    /// they would take less, so that the median covers the capped clocks' swings.
    #[arg(long, default_value_t = 50)]
    timed_ms: u64,
    /// Seed of the random operands and masks (default: fresh, printed and recorded in the JSON).
    #[arg(long)]
    seed: Option<u64>,
    /// Where to write the JSON results (the charts go beside it, `.svg`).
    #[arg(long, default_value = "target/bench.json")]
    json: String,
    /// Do not draw the charts.
    #[arg(long)]
    no_plot: bool,
}

/// One measurement. Read back by `plot.rs`, also from older files: missing fields take their
/// defaults (`op` "spmm", `batch` 1) and the old names `bsr_ms` / `bsr_tflops` are accepted.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
#[serde(default)]
pub struct Row {
    #[serde(default = "default_op")]
    pub op: String,
    pub dtype: String,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    #[serde(default = "default_batch")]
    pub batch: usize,
    pub block: usize,
    pub kernel: String,
    pub pattern: String,
    pub density: f64,
    pub nnzb: usize,
    #[serde(alias = "bsr_ms")]
    pub ms: f64,
    /// Effective TFLOP/s: nonzero blocks' work only.
    #[serde(alias = "bsr_tflops")]
    pub tflops: f64,
    pub dense_ms: f64,
    pub dense_tflops: f64,
    /// Effective TFLOP/s over dense TFLOP/s (same shapes, the fastest dense timing of the run).
    pub ratio_to_dense: f64,
    /// Dense time over our time.
    pub speedup: f64,
    /// SpMM-like ops: our time over plain SpMM's on the same pattern.
    pub vs_plain: Option<f64>,
    /// PyTorch, default parameters (GPU time, CUDA graph), effective TFLOP/s.
    pub peer_tflops: Option<f64>,
    /// PyTorch tuned for this GPU.
    pub peer_tuned_tflops: Option<f64>,
    /// Ours over PyTorch tuned.
    pub ours_over_tuned: Option<f64>,
    /// Host time of the row's plan (`plan_spmm_with`, `plan_dense_sparse`, `plan_sddmm`: the
    /// pattern's work list and its upload), the median of [`PLAN_REPS`] plans.
    pub plan_ms: Option<f64>,
    /// The same case for the peers' script.
    #[serde(skip)]
    pub peer_case: Option<serde_json::Value>,
}

impl Row {
    /// Sets the dense cuBLAS fields from a dense time `dense_ms` on the row's shape: its rate,
    /// the row's ratio to it and the speedup over it.
    fn set_dense(&mut self, dense_ms: f64) {
        self.dense_ms = dense_ms;
        self.dense_tflops = tflops(2.0 * (self.batch * self.m * self.n * self.k) as f64, dense_ms);
        self.ratio_to_dense = self.tflops / self.dense_tflops;
        self.speedup = dense_ms / self.ms;
    }
}

fn default_op() -> String {
    "spmm".into()
}

fn default_batch() -> usize {
    1
}

/// A bench run: where it ran, from which code, and its rows. Read back by `plot.rs` (fields
/// that older files lack take their defaults).
#[derive(Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Report {
    pub gpu: String,
    pub compute_capability: (i32, i32),
    pub module: String,
    /// CUDA driver API version (`cuDriverGetVersion`), e.g. "12.8".
    pub cuda_driver: String,
    /// NVIDIA driver version from `nvidia-smi`, when it could be run.
    pub nvidia_driver: Option<String>,
    /// `$BLOCKSPARSE_COMMIT` when set, else `git rev-parse HEAD` where bench ran ("-dirty"
    /// when `git status --porcelain` listed changes), else "unknown". (A copy of the tree on
    /// another machine may carry a stale `.git`: set the variable there, or read
    /// `build_commit`.)
    pub commit: String,
    /// The commit this binary was built from (`build.rs`, same rules, short hash).
    pub build_commit: String,
    /// Seed of the random operands and masks (`--seed` reproduces them).
    pub seed: Option<u64>,
    /// First `Context::new` + first SpMM of a process, driver cache off (`coldstart.rs`).
    pub cold_start_ms: f64,
    pub unix_time: u64,
    pub reps: usize,
    /// `--synced`: each timed launch waited for before the next was queued (host launch latency
    /// included); false: queued back to back (GPU time).
    #[serde(default)]
    pub synced: bool,
    /// `--warmup-ms` (0 in reports from before it existed: 5 warm-up launches only).
    #[serde(default)]
    pub warmup_ms: u64,
    /// `--settle-ms`.
    #[serde(default)]
    pub settle_ms: u64,
    /// `--timed-ms`.
    #[serde(default)]
    pub timed_ms: u64,
    /// Every dense cuBLAS timing of the plain, ops and batched suites, in order: `(batch, m, n,
    /// k, ms)` (each ratio is against the fastest of its shape).
    #[serde(default)]
    pub dense_timings: Vec<(usize, usize, usize, usize, f64)>,
    pub rows: Vec<Row>,
    /// `--spgemm`: the BSR × BSR rows (`bench_spgemm.rs`: each with the fastest dense cuBLAS
    /// time and the highest DRAM bandwidth of the run's rows, and its roof from them).
    pub spgemm: Vec<SpgemmRow>,
}

/// Runs `cmd args` and returns its trimmed stdout when it succeeds.
fn command_output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit of the working directory (see [`Report::commit`]).
fn run_commit() -> String {
    if let Some(c) = std::env::var("BLOCKSPARSE_COMMIT").ok().filter(|c| !c.is_empty()) {
        return c;
    }
    match command_output("git", &["rev-parse", "HEAD"]).filter(|h| !h.is_empty()) {
        Some(head) => {
            let dirty = command_output("git", &["status", "--porcelain"]).is_some_and(|s| !s.is_empty());
            if dirty { format!("{head}-dirty") } else { head }
        }
        None => "unknown".into(),
    }
}

/// The CUDA driver API version, e.g. "12.8" (the driver library is known to be loadable: a
/// context is open).
fn cuda_driver_version() -> String {
    use blocksparse::cudarc::driver::sys;
    let mut v: std::ffi::c_int = 0;
    // SAFETY: writes one int; the driver library was loaded by the open context.
    let r = unsafe { sys::cuDriverGetVersion(&mut v) };
    if r == sys::CUresult::CUDA_SUCCESS { format!("{}.{}", v / 1000, (v % 1000) / 10) } else { format!("unknown ({r:?})") }
}

pub(crate) type Res<T> = Result<T, String>;

fn err(e: blocksparse::Error) -> String {
    e.to_string()
}

/// How [`time_ms`] measures: `n` timed launches after `settle_ms` idle and a warm-up of at least
/// 5 launches and `warmup_ms`, `synced` as `--synced`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reps {
    pub n: usize,
    pub synced: bool,
    /// Idle ms before the warm-up (`--settle-ms`).
    pub settle_ms: u64,
    /// Least warm-up, in ms of launches (`--warmup-ms`).
    pub warmup_ms: u64,
    /// Least span of the timed launches, in ms (`--timed-ms`; with a warm-up only).
    pub timed_ms: u64,
}

impl Args {
    /// `--groups` as N-tile group options: each size, 0 as `None` (the planner's group).
    pub(crate) fn group_choices(&self) -> impl Iterator<Item = (u32, Option<u32>)> + '_ {
        self.groups.iter().map(|&g| (g, (g > 0).then_some(g)))
    }

    /// Whether PyTorch's kernel is tuned too (`--no-tune` not given, or `--tune` after it).
    pub(crate) fn tunes(&self) -> bool {
        self.tune || !self.no_tune
    }

    pub(crate) fn timing(&self) -> Reps {
        Reps { n: self.reps, synced: self.synced, settle_ms: self.settle_ms, warmup_ms: self.warmup_ms, timed_ms: self.timed_ms }
    }
}

/// Median GPU time, in ms, of at least `reps.n` runs of `f` spanning at least `reps.timed_ms`,
/// after the warm-up (at least 5 runs and `reps.warmup_ms` of them: the board is then at the
/// clocks it holds under a sustained load). Each run is bracketed by its own pair of CUDA
/// events. By default the runs are queued back to back: the host gets ahead
/// of the GPU after the first one, so an event pair holds the run's kernels and the GPU's gaps
/// between them, not the host's launch latency (what an application that queues its work sees;
/// the PyTorch peer is timed on GPU time too, through CUDA graphs). With `reps.synced` the host
/// waits for each run before queuing the next, and every time also holds the latency of
/// launching onto an idle stream (perf notes v21: 0–2 % of most 8192³ rows, 7–8 % of the
/// shortest).
fn time_ms(ctx: &Context, reps: Reps, mut f: impl FnMut(usize) -> Res<()>) -> Res<f64> {
    use std::time::{Duration, Instant};
    let e = |e: blocksparse::cudarc::driver::DriverError| e.to_string();
    let cu = ctx.cuda();
    if reps.settle_ms > 0 {
        ctx.stream().synchronize().map_err(e)?;
        std::thread::sleep(Duration::from_millis(reps.settle_ms));
    }
    for i in 0..5 {
        f(i)?;
    }
    // Launches until `warmup_ms` have passed, the GPU kept busy throughout: an event after every
    // fourth launch, and the host waits on the one from two batches back (at most 8 queued).
    let warm = Instant::now();
    let mut i = 5;
    let mut marks = std::collections::VecDeque::new();
    while warm.elapsed() < Duration::from_millis(reps.warmup_ms) {
        f(i)?;
        i += 1;
        if i % 4 == 0 {
            marks.push_back(ctx.stream().record_event(None).map_err(e)?);
            if marks.len() > 2
                && let Some(m) = marks.pop_front()
            {
                m.synchronize().map_err(e)?;
            }
        }
    }
    // Enough timed launches to span `timed_ms` at the warm-up's pace (at least `n`, at most
    // 4096), so that the median covers the capped clocks' swings rather than one of them.
    ctx.stream().synchronize().map_err(e)?;
    let per_launch = warm.elapsed().as_secs_f64() * 1e3 / (i - 5).max(1) as f64;
    let by_time = if reps.warmup_ms > 0 { (reps.timed_ms as f64 / per_launch.max(1e-3)).ceil() as usize } else { 0 };
    let n = reps.n.max(1).max(by_time.min(4096));
    let timing = Some(blocksparse::cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let mut events = Vec::with_capacity(n);
    for _ in 0..n {
        events.push((cu.new_event(timing).map_err(e)?, cu.new_event(timing).map_err(e)?));
    }
    // The timed launches go on from the warm-up's index (closures cycle their inputs by it).
    for (k, (start, stop)) in events.iter().enumerate() {
        start.record(ctx.stream()).map_err(e)?;
        f(i + k)?;
        stop.record(ctx.stream()).map_err(e)?;
        if reps.synced {
            stop.synchronize().map_err(e)?;
        }
    }
    ctx.stream().synchronize().map_err(e)?;
    let mut times = Vec::with_capacity(n);
    for (start, stop) in &events {
        times.push(start.elapsed_ms(stop).map_err(e)? as f64);
    }
    times.sort_by(|a, b| a.total_cmp(b));
    Ok(times[times.len() / 2])
}

fn tflops(flops: f64, ms: f64) -> f64 {
    flops / (ms * 1e-3) / 1e12
}

/// Random dense matrices, made once per shape and dtype and reused by every case.
struct Pool<T> {
    mats: HashMap<(usize, usize, usize, usize), DeviceMatrix<T>>,
}

impl<T: InputElement> Pool<T> {
    /// The `copy`-th random row-major batch of `(rows, cols)` matrices.
    fn get(&mut self, ctx: &Context, (batch, rows, cols): (usize, usize, usize), copy: usize, rng: &mut TestRng) -> Res<&DeviceMatrix<T>> {
        let key = (batch, rows, cols, copy);
        if let std::collections::hash_map::Entry::Vacant(e) = self.mats.entry(key) {
            let m = ctx.upload_matrix_batch(batch, rows, cols, &random_values::<T>(batch * rows * cols, rng)).map_err(err)?;
            e.insert(m);
        }
        Ok(&self.mats[&key])
    }
}

fn out_view<T: InputElement>(m: &mut DeviceMatrix<T>, layout: Layout) -> MatMut<'_, T> {
    match layout {
        Layout::RowMajor => m.view_mut(),
        Layout::ColMajor => m.t_mut(),
    }
}

struct Bench<'a, T: InputElement> {
    ctx: &'a Context,
    args: &'a Args,
    gemm: DenseGemm,
    pool: Pool<T>,
    outs: HashMap<(usize, usize, usize), DeviceMatrix<T>>,
    dense_ms: HashMap<(usize, usize, usize, usize), f64>,
    /// Dense cuBLAS operands (A, B, C) per shape, drawn once: re-timing a shape draws nothing
    /// from `rng`, so `--seed` gives the same masks whether or not dense is re-timed.
    dense_ops: HashMap<(usize, usize, usize, usize), [DeviceMatrix<T>; 3]>,
    /// The fastest dense time of each shape in the run (what every row's ratio is against).
    dense_best: HashMap<(usize, usize, usize, usize), f64>,
    /// Every dense timing, in order (the report's `dense_timings`).
    dense_timings: Vec<(usize, usize, usize, usize, f64)>,
    rng: TestRng,
}

impl<'a, T: InputElement> Bench<'a, T> {
    /// Dense cuBLAS on `batch × (m, k) · (k, n)`, measured once per shape.
    fn dense(&mut self, batch: usize, m: usize, n: usize, k: usize) -> Res<f64> {
        let shape = (batch, m, n, k);
        if let Some(&t) = self.dense_ms.get(&shape) {
            return Ok(t);
        }
        let [a, b, c] = match self.dense_ops.entry(shape) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let a = self.ctx.upload_matrix_batch(batch, m, k, &random_values::<T>(batch * m * k, &mut self.rng)).map_err(err)?;
                let b = self.ctx.upload_matrix_batch(batch, k, n, &random_values::<T>(batch * k * n, &mut self.rng)).map_err(err)?;
                e.insert([a, b, self.ctx.zeros_matrix_batch::<T>(batch, m, n).map_err(err)?])
            }
        };
        let (gemm, ctx, reps) = (&self.gemm, self.ctx, self.args.timing());
        let t = time_ms(ctx, reps, |_| gemm.gemm(ctx, a, b, c))?;
        self.dense_ms.insert(shape, t);
        self.dense_timings.push((batch, m, n, k, t));
        let best = self.dense_best.entry(shape).or_insert(t);
        *best = best.min(t);
        Ok(t)
    }

    /// Dense cuBLAS on that shape timed now (the clock state of the next measurement), and kept
    /// as the shape's time from here on; the same operands as before.
    fn dense_fresh(&mut self, batch: usize, m: usize, n: usize, k: usize) -> Res<f64> {
        self.dense_ms.remove(&(batch, m, n, k));
        self.dense(batch, m, n, k)
    }

    fn out(&mut self, batch: usize, rows: usize, cols: usize) -> Res<&mut DeviceMatrix<T>> {
        let key = (batch, rows, cols);
        if !self.outs.contains_key(&key) {
            let m = self.ctx.zeros_matrix_batch::<T>(batch, rows, cols).map_err(err)?;
            self.outs.insert(key, m);
        }
        Ok(self.outs.get_mut(&key).expect("inserted above"))
    }

    fn bsr(&mut self, batch: usize, m: usize, k: usize, bs: usize, mask: &[bool]) -> Res<DeviceBsr<T>> {
        let nnzb = mask.iter().filter(|&&x| x).count();
        let mats: Vec<Bsr<T>> = (0..batch)
            .map(|_| Bsr::from_block_mask(m, k, BlockShape::square(bs), mask, random_values::<T>(nnzb * bs * bs, &mut self.rng)))
            .collect::<Result<_, _>>()
            .map_err(err)?;
        self.ctx.upload_bsr_batch(&mats).map_err(err)
    }

    /// SpMM `C = op(A) · op(B)` timed. Returns (ms, kernel, plan ms).
    #[allow(clippy::too_many_arguments)]
    fn spmm(
        &mut self,
        a: &DeviceBsr<T>,
        op_a: Transpose,
        b_layout: Layout,
        c_layout: Layout,
        n: usize,
        opts: &PlanOptions,
        rotate: bool,
    ) -> Res<(f64, String, f64)> {
        let (ctx, reps) = (self.ctx, self.args.timing());
        let (plan, plan_ms) = timed_plan(ctx, PLAN_REPS, || ctx.plan_spmm_with(a, op_a, n, opts))?;
        let kernel = crate::plan_label(&plan);
        let (rows, k) = if op_a == Transpose::No { (a.nrows(), a.ncols()) } else { (a.ncols(), a.nrows()) };
        let batch = a.batch();
        // Two B sets (rotated) where asked, so that repeated runs do not just re-read L2.
        let copies = if rotate { 2 } else { 1 };
        for copy in 0..copies {
            self.pool.get(ctx, key3(batch, k, n, b_layout), copy, &mut self.rng)?;
        }
        let (crow, ccol) = if c_layout == Layout::RowMajor { (rows, n) } else { (n, rows) };
        self.out(batch, crow, ccol)?;
        let Bench { pool, outs, .. } = self;
        let bs: Vec<MatRef<'_, T>> = (0..copies).map(|copy| logical(pool, batch, k, n, b_layout, copy)).collect();
        let c = outs.get_mut(&(batch, crow, ccol)).expect("made above");
        let ms = time_ms(ctx, reps, |i| ctx.spmm(&plan, 1.0, a, bs[i % copies], 0.0, out_view(c, c_layout)).map_err(err))?;
        Ok((ms, kernel, plan_ms))
    }

    /// [`Bench::spmm`] of a plain case's row (B and C row-major, two B sets) planned with
    /// `opts`; `None` (no row) where `opts` asks for a merge the kernels cannot run for these
    /// blocks.
    fn spmm_choice(&mut self, a: &DeviceBsr<T>, op_a: Transpose, n: usize, opts: &PlanOptions) -> Res<Option<(f64, String, f64)>> {
        if opts.merge_rows.is_some()
            && let Err(blocksparse::Error::UnsupportedMerge { .. }) = self.ctx.plan_spmm_with(a, op_a, n, opts)
        {
            return Ok(None);
        }
        self.spmm(a, op_a, Layout::RowMajor, Layout::RowMajor, n, opts, true).map(Some)
    }

    /// Dense × sparse `C = op(X) · op(A)` (C row-major) timed. Returns (ms, kernel, plan ms).
    fn dense_sparse(&mut self, a: &DeviceBsr<T>, x_layout: Layout, op_a: Transpose, m: usize) -> Res<(f64, String, f64)> {
        let (ctx, reps) = (self.ctx, self.args.timing());
        let (plan, plan_ms) = timed_plan(ctx, PLAN_REPS, || ctx.plan_dense_sparse(a, op_a, m))?;
        let kernel = crate::plan_label(&plan);
        let (k, n) = if op_a == Transpose::No { (a.nrows(), a.ncols()) } else { (a.ncols(), a.nrows()) };
        let batch = a.batch();
        self.pool.get(ctx, key3(batch, m, k, x_layout), 0, &mut self.rng)?;
        self.out(batch, m, n)?;
        let Bench { pool, outs, .. } = self;
        let x = logical(pool, batch, m, k, x_layout, 0);
        let c = outs.get_mut(&(batch, m, n)).expect("made above");
        let ms = time_ms(ctx, reps, |_| ctx.dense_sparse(&plan, 1.0, x, a, 0.0, c.view_mut()).map_err(err))?;
        Ok((ms, kernel, plan_ms))
    }

    /// SDDMM at `c`'s pattern with inner dimension `k` timed. Returns (ms, kernel, plan ms).
    fn sddmm(&mut self, c: &mut DeviceBsr<T>, x_layout: Layout, y_layout: Layout, k: usize) -> Res<(f64, String, f64)> {
        let (ctx, reps) = (self.ctx, self.args.timing());
        let (plan, plan_ms) = timed_plan(ctx, PLAN_REPS, || ctx.plan_sddmm(c, k))?;
        let kernel = format!("{:?}{}", plan.tile().family, plan.tile().shape().0);
        let (m, n, batch) = (c.nrows(), c.ncols(), c.batch());
        self.pool.get(ctx, key3(batch, m, k, x_layout), 0, &mut self.rng)?;
        self.pool.get(ctx, key3(batch, k, n, y_layout), 1, &mut self.rng)?;
        let x = logical(&self.pool, batch, m, k, x_layout, 0);
        let y = logical(&self.pool, batch, k, n, y_layout, 1);
        let ms = time_ms(ctx, reps, |_| ctx.sddmm(&plan, 1.0, x, y, 0.0, c).map_err(err))?;
        Ok((ms, kernel, plan_ms))
    }
}

/// The pooled row-major buffer shape behind a logical `(rows, cols)` view in `layout`.
fn key3(batch: usize, rows: usize, cols: usize, layout: Layout) -> (usize, usize, usize) {
    match layout {
        Layout::RowMajor => (batch, rows, cols),
        Layout::ColMajor => (batch, cols, rows),
    }
}

/// The logical `(rows, cols)` view in `layout` of a pooled buffer (made before).
fn logical<T: InputElement>(pool: &Pool<T>, batch: usize, rows: usize, cols: usize, layout: Layout, copy: usize) -> MatRef<'_, T> {
    let (b, r, c) = key3(batch, rows, cols, layout);
    let m = &pool.mats[&(b, r, c, copy)];
    if layout == Layout::RowMajor { m.view() } else { m.t() }
}

fn pattern_masks(args: &Args, br: usize, bc: usize, density: f64, rng: &mut TestRng) -> Vec<(String, Vec<bool>)> {
    let mut v = vec![("uniform".to_string(), exact_mask(br, bc, density, rng))];
    if args.skewed {
        v.push(("skewed".to_string(), skewed_mask(br, bc, density, (br / 64).max(1), 0.5, rng)));
    }
    if args.structured {
        v.push(("banded".to_string(), banded_mask(br, bc, density)));
        v.push(("blockdiag".to_string(), block_diagonal_mask(br, bc, density)));
    }
    if args.masks && density == args.densities[0] {
        // Uniform random is the sweep's own first row.
        for f in MaskFamily::REAL.iter().filter(|f| !matches!(f, MaskFamily::Uniform(_))) {
            v.push((f.name(), f.mask(br, bc, rng)));
        }
        if args.mixed {
            v.push((MaskFamily::Mixed.name(), MaskFamily::Mixed.mask(br, bc, rng)));
        }
    }
    v
}

/// Whether `pattern` names a mask family (which has its own density).
fn is_family(pattern: &str) -> bool {
    MaskFamily::REAL.iter().any(|f| f.name() == pattern) || pattern == MaskFamily::Mixed.name()
}

fn short(l: Layout) -> &'static str {
    if l == Layout::RowMajor { "R" } else { "C" }
}

fn t(o: Transpose) -> &'static str {
    if o == Transpose::Yes { "T" } else { "N" }
}

/// Plans made of each row's case for its planning time ([`Row::plan_ms`]: their median).
const PLAN_REPS: usize = 3;

/// The last of `reps` (at least one) plans made by `plan`, and the median of their host times
/// (ms, each until the stream has taken the plan's uploads).
pub(crate) fn timed_plan<P>(ctx: &Context, reps: usize, mut plan: impl FnMut() -> blocksparse::Result<P>) -> Res<(P, f64)> {
    let reps = reps.max(1);
    let mut times = Vec::with_capacity(reps);
    let mut last = None;
    for _ in 0..reps {
        drop(last.take());
        let t0 = std::time::Instant::now();
        last = Some(plan().map_err(err)?);
        ctx.stream().synchronize().map_err(|e| e.to_string())?;
        times.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok((last.ok_or("no plan")?, times[reps / 2]))
}

/// What the rows of one case share: the problem, its pattern and the dense time of its shape.
#[derive(Clone, Copy)]
struct CaseInfo<'a> {
    dtype: DType,
    /// (batch, M, N, K) of the dense product the case is compared with.
    shape: (usize, usize, usize, usize),
    bs: usize,
    pattern: &'a str,
    density: f64,
    nnzb: usize,
    /// Useful flops of the case (nonzero blocks only).
    flops: f64,
    dense_ms: f64,
}

impl CaseInfo<'_> {
    /// A result row: `op` ran `kernel` in `ms`, its plan made in `plan_ms`.
    fn row(&self, op: String, kernel: String, ms: f64, plan_ms: f64) -> Row {
        let (batch, m, n, k) = self.shape;
        let mut row = Row {
            op,
            dtype: self.dtype.to_string(),
            m,
            n,
            k,
            batch,
            block: self.bs,
            kernel,
            pattern: self.pattern.to_string(),
            density: self.density,
            nnzb: self.nnzb,
            ms,
            tflops: tflops(self.flops, ms),
            plan_ms: Some(plan_ms),
            ..Row::default()
        };
        row.set_dense(self.dense_ms);
        row
    }
}

fn run_dtype<T: InputElement>(
    ctx: &Context,
    args: &Args,
    seed: u64,
    rows: &mut Vec<Row>,
    dense_timings: &mut Vec<(usize, usize, usize, usize, f64)>,
    bar: &ProgressBar,
) -> Res<()> {
    let first_row = rows.len();
    let gemm = DenseGemm::new(ctx)?;
    let mut b = Bench::<T> {
        ctx,
        args,
        gemm,
        pool: Pool { mats: HashMap::new() },
        outs: HashMap::new(),
        dense_ms: HashMap::new(),
        dense_ops: HashMap::new(),
        dense_best: HashMap::new(),
        dense_timings: Vec::new(),
        rng: seeded_rng(seed),
    };
    let (m, n, k) = (args.m, args.n, args.k);
    let dt = T::DTYPE;
    let peer = |op: &str, bs: usize, density: f64, batch: usize, (mm, nn, kk): (usize, usize, usize), ta: bool, tb: bool, tune: bool| serde_json::json!({"op": op, "m": mm, "n": nn, "k": kk, "block": bs, "density": density, "dtype": dt.to_string(), "batch": batch, "trans_a": ta, "trans_b": tb, "tune": tune});
    if !args.no_plain {
        // Timed before each block size's rows and after the last, the fastest used. Every
        // measurement warms up to the board's sustained clocks first (`--warmup-ms`), so a
        // dense timing no longer leaves the next row throttled (with 5 warm-up launches it
        // did: top-16 32×32 0.357 → 0.39–0.46 ms, perf notes v13); and sustained dense
        // timings span 629–717 TF/s within one run (v28), so a single slow one would flatter
        // every ratio.
        for &bs in &args.blocks {
            let dense_ms = b.dense_fresh(1, m, n, k)?;
            for &density in &args.densities {
                for (pattern, mask) in pattern_masks(args, m / bs, k / bs, density, &mut b.rng) {
                    bar.set_message(format!("{dt} spmm b{bs} {pattern} {density}"));
                    let nnzb = mask.iter().filter(|&&x| x).count();
                    // Mask families have their own density.
                    let density = if is_family(&pattern) { nnzb as f64 / mask.len() as f64 } else { density };
                    let a = b.bsr(1, m, k, bs, &mask)?;
                    let flops = 2.0 * (nnzb * bs * bs * n) as f64;
                    let mut choices = vec![(String::from("spmm"), PlanOptions::default())];
                    choices.extend(
                        args.group_choices()
                            .map(|(g, group)| (format!("spmm G{g}"), PlanOptions { n_tile_group: group, ..Default::default() })),
                    );
                    choices.extend(
                        args.merge.iter().map(|&m| (format!("spmm M{m}"), PlanOptions { merge_rows: Some(m), ..Default::default() })),
                    );
                    if args.skips {
                        let merges = std::iter::once((String::from("spmm "), None))
                            .chain(args.merge.iter().map(|&m| (format!("spmm M{m}"), Some(m))));
                        for (prefix, merge_rows) in merges.collect::<Vec<_>>() {
                            for s in [false, true] {
                                let label = format!("{prefix}S{}", s as u8);
                                choices.push((label, PlanOptions { merge_rows, skip_absent: Some(s), ..Default::default() }));
                            }
                        }
                    }
                    if args.splits {
                        for split in [false, true] {
                            let opts = PlanOptions { split_rows: Some(split), ..Default::default() };
                            choices.push((format!("spmm P{}", split as u8), opts));
                        }
                    }
                    if args.reblock {
                        for coarse in [false, true] {
                            choices.push((format!("spmm C{}", coarse as u8), PlanOptions { coarse_a: Some(coarse), ..Default::default() }));
                        }
                    }
                    if args.reorder {
                        // The planner's choice in A's row order, and each merge reordered.
                        choices.push((String::from("spmm R0"), PlanOptions { reorder_rows: Some(false), ..Default::default() }));
                        choices.extend(args.merge.iter().filter(|&&m| m > 1).map(|&m| {
                            (format!("spmm M{m}R"), PlanOptions { merge_rows: Some(m), reorder_rows: Some(true), ..Default::default() })
                        }));
                    }
                    let info = CaseInfo { dtype: dt, shape: (1, m, n, k), bs, pattern: &pattern, density, nnzb, flops, dense_ms };
                    for (label, opts) in choices {
                        let Some((ms, kernel, plan_ms)) = b.spmm_choice(&a, Transpose::No, n, &opts)? else {
                            continue;
                        };
                        let mut r = info.row(label.clone(), kernel, ms, plan_ms);
                        if pattern == "uniform" && label == "spmm" {
                            r.peer_case =
                                Some(peer("spmm", bs, density, 1, (m, n, k), false, false, args.tunes() && density == args.densities[0]));
                        } else if label == "spmm" && MaskFamily::REAL.iter().any(|f| f.name() == pattern) {
                            // PyTorch on the same pattern: the mask travels with the case.
                            let mut c = peer("spmm", bs, density, 1, (m, n, k), false, false, args.tunes());
                            c["pattern"] = serde_json::json!(pattern);
                            c["mask"] = serde_json::json!(mask.iter().map(|&x| if x { '1' } else { '0' }).collect::<String>());
                            r.peer_case = Some(c);
                        }
                        rows.push(r);
                    }
                    if args.transposed {
                        let (gr, gc) = (m / bs, k / bs);
                        let mask_t: Vec<bool> = (0..gc * gr).map(|i| mask[(i % gr) * gc + i / gr]).collect();
                        let at = b.bsr(1, k, m, bs, &mask_t)?;
                        let mut choices: Vec<(String, PlanOptions)> = std::iter::once((String::from("spmm At"), None))
                            .chain(args.merge.iter().map(|&m| (format!("spmm At M{m}"), Some(m))))
                            .map(|(label, merge_rows)| (label, PlanOptions { merge_rows, ..Default::default() }))
                            .collect();
                        if args.reblock {
                            for coarse in [false, true] {
                                let opts = PlanOptions { coarse_a: Some(coarse), ..Default::default() };
                                choices.push((format!("spmm At C{}", coarse as u8), opts));
                            }
                        }
                        for (label, opts) in choices {
                            if let Some((ms, kernel, plan_ms)) = b.spmm_choice(&at, Transpose::Yes, n, &opts)? {
                                rows.push(info.row(label, kernel, ms, plan_ms));
                            }
                        }
                    }
                    bar.inc(1);
                }
            }
        }
        b.dense_fresh(1, m, n, k)?;
    }
    if args.ops {
        let dense_ms = b.dense(1, m, n, k)?;
        let density = args.densities[0];
        for &bs in &args.blocks {
            let mask = exact_mask(m / bs, k / bs, density, &mut b.rng);
            let nnzb = mask.iter().filter(|&&x| x).count();
            let a = b.bsr(1, m, k, bs, &mask)?;
            let flops = 2.0 * (nnzb * bs * bs * n) as f64;
            let info = CaseInfo { dtype: dt, shape: (1, m, n, k), bs, pattern: "uniform", density, nnzb, flops, dense_ms };
            // Plain SpMM re-timed right before each form: the two then run in the same clock
            // state (under sustained load the H100 sits at its power cap and the clocks sag,
            // so a plain time from the start of the sequence flatters the later forms'
            // ratios; perf notes v13).
            let plain = |b: &mut Bench<'_, T>| -> Res<f64> {
                Ok(b.spmm(&a, Transpose::No, Layout::RowMajor, Layout::RowMajor, n, &PlanOptions::default(), false)?.0)
            };
            for op_a in [Transpose::No, Transpose::Yes] {
                for bl in [Layout::RowMajor, Layout::ColMajor] {
                    for cl in [Layout::RowMajor, Layout::ColMajor] {
                        bar.set_message(format!("{dt} spmm A{} B{} C{} b{bs}", t(op_a), short(bl), short(cl)));
                        let plain_ms = plain(&mut b)?;
                        let (ms, kernel, plan_ms) = b.spmm(&a, op_a, bl, cl, n, &PlanOptions::default(), false)?;
                        let mut r = info.row(format!("spmm A{} B{} C{}", t(op_a), short(bl), short(cl)), kernel, ms, plan_ms);
                        r.vs_plain = Some(ms / plain_ms);
                        // PyTorch on the two single-transpose forms (its plain form is the main row).
                        if cl == Layout::RowMajor && (op_a == Transpose::Yes) != (bl == Layout::ColMajor) {
                            r.peer_case =
                                Some(peer("spmm", bs, density, 1, (m, n, k), op_a == Transpose::Yes, bl == Layout::ColMajor, false));
                        }
                        rows.push(r);
                    }
                }
            }
            for xl in [Layout::RowMajor, Layout::ColMajor] {
                for op_a in [Transpose::No, Transpose::Yes] {
                    bar.set_message(format!("{dt} dense x sparse X{} A{} b{bs}", short(xl), t(op_a)));
                    let plain_ms = plain(&mut b)?;
                    let (ms, kernel, plan_ms) = b.dense_sparse(&a, xl, op_a, m)?;
                    let mut r = info.row(format!("dxs X{} A{} CR", short(xl), t(op_a)), kernel, ms, plan_ms);
                    r.vs_plain = Some(ms / plain_ms);
                    rows.push(r);
                }
            }
            // SDDMM at the same pattern (C is (m, k) here: X (m, n), Y (n, k) with n as K).
            let mut c = b.ctx.zeros_bsr_like::<T, T>(&a, 1).map_err(err)?;
            // The same flops: (m, k) at the pattern, K = n.
            let sinfo = CaseInfo { shape: (1, m, k, n), ..info };
            for xl in [Layout::RowMajor, Layout::ColMajor] {
                for yl in [Layout::RowMajor, Layout::ColMajor] {
                    bar.set_message(format!("{dt} sddmm X{} Y{} b{bs}", short(xl), short(yl)));
                    // Dense cuBLAS re-timed right before, for the same reason as plain SpMM above.
                    let dense_now = b.dense_fresh(1, m, k, n)?;
                    let (ms, kernel, plan_ms) = b.sddmm(&mut c, xl, yl, n)?;
                    let mut r =
                        CaseInfo { dense_ms: dense_now, ..sinfo }.row(format!("sddmm X{} Y{}", short(xl), short(yl)), kernel, ms, plan_ms);
                    // PyTorch on the attention (Q·Kᵀ) and weight-gradient (dyᵀ·x) forms.
                    if xl != yl {
                        r.peer_case = Some(peer("sddmm", bs, density, 1, (m, k, n), xl == Layout::ColMajor, yl == Layout::ColMajor, false));
                    }
                    rows.push(r);
                }
            }
            bar.inc(1);
        }
    }
    if args.batched {
        let (batch, s) = (16, 2048);
        let dense_ms = b.dense(batch, s, s, s)?;
        let density = args.densities[0];
        for &bs in &args.blocks {
            bar.set_message(format!("{dt} batched b{bs}"));
            let mask = exact_mask(s / bs, s / bs, density, &mut b.rng);
            let nnzb = mask.iter().filter(|&&x| x).count();
            let a = b.bsr(batch, s, s, bs, &mask)?;
            let flops = 2.0 * (batch * nnzb * bs * bs * s) as f64;
            let (ms, kernel, plan_ms) = b.spmm(&a, Transpose::No, Layout::RowMajor, Layout::RowMajor, s, &PlanOptions::default(), false)?;
            let info = CaseInfo { dtype: dt, shape: (batch, s, s, s), bs, pattern: "uniform", density, nnzb, flops, dense_ms };
            let mut r = info.row("spmm batched".into(), kernel, ms, plan_ms);
            r.peer_case = Some(peer("spmm", bs, density, batch, (s, s, s), false, false, false));
            rows.push(r);
            let mut c = b.ctx.zeros_bsr_like::<T, T>(&a, batch).map_err(err)?;
            let (ms, kernel, plan_ms) = b.sddmm(&mut c, Layout::RowMajor, Layout::ColMajor, s)?;
            let mut r = info.row("sddmm batched XR YC".into(), kernel, ms, plan_ms);
            r.peer_case = Some(peer("sddmm", bs, density, batch, (s, s, s), false, true, false));
            rows.push(r);
            bar.inc(1);
        }
    }
    // Every ratio against the fastest dense timing of its shape in the run. Dense cuBLAS is
    // power-bound: its rate drifts with the board's state far more than ours (H100, one run:
    // 623–745 TF/s at 8192³, our times within ±3 %), so a slow dense timing would flatter the
    // rows against it; the best one keeps each ratio conservative.
    for r in &mut rows[first_row..] {
        if let Some(&best) = b.dense_best.get(&(r.batch, r.m, r.n, r.k)) {
            r.set_dense(best);
        }
    }
    dense_timings.append(&mut b.dense_timings);
    Ok(())
}

pub fn run(args: Args) -> Res<bool> {
    let path = KernelPath::from(args.path);
    let ctx = crate::open_context(path)?;
    let seed = args.seed.unwrap_or_else(|| rand::rng().random());
    println!("seed: {seed} (--seed {seed} draws the same operands and masks)");
    let cold_start_ms = crate::coldstart::measure(path)?;
    for &bs in &args.blocks {
        if !args.m.is_multiple_of(bs) || !args.k.is_multiple_of(bs) || (args.batched && 2048 % bs != 0) {
            return Err(format!("M = {} and K = {} must be multiples of the block size {bs}", args.m, args.k));
        }
    }
    if args.spgemm {
        if let Some(d) = args.spgemm_uniform.iter().find(|&&d| !(d > 0.0 && d <= 1.0)) {
            return Err(format!("--spgemm-uniform {d}: a block density must be in (0, 1]"));
        }
        for &bs in &args.spgemm_blocks {
            if bs == 0 || !args.m.is_multiple_of(bs) || !args.k.is_multiple_of(bs) || !args.n.is_multiple_of(bs) {
                return Err(format!("M = {}, N = {} and K = {} must be multiples of the SpGEMM block size {bs}", args.m, args.n, args.k));
            }
        }
    }
    let per_dtype = (if args.no_plain {
        0
    } else {
        args.blocks.len() * args.densities.len() * (1 + args.skewed as usize + 2 * args.structured as usize)
            + args.blocks.len() * if args.masks { MaskFamily::REAL.len() - 1 + args.mixed as usize } else { 0 }
    }) + args.blocks.len() * (args.ops as usize + args.batched as usize)
        + if args.spgemm { args.spgemm_blocks.len() * (spgemm::CASES + args.spgemm_uniform.len()) } else { 0 };
    let bar = ProgressBar::new((per_dtype * args.dtypes.len()) as u64);
    bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()));
    let mut rows = Vec::new();
    let mut spgemm_rows = Vec::new();
    let mut dense_timings = Vec::new();
    for &dt in &args.dtypes {
        match DType::from(dt) {
            DType::F16 => run_dtype::<f16>(&ctx, &args, seed, &mut rows, &mut dense_timings, &bar)?,
            DType::Bf16 => run_dtype::<bf16>(&ctx, &args, seed, &mut rows, &mut dense_timings, &bar)?,
            DType::F32 => return Err("f32 inputs are not supported (use f16 or bf16)".into()),
        }
        if args.spgemm {
            match DType::from(dt) {
                DType::F16 => spgemm::run::<f16>(&ctx, &args, seed, &mut spgemm_rows, &bar)?,
                DType::Bf16 => spgemm::run::<bf16>(&ctx, &args, seed, &mut spgemm_rows, &bar)?,
                DType::F32 => unreachable!("rejected above"),
            }
        }
    }
    bar.finish_and_clear();
    let report = |rows: &[Row], spgemm: &[SpgemmRow]| Report {
        gpu: ctx.device_name().to_string(),
        compute_capability: ctx.compute_capability(),
        module: format!("{:?}", ctx.arch()),
        cuda_driver: cuda_driver_version(),
        nvidia_driver: command_output("nvidia-smi", &["--query-gpu=driver_version", "--format=csv,noheader"])
            .and_then(|s| s.lines().next().map(str::to_string)),
        commit: run_commit(),
        build_commit: env!("BLOCKSPARSE_BUILD_COMMIT").to_string(),
        seed: Some(seed),
        cold_start_ms,
        unix_time: SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        reps: args.reps,
        synced: args.synced,
        warmup_ms: args.warmup_ms,
        settle_ms: args.settle_ms,
        timed_ms: args.timed_ms,
        dense_timings: dense_timings.clone(),
        rows: rows.to_vec(),
        spgemm: spgemm.to_vec(),
    };
    let write = |report: &Report| -> Res<()> {
        if let Some(dir) = std::path::Path::new(&args.json).parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let json = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
        std::fs::write(&args.json, json).map_err(|e| format!("write {}: {e}", args.json))
    };
    if args.peers {
        // Our rows are kept even if the peers run past a time limit (rewritten with theirs).
        write(&report(&rows, &spgemm_rows))?;
        crate::peers::run(&mut rows, &args.peer_cache, args.warmup_ms);
        crate::peers::run_spgemm(&mut spgemm_rows, args.peer_timeout, args.warmup_ms);
    }
    let report = report(&rows, &spgemm_rows);
    write(&report)?;
    println!(
        "bench: {} (cc {}.{}), module {:?}, median of at least {} runs ({}) after {} ms of warm-up{}{}, output in the input dtype",
        report.gpu,
        report.compute_capability.0,
        report.compute_capability.1,
        ctx.arch(),
        args.reps,
        if args.synced { "each waited for: GPU time + host launch latency" } else { "queued back to back: GPU time" },
        args.warmup_ms,
        if args.warmup_ms > 0 { format!(", spanning at least {} ms", args.timed_ms) } else { String::new() },
        if args.settle_ms > 0 { format!(", {} ms idle before each", args.settle_ms) } else { String::new() },
    );
    println!(
        "run: CUDA driver {}{}, commit {} (built from {}), seed {seed}",
        report.cuda_driver,
        report.nvidia_driver.as_deref().map_or(String::new(), |v| format!(" (NVIDIA {v})")),
        report.commit,
        report.build_commit
    );
    // The plain / ops / batched table (absent when only --spgemm ran).
    if !rows.is_empty() {
        println!(
            "ratio: effective TFLOP/s (nonzero blocks) / the fastest dense cuBLAS TFLOP/s on the same shapes in this run (re-timed before each block size and each SDDMM row); vs plain: time / plain SpMM time on the same pattern, timed just before"
        );
        println!("torch: PyTorch Triton BSR (GPU time), default params / tuned for this GPU; ours/tuned: our TF/s over tuned torch");
        println!(
            "{:<20} {:<5} {:>18} {:>5} {:>9} {:>7} {:>8} {:>8} {:>8} {:>8} {:>6} {:>7} {:>7} {:>9} {:>8} {:>8}",
            "op",
            "dtype",
            "batch x MxNxK",
            "block",
            "pattern",
            "density",
            "ms",
            "TF/s",
            "dense TF",
            "ratio",
            "vs pl",
            "speedup",
            "torch",
            "torch tun",
            "ours/tun",
            "plan ms"
        );
        let opt = |v: Option<f64>, p: usize| v.map_or("-".to_string(), |t| format!("{t:.p$}"));
        for r in &rows {
            println!(
                "{:<20} {:<5} {:>18} {:>5} {:>9} {:>7.4} {:>8.3} {:>8.1} {:>8.1} {:>8.3} {:>6} {:>6.2}x {:>7} {:>9} {:>8} {:>8}",
                r.op,
                r.dtype,
                format!("{}x{}x{}x{}", r.batch, r.m, r.n, r.k),
                r.block,
                r.pattern,
                r.density,
                r.ms,
                r.tflops,
                r.dense_tflops,
                r.ratio_to_dense,
                opt(r.vs_plain, 2),
                r.speedup,
                opt(r.peer_tflops, 1),
                opt(r.peer_tuned_tflops, 1),
                opt(r.ours_over_tuned, 2),
                opt(r.plan_ms, 2)
            );
        }
    }
    spgemm::print(&spgemm_rows, args.peers);
    println!("json: {}", args.json);
    if !args.no_plot {
        for svg in crate::plot::render(&report, std::path::Path::new(&args.json))? {
            println!("plot: {}", svg.display());
        }
    }
    Ok(true)
}
