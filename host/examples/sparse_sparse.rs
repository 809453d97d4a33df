//! Sparse × sparse: `Y = X · W` with both operands block-sparse (BSR × BSR, SpGEMM). X
//! (1024 × 4096 activations in 64 × 64 blocks) keeps the 16 blocks of largest norm in each block
//! row of a dense activation (a top-k activation pattern, 25 % of the blocks); W (4096 × 4096)
//! is a block-sparse weight holding 1/16 of its blocks.
//!
//! The sizes of both plans are asked for first (`spgemm_size`: nothing proportional to the
//! product is allocated yet), then the product is planned once per kind of Y and run: into a
//! dense Y (f32), and into a BSR Y (f16) with the product's own pattern, whose blocks are the
//! ones that receive at least one block pair. Sampled entries are checked against a CPU
//! computation, the BSR Y against the dense one, and the dense Y must be zero outside the
//! product's pattern. Without a GPU it says so and exits with status 2.
//!
//! `cargo run --release --example sparse_sparse`

use std::process::ExitCode;
use std::time::Instant;

use blocksparse::{BlockShape, Bsr, Context, SpgemmOutput};
use blocksparse_testkit::testgen::{exact_mask, random_values, seeded_rng};
use half::f16;
use rand::Rng;

type Res<T> = Result<T, String>;

fn err(e: blocksparse::Error) -> String {
    e.to_string()
}

/// Median wall time of `reps` synchronized runs of `f` (after one warm-up), in ms.
fn time_ms(ctx: &Context, reps: usize, mut f: impl FnMut() -> blocksparse::Result<()>) -> Res<f64> {
    f().map_err(err)?;
    ctx.synchronize().map_err(err)?;
    let mut v = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        f().map_err(err)?;
        ctx.synchronize().map_err(err)?;
        v.push(t.elapsed().as_secs_f64() * 1e3);
    }
    v.sort_by(f64::total_cmp);
    Ok(v[v.len() / 2])
}

/// The `k` blocks of largest L2 norm in each block row of a dense row-major `(rows, cols)`
/// matrix, as a BSR matrix in `(bs, bs)` blocks.
fn top_k_blocks(dense: &[f16], (rows, cols): (usize, usize), bs: usize, k: usize) -> blocksparse::Result<Bsr<f16>> {
    let (br, bc) = (rows / bs, cols / bs);
    let norm2 = |r: usize, c: usize| -> f64 {
        (0..bs).flat_map(|i| &dense[(r * bs + i) * cols + c * bs..][..bs]).map(|x| x.to_f64().powi(2)).sum()
    };
    let mut mask = vec![false; br * bc];
    for r in 0..br {
        let mut order: Vec<(f64, usize)> = (0..bc).map(|c| (norm2(r, c), c)).collect();
        order.sort_by(|a, b| b.0.total_cmp(&a.0));
        for &(_, c) in order.iter().take(k) {
            mask[r * bc + c] = true;
        }
    }
    // The kept blocks' values in pattern order, row-major within each block.
    let mut values = Vec::new();
    for (e, _) in mask.iter().enumerate().filter(|(_, x)| **x) {
        let (r, c) = (e / bc, e % bc);
        for i in 0..bs {
            values.extend_from_slice(&dense[(r * bs + i) * cols + c * bs..][..bs]);
        }
    }
    Bsr::from_block_mask(rows, cols, BlockShape::square(bs), &mask, values)
}

/// Element `(i, j)` of a BSR matrix (0 outside its blocks).
fn entry(a: &Bsr<f16>, i: usize, j: usize) -> f64 {
    let BlockShape { bm, bk } = a.block();
    let row = a.row_range(i / bm).unwrap_or(0..0);
    match a.col_idx()[row.clone()].binary_search(&((j / bk) as u32)) {
        Ok(at) => a.block_values(row.start + at).map_or(0.0, |v| v[(i % bm) * bk + j % bk].to_f64()),
        Err(_) => 0.0,
    }
}

