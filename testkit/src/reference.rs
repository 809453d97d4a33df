//! CPU references for checking the GPU kernels: every product and sum in f64, written as the
//! plain loops of each op's semantics, independent of the library's kernels and planners.
//!
//! Dense operands are [`HostMat`]s: a buffer in either layout with a leading dimension, read
//! through its logical `(i, j)`; [`HostMat::t`] is its transpose (the same buffer). Results are
//! logical row-major `Vec<f64>`s (SDDMM and a block-sparse SpGEMM C: the block values in storage
//! order).

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

/// The checked shapes of `A · B` (both BSR): `(bm, bk, bn)`. Panics on inconsistent shapes.
fn spgemm_blocks<T: Element>(a: &Bsr<T>, b: &Bsr<T>) -> (usize, usize, usize) {
    let (BlockShape { bm, bk }, BlockShape { bm: b_bk, bk: bn }) = (a.block(), b.block());
    assert_eq!(b.nrows(), a.ncols(), "rows of B (= columns of A)");
    assert_eq!(b_bk, bk, "block height of B (= block width of A)");
    (bm, bk, bn)
}

/// The block values of `m` as f64 (converted once, not per use).
fn values_f64<T: Element>(m: &Bsr<T>) -> Vec<f64> {
    m.values().par_iter().map(|v| v.to_f64()).collect()
}

/// `Σ_k A.block(i, k) · B.block(k, j)` (`(bm, bn)`, row-major, in f64) over the pairs of C's
/// block `(i, j)`, in increasing k; zeros when there is none. `av` and `bv` are the values as
/// f64.
fn block_product<T: Element>(a: &Bsr<T>, b: &Bsr<T>, (av, bv): (&[f64], &[f64]), (i, j): (usize, usize)) -> Vec<f64> {
    let (bm, bk, bn) = (a.block().bm, a.block().bk, b.block().bk);
    let mut acc = vec![0.0f64; bm * bn];
    for p in a.row_range(i).unwrap_or(0..0) {
        let k = a.col_idx()[p] as usize;
        let row = b.row_range(k).unwrap_or(0..0);
        let Ok(at) = b.col_idx()[row.clone()].binary_search(&(j as u32)) else {
            continue;
        };
        let (ab, bb) = (&av[p * bm * bk..][..bm * bk], &bv[(row.start + at) * bk * bn..][..bk * bn]);
        for (dst, arow) in acc.chunks_mut(bn).zip(ab.chunks(bk)) {
            for (&v, brow) in arow.iter().zip(bb.chunks(bn)) {
                for (d, x) in dst.iter_mut().zip(brow) {
                    *d += v * x;
                }
            }
        }
    }
    acc
}

/// SpGEMM into a dense C: `C = alpha · A · B + beta · C0`, A `(M, K)` in `(bm, bk)` blocks and
/// B `(K, N)` in `(bk, bn)` blocks, both BSR (one matrix of a batch each). Every element of C is
/// written: `alpha · Σ_k A(i, k) · B(k, j) + beta · C0(i, j)`, so elements no block pair reaches
/// are `beta · C0` (0 when `beta == 0`). C0 (the old C, `(M, N)`, either layout) is read only
/// when `beta != 0`. Returns C logical row-major.
///
/// Panics on inconsistent shapes (a test bug, not a library error).
pub fn spgemm_reference<T: Element, O: Element>(alpha: f64, a: &Bsr<T>, b: &Bsr<T>, beta: f64, c0: HostMat<'_, O>) -> Vec<f64> {
    let (bm, _, bn) = spgemm_blocks(a, b);
    let (m, n) = (a.nrows(), b.ncols());
    assert_eq!((c0.rows, c0.cols), (m, n), "shape of C");
    let (av, bv) = (values_f64(a), values_f64(b));
    let nb = b.block_cols();
    // Every block of C on its own (in parallel even when one block row holds all the work).
    let blocks: Vec<Vec<f64>> =
        (0..a.block_rows() * nb).into_par_iter().map(|e| block_product(a, b, (&av, &bv), (e / nb, e % nb))).collect();
    let mut out = vec![0.0f64; m * n];
    out.par_chunks_mut(n).enumerate().for_each(|(row, o)| {
        let (i, r) = (row / bm, row % bm);
        for (j, o) in o.iter_mut().enumerate() {
            let acc = blocks[i * nb + j / bn][r * bn + j % bn];
            let old = if beta == 0.0 { 0.0 } else { c0.get(row, j) };
            *o = scale(alpha, acc, beta, old);
        }
    });
    out
}

