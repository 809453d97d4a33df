//! `cargo xtask validate`: every case draws fresh random data (never zeros), poisons C, runs the
//! GPU product twice (the two results must agree bit for bit), and compares every element with
//! the f64 CPU reference.

use blocksparse::reference::{rel_error, spmm_reference};
use blocksparse::testgen::{banded_mask, block_diagonal_mask, random_mask, random_values, seeded_rng, skewed_mask, TestRng};
use blocksparse::{BlockShape, Bsr, Context, DType, Element, InputElement, KernelPath};
use half::{bf16, f16};
use indicatif::{ProgressBar, ProgressStyle};
use rand::Rng;

#[derive(clap::Args)]
pub struct Args {
    /// Kernel path: auto, portable or hopper.
    #[arg(long, default_value = "auto")]
    path: KernelPath,
    /// Seed of the random data (default: fresh).
    #[arg(long)]
    seed: Option<u64>,
    /// Only the cases whose label contains this text.
    #[arg(long)]
    filter: Option<String>,
    /// Relative-error bound ‖C − ref‖ / ‖ref‖.
    #[arg(long, default_value_t = 1e-2)]
    tol: f64,
}

#[derive(Clone, Debug)]
enum Pattern {
    Uniform(f64),
    /// (density, heavy rows, share of blocks in them)
    Skewed(f64, usize, f64),
    /// Every block in one block row.
    OneRow,
    /// Exactly one nonzero block.
    OneBlock,
    /// Sliding-window band of this density around the diagonal (`testgen::banded_mask`).
    Banded(f64),
    /// Groups of rows on the same columns (`testgen::block_diagonal_mask`).
    BlockDiagonal(f64),
}

#[derive(Clone, Debug)]
struct Case {
    label: String,
    m: usize,
    k: usize,
    n: usize,
    bm: usize,
    bk: usize,
    input: DType,
    output: DType,
    pattern: Pattern,
    alpha: f32,
    beta: f32,
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    let mut push = |m, k, n, bm, bk, input, output, pattern: Pattern, alpha, beta| {
        let label = format!("{m}x{k}x{n} b{bm}x{bk} {input}->{output} {pattern:?} a={alpha} b={beta}");
        v.push(Case { label, m, k, n, bm, bk, input, output, pattern, alpha, beta });
    };
    use DType::*;
    // Every kernel variant: block heights × input types × output types.
    for bs in [16, 32, 64, 128] {
        for input in [F16, Bf16] {
            for output in [F16, Bf16, F32] {
                push(8 * bs, 6 * bs, 129, bs, bs, input, output, Pattern::Uniform(0.3), 1.0, 0.0);
            }
        }
    }
    // Non-square blocks.
    for (bm, bk) in [(16, 64), (64, 16), (32, 128), (128, 32), (64, 128), (128, 64), (16, 128), (128, 16)] {
        push(4 * bm.max(bk), 8 * bm.max(bk), 200, bm, bk, F16, F32, Pattern::Uniform(0.4), 1.5, -0.5);
        push(4 * bm.max(bk), 8 * bm.max(bk), 64, bm, bk, Bf16, Bf16, Pattern::Uniform(0.4), 1.0, 0.0);
    }
    // Densities from all-empty to full.
    for d in [0.0, 0.01, 0.125, 0.5, 1.0] {
        push(1024, 1024, 256, 64, 64, F16, F16, Pattern::Uniform(d), 1.0, 0.0);
        push(512, 768, 100, 32, 32, Bf16, F32, Pattern::Uniform(d), 0.75, 1.25);
    }
    // Skewed rows: a few block rows hold most blocks.
    push(2048, 2048, 512, 64, 64, F16, F16, Pattern::Skewed(0.125, 4, 0.5), 1.0, 0.0);
    push(2048, 4096, 96, 16, 16, F16, F32, Pattern::Skewed(0.05, 2, 0.7), 1.0, 0.5);
    push(1024, 8192, 64, 128, 128, Bf16, Bf16, Pattern::Skewed(0.25, 1, 0.5), -1.0, 0.0);
    // Structured masks: neighbouring rows share their columns.
    push(2048, 2048, 300, 64, 64, F16, F16, Pattern::Banded(0.125), 1.0, 0.0);
    push(1024, 2048, 256, 128, 128, Bf16, F32, Pattern::BlockDiagonal(0.25), 1.0, 0.5);
    // Tiny and degenerate shapes.
    for bs in [16, 32, 64, 128] {
        push(bs, bs, 1, bs, bs, F16, F32, Pattern::Uniform(1.0), 1.0, 0.0);
        push(bs, 16 * bs, 3, bs, bs, F16, F16, Pattern::OneRow, 2.0, 0.0);
        push(8 * bs, 8 * bs, 77, bs, bs, Bf16, F32, Pattern::OneBlock, 1.0, 1.0);
    }
    // N tails.
    for n in [1, 2, 7, 8, 9, 63, 65, 129, 255, 257, 1000] {
        push(256, 512, n, 32, 32, F16, F16, Pattern::Uniform(0.3), 1.0, 0.0);
        push(256, 256, n, 64, 128, Bf16, F32, Pattern::Uniform(0.5), 0.5, 2.0);
    }
    // alpha / beta.
    for (alpha, beta) in [(0.0, 1.0), (0.0, 0.0), (-2.0, 0.25), (1.0, -1.0), (0.125, 3.0)] {
        push(512, 512, 300, 64, 64, F16, F32, Pattern::Uniform(0.25), alpha, beta);
        push(512, 512, 33, 128, 128, F16, F16, Pattern::Uniform(0.25), alpha, beta);
    }
    // Long rows with few N tiles: the planner splits them (split-K + fix-up).
    push(256, 65536, 64, 64, 64, F16, F32, Pattern::OneRow, 1.0, 0.5);
    push(512, 32768, 40, 16, 16, Bf16, Bf16, Pattern::Skewed(0.2, 1, 0.8), 1.0, 0.0);
    push(1024, 16384, 8, 128, 128, F16, F16, Pattern::Skewed(0.5, 2, 0.5), 1.0, 1.0);
    // Large.
    push(8192, 8192, 64, 64, 64, F16, F16, Pattern::Uniform(0.125), 1.0, 0.0);
    push(8192, 8192, 33, 128, 128, Bf16, F32, Pattern::Uniform(0.125), 1.0, -1.0);
    push(4096, 8192, 130, 32, 32, F16, Bf16, Pattern::Skewed(0.125, 8, 0.5), 1.0, 0.0);
    push(8192, 4096, 17, 16, 16, F16, F32, Pattern::Uniform(0.05), 1.0, 0.0);
    v
}

