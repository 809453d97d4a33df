//! `cargo xtask bench`: the BSR product and dense cuBLAS on the same shapes in one run.
//! Each measurement: warm-up, then `reps` launches each bracketed by CUDA events, median
//! reported; inputs rotate over two buffer sets so that repeated runs do not just re-read L2.

use std::time::{SystemTime, UNIX_EPOCH};

use blocksparse::dense::DenseGemm;
use blocksparse::testgen::{banded_mask, block_diagonal_mask, exact_mask, random_values, seeded_rng, skewed_mask, TestRng};
use blocksparse::{BlockShape, Bsr, Context, DType, DeviceMatrix, InputElement, KernelPath};
use half::{bf16, f16};
use rand::Rng;
use serde::Serialize;

#[derive(clap::Args)]
pub struct Args {
    /// Kernel path: auto, portable or hopper.
    #[arg(long, default_value = "auto")]
    path: KernelPath,
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
    /// Input dtypes (f16, bf16), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "f16")]
    dtypes: Vec<DType>,
    /// Also time a skewed pattern (a few block rows hold half the blocks) for each case.
    #[arg(long)]
    skewed: bool,
    /// Also time structured patterns of the same density for each case: banded (sliding-window
    /// attention: each row's blocks around its diagonal) and block-diagonal (groups of rows on
    /// the same columns, as experts or heads).
    #[arg(long)]
    structured: bool,
    /// Also time these tuning tile configurations (indices into blocksparse::abi::MMA_TILES;
    /// f16 only), each on the cases whose block size matches its block height.
    #[arg(long, value_delimiter = ',')]
    tiles: Vec<usize>,
    /// Also time the default kernel with these N-tile group sizes instead of the planner's
    /// (how many B column strips it walks together; see `Context::plan_grouped`).
    #[arg(long, value_delimiter = ',')]
    groups: Vec<u32>,
    /// Also run PyTorch's BSR product (torch.sparse, Triton kernel) on the same cases, when
    /// python3 with torch is available.
    #[arg(long)]
    peers: bool,
    /// Timed launches per measurement (median reported).
    #[arg(long, default_value_t = 50)]
    reps: usize,
    /// Where to write the JSON results.
    #[arg(long, default_value = "target/bench.json")]
    json: String,
}

#[derive(Serialize, Clone)]
struct Row {
    dtype: String,
    m: usize,
    n: usize,
    k: usize,
    block: usize,
    /// Kernel and tile the plan chose (or the tuning tile forced).
    kernel: String,
    pattern: String,
    density: f64,
    nnzb: usize,
    bsr_ms: f64,
    bsr_tflops: f64,
    dense_ms: f64,
    dense_tflops: f64,
    /// Effective BSR TFLOP/s over dense TFLOP/s (same M×N×K).
    ratio_to_dense: f64,
    /// K_eff = average blocks per block row × bk: the dense product with the same work.
    k_eff: usize,
    dense_eff_tflops: f64,
    /// Effective BSR TFLOP/s over dense TFLOP/s at M×N×K_eff (the cost of sparsity itself).
    ratio_to_equal_work: f64,
    /// PyTorch's BSR kernel on the same case (`--peers`), effective TFLOP/s.
    peer_tflops: Option<f64>,
    /// Dense time over BSR time.
    speedup: f64,
}

#[derive(Serialize)]
struct Report {
    gpu: String,
    compute_capability: (i32, i32),
    module: String,
    unix_time: u64,
    reps: usize,
    rows: Vec<Row>,
}

