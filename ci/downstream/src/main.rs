//! A downstream user of the packaged `blocksparse`: builds a BSR matrix, opens the GPU, and on
//! a machine with one runs `C = A·B` and checks it; without one it says so and exits 0.

use std::process::ExitCode;

use blocksparse::{BlockShape, Bsr, Context, Error, Transpose};
use half::f16;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Whether everything that ran was correct.
fn run() -> blocksparse::Result<bool> {
    let (m, k, n, b) = (256, 256, 128, 64);
    // Every other block present, all ones: C(i, j) = b · (blocks in i's block row).
    let mask: Vec<bool> = (0..(m / b) * (k / b)).map(|i| i % 2 == 0).collect();
    let nnzb = mask.iter().filter(|&&x| x).count();
    let a = Bsr::from_block_mask(m, k, BlockShape::square(b), &mask, vec![f16::ONE; nnzb * b * b])?;
    println!("built a {}x{} BSR matrix with {} blocks of {b}x{b}", a.nrows(), a.ncols(), a.nnzb());

    let ctx = match Context::new(0) {
        Ok(ctx) => ctx,
        Err(Error::NoDevice(why)) => {
            println!("no GPU here ({why}); blocksparse built and ran its host side");
            return Ok(true);
        }
        Err(e) => return Err(e),
    };
    let a_dev = ctx.upload_bsr(&a)?;
    let b_dev = ctx.upload_matrix(k, n, &vec![f16::ONE; k * n])?;
    let mut c = ctx.zeros_matrix::<f32>(m, n)?;
    let plan = ctx.plan_spmm(&a_dev, Transpose::No, n)?;
    ctx.spmm(&plan, 1.0, &a_dev, &b_dev, 0.0, &mut c)?;
    let c = ctx.download_matrix(&c)?;
    let per_row = a.row_lengths().collect::<Vec<_>>();
    let wrong = c.chunks(n).enumerate().filter(|(i, row)| row.iter().any(|&v| v != (b * per_row[i / b]) as f32)).count();
    println!(
        "{}: C = A·B on {m}x{k} · {k}x{n}: {}",
        ctx.device_name(),
        if wrong == 0 { "correct".to_string() } else { format!("{wrong} wrong rows") }
    );
    Ok(wrong == 0)
}
