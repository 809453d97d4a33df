//! The cold start: the first `Context::new` plus the first product of a process, with the
//! driver's compilation cache off (`CUDA_CACHE_DISABLE=1`), as a fresh container or CI job sees
//! it. `cargo xtask bench` measures it in a child process (this binary again, hidden
//! `cold-start-child` subcommand), so that nothing of the parent's context is reused.

use std::process::Command;
use std::time::Instant;

use blocksparse::{BlockShape, Bsr, KernelPath, Transpose};
use half::f16;

/// The line the child prints, followed by the milliseconds.
const MARK: &str = "cold-start-ms:";

#[derive(clap::Args)]
pub struct ChildArgs {
    /// Kernel path: auto, portable or hopper.
    #[arg(long, default_value = "auto")]
    path: KernelPath,
}

fn path_name(path: KernelPath) -> &'static str {
    match path {
        KernelPath::Auto => "auto",
        KernelPath::Portable => "portable",
        KernelPath::Hopper => "hopper",
    }
}

/// Runs the child with `CUDA_CACHE_DISABLE=1`, prints "cold start: X ms" and returns X.
pub fn measure(path: KernelPath) -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cold start: cannot find this executable: {e}"))?;
    let out = Command::new(exe)
        .args(["cold-start-child", "--path", path_name(path)])
        .env("CUDA_CACHE_DISABLE", "1")
        .output()
        .map_err(|e| format!("cold start: cannot run the child: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ms = stdout.lines().find_map(|l| l.strip_prefix(MARK)).and_then(|v| v.trim().parse::<f64>().ok());
    match (out.status.success(), ms) {
        (true, Some(ms)) => {
            println!("cold start: {ms:.0} ms (Context::new + first SpMM + synchronize, CUDA_CACHE_DISABLE=1, {} path)", path_name(path));
            Ok(ms)
        }
        _ => Err(format!("cold start child failed ({}):\n{stdout}{}", out.status, String::from_utf8_lossy(&out.stderr))),
    }
}

/// The child: times `Context::new` + one 256³ SpMM (64×64 blocks, half of them present) +
/// synchronize, checks the result, and prints the time after [`MARK`].
pub fn child(args: ChildArgs) -> Result<bool, String> {
    let (m, k, n, b) = (256, 256, 256, 64);
    let mask: Vec<bool> = (0..(m / b) * (k / b)).map(|i| i % 2 == 0).collect();
    let nnzb = mask.iter().filter(|&&x| x).count();
    let a = Bsr::from_block_mask(m, k, BlockShape::square(b), &mask, vec![f16::ONE; nnzb * b * b]).map_err(|e| e.to_string())?;
    let ones = vec![f16::ONE; k * n];

    let start = Instant::now();
    let ctx = crate::open_context(args.path)?;
    let a_dev = ctx.upload_bsr(&a).map_err(|e| e.to_string())?;
    let b_dev = ctx.upload_matrix(k, n, &ones).map_err(|e| e.to_string())?;
    let mut c = ctx.zeros_matrix::<f32>(m, n).map_err(|e| e.to_string())?;
    let plan = ctx.plan_spmm(&a_dev, Transpose::No, n).map_err(|e| e.to_string())?;
    ctx.spmm(&plan, 1.0, &a_dev, &b_dev, 0.0, &mut c).map_err(|e| e.to_string())?;
    ctx.synchronize().map_err(|e| e.to_string())?;
    let ms = start.elapsed().as_secs_f64() * 1e3;

    // With ones everywhere, C(i, j) = b · (blocks in i's block row).
    let c_host = ctx.download_matrix(&c).map_err(|e| e.to_string())?;
    let blocks_per_row = k / b;
    for (i, row) in c_host.chunks(n).enumerate() {
        let br = i / b;
        let expect = (b * (0..blocks_per_row).filter(|&j| mask[br * blocks_per_row + j]).count()) as f32;
        if row.iter().any(|&v| v != expect) {
            return Err(format!("cold start: wrong result in row {i} (expected {expect} everywhere)"));
        }
    }
    println!("{MARK} {ms:.3}");
    Ok(true)
}
