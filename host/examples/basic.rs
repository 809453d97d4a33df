//! The basic product: `C = A · B` with A block-sparse (512 × 768 in 32 × 32 blocks, a third of
//! them stored), B dense (768 × 200, f16), C dense f32, checked element by element against a
//! plain CPU loop over A's blocks.
//!
//! `cargo run --release --example basic`. Prints one line and exits 0 when the result matches,
//! 1 when it does not; without a GPU it says "no CUDA device" and exits with status 2.

use std::process::ExitCode;

use blocksparse::{BlockShape, Bsr, Context, Transpose};
use half::f16;

fn run() -> blocksparse::Result<bool> {
    let (m, k, n, bs) = (512, 768, 200, 32);
    let (block_rows, block_cols) = (m / bs, k / bs);
    // A reproducible pattern and values, no random crate needed.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mask: Vec<bool> = (0..block_rows * block_cols).map(|_| next() % 3 == 0).collect();
    let nnzb = mask.iter().filter(|&&x| x).count();
    let small = |x: u64| f16::from_f32((x % 17) as f32 / 8.0 - 1.0);
    let values: Vec<f16> = (0..nnzb * bs * bs).map(|_| small(next())).collect();
    let b_host: Vec<f16> = (0..k * n).map(|_| small(next())).collect();
    let a = Bsr::from_block_mask(m, k, BlockShape::square(bs), &mask, values)?;

    let ctx = Context::new(0)?;
    let a_dev = ctx.upload_bsr(&a)?;
    let b = ctx.upload_matrix(k, n, &b_host)?;
    let mut c = ctx.zeros_matrix::<f32>(m, n)?;
    let plan = ctx.plan_spmm(&a_dev, Transpose::No, n)?;
    ctx.spmm(&plan, 1.0, &a_dev, &b, 0.0, &mut c)?;
    let got = ctx.download_matrix(&c)?;

    // The CPU loop: for every stored block (r, col), C[r·bs + i][j] += A_block[i][kk] · B[col·bs + kk][j].
    let mut want = vec![0.0f64; m * n];
    for r in 0..block_rows {
        for p in a.row_range(r).unwrap_or(0..0) {
            let col = a.col_idx()[p] as usize;
            let block = a.block_values(p).unwrap_or(&[]);
            for i in 0..bs {
                for kk in 0..bs {
                    let v = block[i * bs + kk].to_f64();
                    for j in 0..n {
                        want[(r * bs + i) * n + j] += v * b_host[(col * bs + kk) * n + j].to_f64();
                    }
                }
            }
        }
    }
    // f16 inputs are exact in f32 products; only the order of the f32 sums differs.
    let worst = got.iter().zip(&want).map(|(&g, &w)| (g as f64 - w).abs() / (1.0 + w.abs())).fold(0.0, f64::max);
    let ok = got.len() == want.len() && worst < 1e-4;
    println!(
        "basic: C = A·B on {}, A {m}x{k} in {bs}x{bs} blocks ({nnzb} stored), N = {n}: worst error {worst:.1e}: {}",
        ctx.device_name(),
        if ok { "ok" } else { "FAILED" }
    );
    Ok(ok)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(blocksparse::Error::NoDevice(why)) => {
            eprintln!("basic: no CUDA device ({why})");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("basic: {e}");
            ExitCode::FAILURE
        }
    }
}
