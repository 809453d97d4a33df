//! `cargo xtask bench --spgemm`: BSR × BSR (SpGEMM) at M×N×K (8192³ by default), against dense
//! cuBLAS on the same shape and against the roof of each case, all measured in the same run.
//!
//! Cases, at each of `--spgemm-blocks` (square blocks, 64 and 128 by default), f16 in and out
//! (each of `--dtypes`), A `(M, K)` and B `(K, N)`:
//! - `uniform0.125 x uniform0.125`, `uniform0.5 x uniform0.5`: exactly that block density,
//!   blocks placed uniformly at random (`testgen::exact_mask`), on both operands;
//! - `top16 x top16`: 16 random blocks in every block row (`testgen::topk_mask`) of both;
//! - `banded0.125 x uniform0.125`: a band of 12.5 % of the block columns around the diagonal in
//!   each row of A (`testgen::banded_mask`) times a uniformly random B at 12.5 %.
//!
//! Each case runs twice, as separate rows: C dense (row-major, every element written) and C
//! block-sparse with the product's own pattern (`SpgemmOutput::Product`); with
//! `--spgemm-causal` a third time, into a block-sparse C with a causal mask (`SpgemmOutput::Mask`,
//! C's blocks on and below the diagonal: only the pairs inside it count). `alpha = 1`,
//! `beta = 0` (C is not read). A and B come in two value sets of the same patterns, alternated
//! between launches (as plain SpMM rotates its B), so that repeated launches do not just re-read
//! the previous launch's operands from L2.
//!
//! Per row, right before our measurement and in this order: the DRAM bandwidth (a 1 GiB →
//! 1 GiB device-to-device copy, read + write bytes counted) and dense cuBLAS `GemmEx` on M×N×K
//! (the same buffers every time), which keeps the board in the state of a sustained load. Every
//! ratio and roof is then taken against the fastest dense timing and the highest bandwidth of
//! the run's rows (of one shape and dtype), as the SpMM suites do: dense cuBLAS is power-bound
//! and drifts with the board's state more than the sparse kernels (in one run of 2026-11-26 it
//! timed 635–775 TF/s), and a row whose reference ran throttled would look closer to dense and
//! to its roof than it is. Each measurement is `time_ms`'s: warm-up (at least `--warmup-ms` of
//! launches, so that it runs at the board's sustained clocks), then at least `--reps` launches
//! spanning at least `--timed-ms`, queued back to back, each between its own CUDA events
//! (`--synced`: each waited for), the median.
//!
//! Printed and recorded per row: pairs (block multiply-adds), the plan's records and tiles,
//! time, effective TFLOP/s (`2 · pairs · bm · bk · bn / time`), its ratio to dense cuBLAS's
//! TFLOP/s, the wall-clock speedup over dense (dense time ÷ ours), and the roof: the larger of
//! flops ÷ the fastest dense rate and the bytes that must move (A's and B's values and C once:
//! M·N elements for a dense C, `c_blocks · bm · bn` for a block-sparse one; C is not read at
//! beta = 0; the plan's index data is left out) ÷ the highest bandwidth.
//! With `--peers`: PyTorch's CSR × CSR (`torch.sparse.mm`, cuSPARSE SpGEMM) on exactly the same
//! patterns (`peers.rs`), one time per case (its output is CSR, shown on both C rows).

use blocksparse::cudarc::driver::CudaSlice;
use blocksparse::{BlockShape, Bsr, Context, DeviceBsr, DeviceMatrix, InputElement, PlanOptions, SpgemmOutput};
use blocksparse_testkit::dense::DenseGemm;
use blocksparse_testkit::testgen::{TestRng, banded_mask, exact_mask, random_values, seeded_rng, topk_mask};
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};

use super::{Args, Reps, Res, err, tflops, time_ms, timed_plan};

/// The cases per block size (see the module docs).
pub const CASES: usize = 4;

/// Bytes of each of the two buffers of the bandwidth measurement.
const COPY_BYTES: usize = 1 << 30;

/// The issue's targets, printed beside the measured values (targets, not measurements).
const ROOF_TARGET: f64 = 1.3;
const DENSE_TARGET: f64 = 0.7;

/// Plans made of each case for its planning time ([`SpgemmRow::plan_ms`]: their median).
const PLAN_REPS: usize = 5;

