//! PyTorch / scipy BSR arrays into the library and back, through numpy's `.npy` files.
//!
//! `cargo run --release --example npy_interop [-- DIR]` reads from `DIR`:
//! - `crow_indices.npy`, `col_indices.npy`: int64 (PyTorch) or int32 (scipy) index arrays;
//! - `values.npy`: f16 or f32, shape `(nnzb, bm, bk)`;
//! - `shape.npy` (optional): the matrix shape `(M, K)` (otherwise K is the last block column
//!   used);
//! - `dense.npy` (optional): B, `(K, N)`, f16 or f32 (otherwise a generated `(K, 64)`),
//!
//! moves the index arrays and values to the GPU as they are (int64 or int32, no conversion on
//! the host) and builds the matrix there with `Context::bsr_from_device`, runs `C = A · B`
//! (f16 inputs, f32 output), checks C against a CPU loop over the blocks, and writes back to
//! `DIR`: `c.npy` (f32 `(M, N)`) and the matrix as the library holds it (`out_crow_indices.npy`,
//! `out_col_indices.npy` int64, `out_values.npy` f16). Without `DIR` it first writes two sample
//! sets into a temporary directory (one as PyTorch saves them, int64 indices and f32 values,
//! one as scipy does, int32 indices and f16 values) and runs both, so it runs unattended. It
//! prints a line per set and exits 0 when every result matches, 1 when one does not; without a
//! GPU it says "no CUDA device" and exits with status 2.
//!
//! Saving such files from Python:
//!
//! ```python
//! import numpy as np, torch, scipy.sparse as sp
//! A = torch.randn(256, 384)
//! A *= (torch.rand(8, 12) < 0.3).repeat_interleave(32, 0).repeat_interleave(32, 1)  # 32x32 blocks
//! bsr = A.to_sparse_bsr((32, 32))                        # PyTorch: int64 indices
//! np.save("torch/crow_indices.npy", bsr.crow_indices().numpy())
//! np.save("torch/col_indices.npy", bsr.col_indices().numpy())
//! np.save("torch/values.npy", bsr.values().numpy())      # (nnzb, 32, 32) float32
//! np.save("torch/shape.npy", np.array(A.shape))
//! S = sp.bsr_matrix(A.numpy(), blocksize=(32, 32)); S.sort_indices()   # scipy: int32 indices
//! np.save("scipy/crow_indices.npy", S.indptr); np.save("scipy/col_indices.npy", S.indices)
//! np.save("scipy/values.npy", S.data.astype(np.float16)); np.save("scipy/shape.npy", np.array(S.shape))
//! # and back: C = np.load("torch/c.npy"); the matrix as the library holds it:
//! B = torch.sparse_bsr_tensor(torch.from_numpy(np.load("torch/out_crow_indices.npy")),
//!         torch.from_numpy(np.load("torch/out_col_indices.npy")),
//!         torch.from_numpy(np.load("torch/out_values.npy")), size=tuple(np.load("torch/shape.npy")))
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use blocksparse::cudarc::driver::CudaSlice;
use blocksparse::{BlockShape, BsrIndex, Context, DeviceBsr, Transpose};
use half::f16;

type Res<T> = Result<T, String>;

fn lib(e: blocksparse::Error) -> String {
    e.to_string()
}

/// The element types this example reads and writes.
enum Data {
    I64(Vec<i64>),
    I32(Vec<i32>),
    F16(Vec<f16>),
    F32(Vec<f32>),
}

/// An array of a `.npy` file (C order, little-endian).
struct Npy {
    shape: Vec<usize>,
    data: Data,
}

/// Reads a `.npy` file (format versions 1 to 3): `<i8`, `<i4`, `<f2` or `<f4`, C order.
fn read_npy(path: &Path) -> Res<Npy> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bad = |why: &str| format!("{}: {why}", path.display());
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("not a .npy file"));
    }
    let (len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12),
        v => return Err(bad(&format!("unsupported .npy version {v}"))),
    };
    let header = bytes.get(start..start + len).and_then(|h| std::str::from_utf8(h).ok()).ok_or_else(|| bad("truncated header"))?;
    let field = |key: &str| header.split(&format!("'{key}':")).nth(1).map(str::trim).ok_or_else(|| bad(&format!("no {key} in the header")));
    let descr = field("descr")?.trim_start_matches('\'').split('\'').next().unwrap_or("");
    if field("fortran_order")?.starts_with("True") {
        return Err(bad("Fortran order is not supported (save with np.ascontiguousarray)"));
    }
    let dims = field("shape")?.trim_start_matches('(').split(')').next().unwrap_or("");
    let shape = dims
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().map_err(|_| bad("bad shape")))
        .collect::<Res<Vec<_>>>()?;
    let count: usize = shape.iter().product();
    let body = &bytes[start + len..];
    fn take<T: bytemuck::Pod>(body: &[u8], count: usize) -> Option<Vec<T>> {
        let n = count.checked_mul(size_of::<T>())?;
        Some(body.get(..n)?.chunks_exact(size_of::<T>()).map(bytemuck::pod_read_unaligned).collect())
    }
    let data = match descr {
        "<i8" => take(body, count).map(Data::I64),
        "<i4" => take(body, count).map(Data::I32),
        "<f2" => take(body, count).map(Data::F16),
        "<f4" => take(body, count).map(Data::F32),
        other => return Err(bad(&format!("dtype {other} is not supported (int64, int32, float16, float32)"))),
    }
    .ok_or_else(|| bad("shorter than its shape"))?;
    Ok(Npy { shape, data })
}

