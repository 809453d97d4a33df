//! GPU checks of the caller-facing buffers and streams (run by `validate` after the sweep):
//! - **stream ordering**: a product on the caller's stream s1 writes C (poisoned with NaN
//!   first); C is read back on another stream s2 through cudarc with no synchronization by hand.
//!   Only the events our write guard records make s2 wait, and the product is large enough
//!   (8192 × 8192 at 50 %, N = 4096, ~275 GFLOP) that a copy starting early reads poison;
//! - **borrowed buffers and device parts**: a BSR made on the device from int64 index arrays
//!   (PyTorch's), B and C as views into the caller's allocations at an offset, against the f64
//!   reference; the elements around C's view untouched; a misaligned view and a negative device
//!   index rejected with their typed errors;
//! - **padded round trip** (hardening issue #2 and #5): `write_matrix` and `download_matrix` on
//!   matrices wrapped by `from_slice` with `ld > cols` (row- and column-major, a batch), the
//!   padding between rows and matrices left as it was, exactly the matrix's elements back, and
//!   a buffer one element short rejected.

use blocksparse::cudarc::driver::{CudaSlice, DriverError};
use blocksparse::{BlockShape, Bsr, Context, Error, Layout, MatMut, MatRef, MatShape, Transpose};
use blocksparse_testkit::reference::{HostMat, rel_error, spmm_reference};
use blocksparse_testkit::testgen::{random_mask, random_values, seeded_rng};
use half::f16;

fn e(e: Error) -> String {
    e.to_string()
}

fn d(e: DriverError) -> String {
    e.to_string()
}

/// C = A · B on a stream of its own, read on another one without a manual synchronization.
pub fn stream_ordering(ctx: &Context, seed: u64) -> (bool, String) {
    let run = || -> Result<String, String> {
        let cuda = ctx.cuda();
        let (s1, s2) = (cuda.new_stream().map_err(d)?, cuda.new_stream().map_err(d)?);
        let on_s1 = ctx.with_stream(s1).map_err(e)?;
        let (m, k, n, bs) = (8192usize, 8192usize, 4096usize, 64usize);
        let mut rng = seeded_rng(seed);
        let mask = random_mask(m / bs, k / bs, 0.5, &mut rng);
        let nnzb = mask.iter().filter(|&&x| x).count();
        let a = Bsr::from_block_mask(m, k, BlockShape::square(bs), &mask, random_values::<f16>(nnzb * bs * bs, &mut rng)).map_err(e)?;
        let b_host = random_values::<f16>(k * n, &mut rng);
        let a_dev = on_s1.upload_bsr(&a).map_err(e)?;
        let b = on_s1.upload_matrix(k, n, &b_host).map_err(e)?;
        let mut c = on_s1.upload_matrix(m, n, &vec![f32::NAN; m * n]).map_err(e)?;
        let plan = on_s1.plan_spmm(&a_dev, Transpose::No, n).map_err(e)?;
        // Only the product is left in flight on s1 when s2's copy is queued.
        on_s1.synchronize().map_err(e)?;
        on_s1.spmm(&plan, 1.0, &a_dev, &b, 0.0, &mut c).map_err(e)?;
        let got: Vec<f32> = s2.clone_dtoh(c.slice()).map_err(d)?;
        let nan = got.iter().filter(|x| x.is_nan()).count();
        // The same buffer read after a synchronization: what s2 must have seen.
        on_s1.synchronize().map_err(e)?;
        let settled = on_s1.download_matrix(&c).map_err(e)?;
        let same = got.len() == settled.len() && got.iter().zip(&settled).all(|(x, y)| x.to_bits() == y.to_bits());
        // 64 rows against the f64 reference.
        let rows: Vec<usize> = (0..64).map(|i| (i * 127 + 5) % m).collect();
        let mut want = Vec::new();
        let mut have = Vec::new();
        for &i in &rows {
            let r = i / bs;
            let mut acc = vec![0.0f64; n];
            for p in a.row_range(r).unwrap_or(0..0) {
                let col = a.col_idx()[p] as usize;
                let vals = a.block_values(p).unwrap_or(&[]);
                for kk in 0..bs {
                    let v = vals[(i % bs) * bs + kk].to_f64();
                    let brow = &b_host[(col * bs + kk) * n..][..n];
                    for (acc, x) in acc.iter_mut().zip(brow) {
                        *acc += v * x.to_f64();
                    }
                }
            }
            want.extend(acc);
            have.extend(got[i * n..][..n].iter().map(|&x| x as f64));
        }
        let err = rel_error(have.into_iter(), &want);
        let detail = format!(
            "{nan} poisoned elements read on s2, {} with the synchronized read, rel. err {err:.2e} on 64 rows",
            if same { "bitwise equal" } else { "DIFFERENT" }
        );
        if nan == 0 && same && err < 1e-2 { Ok(detail) } else { Err(detail) }
    };
    match run() {
        Ok(d) => (true, d),
        Err(d) => (false, d),
    }
}