/// Median of `reps` event-timed runs of `f` after `warmup` untimed ones, in ms.
fn time_ms(ctx: &Context, reps: usize, mut f: impl FnMut(usize) -> Result<(), String>) -> Result<f64, String> {
    let e = |e: blocksparse::cudarc::driver::DriverError| e.to_string();
    let warmup = 5;
    for i in 0..warmup {
        f(i)?;
    }
    let cu = ctx.cuda();
    let timing = Some(blocksparse::cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let start = cu.new_event(timing).map_err(e)?;
    let stop = cu.new_event(timing).map_err(e)?;
    let mut times = Vec::with_capacity(reps);
    for i in 0..reps {
        start.record(ctx.stream()).map_err(e)?;
        f(i)?;
        stop.record(ctx.stream()).map_err(e)?;
        stop.synchronize().map_err(e)?;
        times.push(start.elapsed_ms(&stop).map_err(e)? as f64);
    }
    times.sort_by(|a, b| a.total_cmp(b));
    Ok(times[times.len() / 2])
}

fn dense_time<T: InputElement>(ctx: &Context, gemm: &DenseGemm, m: usize, n: usize, k: usize, reps: usize, rng: &mut TestRng) -> Result<f64, String> {
    let e = |e: blocksparse::Error| e.to_string();
    let a = ctx.upload_matrix(m, k, &random_values::<T>(m * k, rng)).map_err(e)?;
    let bs: Vec<DeviceMatrix<T>> =
        (0..2).map(|_| ctx.upload_matrix(k, n, &random_values::<T>(k * n, rng))).collect::<Result<_, _>>().map_err(e)?;
    let mut cs: Vec<DeviceMatrix<T>> = (0..2).map(|_| ctx.zeros_matrix::<T>(m, n)).collect::<Result<_, _>>().map_err(e)?;
    let ms = time_ms(ctx, reps, |i| gemm.gemm(ctx, &a, &bs[i % 2], &mut cs[i % 2]).map_err(e))?;
    Ok(ms)
}

/// Which plan a measurement uses.
#[derive(Clone, Copy)]
enum Choice {
    Default,
    /// A tuning tile (`MMA_TILES` index).
    Tile(usize),
    /// The default kernel with this N-tile group size.
    Group(u32),
}

#[allow(clippy::too_many_arguments)]
fn bsr_time<T: InputElement>(ctx: &Context, mask: &[bool], m: usize, n: usize, k: usize, bs: usize, choice: Choice, reps: usize, rng: &mut TestRng) -> Result<(f64, usize, String), String> {
    let e = |e: blocksparse::Error| e.to_string();
    let nnzb = mask.iter().filter(|&&x| x).count();
    let a = Bsr::from_block_mask(m, k, BlockShape::square(bs), mask, random_values::<T>(nnzb * bs * bs, rng)).map_err(e)?;
    let a_dev = ctx.upload_bsr(&a).map_err(e)?;
    let bsets: Vec<DeviceMatrix<T>> =
        (0..2).map(|_| ctx.upload_matrix(k, n, &random_values::<T>(k * n, rng))).collect::<Result<_, _>>().map_err(e)?;
    let mut cs: Vec<DeviceMatrix<T>> = (0..2).map(|_| ctx.zeros_matrix::<T>(m, n)).collect::<Result<_, _>>().map_err(e)?;
    let plan = match choice {
        Choice::Default => ctx.plan(&a_dev, n),
        Choice::Tile(t) => ctx.plan_with_tile(&a_dev, n, t),
        Choice::Group(g) => ctx.plan_grouped(&a_dev, n, Some(g)),
    }
    .map_err(e)?;
    let kernel = match choice {
        Choice::Group(g) => format!("{:?}G{g}", plan.kernel()),
        _ => format!("{:?}", plan.kernel()),
    };
    let ms = time_ms(ctx, reps, |i| ctx.spmm(&plan, 1.0, &a_dev, &bsets[i % 2], 0.0, &mut cs[i % 2]).map_err(e))?;
    Ok((ms, nnzb, kernel))
}

/// TFLOP/s of `flops` done in `ms` milliseconds.
fn tflops(flops: f64, ms: f64) -> f64 {
    flops / (ms * 1e-3) / 1e12
}

fn dense_tflops(m: usize, n: usize, k: usize, ms: f64) -> f64 {
    tflops(2.0 * m as f64 * n as f64 * k as f64, ms)
}

fn run_dtype<T: InputElement>(ctx: &Context, args: &Args, rows: &mut Vec<Row>, rng: &mut TestRng) -> Result<(), String> {
    let (m, n, k) = (args.m, args.n, args.k);
    let gemm = DenseGemm::new(ctx).map_err(|e| e.to_string())?;
    let dense_ms = dense_time::<T>(ctx, &gemm, m, n, k, args.reps, rng)?;
    let dense_full = dense_tflops(m, n, k, dense_ms);
    let mut equal_work = std::collections::HashMap::new();
    for &bs in &args.blocks {
        for &density in &args.densities {
            let (br, bc) = (m / bs, k / bs);
            let mut patterns = vec![("uniform".to_string(), exact_mask(br, bc, density, rng))];
            if args.skewed {
                patterns.push(("skewed".to_string(), skewed_mask(br, bc, density, (br / 64).max(1), 0.5, rng)));
            }
            if args.structured {
                patterns.push(("banded".to_string(), banded_mask(br, bc, density)));
                patterns.push(("blockdiag".to_string(), block_diagonal_mask(br, bc, density)));
            }
            let mut tiles = vec![Choice::Default];
            if T::DTYPE == DType::F16 {
                tiles.extend(
                    args.tiles
                        .iter()
                        .copied()
                        .filter(|&t| blocksparse::abi::MMA_TILES.get(t).is_some_and(|c| c.bm as usize == bs))
                        .map(Choice::Tile),
                );
            }
            tiles.extend(args.groups.iter().map(|&g| Choice::Group(g)));
            for ((pattern, mask), tile) in patterns.iter().flat_map(|p| tiles.iter().map(move |&t| (p, t))) {
                let (pattern, mask) = (pattern.clone(), mask);
                let (ms, nnzb, kernel) = bsr_time::<T>(ctx, mask, m, n, k, bs, tile, args.reps, rng)?;
                let flops = 2.0 * nnzb as f64 * (bs * bs) as f64 * n as f64;
                let bsr_tflops = tflops(flops, ms);
                // Rounded to a multiple of 64 so that cuBLAS runs its regular kernels.
                let k_eff = ((nnzb * bs * bs) as f64 / m as f64 / 64.0).round().max(1.0) as usize * 64;
                let dense_eff = match equal_work.get(&k_eff) {
                    Some(&t) => t,
                    None => {
                        let t = dense_tflops(m, n, k_eff, dense_time::<T>(ctx, &gemm, m, n, k_eff, args.reps, rng)?);
                        equal_work.insert(k_eff, t);
                        t
                    }
                };
                rows.push(Row {
                    dtype: T::DTYPE.to_string(),
                    m,
                    n,
                    k,
                    block: bs,
                    kernel,
                    pattern,
                    density,
                    nnzb,
                    bsr_ms: ms,
                    bsr_tflops,
                    dense_ms,
                    dense_tflops: dense_full,
                    ratio_to_dense: bsr_tflops / dense_full,
                    k_eff,
                    dense_eff_tflops: dense_eff,
                    ratio_to_equal_work: bsr_tflops / dense_eff,
                    peer_tflops: None,
                    speedup: dense_ms / ms,
                });
            }
        }
    }
    Ok(())
}

pub fn run(args: Args) -> Result<bool, String> {
    let ctx = crate::open_context(args.path)?;
    for &bs in &args.blocks {
        if args.m % bs != 0 || args.k % bs != 0 {
            return Err(format!("M = {} and K = {} must be multiples of the block size {bs}", args.m, args.k));
        }
    }
    let mut rng = seeded_rng(rand::rng().random());
    let mut rows = Vec::new();
    for &dt in &args.dtypes {
        match dt {
            DType::F16 => run_dtype::<f16>(&ctx, &args, &mut rows, &mut rng)?,
            DType::Bf16 => run_dtype::<bf16>(&ctx, &args, &mut rows, &mut rng)?,
            DType::F32 => return Err("f32 inputs are not supported (use f16 or bf16)".into()),
        }
    }
    if args.peers {
        run_peers(&mut rows);
    }
    let report = Report {
        gpu: ctx.device_name().to_string(),
        compute_capability: ctx.compute_capability(),
        module: format!("{:?}", ctx.arch()),
        unix_time: SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        reps: args.reps,
        rows: rows.clone(),
    };
    if let Some(dir) = std::path::Path::new(&args.json).parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    std::fs::write(&args.json, json).map_err(|e| format!("write {}: {e}", args.json))?;
    println!("bench: {} (cc {}.{}), module {:?}, median of {} runs, C in the input dtype", report.gpu, report.compute_capability.0, report.compute_capability.1, ctx.arch(), args.reps);
    println!("ratio: BSR effective TFLOP/s / dense cuBLAS TFLOP/s on MxNxK; eq-work: / dense on MxNxK_eff");
    println!(
        "{:<5} {:>16} {:>5} {:>11} {:>8} {:>7} {:>8} {:>8} {:>8} {:>8} {:>7} {:>8} {:>7} {:>8}",
        "dtype", "MxNxK", "block", "kernel", "pattern", "density", "bsr ms", "bsr TF/s", "dense TF", "ratio", "K_eff", "eq-work", "speedup", "torch TF"
    );
    for r in &rows {
        println!(
            "{:<5} {:>16} {:>5} {:>11} {:>8} {:>7.4} {:>8.3} {:>8.1} {:>8.1} {:>8.3} {:>7} {:>8.3} {:>6.2}x {:>8}",
            r.dtype,
            format!("{}x{}x{}", r.m, r.n, r.k),
            r.block,
            r.kernel,
            r.pattern,
            r.density,
            r.bsr_ms,
            r.bsr_tflops,
            r.dense_tflops,
            r.ratio_to_dense,
            r.k_eff,
            r.ratio_to_equal_work,
            r.speedup,
            r.peer_tflops.map_or("-".to_string(), |t| format!("{t:.1}"))
        );
    }
    println!("json: {}", args.json);
    Ok(true)
}

/// Runs PyTorch's BSR kernel on every uniform case (same shape, block, density, dtype) through
/// python3, filling `peer_tflops`. Missing python3/torch is reported, not fatal.
fn run_peers(rows: &mut [Row]) {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let cases: Vec<serde_json::Value> = rows
        .iter()
        .filter(|r| r.pattern == "uniform")
        .map(|r| serde_json::json!({"m": r.m, "n": r.n, "k": r.k, "block": r.block, "density": r.density, "dtype": r.dtype}))
        .collect();
    let child = Command::new("python3")
        .args(["-c", include_str!("peers.py")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!("peers: python3 not found, skipped");
        return;
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(serde_json::Value::Array(cases).to_string().as_bytes());
    }
    let Ok(out) = child.wait_with_output() else {
        eprintln!("peers: python3 failed to run, skipped");
        return;
    };
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        eprintln!("peers: PyTorch BSR run failed (torch/triton missing?): {}", err.lines().last().unwrap_or(""));
        return;
    }
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let get = |k: &str| v.get(k).and_then(|x| x.as_f64()).unwrap_or(f64::NAN);
        if v.get("ok").and_then(|x| x.as_bool()) != Some(true) {
            eprintln!("peers: {}", v.get("error").and_then(|e| e.as_str()).unwrap_or("failed"));
            continue;
        }
        let dtype = v.get("dtype").and_then(|x| x.as_str()).unwrap_or("");
        for r in rows.iter_mut().filter(|r| {
            r.pattern == "uniform"
                && r.dtype == dtype
                && r.m as f64 == get("m")
                && r.n as f64 == get("n")
                && r.k as f64 == get("k")
                && r.block as f64 == get("block")
                && r.density == get("density")
        }) {
            r.peer_tflops = Some(get("tflops"));
        }
    }
}
