//! CPU references for checking the GPU kernels: every product and sum in f64.

use rayon::prelude::*;

use crate::bsr::{BlockShape, Bsr};
use crate::element::Element;
use crate::error::{Error, Result};

/// Elements a row-major `rows x cols` matrix with leading dimension `ld` spans:
/// `(rows - 1) * ld + cols` (checked; `rows >= 1`).
fn span(what: &'static str, rows: usize, ld: usize, cols: usize) -> Result<usize> {
    rows.saturating_sub(1)
        .checked_mul(ld)
        .and_then(|x| x.checked_add(cols))
        .ok_or(Error::TooLarge { what, value: rows })
}

/// `C = alpha * A * B + beta * C`, with every product and sum in f64, returned as a dense
/// row-major `M x n` matrix (leading dimension `n`).
///
/// * `b` is `K x n` row-major with leading dimension `ldb >= n` (`K = a.ncols()`);
/// * `c_in` is the old `M x n` C with leading dimension `ldc >= n` (`M = a.nrows()`). Its size
///   is always checked, but as in BLAS it is read only when `beta != 0`: with `beta == 0` a NaN
///   in the old C does not reach the result.
///
/// Work is spread over the block rows of A with rayon. Nothing is skipped: a zero stored in A
/// still multiplies B, so NaN and infinity in B propagate as IEEE arithmetic says.
#[allow(clippy::too_many_arguments)]
pub fn spmm_reference<T: Element, O: Element>(
    alpha: f64,
    a: &Bsr<T>,
    b: &[T],
    ldb: usize,
    n: usize,
    beta: f64,
    c_in: &[O],
    ldc: usize,
) -> Result<Vec<f64>> {
    let (m, k) = (a.nrows(), a.ncols());
    if n == 0 {
        return Err(Error::ZeroDimension { what: "n" });
    }
    if ldb < n {
        return Err(Error::LeadingDimension { what: "B", ld: ldb, min: n, align: 1 });
    }
    if ldc < n {
        return Err(Error::LeadingDimension { what: "C", ld: ldc, min: n, align: 1 });
    }
    let b_needed = span("B elements", k, ldb, n)?;
    if b.len() < b_needed {
        return Err(Error::BufferTooSmall { what: "B", needed: b_needed, got: b.len() });
    }
    let c_needed = span("C elements", m, ldc, n)?;
    if c_in.len() < c_needed {
        return Err(Error::BufferTooSmall { what: "C", needed: c_needed, got: c_in.len() });
    }
    let out_len = m.checked_mul(n).ok_or(Error::TooLarge { what: "C elements", value: m })?;

    let BlockShape { bm, bk } = a.block();
    let (row_ptr, col_idx, values) = (a.row_ptr(), a.col_idx(), a.values());
    let mut out = vec![0.0f64; out_len];
    out.par_chunks_mut(bm * n).enumerate().for_each(|(br, strip)| {
        // One converted row of B, reused by the bm rows of the block.
        let mut brow = vec![0.0f64; n];
        let (start, end) = (row_ptr[br] as usize, row_ptr[br + 1] as usize);
        for p in start..end {
            let kb = col_idx[p] as usize * bk;
            let block = &values[p * bm * bk..(p + 1) * bm * bk];
            for kk in 0..bk {
                let src = &b[(kb + kk) * ldb..][..n];
                for (d, s) in brow.iter_mut().zip(src) {
                    *d = s.to_f64();
                }
                for (row, arow) in strip.chunks_mut(n).zip(block.chunks(bk)) {
                    let av = arow[kk].to_f64();
                    for (o, bv) in row.iter_mut().zip(&brow) {
                        *o += av * bv;
                    }
                }
            }
        }
        for (i, row) in strip.chunks_mut(n).enumerate() {
            if beta == 0.0 {
                for o in row.iter_mut() {
                    *o *= alpha;
                }
            } else {
                let crow = &c_in[(br * bm + i) * ldc..][..n];
                for (o, c) in row.iter_mut().zip(crow) {
                    *o = alpha * *o + beta * c.to_f64();
                }
            }
        }
    });
    Ok(out)
}