/// Writes a C-order `.npy` file (format 1.0) of `shape` with numpy dtype `descr`.
fn write_npy<T: bytemuck::Pod>(path: &Path, descr: &str, shape: &[usize], data: &[T]) -> Res<()> {
    let dims: String = shape.iter().map(|d| format!("{d}, ")).collect();
    let dims = if shape.len() == 1 { dims.trim_end().to_string() } else { dims.trim_end_matches(", ").to_string() };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}");
    // Magic (6) + version (2) + length (2) + header + '\n', padded to a multiple of 64.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(bytemuck::cast_slice(data));
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))
}

/// Values as f16 (the tensor-core input type), whatever the file held.
fn as_f16(npy: Npy, what: &str) -> Res<Vec<f16>> {
    match npy.data {
        Data::F16(v) => Ok(v),
        Data::F32(v) => Ok(v.into_iter().map(f16::from_f32).collect()),
        _ => Err(format!("{what} must be float16 or float32")),
    }
}

/// Index arrays as i64 (for the host checks and the reference).
fn as_i64(data: &Data) -> Vec<i64> {
    match data {
        Data::I64(v) => v.clone(),
        Data::I32(v) => v.iter().map(|&x| x as i64).collect(),
        Data::F16(_) | Data::F32(_) => Vec::new(),
    }
}

/// Uploads the index arrays in their own type and builds the matrix on the device.
fn device_matrix<I: BsrIndex>(
    ctx: &Context,
    shape: (usize, usize),
    block: BlockShape,
    crow: &[I],
    cols: &[I],
    values: CudaSlice<f16>,
) -> Res<DeviceBsr<f16>> {
    let crow = ctx.stream().clone_htod(crow).map_err(|e| e.to_string())?;
    let cols = ctx.stream().clone_htod(cols).map_err(|e| e.to_string())?;
    ctx.bsr_from_device(shape.0, shape.1, block, &crow, &cols, values).map_err(lib)
}

/// Reads one set from `dir`, runs `C = A · B`, checks it and writes the results back.
fn run_dir(ctx: &Context, dir: &Path) -> Res<bool> {
    let crow = read_npy(&dir.join("crow_indices.npy"))?;
    let cols = read_npy(&dir.join("col_indices.npy"))?;
    let values = read_npy(&dir.join("values.npy"))?;
    let [nnzb, bm, bk] = values.shape[..] else {
        return Err(format!("values.npy has shape {:?}; expected (nnzb, bm, bk)", values.shape));
    };
    let values = as_f16(values, "values.npy")?;
    let (crow_i64, cols_i64) = (as_i64(&crow.data), as_i64(&cols.data));
    let m = crow_i64.len().saturating_sub(1) * bm;
    let k = match read_npy(&dir.join("shape.npy")) {
        Ok(s) => *as_i64(&s.data).get(1).ok_or("shape.npy must hold (M, K)")? as usize,
        Err(_) => (cols_i64.iter().copied().max().unwrap_or(0) as usize + 1) * bk,
    };
    let (b_host, n) = match read_npy(&dir.join("dense.npy")) {
        Ok(d) if d.shape.len() == 2 && d.shape[0] == k => {
            let n = d.shape[1];
            (as_f16(d, "dense.npy")?, n)
        }
        Ok(d) => return Err(format!("dense.npy has shape {:?}; expected ({k}, N)", d.shape)),
        Err(_) => ((0..k * 64).map(|i| f16::from_f32(((i * 7 % 23) as f32 - 11.0) / 16.0)).collect(), 64),
    };
    let block = BlockShape::new(bm, bk);
    let kind = match crow.data {
        Data::I64(_) => "int64",
        _ => "int32",
    };

    // Into the library: the arrays go to the GPU as they are; the matrix is built there.
    let values_dev = ctx.stream().clone_htod(&values).map_err(|e| e.to_string())?;
    let a = match (&crow.data, &cols.data) {
        (Data::I64(r), Data::I64(c)) => device_matrix(ctx, (m, k), block, r, c, values_dev)?,
        (Data::I32(r), Data::I32(c)) => device_matrix(ctx, (m, k), block, r, c, values_dev)?,
        _ => return Err("crow_indices.npy and col_indices.npy must both be int64 or both int32".into()),
    };
    let b = ctx.upload_matrix(k, n, &b_host).map_err(lib)?;
    let mut c = ctx.zeros_matrix::<f32>(m, n).map_err(lib)?;
    let plan = ctx.plan_spmm(&a, Transpose::No, n).map_err(lib)?;
    ctx.spmm(&plan, 1.0, &a, &b, 0.0, &mut c).map_err(lib)?;
    let got = ctx.download_matrix(&c).map_err(lib)?;

    // The CPU loop over the blocks as the files describe them.
    let mut want = vec![0.0f64; m * n];
    for r in 0..m / bm {
        for p in crow_i64[r] as usize..crow_i64[r + 1] as usize {
            let col = cols_i64[p] as usize;
            for i in 0..bm {
                for kk in 0..bk {
                    let v = values[(p * bm + i) * bk + kk].to_f64();
                    for j in 0..n {
                        want[(r * bm + i) * n + j] += v * b_host[(col * bk + kk) * n + j].to_f64();
                    }
                }
            }
        }
    }
    let (mut d2, mut w2) = (0.0f64, 0.0f64);
    for (g, w) in got.iter().zip(&want) {
        d2 += (*g as f64 - w).powi(2);
        w2 += w * w;
    }
    let err = if got.len() == want.len() { (d2 / w2.max(f64::MIN_POSITIVE)).sqrt() } else { f64::INFINITY };

    // And back: the result, and the matrix as the library holds it.
    write_npy(&dir.join("c.npy"), "<f4", &[m, n], &got)?;
    let out_crow: Vec<i64> = a.row_ptr().iter().map(|&x| x as i64).collect();
    let out_cols: Vec<i64> = a.col_idx().iter().map(|&x| x as i64).collect();
    write_npy(&dir.join("out_crow_indices.npy"), "<i8", &[out_crow.len()], &out_crow)?;
    write_npy(&dir.join("out_col_indices.npy"), "<i8", &[out_cols.len()], &out_cols)?;
    let out_values = ctx.download_values(&a).map_err(lib)?;
    write_npy(&dir.join("out_values.npy"), "<f2", &[nnzb, bm, bk], &out_values)?;
    let same = out_crow == crow_i64 && out_cols == cols_i64 && out_values == values;
    let ok = err < 1e-3 && same;
    println!(
        "npy_interop: {} ({kind} indices): A {m}x{k} in {bm}x{bk} blocks ({nnzb} stored), N = {n}: rel. err {err:.1e}, arrays round-trip {}: {}",
        dir.display(),
        if same { "unchanged" } else { "CHANGED" },
        if ok { "ok" } else { "FAILED" }
    );
    Ok(ok)
}

