//! The symbolic phase of the block-sparse × block-sparse product (issue "BSR × BSR"), on the
//! host, once per pair of patterns: which blocks of C exist and which block pairs each one sums.
//!
//! A is `(mb, kb)` blocks with `a_row_ptr` / `a_col_idx`, B is `(kb, nb)` blocks with
//! `b_row_ptr` / `b_col_idx` (sorted, unique columns per row, as `Bsr` validates them). A block
//! `p` of A (row `i`, column `k`) and a block `q` of B (row `k`, column `j`) contribute to C's
//! block `(i, j)`:
//! ```text
//! for i in 0..mb, p in a_row_ptr[i]..a_row_ptr[i+1], q in b_row_ptr[k = a_col_idx[p]]..:
//!     C[i][b_col_idx[q]] += A.block(p) · B.block(q)
//! ```
//! C's pattern is either the product's own (every block that receives a pair) or a mask the
//! caller gives (blocks outside it are not computed; blocks inside it with no pair still exist
//! and are written as `beta · C`). Each C block's pairs are listed in increasing `k` (A's
//! column order), so the numeric phase sums them in a fixed order.
//!
//! Sizes are counted in a first pass and checked against the 32-bit limits of the kernels
//! before anything proportional to them is allocated.
//!
//! The numeric phase plans its stage records from these ([`crate::ops::spgemm`]).

use crate::error::{Error, Result};

/// A block pattern in CSR form over a `(rows, cols)` block grid.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockPattern<'a> {
    /// Block columns.
    pub cols: usize,
    /// `rows + 1` offsets into `col_idx`.
    pub row_ptr: &'a [u32],
    /// Block column of each block, sorted and unique within a row.
    pub col_idx: &'a [u32],
}

impl BlockPattern<'_> {
    fn rows(&self) -> usize {
        self.row_ptr.len().saturating_sub(1)
    }
    fn row(&self, r: usize) -> core::ops::Range<usize> {
        self.row_ptr[r] as usize..self.row_ptr[r + 1] as usize
    }
}

/// The plan of C = A · B: C's pattern and, per C block, its pairs `(p, q)` in increasing `k`.
#[cfg(test)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PairPlan {
    /// C's block rows + 1 offsets.
    pub c_row_ptr: Vec<u32>,
    /// C's block columns, sorted within each row.
    pub c_col_idx: Vec<u32>,
    /// `nnz(C) + 1` offsets into `pairs`.
    pub pair_ptr: Vec<u32>,
    /// `(A block, B block)` of each pair, C block by C block.
    pub pairs: Vec<(u32, u32)>,
}

#[cfg(test)]
impl PairPlan {
    /// Block multiply-adds of the product (each is `2 · bm · bk · bn` flops).
    #[cfg(test)]
    pub fn n_pairs(&self) -> usize {
        self.pairs.len()
    }

    /// Host bytes the plan holds, known before it is built from [`count`].
    #[cfg(test)]
    pub fn bytes(counts: &PairCounts) -> usize {
        4 * (counts.c_rows + 1) + 4 * counts.c_blocks + 4 * (counts.c_blocks + 1) + 8 * counts.pairs
    }
}

/// The sizes of a plan, counted before it is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PairCounts {
    /// C's block rows.
    pub c_rows: usize,
    /// C's blocks.
    pub c_blocks: usize,
    /// Block pairs.
    pub pairs: usize,
}

/// Checks that A's columns and B's rows agree and that a mask (if any) has C's shape.
fn check_shapes(a: &BlockPattern, b: &BlockPattern, mask: Option<&BlockPattern>) -> Result<()> {
    if a.cols != b.rows() {
        return Err(Error::ShapeMismatch { what: "block rows of B (= block columns of A)", expected: a.cols, got: b.rows() });
    }
    if let Some(m) = mask {
        if m.rows() != a.rows() {
            return Err(Error::ShapeMismatch { what: "block rows of the mask (= block rows of A)", expected: a.rows(), got: m.rows() });
        }
        if m.cols != b.cols {
            return Err(Error::ShapeMismatch { what: "block columns of the mask (= block columns of B)", expected: b.cols, got: m.cols });
        }
    }
    Ok(())
}