/// One SpGEMM measurement (`Report::spgemm`). Every ratio in it comes from numbers measured in
/// the same run, most of them right before `ms`.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
#[serde(default)]
pub struct SpgemmRow {
    /// The case, `<pattern of A> x <pattern of B>`.
    pub case: String,
    pub pattern_a: String,
    pub pattern_b: String,
    /// C: "dense R" (row-major dense), "bsr product" (block-sparse, the product's pattern) or "bsr
    /// causal" (block-sparse, a causal mask: `--spgemm-causal`).
    pub c: String,
    pub dtype: String,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// Square block size (bm = bk = bn).
    pub block: usize,
    /// Block densities of A and B (stored blocks ÷ grid cells).
    pub density_a: f64,
    pub density_b: f64,
    pub nnzb_a: usize,
    pub nnzb_b: usize,
    /// Block multiply-adds (`SpgemmPlan::pairs`).
    pub pairs: usize,
    /// Blocks of C (of a dense C: all of them).
    pub c_blocks: usize,
    /// The plan's stage records (`SpgemmPlan::size`) and output tiles (`SpgemmPlan::output_tiles`:
    /// with B streamed dense, the SpMM plan's).
    pub records: usize,
    pub tiles: usize,
    /// Host time of `plan_spgemm` (symbolic phase, records, upload): the median of
    /// [`PLAN_REPS`] plans of the case.
    pub plan_ms: f64,
    /// Device bytes the plan holds.
    pub plan_device_bytes: usize,
    /// Kernel family and tile.
    pub kernel: String,
    pub ms: f64,
    /// Effective TFLOP/s: `2 · pairs · bm · bk · bn / ms`.
    pub tflops: f64,
    /// Dense cuBLAS on M×N×K: the fastest of its timings in the run (one right before each
    /// row).
    pub dense_ms: f64,
    pub dense_tflops: f64,
    /// `tflops / dense_tflops`.
    pub ratio_to_dense: f64,
    /// Wall-clock speedup over dense: `dense_ms / ms`.
    pub speedup: f64,
    /// DRAM bandwidth (read + write) of a 1 GiB device-to-device copy: the highest of its
    /// timings in the run (one right before each row).
    pub dram_gbps: f64,
    /// Dense cuBLAS and the copy bandwidth as timed right before this row (the run's fastest
    /// of them are `dense_ms` and `dram_gbps`; 0 in files written before they were recorded).
    #[serde(default)]
    pub dense_ms_row: f64,
    #[serde(default)]
    pub dram_gbps_row: f64,
    /// Bytes that must move: A's and B's values and C, once.
    pub bytes: f64,
    /// Flops at the dense rate, in ms: `flops / (dense_tflops · 1e9)`.
    pub roof_compute_ms: f64,
    /// Bytes at the run's highest bandwidth, in ms.
    pub roof_dram_ms: f64,
    /// The larger of the two.
    pub roof_ms: f64,
    /// `ms / roof_ms` (the issue's target: at most 1.3).
    pub over_roof: f64,
    /// PyTorch CSR × CSR on the same patterns (median ms), when it ran.
    pub peer_ms: Option<f64>,
    /// The dtype PyTorch ran in (f32 where it cannot do this dtype) and its layout.
    pub peer_dtype: Option<String>,
    pub peer_layout: Option<String>,
    /// PyTorch's timed calls.
    pub peer_reps: Option<usize>,
    /// Non-zeros of PyTorch's result (should be `c_blocks · block²` of the product pattern).
    pub peer_nnz_c: Option<usize>,
    /// Our speed over PyTorch's: `peer_ms / ms`.
    pub ours_over_peer: Option<f64>,
    /// Why PyTorch has no time (error, unsupported, out of memory, timed out).
    pub peer_error: Option<String>,
    /// How PyTorch was run (notes of the script).
    pub peer_note: Option<String>,
    /// The case for the peers' script (keyed by `peer_case["id"]`).
    #[serde(skip)]
    pub peer_case: Option<serde_json::Value>,
}

/// Dense cuBLAS on M×N×K with its own operands, re-timed before every row.
struct DenseRef<T: InputElement> {
    gemm: DenseGemm,
    a: DeviceMatrix<T>,
    b: DeviceMatrix<T>,
    c: DeviceMatrix<T>,
    flops: f64,
}

impl<T: InputElement> DenseRef<T> {
    fn new(ctx: &Context, (m, n, k): (usize, usize, usize), rng: &mut TestRng) -> Res<Self> {
        Ok(DenseRef {
            gemm: DenseGemm::new(ctx)?,
            a: ctx.upload_matrix(m, k, &random_values::<T>(m * k, rng)).map_err(err)?,
            b: ctx.upload_matrix(k, n, &random_values::<T>(k * n, rng)).map_err(err)?,
            c: ctx.zeros_matrix::<T>(m, n).map_err(err)?,
            flops: 2.0 * (m * n * k) as f64,
        })
    }