/// `A * B` for a dense row-major `m x k` A and `k x n` B by the plain triple loop, in f64,
/// single-threaded: an independent check of [`spmm_reference`] for tests. Fails with
/// [`Error::ShapeMismatch`] unless `a.len() == m * k` and `b.len() == k * n`.
pub fn dense_reference<T: Element>(
    a: &[T],
    m: usize,
    k: usize,
    b: &[T],
    n: usize,
) -> Result<Vec<f64>> {
    let a_len = m.checked_mul(k).ok_or(Error::TooLarge { what: "A elements", value: m })?;
    let b_len = k.checked_mul(n).ok_or(Error::TooLarge { what: "B elements", value: k })?;
    let c_len = m.checked_mul(n).ok_or(Error::TooLarge { what: "C elements", value: m })?;
    if a.len() != a_len {
        return Err(Error::ShapeMismatch { what: "dense A length", expected: a_len, got: a.len() });
    }
    if b.len() != b_len {
        return Err(Error::ShapeMismatch { what: "dense B length", expected: b_len, got: b.len() });
    }
    let mut c = vec![0.0f64; c_len];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f64;
            for p in 0..k {
                acc += a[i * k + p].to_f64() * b[p * n + j].to_f64();
            }
            c[i * n + j] = acc;
        }
    }
    Ok(c)
}

