//! A block-sparse linear layer `y = x · Wᵀ` (W 4096 × 4096 in 64 × 64 blocks, 25 % of them
//! stored; a batch of 8192 rows), with the three products training needs:
//! - forward: `y = x · Wᵀ` (dense × sparse, op(A) = Aᵀ);
//! - input gradient: `dx = dy · W` (dense × sparse, op(A) = A);
//! - weight gradient at W's blocks only: `dW = dyᵀ · x` sampled at W's pattern (SDDMM, X = dyᵀ
//!   as a transposed view).
//!
//! Each is checked against dense cuBLAS on the masked weight (the same numbers with the zeros
//! written out) and timed against it. Without a GPU it says so and exits with status 2.
//!
//! `cargo run --release --example sparse_linear [-- --batch 8192 --features 4096]`

use std::process::ExitCode;
use std::time::Instant;

use blocksparse::{BlockShape, Bsr, Context, DeviceMatrix, Transpose};
use blocksparse_testkit::dense::DenseGemm;
use blocksparse_testkit::testgen::{exact_mask, random_values, seeded_rng};
use half::f16;

type Res<T> = Result<T, String>;

fn err(e: blocksparse::Error) -> String {
    e.to_string()
}

/// Median device time of `reps` runs of `f`, in ms.
fn time_ms(ctx: &Context, reps: usize, mut f: impl FnMut() -> Res<()>) -> Res<f64> {
    f()?;
    ctx.synchronize().map_err(err)?;
    let mut v = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        f()?;
        ctx.synchronize().map_err(err)?;
        v.push(t.elapsed().as_secs_f64() * 1e3);
    }
    v.sort_by(f64::total_cmp);
    Ok(v[v.len() / 2])
}

/// Relative error of `got` against `want` (both f16 on the device, read back).
fn rel_err(got: &[f16], want: &[f16]) -> f64 {
    let (mut d, mut w) = (0.0f64, 0.0f64);
    for (g, r) in got.iter().zip(want) {
        let (g, r) = (g.to_f64(), r.to_f64());
        d += (g - r) * (g - r);
        w += r * r;
    }
    if got.len() != want.len() || d.is_nan() { f64::NAN } else { (d / w.max(f64::MIN_POSITIVE)).sqrt() }
}

fn transpose(m: &[f16], rows: usize, cols: usize) -> Vec<f16> {
    let mut t = vec![f16::ZERO; m.len()];
    for i in 0..rows {
        for j in 0..cols {
            t[j * rows + i] = m[i * cols + j];
        }
    }
    t
}