    fn time(&mut self, ctx: &Context, reps: Reps) -> Res<f64> {
        let DenseRef { gemm, a, b, c, .. } = self;
        time_ms(ctx, reps, |_| gemm.gemm(ctx, a, b, c))
    }
}

/// The DRAM bandwidth: a device-to-device copy of `COPY_BYTES` (non-zero data).
struct CopyBw {
    src: CudaSlice<u8>,
    dst: CudaSlice<u8>,
}

impl CopyBw {
    fn new(ctx: &Context) -> Res<Self> {
        let e = |e: blocksparse::cudarc::driver::DriverError| e.to_string();
        let s = ctx.stream();
        let mut src = s.alloc_zeros::<u8>(COPY_BYTES).map_err(e)?;
        let dst = s.alloc_zeros::<u8>(COPY_BYTES).map_err(e)?;
        let chunk: Vec<u8> = (0..COPY_BYTES / 16).map(|i| (i.wrapping_mul(2654435761) >> 7) as u8 | 1).collect();
        for off in (0..COPY_BYTES).step_by(chunk.len()) {
            s.memcpy_htod(&chunk, &mut src.slice_mut(off..off + chunk.len())).map_err(e)?;
        }
        Ok(CopyBw { src, dst })
    }

    /// GB/s, read + write bytes.
    fn gbps(&mut self, ctx: &Context, reps: Reps) -> Res<f64> {
        let CopyBw { src, dst } = self;
        let s = ctx.stream();
        let ms = time_ms(ctx, reps, |_| s.memcpy_dtod(src, dst).map_err(|e| e.to_string()))?;
        Ok(2.0 * COPY_BYTES as f64 / (ms * 1e-3) / 1e9)
    }
}

/// One case: its name and the two masks (row-major over the block grids).
struct Case {
    pattern_a: String,
    pattern_b: String,
    mask_a: Vec<bool>,
    mask_b: Vec<bool>,
}

/// The kernel a BSR × BSR plan runs, as the bench and validate print it: family and tile rows,
/// `/p` where its C blocks are paired by shared K, `/w` where its warps run their own rings;
/// with B streamed dense, the SpMM plan's tile and `/B` (`/Bc` over A re-blocked into 128×128
/// blocks).
pub fn kernel_label(plan: &blocksparse::SpgemmPlan) -> String {
    if plan.dense_b() {
        // The SpMM plan's tile (e.g. `Hopper128k16`); `/Bc` over A re-blocked into 128×128
        // blocks.
        return format!("{}/B{}", plan.tile(), if plan.coarse_a() { "c" } else { "" });
    }
    let (paired, warps) = (if plan.pairs_columns() { "/p" } else { "" }, if plan.warp_rings() { "/w" } else { "" });
    format!("{:?}{}{paired}{warps}", plan.tile().family, plan.tile().shape().0)
}

fn cases((gm, gk, gn): (usize, usize, usize), rng: &mut TestRng) -> Vec<Case> {
    let case = |a: &str, mask_a: Vec<bool>, b: &str, mask_b: Vec<bool>| Case { pattern_a: a.into(), pattern_b: b.into(), mask_a, mask_b };
    let v = vec![
        case("uniform0.125", exact_mask(gm, gk, 0.125, rng), "uniform0.125", exact_mask(gk, gn, 0.125, rng)),
        case("uniform0.5", exact_mask(gm, gk, 0.5, rng), "uniform0.5", exact_mask(gk, gn, 0.5, rng)),
        case("top16", topk_mask(gm, gk, 16, rng), "top16", topk_mask(gk, gn, 16, rng)),
        case("banded0.125", banded_mask(gm, gk, 0.125), "uniform0.125", exact_mask(gk, gn, 0.125, rng)),
    ];
    debug_assert_eq!(v.len(), CASES);
    v
}

/// `uniform<d> x uniform<d>` (`--spgemm-uniform`).
fn uniform_case((gm, gk, gn): (usize, usize, usize), d: f64, rng: &mut TestRng) -> Case {
    let name = format!("uniform{d}");
    Case { pattern_a: name.clone(), pattern_b: name, mask_a: exact_mask(gm, gk, d, rng), mask_b: exact_mask(gk, gn, d, rng) }
}

