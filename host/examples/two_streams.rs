//! Two independent products overlapping on two streams of the caller's.
//!
//! One [`Context`] loads the kernels; [`Context::with_stream`] gives a context per stream that
//! shares them. Two SpMMs with different patterns (each too small to fill a large GPU alone) run
//! `reps` times back to back on one stream, then alternately on two streams, where the GPU may
//! overlap them. Both results of the two-stream run (their outputs poisoned with NaN first) are
//! checked against the f64 CPU reference; the times are printed, not judged (how much overlaps
//! depends on the GPU).
//!
//! `cargo run --release --example two_streams`. Prints one line and exits 0 when both results
//! match, 1 otherwise; without a GPU it says "no CUDA device" and exits with status 2.

use std::process::ExitCode;
use std::time::Instant;

use blocksparse::{BlockShape, Bsr, Context, DeviceBsr, DeviceMatrix, SpmmPlan, Transpose};
use blocksparse_testkit::reference::{HostMat, rel_error, spmm_reference};
use blocksparse_testkit::testgen::{random_mask, random_values, seeded_rng};
use half::f16;

/// One product: A on the host (for the reference), its device copy, B, C and the plan.
struct Product {
    a: Bsr<f16>,
    b_host: Vec<f16>,
    a_dev: DeviceBsr<f16>,
    b: DeviceMatrix<f16>,
    c: DeviceMatrix<f32>,
    plan: SpmmPlan,
}

impl Product {
    fn new(ctx: &Context, (m, k, n): (usize, usize, usize), density: f64, seed: u64) -> blocksparse::Result<Self> {
        let bs = 64;
        let mut rng = seeded_rng(seed);
        let mask = random_mask(m / bs, k / bs, density, &mut rng);
        let nnzb = mask.iter().filter(|&&x| x).count();
        let a = Bsr::from_block_mask(m, k, BlockShape::square(bs), &mask, random_values(nnzb * bs * bs, &mut rng))?;
        let b_host = random_values(k * n, &mut rng);
        let a_dev = ctx.upload_bsr(&a)?;
        let b = ctx.upload_matrix(k, n, &b_host)?;
        let c = ctx.zeros_matrix(m, n)?;
        let plan = ctx.plan_spmm(&a_dev, Transpose::No, n)?;
        Ok(Product { a, b_host, a_dev, b, c, plan })
    }

    /// Queues `C = A · B` on `ctx`'s stream.
    fn run(&mut self, ctx: &Context) -> blocksparse::Result<()> {
        ctx.spmm(&self.plan, 1.0, &self.a_dev, &self.b, 0.0, &mut self.c)
    }

    /// Relative error of C (read on `ctx`'s stream) against the f64 reference.
    fn error(&self, ctx: &Context) -> blocksparse::Result<f64> {
        let got = ctx.download_matrix(&self.c)?;
        let (m, n) = (self.c.rows(), self.c.cols());
        let b = HostMat::row_major(&self.b_host, self.a.ncols(), n);
        let want = spmm_reference(1.0, &self.a, Transpose::No, b, 0.0, HostMat::row_major(&got, m, n));
        Ok(rel_error(got.iter().map(|&x| x as f64), &want))
    }
}

fn run() -> blocksparse::Result<bool> {
    let ctx = Context::new(0)?;
    let cuda = ctx.cuda().clone();
    let on_s1 = ctx.with_stream(cuda.new_stream()?)?;
    let on_s2 = ctx.with_stream(cuda.new_stream()?)?;
    let mut p1 = Product::new(&on_s1, (2048, 2048, 512), 0.25, 1)?;
    let mut p2 = Product::new(&on_s2, (1024, 3072, 768), 0.2, 2)?;
    let reps = 50;

    // Back to back on one stream (the default context's).
    for _ in 0..2 {
        p1.run(&ctx)?;
        p2.run(&ctx)?;
    }
    ctx.synchronize()?;
    let t = Instant::now();
    for _ in 0..reps {
        p1.run(&ctx)?;
        p2.run(&ctx)?;
    }
    ctx.synchronize()?;
    let one = t.elapsed().as_secs_f64() * 1e3;

    // Alternately on two streams, outputs poisoned first; nothing synchronized by hand until
    // the end (each download waits for its own stream).
    let nan1 = vec![f32::NAN; p1.c.rows() * p1.c.cols()];
    let nan2 = vec![f32::NAN; p2.c.rows() * p2.c.cols()];
    on_s1.write_matrix(&mut p1.c, &nan1)?;
    on_s2.write_matrix(&mut p2.c, &nan2)?;
    let t = Instant::now();
    for _ in 0..reps {
        p1.run(&on_s1)?;
        p2.run(&on_s2)?;
    }
    on_s1.synchronize()?;
    on_s2.synchronize()?;
    let two = t.elapsed().as_secs_f64() * 1e3;

    let (e1, e2) = (p1.error(&on_s1)?, p2.error(&on_s2)?);
    let ok = e1 < 1e-2 && e2 < 1e-2;
    println!(
        "two_streams on {}: {reps} x 2 products: one stream {one:.2} ms, two streams {two:.2} ms ({:.2}x); rel. errors {e1:.1e}, {e2:.1e}: {}",
        ctx.device_name(),
        one / two,
        if ok { "ok" } else { "FAILED" }
    );
    Ok(ok)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(blocksparse::Error::NoDevice(why)) => {
            eprintln!("two_streams: no CUDA device ({why})");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("two_streams: {e}");
            ExitCode::FAILURE
        }
    }
}