fn run() -> Res<bool> {
    let mut args = std::env::args().skip(1);
    let (mut batch, mut features) = (8192usize, 4096usize);
    while let Some(a) = args.next() {
        let v = args.next().and_then(|v| v.parse().ok()).ok_or(format!("{a} needs a number"))?;
        match a.as_str() {
            "--batch" => batch = v,
            "--features" => features = v,
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    let (bs, density) = (64usize, 0.25);
    let ctx = Context::new(0).map_err(err)?;
    let gemm = DenseGemm::new(&ctx)?;
    let mut rng = seeded_rng(0x5EED_11AE);
    println!(
        "sparse_linear on {}: x ({batch} x {features}), W ({features} x {features}) in {bs}x{bs} blocks, {density} dense",
        ctx.device_name()
    );

    // W: a random block mask and values; its dense (masked) form for the cuBLAS checks.
    let blocks = features / bs;
    let mask = exact_mask(blocks, blocks, density, &mut rng);
    let nnzb = mask.iter().filter(|&&m| m).count();
    let w = Bsr::from_block_mask(features, features, BlockShape::square(bs), &mask, random_values::<f16>(nnzb * bs * bs, &mut rng))
        .map_err(err)?;
    let w_dense = w.try_to_dense().map_err(err)?;
    let w_dev = ctx.upload_bsr(&w).map_err(err)?;

    let x_host = random_values::<f16>(batch * features, &mut rng);
    let dy_host = random_values::<f16>(batch * features, &mut rng);
    let x = ctx.upload_matrix(batch, features, &x_host).map_err(err)?;
    let dy = ctx.upload_matrix(batch, features, &dy_host).map_err(err)?;

    // The three products with the library (plans once per pattern and shape).
    let fwd = ctx.plan_dense_sparse(&w_dev, Transpose::Yes, batch).map_err(err)?;
    let bwd = ctx.plan_dense_sparse(&w_dev, Transpose::No, batch).map_err(err)?;
    let mut y = ctx.zeros_matrix::<f16>(batch, features).map_err(err)?;
    let mut dx = ctx.zeros_matrix::<f16>(batch, features).map_err(err)?;
    let mut dw = ctx.zeros_bsr_like::<f16, f16>(&w_dev, 1).map_err(err)?;
    let wgrad = ctx.plan_sddmm(&dw, batch).map_err(err)?;
    let reps = 20;
    let t_fwd = time_ms(&ctx, reps, || ctx.dense_sparse(&fwd, 1.0, &x, &w_dev, 0.0, &mut y).map_err(err))?;
    let t_bwd = time_ms(&ctx, reps, || ctx.dense_sparse(&bwd, 1.0, &dy, &w_dev, 0.0, &mut dx).map_err(err))?;
    let t_wgrad = time_ms(&ctx, reps, || ctx.sddmm(&wgrad, 1.0, dy.t(), &x, 0.0, &mut dw).map_err(err))?;

    // Dense cuBLAS on the masked weight: y = x · Wᵀ, dx = dy · W, dW = dyᵀ · x (full).
    let wt_dev = ctx.upload_matrix(features, features, &transpose(&w_dense, features, features)).map_err(err)?;
    let w_full = ctx.upload_matrix(features, features, &w_dense).map_err(err)?;
    let dyt = ctx.upload_matrix(features, batch, &transpose(&dy_host, batch, features)).map_err(err)?;
    let mut y_ref = ctx.zeros_matrix::<f16>(batch, features).map_err(err)?;
    let mut dx_ref = ctx.zeros_matrix::<f16>(batch, features).map_err(err)?;
    let mut dw_ref: DeviceMatrix<f16> = ctx.zeros_matrix(features, features).map_err(err)?;
    let d_fwd = time_ms(&ctx, reps, || gemm.gemm(&ctx, &x, &wt_dev, &mut y_ref))?;
    let d_bwd = time_ms(&ctx, reps, || gemm.gemm(&ctx, &dy, &w_full, &mut dx_ref))?;
    let d_wgrad = time_ms(&ctx, reps, || gemm.gemm(&ctx, &dyt, &x, &mut dw_ref))?;

    let e_fwd = rel_err(&ctx.download_matrix(&y).map_err(err)?, &ctx.download_matrix(&y_ref).map_err(err)?);
    let e_bwd = rel_err(&ctx.download_matrix(&dx).map_err(err)?, &ctx.download_matrix(&dx_ref).map_err(err)?);
    // dW at W's blocks: gather them out of the dense gradient.
    let dw_full = ctx.download_matrix(&dw_ref).map_err(err)?;
    let masked: Vec<f16> = {
        let mut v = Vec::with_capacity(nnzb * bs * bs);
        for r in 0..blocks {
            for p in w.row_range(r).unwrap_or(0..0) {
                let c = w.col_idx()[p] as usize;
                for i in 0..bs {
                    v.extend_from_slice(&dw_full[(r * bs + i) * features + c * bs..][..bs]);
                }
            }
        }
        v
    };
    let e_wgrad = rel_err(&ctx.download_values(&dw).map_err(err)?, &masked);

    let tf = |flops: f64, ms: f64| flops / (ms * 1e-3) / 1e12;
    let sparse_flops = 2.0 * (nnzb * bs * bs) as f64 * batch as f64;
    let dense_flops = 2.0 * (features * features) as f64 * batch as f64;
    println!(
        "{:<28} {:>9} {:>9} {:>10} {:>10} {:>9} {:>10}",
        "product", "ours ms", "dense ms", "ours TF/s", "dense TF/s", "speedup", "rel. err"
    );
    let mut ok = true;
    for (name, t, d, e) in [
        ("forward  y = x.W^T", t_fwd, d_fwd, e_fwd),
        ("input grad  dx = dy.W", t_bwd, d_bwd, e_bwd),
        ("weight grad  dW = dy^T.x", t_wgrad, d_wgrad, e_wgrad),
    ] {
        println!("{name:<28} {t:>9.3} {d:>9.3} {:>10.1} {:>10.1} {:>8.2}x {e:>10.2e}", tf(sparse_flops, t), tf(dense_flops, d), d / t);
        ok &= e < 1e-2;
    }
    println!("{}", if ok { "sparse_linear: ok" } else { "sparse_linear: FAILED (error above 1e-2)" });
    Ok(ok)
}

fn main() -> ExitCode {
    if !blocksparse::driver_present() {
        eprintln!("sparse_linear: no CUDA device (the NVIDIA driver library could not be loaded)");
        return ExitCode::from(2);
    }
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("sparse_linear: {e}");
            ExitCode::FAILURE
        }
    }
}