/// Two sample sets (PyTorch-style and scipy-style) in a fresh temporary directory.
fn write_samples() -> Res<Vec<PathBuf>> {
    let root = std::env::temp_dir().join(format!("blocksparse_npy_interop_{}", std::process::id()));
    let (block_rows, block_cols, bs) = (8usize, 12usize, 32usize);
    let mut row_ptr = vec![0i64];
    let mut cols = Vec::new();
    for r in 0..block_rows {
        cols.extend((0..block_cols as i64).filter(|c| (r as i64 * 5 + c * 3) % 7 < 2));
        row_ptr.push(cols.len() as i64);
    }
    let values: Vec<f32> = (0..cols.len() * bs * bs).map(|i| ((i * 13 % 31) as f32 - 15.0) / 32.0).collect();
    let shape = [(block_rows * bs) as i64, (block_cols * bs) as i64];
    let (torch, scipy) = (root.join("torch"), root.join("scipy"));
    for dir in [&torch, &scipy] {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        write_npy(&dir.join("shape.npy"), "<i8", &[2], &shape)?;
    }
    let vshape = [cols.len(), bs, bs];
    write_npy(&torch.join("crow_indices.npy"), "<i8", &[row_ptr.len()], &row_ptr)?;
    write_npy(&torch.join("col_indices.npy"), "<i8", &[cols.len()], &cols)?;
    write_npy(&torch.join("values.npy"), "<f4", &vshape, &values)?;
    let i32s = |v: &[i64]| v.iter().map(|&x| x as i32).collect::<Vec<_>>();
    write_npy(&scipy.join("crow_indices.npy"), "<i4", &[row_ptr.len()], &i32s(&row_ptr))?;
    write_npy(&scipy.join("col_indices.npy"), "<i4", &[cols.len()], &i32s(&cols))?;
    let halves: Vec<f16> = values.iter().map(|&x| f16::from_f32(x)).collect();
    write_npy(&scipy.join("values.npy"), "<f2", &vshape, &halves)?;
    Ok(vec![torch, scipy])
}

fn run() -> Res<bool> {
    let ctx = Context::new(0).map_err(|e| match e {
        blocksparse::Error::NoDevice(why) => format!("no CUDA device ({why})"),
        e => e.to_string(),
    })?;
    let dirs = match std::env::args().nth(1) {
        Some(dir) => vec![PathBuf::from(dir)],
        None => write_samples()?,
    };
    let mut ok = true;
    for dir in &dirs {
        ok &= run_dir(&ctx, dir)?;
    }
    Ok(ok)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) if e.starts_with("no CUDA device") => {
            eprintln!("npy_interop: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("npy_interop: {e}");
            ExitCode::FAILURE
        }
    }
}