fn run() -> Res<bool> {
    let (tokens, features, outputs, bs, keep) = (1024usize, 4096usize, 4096usize, 64usize, 16usize);
    let ctx = Context::new(0).map_err(err)?;
    let mut rng = seeded_rng(0x5EED_5BA5);

    // Activations whose block norms spread over two orders of magnitude, and their top 16
    // blocks per block row.
    let bc = features / bs;
    let scale: Vec<f32> = (0..(tokens / bs) * bc).map(|_| 10f32.powf(rng.random_range(-2.0..0.0))).collect();
    let act: Vec<f16> = random_values::<f16>(tokens * features, &mut rng)
        .into_iter()
        .enumerate()
        .map(|(e, v)| f16::from_f32(v.to_f32() * scale[(e / features / bs) * bc + (e % features) / bs]))
        .collect();
    let x = top_k_blocks(&act, (tokens, features), bs, keep).map_err(err)?;
    // The weight: 1/16 of its blocks, placed at random.
    let w_mask = exact_mask(features / bs, outputs / bs, 1.0 / 16.0, &mut rng);
    let w_blocks = w_mask.iter().filter(|&&m| m).count();
    let w = Bsr::from_block_mask(features, outputs, BlockShape::square(bs), &w_mask, random_values::<f16>(w_blocks * bs * bs, &mut rng))
        .map_err(err)?;
    let x_dev = ctx.upload_bsr(&x).map_err(err)?;
    let w_dev = ctx.upload_bsr(&w).map_err(err)?;

    // What the plans will take, known before anything proportional to them is allocated.
    let dense_size = ctx.spgemm_size(&x_dev, &w_dev, &SpgemmOutput::Dense).map_err(err)?;
    let product_size = ctx.spgemm_size(&x_dev, &w_dev, &SpgemmOutput::Product).map_err(err)?;
    println!(
        "sparse_sparse on {}: X {tokens}x{features} (top {keep} of {bc} blocks per row) x W {features}x{outputs} ({w_blocks} blocks), \
         {bs}x{bs} blocks: {} block pairs; plans: dense Y {} KiB, BSR Y {} KiB ({} of {} blocks)",
        ctx.device_name(),
        dense_size.pairs,
        dense_size.device_bytes / 1024,
        product_size.device_bytes / 1024,
        product_size.c_blocks,
        (tokens / bs) * (outputs / bs),
    );

    // Plan once per kind of Y; each plan serves every product with these two patterns.
    let dense_plan = ctx.plan_spgemm(&x_dev, &w_dev, SpgemmOutput::Dense).map_err(err)?;
    let product_plan = ctx.plan_spgemm(&x_dev, &w_dev, SpgemmOutput::Product).map_err(err)?;
    let mut y = ctx.zeros_matrix::<f32>(tokens, outputs).map_err(err)?;
    let mut y_bsr = ctx.spgemm_output::<f16>(&product_plan).map_err(err)?;
    let t_dense = time_ms(&ctx, 10, || ctx.spgemm(&dense_plan, 1.0, &x_dev, &w_dev, 0.0, &mut y))?;
    let t_bsr = time_ms(&ctx, 10, || ctx.spgemm_bsr(&product_plan, 1.0, &x_dev, &w_dev, 0.0, &mut y_bsr))?;
    let y_host = ctx.download_matrix(&y).map_err(err)?;
    let y_blocks = ctx.download_values(&y_bsr).map_err(err)?;

    // 1. Sampled entries against the CPU: Y(i, j) = Σ_k X(i, k) · W(k, j).
    let (mut diff2, mut want2) = (0.0f64, 0.0f64);
    for _ in 0..256 {
        let (i, j) = (rng.random_range(0..tokens), rng.random_range(0..outputs));
        let want: f64 = x
            .row_range(i / bs)
            .unwrap_or(0..0)
            .map(|p| x.col_idx()[p] as usize * bs)
            .flat_map(|k0| k0..k0 + bs)
            .map(|k| entry(&x, i, k) * entry(&w, k, j))
            .sum();
        diff2 += (y_host[i * outputs + j] as f64 - want).powi(2);
        want2 += want * want;
    }
    let sampled = (diff2 / want2.max(f64::MIN_POSITIVE)).sqrt();
    // 2. The BSR Y holds the dense Y's blocks at the product's pattern (rounded to f16), and
    //    the dense Y is zero everywhere else.
    let pattern = product_plan.output_pattern().ok_or("a product-pattern plan has an output pattern")?;
    let (ob, mut in_pattern) = (outputs / bs, vec![false; (tokens / bs) * (outputs / bs)]);
    let mut bsr_vs_dense = 0.0f64;
    for r in 0..tokens / bs {
        for p in pattern.row_ptr()[r] as usize..pattern.row_ptr()[r + 1] as usize {
            let c = pattern.col_idx()[p] as usize;
            in_pattern[r * ob + c] = true;
            for e in 0..bs * bs {
                let d = y_host[(r * bs + e / bs) * outputs + c * bs + e % bs] as f64;
                bsr_vs_dense = bsr_vs_dense.max((y_blocks[p * bs * bs + e].to_f64() - d).abs() / (d.abs() + 1e-3));
            }
        }
    }
    let outside_zero = (0..tokens * outputs).all(|e| in_pattern[(e / outputs / bs) * ob + (e % outputs) / bs] || y_host[e] == 0.0);

    let gflop = dense_plan.flops() / 1e9;
    let ok = sampled < 1e-3 && bsr_vs_dense < 1e-2 && outside_zero && y_blocks.len() == product_size.c_blocks * bs * bs;
    println!(
        "{:.2} GFLOP ({} pairs x 2 x {bs}^3): dense Y {t_dense:.3} ms, BSR Y {t_bsr:.3} ms; sampled rel. error {sampled:.1e}, \
         BSR vs dense {bsr_vs_dense:.1e}, dense Y zero outside the product's pattern: {outside_zero}",
        gflop,
        dense_plan.pairs()
    );
    println!("{}", if ok { "sparse_sparse: ok" } else { "sparse_sparse: FAILED" });
    Ok(ok)
}

fn main() -> ExitCode {
    if !blocksparse::driver_present() {
        eprintln!("sparse_sparse: no CUDA device (the NVIDIA driver library could not be loaded)");
        return ExitCode::from(2);
    }
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("sparse_sparse: {e}");
            ExitCode::FAILURE
        }
    }
}