/// Two value sets of one `(rows, cols)` pattern in `(bs, bs)` blocks (sharing the pattern, so
/// one plan serves both).
fn operand_pair<T: InputElement>(
    ctx: &Context,
    rows: usize,
    cols: usize,
    bs: usize,
    mask: &[bool],
    rng: &mut TestRng,
) -> Res<[DeviceBsr<T>; 2]> {
    let nnzb = mask.iter().filter(|&&x| x).count();
    let host = Bsr::from_block_mask(rows, cols, BlockShape::square(bs), mask, random_values::<T>(nnzb * bs * bs, rng)).map_err(err)?;
    let first = ctx.upload_bsr(&host).map_err(err)?;
    let mut second = ctx.zeros_bsr_like::<T, T>(&first, 1).map_err(err)?;
    ctx.update_values(&mut second, &random_values::<T>(nnzb * bs * bs, rng)).map_err(err)?;
    Ok([first, second])
}

/// The causal pattern of an `(m, n)` C in `(bs, bs)` blocks: block `(i, j)` for `j <= i` (the
/// values are only uploaded to carry it).
fn causal_pattern(ctx: &Context, (m, n): (usize, usize), bs: usize) -> Res<std::sync::Arc<blocksparse::Pattern>> {
    let (gm, gn) = (m / bs, n / bs);
    let mask: Vec<bool> = (0..gm * gn).map(|i| i % gn <= i / gn).collect();
    let nnzb = mask.iter().filter(|&&x| x).count();
    let host = Bsr::from_block_mask(m, n, BlockShape::square(bs), &mask, vec![half::f16::ONE; nnzb * bs * bs]).map_err(err)?;
    Ok(ctx.upload_bsr(&host).map_err(err)?.pattern().clone())
}

fn bits(mask: &[bool]) -> String {
    mask.iter().map(|&x| if x { '1' } else { '0' }).collect()
}