/// The block pattern of `A · B` (`(M / bm, N / bn)` blocks): every block `(i, j)` that receives
/// at least one pair (A's block `(i, k)` and B's block `(k, j)` for some k), by brute force over
/// the block masks. Returns `(row_ptr, col_idx)`, columns sorted within each row.
pub fn spgemm_product_pattern<T: Element>(a: &Bsr<T>, b: &Bsr<T>) -> (Vec<u32>, Vec<u32>) {
    spgemm_blocks(a, b);
    let (am, bmask) = (a.block_mask().expect("A's block mask"), b.block_mask().expect("B's block mask"));
    let (mb, kb, nb) = (a.block_rows(), a.block_cols(), b.block_cols());
    let mut row_ptr = vec![0u32];
    let mut col_idx = Vec::new();
    for i in 0..mb {
        col_idx.extend((0..nb).filter(|&j| (0..kb).any(|k| am[i * kb + k] && bmask[k * nb + j])).map(|j| j as u32));
        row_ptr.push(col_idx.len() as u32);
    }
    (row_ptr, col_idx)
}

/// SpGEMM into a block-sparse C with the pattern `(c_row_ptr, c_col_idx)` over `(M / bm,
/// N / bn)` blocks (the product's own, or a mask): for every block `(i, j)` of C, `alpha ·
/// Σ_k A.block(i, k) · B.block(k, j) + beta · c0`, blocks without a pair `beta · c0` (0 when
/// `beta == 0`); pairs into blocks outside the pattern are not computed. `c0` (the old values,
/// `(nnz(C), bm, bn)` in storage order) is read only when `beta != 0`. Returns the new values
/// in storage order.
///
/// Panics on inconsistent shapes (a test bug, not a library error).
pub fn spgemm_bsr_reference<T: Element, O: Element>(
    alpha: f64,
    a: &Bsr<T>,
    b: &Bsr<T>,
    c_row_ptr: &[u32],
    c_col_idx: &[u32],
    beta: f64,
    c0: &[O],
) -> Vec<f64> {
    let (bm, _, bn) = spgemm_blocks(a, b);
    assert_eq!(c_row_ptr.len(), a.block_rows() + 1, "C's block rows");
    let nnz = *c_row_ptr.last().unwrap_or(&0) as usize;
    assert_eq!(c_col_idx.len(), nnz, "C's blocks");
    assert!(c_col_idx.iter().all(|&j| (j as usize) < b.block_cols()), "C's block columns");
    assert!(beta == 0.0 || c0.len() == nnz * bm * bn, "old values of C");
    let (av, bv) = (values_f64(a), values_f64(b));
    let mut blocks: Vec<(usize, usize)> = Vec::with_capacity(nnz); // (block row, block column)
    for i in 0..a.block_rows() {
        blocks.extend(c_col_idx[c_row_ptr[i] as usize..c_row_ptr[i + 1] as usize].iter().map(|&j| (i, j as usize)));
    }
    let mut out = vec![0.0f64; nnz * bm * bn];
    out.par_chunks_mut((bm * bn).max(1)).zip(blocks.par_iter()).enumerate().for_each(|(c, (dst, &ij))| {
        let acc = block_product(a, b, (&av, &bv), ij);
        for (e, (o, acc)) in dst.iter_mut().zip(&acc).enumerate() {
            let old = if beta == 0.0 { 0.0 } else { c0[c * bm * bn + e].to_f64() };
            *o = scale(alpha, *acc, beta, old);
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

    /// A BSR matrix of `rows x cols` in `block` blocks at `mask`, with exact small values.
    fn bsr_with(rows: usize, cols: usize, block: BlockShape, mask: &[bool], salt: usize) -> Bsr<f32> {
        let n = mask.iter().filter(|&&x| x).count() * block.elems();
        let values: Vec<f32> = (0..n).map(|v| ((v * 7 + salt) % 13) as f32 / 8.0 - 0.75).collect();
        Bsr::from_block_mask(rows, cols, block, mask, values).unwrap()
    }

    /// Block `(i, j)` of a row-major `(·, n)` dense matrix in `(bm, bn)` blocks.
    fn dense_block(d: &[f64], n: usize, (bm, bn): (usize, usize), (i, j): (usize, usize)) -> Vec<f64> {
        (0..bm).flat_map(|r| d[(i * bm + r) * n + j * bn..][..bn].to_vec()).collect()
    }

    #[test]
    fn spgemm_matches_the_densified_product() {
        // A: 64 x 96 in 16 x 32 blocks (4 x 3); B: 96 x 48 in 32 x 16 blocks (3 x 3).
        // A's row 0 meets only B's empty row 1 (no pairs), row 1 is empty; B's row 1 is empty.
        #[rustfmt::skip]
        let am = [
            false, true, false,
            false, false, false,
            true, true, false,
            false, false, true,
        ];
        #[rustfmt::skip]
        let bmask = [
            true, false, true,
            false, false, false,
            false, true, false,
        ];
        let a = bsr_with(64, 96, BlockShape { bm: 16, bk: 32 }, &am, 3);
        let b = bsr_with(96, 48, BlockShape { bm: 32, bk: 16 }, &bmask, 5);
        let (m, k, n) = (64, 96, 48);
        let want = matmul(&dense(&a), &dense(&b), m, k, n);
        assert!(want.iter().any(|&x| x != 0.0));
        // Dense C: beta = 0 never reads C0 (NaN); alpha and beta otherwise, in either layout.
        let nan = vec![f32::NAN; m * n];
        assert_eq!(spgemm_reference(1.0, &a, &b, 0.0, HostMat::row_major(&nan, m, n)), want);
        let c1: Vec<f32> = (0..m * n).map(|v| (v % 17) as f32 - 8.0).collect();
        let got = spgemm_reference(2.0, &a, &b, -0.5, HostMat::row_major(&c1, m, n));
        for (e, g) in got.iter().enumerate() {
            assert_eq!(*g, 2.0 * want[e] - 0.5 * c1[e] as f64, "element {e}");
        }
        // C0 column-major: the transposed view of an (n, m) row-major buffer.
        let c1t: Vec<f32> = (0..m * n).map(|e| c1[(e % m) * n + e / m]).collect();
        let c1_col = HostMat { data: &c1t, rows: m, cols: n, ld: m, layout: Layout::ColMajor };
        assert_eq!(spgemm_reference(2.0, &a, &b, -0.5, c1_col), got);
        // The product's pattern: rows 0 and 1 empty, row 2 on columns 0 and 2, row 3 on 1.
        let (rp, ci) = spgemm_product_pattern(&a, &b);
        assert_eq!((rp.clone(), ci.clone()), (vec![0, 0, 0, 2, 3], vec![0, 2, 1]));
        let blocks_of = |rp: &[u32], ci: &[u32]| -> Vec<(usize, usize)> {
            (0..4).flat_map(|i| ci[rp[i] as usize..rp[i + 1] as usize].iter().map(move |&j| (i, j as usize))).collect()
        };
        let got = spgemm_bsr_reference(1.0, &a, &b, &rp, &ci, 0.0, &vec![f32::NAN; 3 * 256]);
        let gathered: Vec<f64> = blocks_of(&rp, &ci).into_iter().flat_map(|ij| dense_block(&want, n, (16, 16), ij)).collect();
        assert_eq!(got, gathered);
        // Blocks outside the product are zero in the dense product: nothing is dropped.
        let outside: f64 = (0..4)
            .flat_map(|i| (0..3).map(move |j| (i, j)))
            .filter(|ij| !blocks_of(&rp, &ci).contains(ij))
            .flat_map(|ij| dense_block(&want, n, (16, 16), ij))
            .map(f64::abs)
            .sum();
        assert_eq!(outside, 0.0);
        // A mask: (0, 1) and (1, 0) receive no pair, (2, 2) drops the row's (2, 0), (3, 0) has
        // no pair and (3, 1) has one. Blocks without pairs are beta · C0.
        let (mrp, mci) = (vec![0u32, 1, 2, 3, 5], vec![1u32, 0, 2, 0, 1]);
        let old: Vec<f32> = (0..5 * 256).map(|v| (v % 11) as f32 - 5.0).collect();
        let got = spgemm_bsr_reference(1.5, &a, &b, &mrp, &mci, 0.25, &old);
        let blocks = blocks_of(&mrp, &mci);
        for (c, &ij) in blocks.iter().enumerate() {
            let prod = dense_block(&want, n, (16, 16), ij);
            for e in 0..256 {
                assert_eq!(got[c * 256 + e], 1.5 * prod[e] + 0.25 * old[c * 256 + e] as f64, "block {ij:?} element {e}");
            }
        }
        let got0 = spgemm_bsr_reference(1.5, &a, &b, &mrp, &mci, 0.0, &[] as &[f32]);
        assert!(got0[..2 * 256].iter().all(|&x| x == 0.0), "blocks without pairs are 0 when beta = 0");
        assert!(got0[2 * 256..3 * 256].iter().any(|&x| x != 0.0));
    }

    #[test]
    fn rel_error_never_passes_nan_or_length_mismatch() {
        assert!(rel_error([1.0, f64::NAN].into_iter(), &[1.0, 2.0]).is_nan());
        assert_eq!(rel_error([1.0].into_iter(), &[1.0, 2.0]), f64::INFINITY);
        assert_eq!(rel_error([1.0, 2.0].into_iter(), &[1.0, 2.0]), 0.0);
        assert!((rel_error([1.1].into_iter(), &[1.0]) - 0.1).abs() < 1e-12);
    }
}
