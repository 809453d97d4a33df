//! CPU references for checking the GPU kernels: every product and sum in f64, written as the
//! plain loops of each op's semantics, independent of the library's kernels and planners.
//!
//! Dense operands are [`HostMat`]s: a buffer in either layout with a leading dimension, read
//! through its logical `(i, j)`; [`HostMat::t`] is its transpose (the same buffer). Results are
//! logical row-major `Vec<f64>`s (SDDMM: the block values in storage order).

use blocksparse::{BlockShape, Bsr, Element, Layout, Transpose};
use rayon::prelude::*;

/// A dense host matrix: `data[i · ld + j]` (row-major) or `data[j · ld + i]` (column-major).
#[derive(Clone, Copy, Debug)]
pub struct HostMat<'a, T> {
    /// The buffer.
    pub data: &'a [T],
    /// Logical rows.
    pub rows: usize,
    /// Logical columns.
    pub cols: usize,
    /// Leading dimension.
    pub ld: usize,
    /// Layout of the buffer.
    pub layout: Layout,
}

impl<'a, T: Element> HostMat<'a, T> {
    /// A packed row-major `(rows, cols)` matrix.
    pub fn row_major(data: &'a [T], rows: usize, cols: usize) -> Self {
        HostMat { data, rows, cols, ld: cols, layout: Layout::RowMajor }
    }
    /// Element `(i, j)` as f64.
    #[inline]
    pub fn get(&self, i: usize, j: usize) -> f64 {
        let at = match self.layout {
            Layout::RowMajor => i * self.ld + j,
            Layout::ColMajor => j * self.ld + i,
        };
        self.data[at].to_f64()
    }
    /// The transpose, reading the same buffer.
    pub fn t(self) -> Self {
        HostMat { rows: self.cols, cols: self.rows, layout: self.layout.flip(), ..self }
    }
}

/// `alpha · acc + beta · c` with BLAS semantics: `c` is not read when `beta == 0` (a NaN there
/// does not reach the result).
#[inline]
fn scale(alpha: f64, acc: f64, beta: f64, c: f64) -> f64 {
    if beta == 0.0 { alpha * acc } else { alpha * acc + beta * c }
}

/// `C = alpha · op(A) · B + beta · C0`, B `(K', N)` = op(B) already applied to the view; C0 (the
/// old C, `(M', N)`) is read only when `beta != 0`. Returns C logical row-major.
///
/// Panics on inconsistent shapes (a test bug, not a library error).
pub fn spmm_reference<T: Element, O: Element>(
    alpha: f64,
    a: &Bsr<T>,
    op_a: Transpose,
    b: HostMat<'_, T>,
    beta: f64,
    c0: HostMat<'_, O>,
) -> Vec<f64> {
    let BlockShape { bm, bk } = a.block();
    let (m, k) = match op_a {
        Transpose::No => (a.nrows(), a.ncols()),
        Transpose::Yes => (a.ncols(), a.nrows()),
    };
    let n = b.cols;
    assert_eq!(b.rows, k, "rows of op(B)");
    assert_eq!((c0.rows, c0.cols), (m, n), "shape of C");
    // Blocks grouped by output tile row: block rows of A, or block columns for Aᵀ.
    let (tm, tiles) = match op_a {
        Transpose::No => (bm, a.block_rows()),
        Transpose::Yes => (bk, a.block_cols()),
    };
    let mut by_tile: Vec<Vec<(usize, usize)>> = vec![Vec::new(); tiles]; // (block p, its block row)
    for r in 0..a.block_rows() {
        for p in a.row_range(r).unwrap_or(0..0) {
            let c = a.col_idx()[p] as usize;
            by_tile[if op_a == Transpose::No { r } else { c }].push((p, r));
        }
    }
    let mut out = vec![0.0f64; m * n];
    out.par_chunks_mut(tm * n).enumerate().for_each(|(t, strip)| {
        let mut acc = vec![0.0f64; tm * n];
        for &(p, r) in &by_tile[t] {
            let c = a.col_idx()[p] as usize;
            let vals = a.block_values(p).unwrap_or(&[]);
            for i in 0..bm {
                for kk in 0..bk {
                    let v = vals[i * bk + kk].to_f64();
                    // A(r·bm + i, c·bk + kk) = v.
                    let (row, bcol) = match op_a {
                        Transpose::No => (i, c * bk + kk),
                        Transpose::Yes => (kk, r * bm + i),
                    };
                    let dst = &mut acc[row * n..(row + 1) * n];
                    for (j, d) in dst.iter_mut().enumerate() {
                        *d += v * b.get(bcol, j);
                    }
                }
            }
        }
        for (row, (o, a)) in strip.chunks_mut(n).zip(acc.chunks(n)).enumerate() {
            for (j, (o, a)) in o.iter_mut().zip(a).enumerate() {
                let c_old = if beta == 0.0 { 0.0 } else { c0.get(t * tm + row, j) };
                *o = scale(alpha, *a, beta, c_old);
            }
        }
    });
    out
}