/// Times every case at every block size of `--spgemm-blocks` for input (and output) type `T`.
pub fn run<T: InputElement>(ctx: &Context, args: &Args, seed: u64, rows: &mut Vec<SpgemmRow>, bar: &ProgressBar) -> Res<()> {
    let (m, n, k, reps) = (args.m, args.n, args.k, args.timing());
    let dt = T::DTYPE;
    // Its own stream of random numbers: the same masks and values for a seed whatever other
    // suites run.
    let mut rng = seeded_rng(seed ^ 0x5350_4745_4d4d);
    bar.set_message(format!("{dt} spgemm: dense operands, bandwidth buffers"));
    let mut dense = DenseRef::<T>::new(ctx, (m, n, k), &mut rng)?;
    let mut copy = CopyBw::new(ctx)?;
    let mut c_dense = ctx.zeros_matrix::<T>(m, n).map_err(err)?;
    let esize = std::mem::size_of::<T>() as f64;
    let first_row = rows.len();
    for &bs in &args.spgemm_blocks {
        let mut all = cases((m / bs, k / bs, n / bs), &mut rng);
        all.extend(args.spgemm_uniform.iter().map(|&d| uniform_case((m / bs, k / bs, n / bs), d, &mut rng)));
        for case in all {
            let name = format!("{} x {}", case.pattern_a, case.pattern_b);
            bar.set_message(format!("{dt} spgemm b{bs} {name}"));
            let a = operand_pair::<T>(ctx, m, k, bs, &case.mask_a, &mut rng)?;
            let b = operand_pair::<T>(ctx, k, n, bs, &case.mask_b, &mut rng)?;
            let (nnzb_a, nnzb_b) = (a[0].nnzb(), b[0].nnzb());
            let product = ctx.spgemm_size(&a[0], &b[0], &SpgemmOutput::Product).map_err(err)?;
            let id = format!("{dt} b{bs} {name}");
            let peer = serde_json::json!({
                "op": "spgemm", "id": id, "m": m, "n": n, "k": k, "block": bs, "dtype": dt.to_string(),
                "density": nnzb_a as f64 / case.mask_a.len() as f64, "pattern": name,
                "mask_a": bits(&case.mask_a), "mask_b": bits(&case.mask_b), "reps": reps.n,
                "expect_nnz_c": product.c_blocks * bs * bs,
            });
            // The planner's plan, then one per N-tile group size of `--groups` (label "G<g>"),
            // each also with C blocks paired in column order where `--unpaired` asks.
            // With `--routes`, the plans on each route too ("records", "B dense").
            let pairings: &[(&str, Option<bool>)] = if args.unpaired { &[("", None), (" unpaired", Some(false))] } else { &[("", None)] };
            let routes: &[(&str, Option<bool>, Option<bool>)] = if args.routes {
                &[
                    ("", None, None),
                    (" records", Some(false), None),
                    (" B dense", Some(true), Some(false)),
                    (" B dense c", Some(true), Some(true)),
                ]
            } else {
                &[("", None, None)]
            };
            let plans = std::iter::once((String::new(), None))
                .chain(args.group_choices().map(|(g, group)| (format!(" G{g}"), group)))
                .flat_map(|(label, g)| {
                    pairings.iter().flat_map(move |&(p, pair_columns)| {
                        let label = label.clone();
                        routes.iter().map(move |&(r, dense_b, coarse_a)| {
                            (
                                format!("{label}{p}{r}"),
                                PlanOptions { n_tile_group: g, pair_columns, dense_b, coarse_a, ..Default::default() },
                            )
                        })
                    })
                })
                .collect::<Vec<_>>();
            let mut outs = vec![("dense R", SpgemmOutput::Dense), ("bsr product", SpgemmOutput::Product)];
            if args.spgemm_causal {
                outs.push(("bsr causal", SpgemmOutput::Mask(causal_pattern(ctx, (m, n), bs)?)));
            }
            let choices = outs.iter().flat_map(|o| plans.iter().map(move |p| (o.clone(), p.clone())));
            for ((c_kind, out), (suffix, opts)) in choices {
                let label = format!("{c_kind}{suffix}");
                let dense_c = matches!(out, SpgemmOutput::Dense);
                let what = |e: String| format!("spgemm {id}, C {label}: {e}");
                let (plan, plan_ms) =
                    timed_plan(ctx, PLAN_REPS, || ctx.plan_spgemm_with(&a[0], &b[0], out.clone(), &opts)).map_err(what)?;
                let size = plan.size();
                let kernel = kernel_label(&plan);
                let flops = plan.flops();
                let mut c_bsr = if dense_c { None } else { Some(ctx.spgemm_output::<T>(&plan).map_err(|e| what(e.to_string()))?) };
                // The two references right before ours, so that the board is in the state of a
                // sustained load; the rows are then put against the fastest of them
                // (`against_fastest`).
                let dram_gbps = copy.gbps(ctx, reps)?;
                let dense_ms = dense.time(ctx, reps)?;
                let ms = match c_bsr.as_mut() {
                    None => time_ms(ctx, reps, |i| ctx.spgemm(&plan, 1.0, &a[i % 2], &b[i % 2], 0.0, c_dense.view_mut()).map_err(err)),
                    Some(c) => time_ms(ctx, reps, |i| ctx.spgemm_bsr(&plan, 1.0, &a[i % 2], &b[i % 2], 0.0, c).map_err(err)),
                }
                .map_err(what)?;
                let dense_tflops = tflops(dense.flops, dense_ms);
                let ours = tflops(flops, ms);
                let c_elems = if dense_c { (m * n) as f64 } else { (size.c_blocks * bs * bs) as f64 };
                let bytes = ((nnzb_a + nnzb_b) * bs * bs) as f64 * esize + c_elems * esize;
                let roof_compute_ms = flops / dense.flops * dense_ms;
                let roof_dram_ms = bytes / (dram_gbps * 1e9) * 1e3;
                let roof_ms = roof_compute_ms.max(roof_dram_ms);
                rows.push(SpgemmRow {
                    case: name.clone(),
                    pattern_a: case.pattern_a.clone(),
                    pattern_b: case.pattern_b.clone(),
                    c: label.clone(),
                    dtype: dt.to_string(),
                    m,
                    n,
                    k,
                    block: bs,
                    density_a: nnzb_a as f64 / case.mask_a.len() as f64,
                    density_b: nnzb_b as f64 / case.mask_b.len() as f64,
                    nnzb_a,
                    nnzb_b,
                    pairs: size.pairs,
                    c_blocks: size.c_blocks,
                    records: size.records,
                    tiles: plan.output_tiles(),
                    plan_ms,
                    plan_device_bytes: plan.device_bytes(),
                    kernel,
                    ms,
                    tflops: ours,
                    dense_ms,
                    dense_tflops,
                    ratio_to_dense: ours / dense_tflops,
                    speedup: dense_ms / ms,
                    dram_gbps,
                    bytes,
                    roof_compute_ms,
                    roof_dram_ms,
                    roof_ms,
                    over_roof: ms / roof_ms,
                    peer_case: Some(peer.clone()),
                    ..SpgemmRow::default()
                });
            }
            bar.inc(1);
        }
    }
    against_fastest(&mut rows[first_row..], dense.flops);
    Ok(())
}