/// For row `i` of A: calls `f(j, p, q)` for every pair, in increasing `k` (then `j`).
fn row_pairs(a: &BlockPattern, b: &BlockPattern, i: usize, mut f: impl FnMut(usize, u32, u32)) {
    for p in a.row(i) {
        let k = a.col_idx[p] as usize;
        for q in b.row(k) {
            f(b.col_idx[q] as usize, p as u32, q as u32);
        }
    }
}

/// Counts C's blocks and the pairs, with C's pattern the product's own (`mask` = None) or
/// `mask`. Fails with [`Error::TooLarge`] where a count passes the kernels' 32-bit indices.
pub(crate) fn count(a: &BlockPattern, b: &BlockPattern, mask: Option<&BlockPattern>) -> Result<PairCounts> {
    check_shapes(a, b, mask)?;
    let limit = u32::MAX as u64 - 1;
    // The unmasked pair count in O(blocks of A), before walking the pairs themselves.
    let all_pairs: u64 = a.col_idx.iter().map(|&k| b.row(k as usize).len() as u64).sum();
    if mask.is_none() && all_pairs > limit {
        return Err(Error::TooLarge { what: "block pairs of the product", value: usize::try_from(all_pairs).unwrap_or(usize::MAX) });
    }
    let mut seen = vec![u32::MAX; b.cols];
    let (mut c_blocks, mut pairs) = (0u64, 0u64);
    for i in 0..a.rows() {
        match mask {
            None => row_pairs(a, b, i, |j, _, _| {
                if seen[j] != i as u32 {
                    seen[j] = i as u32;
                    c_blocks += 1;
                }
                pairs += 1;
            }),
            Some(m) => {
                for c in m.row(i) {
                    seen[m.col_idx[c] as usize] = i as u32;
                }
                c_blocks += m.row(i).len() as u64;
                row_pairs(a, b, i, |j, _, _| pairs += (seen[j] == i as u32) as u64);
            }
        }
    }
    if c_blocks > limit {
        return Err(Error::TooLarge { what: "blocks of C", value: usize::try_from(c_blocks).unwrap_or(usize::MAX) });
    }
    if pairs > limit {
        return Err(Error::TooLarge { what: "block pairs of the product", value: usize::try_from(pairs).unwrap_or(usize::MAX) });
    }
    Ok(PairCounts { c_rows: a.rows(), c_blocks: c_blocks as usize, pairs: pairs as usize })
}

/// The product's own pattern of C (every block that receives a pair): `row_ptr`, `col_idx`,
/// with `c_blocks` from [`count`]; memory proportional to C's blocks, not to the pairs.
pub(crate) fn product_pattern(a: &BlockPattern, b: &BlockPattern, c_blocks: usize) -> Result<(Vec<u32>, Vec<u32>)> {
    let alloc = |what: &'static str, elements: usize| Error::Allocation { what, elements };
    let mut row_ptr = Vec::new();
    row_ptr.try_reserve_exact(a.rows() + 1).map_err(|_| alloc("C's block row pointers", a.rows() + 1))?;
    let mut col_idx = Vec::new();
    col_idx.try_reserve_exact(c_blocks).map_err(|_| alloc("C's block columns", c_blocks))?;
    let mut seen = vec![u32::MAX; b.cols];
    row_ptr.push(0);
    for i in 0..a.rows() {
        let start = col_idx.len();
        row_pairs(a, b, i, |j, _, _| {
            if seen[j] != i as u32 {
                seen[j] = i as u32;
                col_idx.push(j as u32);
            }
        });
        col_idx[start..].sort_unstable();
        row_ptr.push(col_idx.len() as u32);
    }
    Ok((row_ptr, col_idx))
}