/// `C = alpha · X · op(A) + beta · C0` (dense × sparse), X = op(X) already applied. Returns C
/// logical row-major.
pub fn dense_sparse_reference<T: Element, O: Element>(
    alpha: f64,
    x: HostMat<'_, T>,
    a: &Bsr<T>,
    op_a: Transpose,
    beta: f64,
    c0: HostMat<'_, O>,
) -> Vec<f64> {
    // Cᵀ = op(A)ᵀ · Xᵀ, then transposed back.
    let ct = spmm_reference(alpha, a, op_a.flip(), x.t(), beta, c0.t());
    let (m, n) = (c0.rows, c0.cols);
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = ct[j * m + i];
        }
    }
    out
}

/// SDDMM: for every block `p` of `pattern` (row `r`, column `c`), `values[p][i][j] = alpha ·
/// Σ_k X(r·bm + i, k) · Y(k, c·bn + j) + beta · c0[p][i][j]`, X = op(X) and Y = op(Y) already
/// applied; `c0` (the old values, storage order) is read only when `beta != 0`. Returns the new
/// values in storage order.
pub fn sddmm_reference<T: Element, U: Element, O: Element>(
    alpha: f64,
    x: HostMat<'_, T>,
    y: HostMat<'_, T>,
    pattern: &Bsr<U>,
    beta: f64,
    c0: &[O],
) -> Vec<f64> {
    let BlockShape { bm, bk: bn } = pattern.block();
    let k = x.cols;
    assert_eq!(y.rows, k, "rows of op(Y)");
    assert_eq!((x.rows, y.cols), (pattern.nrows(), pattern.ncols()), "shape of C");
    let mut blocks: Vec<(usize, usize, usize)> = Vec::new(); // (p, row, col)
    for r in 0..pattern.block_rows() {
        for p in pattern.row_range(r).unwrap_or(0..0) {
            blocks.push((p, r, pattern.col_idx()[p] as usize));
        }
    }
    let mut out = vec![0.0f64; pattern.nnzb() * bm * bn];
    out.par_chunks_mut((bm * bn).max(1)).zip(blocks.par_iter()).for_each(|(dst, &(p, r, c))| {
        for i in 0..bm {
            for j in 0..bn {
                let mut acc = 0.0;
                for kk in 0..k {
                    acc += x.get(r * bm + i, kk) * y.get(kk, c * bn + j);
                }
                let e = p * bm * bn + i * bn + j;
                let old = if beta == 0.0 { 0.0 } else { c0[e].to_f64() };
                dst[i * bn + j] = scale(alpha, acc, beta, old);
            }
        }
    });
    out
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
    if want2 == 0.0 { diff } else { diff / want2.sqrt() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bsr_2x2() -> Bsr<f32> {
        // 32 × 32 in 16 × 16 blocks: blocks (0, 1) and (1, 0), values 1..=512.
        let values: Vec<f32> = (1..=512).map(|v| v as f32 / 64.0).collect();
        Bsr::from_parts(32, 32, BlockShape::square(16), vec![0, 1, 2], vec![1, 0], values).unwrap()
    }

    /// The dense A, element by element from the BSR definition.
    fn dense(a: &Bsr<f32>) -> Vec<f64> {
        let (m, k) = (a.nrows(), a.ncols());
        let BlockShape { bm, bk } = a.block();
        let mut d = vec![0.0; m * k];
        for r in 0..a.block_rows() {
            for p in a.row_range(r).unwrap() {
                let c = a.col_idx()[p] as usize;
                for i in 0..bm {
                    for j in 0..bk {
                        d[(r * bm + i) * k + c * bk + j] = a.values()[p * bm * bk + i * bk + j] as f64;
                    }
                }
            }
        }
        d
    }

    fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|kk| a[i * k + kk] * b[kk * n + j]).sum();
            }
        }
        c
    }

    fn transpose(a: &[f64], m: usize, n: usize) -> Vec<f64> {
        let mut t = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                t[j * m + i] = a[i * n + j];
            }
        }
        t
    }

    #[test]
    fn spmm_matches_dense_products_in_every_layout() {
        let a = bsr_2x2();
        let ad = dense(&a);
        let n = 24;
        let bvals: Vec<f32> = (0..32 * n).map(|v| ((v * 7 % 13) as f32 - 6.0) / 8.0).collect();
        let b = HostMat::row_major(&bvals, 32, n);
        let bd: Vec<f64> = bvals.iter().map(|&v| v as f64).collect();
        let c0 = vec![f32::NAN; 32 * n];
        let c0m = HostMat::row_major(&c0, 32, n);
        let want = matmul(&ad, &bd, 32, 32, n);
        assert_eq!(spmm_reference(1.0, &a, Transpose::No, b, 0.0, c0m), want);
        let want_t = matmul(&transpose(&ad, 32, 32), &bd, 32, 32, n);
        assert_eq!(spmm_reference(1.0, &a, Transpose::Yes, b, 0.0, c0m), want_t);
        // op(B) = Bᵀ of a column-major buffer holding B: the same logical matrix.
        let bt_vals: Vec<f32> = (0..32 * n).map(|e| bvals[(e % 32) * n + e / 32]).collect();
        let b_col = HostMat { data: &bt_vals, rows: 32, cols: n, ld: 32, layout: Layout::ColMajor };
        assert_eq!(spmm_reference(1.0, &a, Transpose::No, b_col, 0.0, c0m), want);
        // alpha, beta with a finite old C.
        let c1: Vec<f32> = (0..32 * n).map(|v| v as f32).collect();
        let got = spmm_reference(2.0, &a, Transpose::No, b, -0.5, HostMat::row_major(&c1, 32, n));
        for (e, g) in got.iter().enumerate() {
            assert_eq!(*g, 2.0 * want[e] - 0.5 * c1[e] as f64);
        }
    }

    #[test]
    fn dense_sparse_and_sddmm_match_dense_products() {
        let a = bsr_2x2();
        let ad = dense(&a);
        let m = 8;
        let xv: Vec<f32> = (0..m * 32).map(|v| ((v % 11) as f32 - 5.0) / 4.0).collect();
        let xd: Vec<f64> = xv.iter().map(|&v| v as f64).collect();
        let c0 = vec![0.0f32; m * 32];
        let got = dense_sparse_reference(1.0, HostMat::row_major(&xv, m, 32), &a, Transpose::No, 0.0, HostMat::row_major(&c0, m, 32));
        assert_eq!(got, matmul(&xd, &ad, m, 32, 32));
        let got_t = dense_sparse_reference(1.0, HostMat::row_major(&xv, m, 32), &a, Transpose::Yes, 0.0, HostMat::row_major(&c0, m, 32));
        assert_eq!(got_t, matmul(&xd, &transpose(&ad, 32, 32), m, 32, 32));
        // SDDMM of X (32 × 8) · Y (8 × 32) at A's two blocks.
        let x = HostMat::row_major(&xv, 32, m);
        let y = HostMat::row_major(&xv, m, 32);
        let full = matmul(&xd, &xd, 32, m, 32);
        let got = sddmm_reference(1.0, x, y, &a, 0.0, &vec![f32::NAN; 512]);
        for (p, (r, c)) in [(0usize, (0usize, 1usize)), (1, (1, 0))] {
            for i in 0..16 {
                for j in 0..16 {
                    assert_eq!(got[p * 256 + i * 16 + j], full[(r * 16 + i) * 32 + c * 16 + j]);
                }
            }
        }
    }

    #[test]
    fn rel_error_never_passes_nan_or_length_mismatch() {
        assert!(rel_error([1.0, f64::NAN].into_iter(), &[1.0, 2.0]).is_nan());
        assert_eq!(rel_error([1.0].into_iter(), &[1.0, 2.0]), f64::INFINITY);
        assert_eq!(rel_error([1.0, 2.0].into_iter(), &[1.0, 2.0]), 0.0);
        assert!((rel_error([1.1].into_iter(), &[1.0]) - 0.1).abs() < 1e-12);
    }
}