/// Puts `rows` (one shape and dtype) against the fastest dense cuBLAS timing and the highest
/// copy bandwidth measured among them, as the SpMM suites do (dense is power-bound and drifts
/// with the board's state more than the sparse kernels: a row whose dense reference ran
/// throttled would otherwise look closer to dense and to its roof than it is).
fn against_fastest(rows: &mut [SpgemmRow], dense_flops: f64) {
    let dense_ms = rows.iter().map(|r| r.dense_ms).fold(f64::INFINITY, f64::min);
    let dram_gbps = rows.iter().map(|r| r.dram_gbps).fold(0.0, f64::max);
    for r in rows {
        r.dense_ms_row = r.dense_ms;
        r.dram_gbps_row = r.dram_gbps;
        r.dense_ms = dense_ms;
        r.dense_tflops = tflops(dense_flops, dense_ms);
        r.ratio_to_dense = r.tflops / r.dense_tflops;
        r.speedup = dense_ms / r.ms;
        r.dram_gbps = dram_gbps;
        // The row's flops at the dense rate (`tflops · ms` is its flops, scaled as dense's).
        r.roof_compute_ms = r.tflops * r.ms / r.dense_tflops;
        r.roof_dram_ms = r.bytes / (dram_gbps * 1e9) * 1e3;
        r.roof_ms = r.roof_compute_ms.max(r.roof_dram_ms);
        r.over_roof = r.ms / r.roof_ms;
    }
}

/// A short form of PyTorch's failure for the table (the whole reason is printed below it).
fn peer_short(e: &str) -> &'static str {
    let l = e.to_lowercase();
    if l.contains("timed out") {
        "timeout"
    } else if l.contains("out of memory") || l.contains("outofmemory") || l.contains("insufficient_resources") {
        "OOM"
    } else if l.contains("not implemented") || l.contains("not supported") || l.contains("unsupported") {
        "unsupported"
    } else if l.contains("python3 not found") || l.contains("no module named") {
        "no torch"
    } else {
        "error"
    }
}