/// The caller's buffers: device-side int64 parts, views at an offset, and the typed errors.
pub fn caller_buffers(ctx: &Context, seed: u64) -> (bool, String) {
    let run = || -> Result<String, String> {
        let stream = ctx.stream();
        let (m, k, n, bs) = (256usize, 384usize, 72usize, 32usize);
        let mut rng = seeded_rng(seed);
        let mask = random_mask(m / bs, k / bs, 0.4, &mut rng);
        let nnzb = mask.iter().filter(|&&x| x).count();
        let a = Bsr::from_block_mask(m, k, BlockShape::square(bs), &mask, random_values::<f16>(nnzb * bs * bs, &mut rng)).map_err(e)?;
        // PyTorch's layout: int64 crow_indices / col_indices, on the device.
        let crow: Vec<i64> = a.row_ptr().iter().map(|&x| x as i64).collect();
        let cols: Vec<i64> = a.col_idx().iter().map(|&x| x as i64).collect();
        let crow_dev = stream.clone_htod(&crow).map_err(d)?;
        let cols_dev = stream.clone_htod(&cols).map_err(d)?;
        let values: CudaSlice<f16> = stream.clone_htod(a.values()).map_err(d)?;
        let a_dev = ctx.bsr_from_device(m, k, a.block(), &crow_dev, &cols_dev, values).map_err(e)?;
        // B (k, n) row-major with ld 80 at element offset 8 of a larger allocation.
        let (ldb, off) = (80usize, 8usize);
        let b_host = random_values::<f16>(k * n, &mut rng);
        let mut b_buf = vec![f16::from_f32(7.0); off + k * ldb];
        for i in 0..k {
            b_buf[off + i * ldb..][..n].copy_from_slice(&b_host[i * n..][..n]);
        }
        let b_dev = stream.clone_htod(&b_buf).map_err(d)?;
        let b_view = b_dev.slice(off..);
        let b = MatRef::from_view(&b_view, MatShape::new(k, n, ldb, Layout::RowMajor)).map_err(e)?;
        // C (m, n) column-major (ld m) at element offset 16, the rest of the buffer a sentinel.
        let sentinel = 3.5f32;
        let mut c_dev = stream.clone_htod(&vec![sentinel; 16 + m * n + 16]).map_err(d)?;
        {
            let c = MatMut::from_view(c_dev.slice_mut(16..16 + m * n), MatShape::new(m, n, m, Layout::ColMajor)).map_err(e)?;
            let plan = ctx.plan_spmm(&a_dev, Transpose::No, n).map_err(e)?;
            ctx.spmm(&plan, 1.0, &a_dev, b, 0.0, c).map_err(e)?;
        }
        let c_all = stream.clone_dtoh(&c_dev).map_err(d)?;
        let want =
            spmm_reference(1.0, &a, Transpose::No, HostMat::row_major(&b_host, k, n), 0.0, HostMat::row_major(&vec![0f32; m * n], m, n));
        let got = (0..m * n).map(|idx| c_all[16 + (idx % n) * m + idx / n] as f64);
        let err = rel_error(got, &want);
        let untouched = c_all[..16].iter().chain(&c_all[16 + m * n..]).all(|&x| x == sentinel);
        // Typed errors: a view 8 bytes into an allocation, and a negative device index.
        let misaligned = b_dev.slice(4..);
        let bad_view = MatRef::from_view(&misaligned, MatShape::new(k, n, ldb, Layout::RowMajor)).map(|_| ());
        let mut bad_cols = cols.clone();
        if let Some(last) = bad_cols.last_mut() {
            *last = -1;
        }
        let bad_cols_dev = stream.clone_htod(&bad_cols).map_err(d)?;
        let values2: CudaSlice<f16> = stream.clone_htod(a.values()).map_err(d)?;
        let bad_index = ctx.bsr_from_device(m, k, a.block(), &crow_dev, &bad_cols_dev, values2).map(|_| ());
        let typed =
            matches!(bad_view, Err(Error::Misaligned { .. })) && matches!(bad_index, Err(Error::NegativeIndex { what: "col_idx", .. }));
        let detail = format!(
            "rel. err {err:.2e}, around C {}, misaligned view: {bad_view:?}, negative index: {:?}",
            if untouched { "untouched" } else { "WRITTEN" },
            bad_index.map_err(|e| e.to_string())
        );
        if err < 1e-2 && untouched && typed { Ok(detail) } else { Err(detail) }
    };
    match run() {
        Ok(d) => (true, d),
        Err(d) => (false, d),
    }
}