/// Relative error `‖got − want‖₂ / ‖want‖₂` (or `‖got‖₂` when `want` is all zeros).
///
/// Never passes a `< tol` check when something is wrong: a NaN anywhere in either input gives
/// NaN, and a length mismatch gives infinity.
pub fn rel_error(got: impl Iterator<Item = f64>, want: &[f64]) -> f64 {
    let mut diff2 = 0.0f64;
    let mut want2 = 0.0f64;
    let mut count = 0usize;
    let mut nan = false;
    for (i, g) in got.enumerate() {
        count = i + 1;
        let Some(&w) = want.get(i) else {
            return f64::INFINITY;
        };
        if g.is_nan() || w.is_nan() {
            nan = true;
        }
        let d = g - w;
        diff2 += d * d;
        want2 += w * w;
    }
    if count != want.len() {
        return f64::INFINITY;
    }
    if nan {
        return f64::NAN;
    }
    let diff = diff2.sqrt();
    if want2 == 0.0 {
        diff
    } else {
        // inf / inf (overflowing squares) is NaN, which also never passes.
        diff / want2.sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testgen::{random_mask, random_values, seeded_rng, test_seed};
    use half::{bf16, f16};

    #[test]
    fn small_hand_computed() {
        // A: 32x32 with 16x16 blocks; only block (1, 0) stored, all ones.
        let block = BlockShape::square(16);
        let a = Bsr::<f32>::from_parts(32, 32, block, vec![0, 0, 1], vec![0], vec![1.0; 256])
            .unwrap();
        // B: 32 x 2, ldb 3, column 0 = row index, column 1 = 1.
        let mut b = vec![f32::NAN; 31 * 3 + 2];
        for r in 0..32 {
            b[r * 3] = r as f32;
            b[r * 3 + 1] = 1.0;
        }
        let c_in = vec![1.0f32; 32 * 2];
        let c = spmm_reference(2.0, &a, &b, 3, 2, 0.5, &c_in, 2).unwrap();
        for i in 0..16 {
            assert_eq!(c[i * 2], 0.5);
            assert_eq!(c[i * 2 + 1], 0.5);
        }
        // Rows 16..32: sum_{r<16} r = 120, sum of ones = 16.
        for i in 16..32 {
            assert_eq!(c[i * 2], 2.0 * 120.0 + 0.5);
            assert_eq!(c[i * 2 + 1], 2.0 * 16.0 + 0.5);
        }
    }

    #[test]
    fn nan_in_b_propagates_through_stored_zero() {
        let block = BlockShape::square(16);
        let a = Bsr::<f16>::from_parts(16, 16, block, vec![0, 1], vec![0], vec![f16::ZERO; 256])
            .unwrap();
        let mut b = vec![f16::ONE; 16];
        b[3] = f16::NAN;
        let c = spmm_reference(1.0, &a, &b, 1, 1, 0.0, &[0.0f32; 16], 1).unwrap();
        assert!(c.iter().all(|x| x.is_nan()));
    }

    #[test]
    fn shape_errors() {
        let block = BlockShape::new(32, 16);
        let a = Bsr::<bf16>::empty(64, 48, block).unwrap();
        let b = vec![bf16::ONE; 48 * 8];
        let c = vec![0.0f32; 64 * 8];
        assert!(matches!(
            spmm_reference(1.0, &a, &b, 8, 0, 0.0, &c, 8),
            Err(Error::ZeroDimension { what: "n" })
        ));
        assert!(matches!(
            spmm_reference(1.0, &a, &b, 7, 8, 0.0, &c, 8),
            Err(Error::LeadingDimension { what: "B", ld: 7, min: 8, align: 1 })
        ));
        assert!(matches!(
            spmm_reference(1.0, &a, &b, 8, 8, 0.0, &c, 4),
            Err(Error::LeadingDimension { what: "C", ld: 4, min: 8, align: 1 })
        ));
        assert!(matches!(
            spmm_reference(1.0, &a, &b[1..], 8, 8, 0.0, &c, 8),
            Err(Error::BufferTooSmall { what: "B", needed: 384, got: 383 })
        ));
        assert!(matches!(
            spmm_reference(1.0, &a, &b, 9, 8, 0.0, &c, 8),
            Err(Error::BufferTooSmall { what: "B", needed: 431, .. })
        ));
        assert!(matches!(
            spmm_reference(1.0, &a, &b, 8, 8, 0.0, &c[..511], 8),
            Err(Error::BufferTooSmall { what: "C", needed: 512, got: 511 })
        ));
        assert!(matches!(
            spmm_reference(1.0, &a, &b, usize::MAX, 8, 0.0, &c, 8),
            Err(Error::TooLarge { .. })
        ));
        // Exactly the span is enough: the last row needs only n elements.
        let ok = spmm_reference(1.0, &a, &b[..47 * 8 + 5], 8, 5, 0.0, &c[..63 * 8 + 5], 8);
        assert_eq!(ok.unwrap().len(), 64 * 5);
        assert!(matches!(
            dense_reference(&b[..10], 2, 4, &b[..8], 2),
            Err(Error::ShapeMismatch { what: "dense A length", expected: 8, got: 10 })
        ));
        assert!(matches!(
            dense_reference(&b[..8], 2, 4, &b[..9], 2),
            Err(Error::ShapeMismatch { what: "dense B length", expected: 8, got: 9 })
        ));
        assert!(matches!(
            dense_reference(&b[..8], usize::MAX, 4, &b[..8], 2),
            Err(Error::TooLarge { .. })
        ));
    }

    #[test]
    fn matches_dense_with_leading_dimensions() {
        let seed = test_seed("matches_dense_with_leading_dimensions");
        let mut rng = seeded_rng(seed);
        let block = BlockShape::new(16, 32);
        let (m, k, n, ldb, ldc) = (64, 96, 13, 21, 17);
        let mask = random_mask(m / 16, k / 32, 0.5, &mut rng);
        let nnzb = mask.iter().filter(|&&x| x).count();
        let a = Bsr::<f16>::from_block_mask(m, k, block, &mask, random_values(nnzb * 512, &mut rng))
            .unwrap();
        let b: Vec<f16> = random_values((k - 1) * ldb + n, &mut rng);
        let c_in: Vec<bf16> = random_values((m - 1) * ldc + n, &mut rng);
        let got = spmm_reference(0.75, &a, &b, ldb, n, -1.25, &c_in, ldc).unwrap();

        let b_packed: Vec<f16> = (0..k).flat_map(|r| b[r * ldb..r * ldb + n].to_vec()).collect();
        let ab = dense_reference(&a.to_dense(), m, k, &b_packed, n).unwrap();
        let want: Vec<f64> = (0..m * n)
            .map(|idx| {
                let (i, j) = (idx / n, idx % n);
                0.75 * ab[idx] - 1.25 * c_in[i * ldc + j].to_f64()
            })
            .collect();
        let err = rel_error(got.iter().copied(), &want);
        assert!(err < 1e-12, "seed {seed}: rel error {err}");
    }

    #[test]
    fn rel_error_values() {
        assert_eq!(rel_error([3.0, 4.0].into_iter(), &[3.0, 4.0]), 0.0);
        assert!((rel_error([3.0, 4.0].into_iter(), &[0.0, 4.0]) - 0.75).abs() < 1e-15);
        assert_eq!(rel_error([3.0, 4.0].into_iter(), &[0.0, 0.0]), 5.0);
        assert_eq!(rel_error(std::iter::empty(), &[]), 0.0);
        assert!(rel_error([f64::NAN, 1.0].into_iter(), &[1.0, 1.0]).is_nan());
        assert!(rel_error([1.0, 1.0].into_iter(), &[f64::NAN, 1.0]).is_nan());
        assert!(rel_error([f64::NAN].into_iter(), &[0.0]).is_nan());
        assert_eq!(rel_error([1.0].into_iter(), &[1.0, 2.0]), f64::INFINITY);
        assert_eq!(rel_error([1.0, 2.0].into_iter(), &[1.0]), f64::INFINITY);
        assert!(!(rel_error([f64::INFINITY].into_iter(), &[1.0]) < 1e-3));
        assert!(!(rel_error([1.0].into_iter(), &[f64::INFINITY]) < 1e-3));
    }
}