/// Prints the SpGEMM table (after the other tables), its legend and the targets.
pub fn print(rows: &[SpgemmRow], peers: bool) {
    if rows.is_empty() {
        return;
    }
    println!();
    println!(
        "spgemm: C = A·B, A (M, K) and B (K, N) block-sparse, square blocks, alpha 1, beta 0; C dense row-major, BSR at the product's pattern, or BSR at a causal mask"
    );
    println!(
        "  TF/s: 2·pairs·bm·bk·bn / time; ratio: TF/s / dense cuBLAS TF/s on MxNxK; speedup: dense time / ours (dense: the run's fastest timing)"
    );
    println!(
        "  roof: max(flops / dense rate, (A + B + C bytes once) / DRAM bandwidth of a 1 GiB copy), both timed before each row, the fastest of the run used;"
    );
    println!("        by: the bound that sets it; /roof: time / roof; ok: /roof <= {ROOF_TARGET} (the target)");
    if peers {
        println!(
            "  torch: torch.sparse.mm on CSR tensors of the same patterns (cuSPARSE SpGEMM, CSR result, shown on both C rows), median ms; ours/torch: its time / ours"
        );
    }
    // The timings right before each row (older files: the rates used).
    let row_tflops = |r: &SpgemmRow| if r.dense_ms_row > 0.0 { r.dense_tflops * r.dense_ms / r.dense_ms_row } else { r.dense_tflops };
    let row_gbps = |r: &SpgemmRow| if r.dram_gbps_row > 0.0 { r.dram_gbps_row } else { r.dram_gbps };
    let (lo, hi) = rows.iter().fold((f64::MAX, 0f64), |(lo, hi), r| (lo.min(row_tflops(r)), hi.max(row_tflops(r))));
    let (blo, bhi) = rows.iter().fold((f64::MAX, 0f64), |(lo, hi), r| (lo.min(row_gbps(r)), hi.max(row_gbps(r))));
    let fastest = rows.iter().map(|r| r.dense_tflops).fold(0f64, f64::max);
    println!(
        "  measured in this run, right before each row: dense cuBLAS {lo:.0}–{hi:.0} TF/s, DRAM {blo:.0}–{bhi:.0} GB/s (read + write); ratios and roofs use the fastest ({fastest:.0} TF/s, {bhi:.0} GB/s)"
    );
    let mut header = format!(
        "{:<27} {:<15} {:<5} {:>5} {:>6} {:>6} {:>8} {:>8} {:>7} {:>10} {:>8} {:>7} {:>8} {:>6} {:>7} {:>8} {:>5} {:>6} {:>3}",
        "case (A x B)",
        "C",
        "dtype",
        "block",
        "dens A",
        "dens B",
        "pairs",
        "records",
        "tiles",
        "kernel",
        "ms",
        "TF/s",
        "dense TF",
        "ratio",
        "speedup",
        "roof ms",
        "by",
        "/roof",
        "ok"
    );
    if peers {
        header += &format!(" {:>13} {:>10}", "torch ms", "ours/torch");
    }
    println!("{header}");
    let mut notes: Vec<(String, String)> = Vec::new();
    for r in rows {
        let mut line = format!(
            "{:<27} {:<15} {:<5} {:>5} {:>6.4} {:>6.4} {:>8} {:>8} {:>7} {:>10} {:>8.3} {:>7.1} {:>8.1} {:>6.3} {:>6.2}x {:>8.3} {:>5} {:>6.2} {:>3}",
            r.case,
            r.c,
            r.dtype,
            r.block,
            r.density_a,
            r.density_b,
            r.pairs,
            r.records,
            r.tiles,
            r.kernel,
            r.ms,
            r.tflops,
            r.dense_tflops,
            r.ratio_to_dense,
            r.speedup,
            r.roof_ms,
            if r.roof_dram_ms >= r.roof_compute_ms { "dram" } else { "flops" },
            r.over_roof,
            if r.over_roof <= ROOF_TARGET { "yes" } else { "no" }
        );
        if peers {
            let id = r.peer_case.as_ref().and_then(|c| c.get("id")).and_then(|v| v.as_str()).unwrap_or(&r.case).to_string();
            let torch = match (r.peer_ms, &r.peer_error) {
                (Some(ms), _) => match r.peer_dtype.as_deref() {
                    Some(d) if d != r.dtype => format!("{ms:.3} {d}"),
                    _ => format!("{ms:.3}"),
                },
                (None, Some(e)) => format!("({})", peer_short(e)),
                (None, None) => "-".into(),
            };
            let said: Vec<&str> = [r.peer_error.as_deref(), r.peer_note.as_deref()].into_iter().flatten().collect();
            if !said.is_empty() && !notes.iter().any(|(i, _)| *i == id) {
                notes.push((id, said.join("; ")));
            }
            line += &format!(" {:>13} {:>10}", torch, r.ours_over_peer.map_or("-".into(), |x| format!("{x:.2}x")));
        }
        println!("{line}");
    }
    let within = rows.iter().filter(|r| r.over_roof <= ROOF_TARGET).count();
    println!("targets: {within}/{} rows within {ROOF_TARGET}x of their roof", rows.len());
    for r in rows.iter().filter(|r| r.block == 128 && r.pattern_a == "uniform0.5" && r.pattern_b == "uniform0.5") {
        println!(
            "targets: 128x128, 50% x 50%, C {}: effective {:.1} TF/s = {:.3} of dense cuBLAS ({:.1} TF/s), target >= {DENSE_TARGET}: {}",
            r.c,
            r.tflops,
            r.ratio_to_dense,
            r.dense_tflops,
            if r.ratio_to_dense >= DENSE_TARGET { "met" } else { "not met" }
        );
    }
    for (id, note) in notes {
        println!("torch {id}: {note}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(m: &[bool]) -> usize {
        m.iter().filter(|&&x| x).count()
    }

    #[test]
    fn cases_have_the_issue_patterns() {
        let mut rng = seeded_rng(7);
        let (gm, gk, gn) = (64, 128, 32);
        let cs = cases((gm, gk, gn), &mut rng);
        assert_eq!(cs.len(), CASES);
        for c in &cs {
            assert_eq!(c.mask_a.len(), gm * gk);
            assert_eq!(c.mask_b.len(), gk * gn);
        }
        assert_eq!(count(&cs[0].mask_a), gm * gk / 8);
        assert_eq!(count(&cs[0].mask_b), gk * gn / 8);
        assert_eq!(count(&cs[1].mask_a), gm * gk / 2);
        assert_eq!(count(&cs[1].mask_b), gk * gn / 2);
        // Top-16: 16 blocks in every row of both.
        for (mask, cols) in [(&cs[2].mask_a, gk), (&cs[2].mask_b, gn)] {
            assert!(mask.chunks(cols).all(|row| count(row) == 16));
        }
        // Banded A: the same width in every row, 12.5 % of the columns.
        assert!(cs[3].mask_a.chunks(gk).all(|row| count(row) == gk / 8));
        assert_eq!(count(&cs[3].mask_b), gk * gn / 8);
        assert_eq!((cs[3].pattern_a.as_str(), cs[3].pattern_b.as_str()), ("banded0.125", "uniform0.125"));
    }

    #[test]
    fn ratios_and_roofs_use_the_fastest_dense_and_bandwidth_of_the_run() {
        // Two rows of 8192³ whose dense references ran at 770 and 640 TF/s, the copies at 3.0
        // and 2.8 TB/s; both rows' flops are 275 GFLOP (0.36 ms at 770 TF/s).
        let dense_flops = 2.0 * 8192f64.powi(3);
        let flops = 275e9;
        let mut rows: Vec<SpgemmRow> = [(0.57, 770.0, 3000.0), (0.58, 640.0, 2800.0)]
            .iter()
            .map(|&(ms, dense_tf, gbps)| {
                let dense_ms = dense_flops / (dense_tf * 1e9);
                let mut r = row("dense R", 128, "uniform0.5", 0.0);
                r.ms = ms;
                r.tflops = tflops(flops, ms);
                r.dense_ms = dense_ms;
                r.dram_gbps = gbps;
                r.bytes = 4e8;
                r
            })
            .collect();
        against_fastest(&mut rows, dense_flops);
        for r in &rows {
            assert!((r.dense_tflops - 770.0).abs() < 1e-6, "{}", r.dense_tflops);
            assert_eq!(r.dram_gbps, 3000.0);
            assert!((r.ratio_to_dense - r.tflops / 770.0).abs() < 1e-12);
            assert!((r.roof_compute_ms - flops / (770.0 * 1e9)).abs() < 1e-9, "{}", r.roof_compute_ms);
            assert!((r.roof_dram_ms - 4e8 / 3e12 * 1e3).abs() < 1e-12);
            assert!((r.over_roof - r.ms / r.roof_ms).abs() < 1e-12);
            assert!((r.speedup - r.dense_ms / r.ms).abs() < 1e-12);
        }
        // The timings right before each row are kept.
        assert!((rows[1].dense_ms_row - dense_flops / (640.0 * 1e9)).abs() < 1e-12);
        assert_eq!(rows[1].dram_gbps_row, 2800.0);
        // The throttled reference no longer flatters the second row.
        assert!(rows[1].ratio_to_dense < tflops(flops, 0.58) / 640.0);
    }

    fn row(c: &str, block: usize, pattern: &str, over_roof: f64) -> SpgemmRow {
        SpgemmRow {
            case: format!("{pattern} x {pattern}"),
            pattern_a: pattern.into(),
            pattern_b: pattern.into(),
            c: c.into(),
            dtype: "f16".into(),
            m: 8192,
            n: 8192,
            k: 8192,
            block,
            density_a: 0.5,
            density_b: 0.5,
            pairs: 65536,
            records: 1000,
            tiles: 100,
            kernel: "Hopper128".into(),
            ms: 0.5,
            tflops: 550.0,
            dense_tflops: 750.0,
            ratio_to_dense: 550.0 / 750.0,
            speedup: 3.0,
            dram_gbps: 3000.0,
            roof_ms: 0.4,
            over_roof,
            ..SpgemmRow::default()
        }
    }

    #[test]
    fn table_prints_with_and_without_peers() {
        let mut rows = vec![row("dense R", 128, "uniform0.5", 1.25), row("bsr product", 128, "uniform0.5", 1.4)];
        rows[0].peer_ms = Some(12.5);
        rows[0].peer_dtype = Some("f32".into());
        rows[0].ours_over_peer = Some(25.0);
        rows[1].peer_error = Some("RuntimeError: CUDA out of memory".into());
        rows[1].peer_case = Some(serde_json::json!({"id": "f16 b128 uniform0.5 x uniform0.5"}));
        print(&rows, false);
        print(&rows, true);
        print(&[], true);
        assert_eq!(peer_short("RuntimeError: CUDA out of memory. Tried to allocate"), "OOM");
        assert_eq!(peer_short("timed out after 90 s"), "timeout");
        assert_eq!(peer_short("\"addmm\" not implemented for 'Half'"), "unsupported");
    }

    #[test]
    fn report_round_trips_and_old_files_have_no_spgemm_rows() {
        let report = crate::bench::Report { spgemm: vec![row("dense R", 64, "top16", 1.1)], ..Default::default() };
        let text = serde_json::to_string(&report).unwrap();
        let back: crate::bench::Report = serde_json::from_str(&text).unwrap();
        assert_eq!(back.spgemm.len(), 1);
        assert_eq!(back.spgemm[0].pattern_a, "top16");
        let old: crate::bench::Report = serde_json::from_str(r#"{"gpu": "x", "rows": []}"#).unwrap();
        assert!(old.spgemm.is_empty());
    }
}