/// `write_matrix` / `download_matrix` over caller-made buffers with padded rows (the cases of
/// hardening issue #2: 2×5 with ld 8, 2×8 with ld 16), a column-major one and a batch.
pub fn padded_round_trip(ctx: &Context, seed: u64) -> (bool, String) {
    let run = || -> Result<String, String> {
        let mut rng = seeded_rng(seed);
        let sentinel = f16::from_f32(-7.0);
        let shapes = [
            MatShape::new(2, 5, 8, Layout::RowMajor),
            MatShape::new(2, 8, 16, Layout::RowMajor),
            MatShape::new(5, 3, 8, Layout::ColMajor),
            MatShape::new(3, 5, 8, Layout::RowMajor).batched(2, 32),
        ];
        for shape in shapes {
            let len = shape.extent().map_err(e)?;
            let buf: CudaSlice<f16> = ctx.stream().clone_htod(&vec![sentinel; len]).map_err(d)?;
            let mut m = blocksparse::DeviceMatrix::from_slice_batched(buf, shape).map_err(e)?;
            let data = random_values::<f16>(shape.batch * shape.rows * shape.cols, &mut rng);
            ctx.write_matrix(&mut m, &data).map_err(e)?;
            let back = ctx.download_matrix(&m).map_err(e)?;
            if back != data {
                return Err(format!("{shape:?}: download differs from what was written"));
            }
            let raw = ctx.stream().clone_dtoh(m.slice()).map_err(d)?;
            let mut inside = vec![false; len];
            for b in 0..shape.batch {
                for i in 0..shape.rows {
                    for j in 0..shape.cols {
                        inside[shape.offset(b, i, j)] = true;
                    }
                }
            }
            let touched = raw.iter().zip(&inside).filter(|(v, inside)| !**inside && **v != sentinel).count();
            if touched > 0 {
                return Err(format!("{shape:?}: {touched} padding elements overwritten"));
            }
            let short: CudaSlice<f16> = ctx.stream().alloc_zeros(len - 1).map_err(d)?;
            match blocksparse::DeviceMatrix::from_slice_batched(short, shape) {
                Err(Error::BufferTooSmall { .. }) => {}
                other => return Err(format!("{shape:?}: a buffer one element short gave {:?}", other.map(|_| ()))),
            }
        }
        Ok(format!("{} shapes: written and read back exactly, padding untouched, short buffers rejected", shapes.len()))
    };
    match run() {
        Ok(detail) => (true, detail),
        Err(why) => (false, why),
    }
}