/// Builds the plan (see the module docs) after [`count`] has sized it: the pair lists of every C
/// block (the tests' reference for the numeric phase's records).
#[cfg(test)]
pub(crate) fn plan(a: &BlockPattern, b: &BlockPattern, mask: Option<&BlockPattern>) -> Result<PairPlan> {
    let counts = count(a, b, mask)?;
    let alloc = |what: &'static str, elements: usize| Error::Allocation { what, elements };
    let mut c_row_ptr = Vec::new();
    c_row_ptr.try_reserve_exact(counts.c_rows + 1).map_err(|_| alloc("C's block row pointers", counts.c_rows + 1))?;
    let mut c_col_idx = Vec::new();
    c_col_idx.try_reserve_exact(counts.c_blocks).map_err(|_| alloc("C's block columns", counts.c_blocks))?;
    let mut pair_ptr = Vec::new();
    pair_ptr.try_reserve_exact(counts.c_blocks + 1).map_err(|_| alloc("pair pointers", counts.c_blocks + 1))?;
    let mut pairs = Vec::new();
    pairs.try_reserve_exact(counts.pairs).map_err(|_| alloc("block pairs", counts.pairs))?;

    // Per row: the pairs of each C column, in k order, gathered then emitted column by column.
    let mut slot = vec![u32::MAX; b.cols];
    let mut row_cols: Vec<u32> = Vec::new();
    let mut row_pairs_of: Vec<Vec<(u32, u32)>> = Vec::new();
    c_row_ptr.push(0);
    pair_ptr.push(0);
    for i in 0..a.rows() {
        row_cols.clear();
        match mask {
            None => row_pairs(a, b, i, |j, _, _| {
                if slot[j] == u32::MAX {
                    slot[j] = 0;
                    row_cols.push(j as u32);
                }
            }),
            Some(m) => row_cols.extend(m.row(i).map(|c| m.col_idx[c])),
        }
        row_cols.sort_unstable();
        for (s, &j) in row_cols.iter().enumerate() {
            slot[j as usize] = s as u32;
        }
        row_pairs_of.resize_with(row_pairs_of.len().max(row_cols.len()), Vec::new);
        row_pairs_of[..row_cols.len()].iter_mut().for_each(Vec::clear);
        row_pairs(a, b, i, |j, p, q| {
            let s = slot[j];
            if (s as usize) < row_cols.len() && row_cols[s as usize] == j as u32 {
                row_pairs_of[s as usize].push((p, q));
            }
        });
        for (s, &j) in row_cols.iter().enumerate() {
            c_col_idx.push(j);
            pairs.extend_from_slice(&row_pairs_of[s]);
            pair_ptr.push(pairs.len() as u32);
            slot[j as usize] = u32::MAX;
        }
        c_row_ptr.push(c_col_idx.len() as u32);
    }
    Ok(PairPlan { c_row_ptr, c_col_idx, pair_ptr, pairs })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// CSR of a row-major boolean grid (the SpGEMM planner's tests use it too).
    pub(crate) fn csr(mask: &[bool], cols: usize) -> (Vec<u32>, Vec<u32>) {
        let mut rp = vec![0u32];
        let mut ci = Vec::new();
        for row in mask.chunks(cols.max(1)) {
            ci.extend(row.iter().enumerate().filter(|(_, x)| **x).map(|(j, _)| j as u32));
            rp.push(ci.len() as u32);
        }
        (rp, ci)
    }

    /// CSR of a `rows × cols` block grid holding the blocks at `at` (row, column).
    pub(crate) fn csr_at(rows: usize, cols: usize, at: &[(usize, usize)]) -> (Vec<u32>, Vec<u32>) {
        let mut mask = vec![false; rows * cols];
        for &(r, c) in at {
            mask[r * cols + c] = true;
        }
        csr(&mask, cols)
    }

    /// The plan by brute force over the dense block grids.
    fn reference(am: &[bool], bm: &[bool], mask: Option<&[bool]>, (mb, kb, nb): (usize, usize, usize)) -> PairPlan {
        let index = |m: &[bool], cols: usize, r: usize, c: usize| m[..r * cols + c].iter().filter(|&&x| x).count() as u32;
        let (mut c_row_ptr, mut c_col_idx, mut pair_ptr, mut pairs) = (vec![0u32], Vec::new(), vec![0u32], Vec::new());
        for i in 0..mb {
            for j in 0..nb {
                let list: Vec<(u32, u32)> =
                    (0..kb).filter(|&k| am[i * kb + k] && bm[k * nb + j]).map(|k| (index(am, kb, i, k), index(bm, nb, k, j))).collect();
                let exists = match mask {
                    Some(m) => m[i * nb + j],
                    None => !list.is_empty(),
                };
                if exists {
                    c_col_idx.push(j as u32);
                    pairs.extend(list);
                    pair_ptr.push(pairs.len() as u32);
                }
            }
            c_row_ptr.push(c_col_idx.len() as u32);
        }
        PairPlan { c_row_ptr, c_col_idx, pair_ptr, pairs }
    }

    #[test]
    fn pairs_match_brute_force_with_and_without_a_mask() {
        let seed: u64 = rand::random();
        let mut rng = SmallRng::seed_from_u64(seed);
        for _ in 0..300 {
            let (mb, kb, nb) = (rng.random_range(1..12usize), rng.random_range(1..12usize), rng.random_range(1..12usize));
            let da: f64 = rng.random_range(0.0..1.0);
            let db: f64 = rng.random_range(0.0..1.0);
            let am: Vec<bool> = (0..mb * kb).map(|_| rng.random_bool(da)).collect();
            let bm: Vec<bool> = (0..kb * nb).map(|_| rng.random_bool(db)).collect();
            let cm: Vec<bool> = (0..mb * nb).map(|_| rng.random_bool(0.4)).collect();
            let ((arp, aci), (brp, bci), (crp, cci)) = (csr(&am, kb), csr(&bm, nb), csr(&cm, nb));
            let a = BlockPattern { cols: kb, row_ptr: &arp, col_idx: &aci };
            let b = BlockPattern { cols: nb, row_ptr: &brp, col_idx: &bci };
            let m = BlockPattern { cols: nb, row_ptr: &crp, col_idx: &cci };
            for mask in [None, Some(&m)] {
                let got = plan(&a, &b, mask).unwrap();
                let want = reference(&am, &bm, mask.map(|_| &cm[..]), (mb, kb, nb));
                assert_eq!(got, want, "seed {seed}: {mb}x{kb}x{nb} masked {}", mask.is_some());
                let counts = count(&a, &b, mask).unwrap();
                assert_eq!((counts.c_blocks, counts.pairs), (got.c_col_idx.len(), got.n_pairs()), "seed {seed}");
                if mask.is_none() {
                    let pattern = product_pattern(&a, &b, counts.c_blocks).unwrap();
                    assert_eq!(pattern, (got.c_row_ptr.clone(), got.c_col_idx.clone()), "seed {seed}: the product's pattern alone");
                }
                let held = 4 * (got.c_row_ptr.len() + got.c_col_idx.len() + got.pair_ptr.len()) + 8 * got.pairs.len();
                assert_eq!(PairPlan::bytes(&counts), held, "seed {seed}: the size reported before building");
                // Pairs in increasing k within each C block.
                for w in got.pair_ptr.windows(2) {
                    let ks: Vec<u32> = got.pairs[w[0] as usize..w[1] as usize].iter().map(|&(p, _)| aci[p as usize]).collect();
                    assert!(ks.windows(2).all(|x| x[0] < x[1]), "pairs sorted by k");
                }
            }
        }
    }

    #[test]
    fn shapes_are_checked() {
        let (rp, ci) = (vec![0u32, 1], vec![0u32]);
        let a = BlockPattern { cols: 2, row_ptr: &rp, col_idx: &ci };
        let b = BlockPattern { cols: 3, row_ptr: &rp, col_idx: &ci };
        assert!(matches!(plan(&a, &b, None), Err(Error::ShapeMismatch { expected: 2, got: 1, .. })));
        let b2rp = vec![0u32, 1, 1];
        let b2 = BlockPattern { cols: 3, row_ptr: &b2rp, col_idx: &ci };
        let m = BlockPattern { cols: 4, row_ptr: &rp, col_idx: &ci };
        assert!(matches!(plan(&a, &b2, Some(&m)), Err(Error::ShapeMismatch { expected: 3, got: 4, .. })));
        assert!(plan(&a, &b2, None).is_ok());
    }

    #[test]
    fn pair_counts_past_32_bits_are_rejected_before_walking_them() {
        // 65536 block rows of A, one block each (column 0), times one B row of 65537 blocks:
        // 65536 · 65537 > 2^32 pairs, from arrays of 65536 entries.
        let n = 1u32 << 16;
        let arp: Vec<u32> = (0..=n).collect();
        let aci = vec![0u32; n as usize];
        let brp = vec![0u32, n + 1];
        let bci: Vec<u32> = (0..=n).collect();
        let a = BlockPattern { cols: 1, row_ptr: &arp, col_idx: &aci };
        let b = BlockPattern { cols: n as usize + 1, row_ptr: &brp, col_idx: &bci };
        let t = std::time::Instant::now();
        assert!(matches!(count(&a, &b, None), Err(Error::TooLarge { what: "block pairs of the product", .. })));
        assert!(matches!(plan(&a, &b, None), Err(Error::TooLarge { .. })));
        assert!(t.elapsed().as_secs_f64() < 1.0, "decided from A's blocks, not by walking 2^32 pairs");
    }
}