struct Outcome {
    kernel: String,
    rel_err: f64,
    non_finite: usize,
    deterministic: bool,
}

fn make_mask(c: &Case, rng: &mut TestRng) -> Vec<bool> {
    let (br, bc) = (c.m / c.bm, c.k / c.bk);
    match c.pattern {
        Pattern::Uniform(d) => random_mask(br, bc, d, rng),
        Pattern::Skewed(d, rows, share) => skewed_mask(br, bc, d, rows, share, rng),
        Pattern::Banded(d) => banded_mask(br, bc, d),
        Pattern::BlockDiagonal(d) => block_diagonal_mask(br, bc, d),
        Pattern::OneRow => {
            let row = rng.random_range(0..br);
            (0..br * bc).map(|i| i / bc == row).collect()
        }
        Pattern::OneBlock => {
            let at = rng.random_range(0..br * bc);
            (0..br * bc).map(|i| i == at).collect()
        }
    }
}

fn run_case<T: InputElement, O: Element>(ctx: &Context, c: &Case, rng: &mut TestRng) -> Result<Outcome, String> {
    let e = |e: blocksparse::Error| format!("{e}");
    let mask = make_mask(c, rng);
    let nnzb = mask.iter().filter(|&&x| x).count();
    let values = random_values::<T>(nnzb * c.bm * c.bk, rng);
    let a = Bsr::from_block_mask(c.m, c.k, BlockShape { bm: c.bm, bk: c.bk }, &mask, values).map_err(e)?;
    let b = random_values::<T>(c.k * c.n, rng);
    // beta == 0: C starts as NaN poison (must be overwritten, never read).
    // beta != 0: C starts random (an unwritten element then keeps a wrong value).
    let c0: Vec<O> = if c.beta == 0.0 { vec![O::nan(); c.m * c.n] } else { random_values::<O>(c.m * c.n, rng) };
    let want = spmm_reference(c.alpha as f64, &a, &b, c.n, c.n, c.beta as f64, &c0, c.n).map_err(e)?;

    let a_dev = ctx.upload_bsr(&a).map_err(e)?;
    let b_dev = ctx.upload_matrix(c.k, c.n, &b).map_err(e)?;
    let plan = ctx.plan(&a_dev, c.n).map_err(e)?;
    let kernel = format!("{:?}", plan.kernel());
    let mut results = Vec::new();
    for _ in 0..2 {
        let mut c_dev = ctx.upload_matrix(c.m, c.n, &c0).map_err(e)?;
        ctx.spmm(&plan, c.alpha, &a_dev, &b_dev, c.beta, &mut c_dev).map_err(e)?;
        results.push(ctx.download_matrix(&c_dev).map_err(e)?);
    }
    let deterministic = results[0].iter().zip(&results[1]).all(|(x, y)| bytemuck_eq(x, y));
    let got = &results[0];
    let non_finite = got.iter().filter(|x| !x.to_f64().is_finite()).count();
    let rel_err = rel_error(got.iter().map(|x| x.to_f64()), &want);
    Ok(Outcome { kernel, rel_err, non_finite, deterministic })
}

fn bytemuck_eq<T: Element>(x: &T, y: &T) -> bool {
    bytemuck::bytes_of(x) == bytemuck::bytes_of(y)
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
    let ctx = crate::open_context(args.path)?;
    let seed = args.seed.unwrap_or_else(|| rand::rng().random());
    println!(
        "validate: {} (cc {}.{}, {} SMs), module {:?}, seed {seed}",
        ctx.device_name(),
        ctx.compute_capability().0,
        ctx.compute_capability().1,
        ctx.sm_count(),
        ctx.arch()
    );
    let all: Vec<Case> = cases()
        .into_iter()
        .filter(|c| args.filter.as_deref().is_none_or(|f| c.label.contains(f)))
        .collect();
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
                let d = format!(
                    "{:<9} {:.2e}  non-finite {}  {}",
                    o.kernel,
                    o.rel_err,
                    o.non_finite,
                    if o.deterministic { "bitwise-repeatable" } else { "NOT REPEATABLE" }
                );
                (ok, d)
            }
            Err(err) => (false, format!("error: {err}")),
        };
        if ok { passed += 1 } else { failed += 1 }
        rows.push(format!("{:<4} {:<72} {}", if ok { "ok" } else { "FAIL" }, c.label, detail));
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!("{:<4} {:<72} {}", "", "case (MxKxN, block, dtypes, pattern, alpha, beta)", "kernel    rel. error");
    for r in &rows {
        println!("{r}");
    }
    println!("{passed} passed, {failed} failed");
    Ok(failed == 0)
}
