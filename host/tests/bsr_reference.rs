//! The BSR matrix type and the CPU reference, through the public API only.
//!
//! Every test draws fresh random data; the seed is printed (shown when a test fails) and a
//! failure is reproduced with `BLOCKSPARSE_SEED=<seed> cargo test ...`.

use blocksparse::{BlockShape, Bsr, Element, Error, Layout, Transpose};
use blocksparse_testkit::reference::{HostMat, rel_error, spmm_reference};
use blocksparse_testkit::testgen::{TestRng, random_mask, random_values, seeded_rng, skewed_mask, test_seed};
use half::{bf16, f16};
use rand::Rng;

const SIZES: [usize; 4] = [16, 32, 64, 128];

/// The dense matrix a mask and its block values describe, built element by element without
/// any of the library's code.
fn expected_dense<T: Element>(m: usize, k: usize, block: BlockShape, mask: &[bool], values: &[T]) -> Vec<T> {
    let bc = k / block.bk;
    // Position of each present block in `values`.
    let mut slot = vec![usize::MAX; mask.len()];
    let mut next = 0;
    for (s, &present) in slot.iter_mut().zip(mask) {
        if present {
            *s = next;
            next += 1;
        }
    }
    let mut d = vec![T::zero(); m * k];
    for i in 0..m {
        for j in 0..k {
            let s = slot[(i / block.bm) * bc + j / block.bk];
            if s != usize::MAX {
                let within = (i % block.bm) * block.bk + j % block.bk;
                d[i * k + j] = values[s * block.bm * block.bk + within];
            }
        }
    }
    d
}

fn count(mask: &[bool]) -> usize {
    mask.iter().filter(|&&x| x).count()
}

/// Bit-exact comparison (NaN-safe, and fast in debug builds).
fn same<T: Element>(a: &[T], b: &[T]) -> bool {
    bytemuck::cast_slice::<T, u8>(a) == bytemuck::cast_slice::<T, u8>(b)
}

fn round_trip_case<T: Element>(seed: u64, rng: &mut TestRng, block: BlockShape, density: f64) {
    // Up to 512 in one dimension, 256 x 512 elements in all (debug builds are slow).
    let (mmax, kmax) = if rng.random_bool(0.5) { (512, 256) } else { (256, 512) };
    let br = rng.random_range(1..=mmax / block.bm);
    let bc = rng.random_range(1..=kmax / block.bk);
    let (m, k) = (br * block.bm, bc * block.bk);
    let ctx = format!("seed {seed}, {} {block} {m}x{k} density {density}", T::DTYPE);
    let mask = random_mask(br, bc, density, rng);
    let nnzb = count(&mask);
    if density == 0.0 {
        assert_eq!(nnzb, 0, "{ctx}");
    }
    if density == 1.0 {
        assert_eq!(nnzb, br * bc, "{ctx}");
    }
    let values: Vec<T> = random_values(nnzb * block.bm * block.bk, rng);
    let want = expected_dense(m, k, block, &mask, &values);

    let a = Bsr::from_block_mask(m, k, block, &mask, values.clone()).expect(&ctx);
    assert_eq!((a.nrows(), a.ncols(), a.block()), (m, k, block), "{ctx}");
    assert_eq!((a.block_rows(), a.block_cols(), a.nnzb()), (br, bc, nnzb), "{ctx}");
    assert_eq!(a.values(), &values[..], "{ctx}");
    assert_eq!(a.row_ptr().len(), br + 1, "{ctx}");
    assert_eq!(a.block_mask().unwrap(), mask, "{ctx}");
    assert_eq!(a.row_lengths().sum::<usize>(), nnzb, "{ctx}");
    assert!((a.density() - nnzb as f64 / (br * bc) as f64).abs() < 1e-15, "{ctx}");
    let dense = a.try_to_dense().unwrap();
    assert!(same(&dense, &want), "{ctx}: to_dense differs from the element-wise expectation");

    // from_dense finds exactly the same blocks (every stored value is non-zero).
    let b = Bsr::from_dense(&dense, m, k, block).expect(&ctx);
    assert_eq!(b, a, "{ctx}: from_dense != from_block_mask");
    assert!(same(&b.try_to_dense().unwrap(), &dense), "{ctx}");

    // from_parts accepts what from_dense produced, unchanged.
    let p = b.clone().into_parts();
    let c = Bsr::from_parts(p.nrows, p.ncols, p.block, p.row_ptr, p.col_idx, p.values).expect(&ctx);
    assert_eq!(c, a, "{ctx}");

    // New values on the same pattern.
    let fresh: Vec<T> = random_values(a.values().len(), rng);
    let d = a.with_values(fresh.clone()).expect(&ctx);
    assert!(same(&d.try_to_dense().unwrap(), &expected_dense(m, k, block, &mask, &fresh)), "{ctx}");
}

#[test]
fn round_trip_every_block_shape() {
    let seed = test_seed("round_trip_every_block_shape");
    let mut rng = seeded_rng(seed);
    for &bm in &SIZES {
        for &bk in &SIZES {
            let block = BlockShape::new(bm, bk);
            for (i, &density) in [0.0, 0.05, 0.3, 0.7, 1.0].iter().enumerate() {
                match (bm + bk + i) % 3 {
                    0 => round_trip_case::<f16>(seed, &mut rng, block, density),
                    1 => round_trip_case::<bf16>(seed, &mut rng, block, density),
                    _ => round_trip_case::<f32>(seed, &mut rng, block, density),
                }
            }
        }
    }
}

/// Blocks holding a single non-zero element (or a NaN) anywhere are kept; all-zero blocks
/// (including `-0.0`) are dropped.
#[test]
fn from_dense_keeps_blocks_with_any_nonzero() {
    let seed = test_seed("from_dense_keeps_blocks_with_any_nonzero");
    let mut rng = seeded_rng(seed);
    for &(bm, bk) in &[(16, 16), (32, 16), (16, 64), (128, 32)] {
        let block = BlockShape::new(bm, bk);
        let (br, bc) = (rng.random_range(1..=256 / bm), rng.random_range(1..=256 / bk));
        let (m, k) = (br * bm, bc * bk);
        let mut dense = vec![f16::ZERO; m * k];
        let mut mask = vec![false; br * bc];
        for _ in 0..rng.random_range(0..=br * bc) {
            let (i, j) = (rng.random_range(0..m), rng.random_range(0..k));
            dense[i * k + j] = match rng.random_range(0..4) {
                0 => f16::NAN,
                1 => f16::from_f32(1e-7), // smallest subnormals are still non-zero
                _ => f16::from_f64(rng.random_range(-1.0..1.0) + 2.0),
            };
            mask[(i / bm) * bc + j / bk] = true;
        }
        for _ in 0..10 {
            let (i, j) = (rng.random_range(0..m), rng.random_range(0..k));
            if dense[i * k + j] == f16::ZERO {
                dense[i * k + j] = f16::NEG_ZERO;
            }
        }
        let a = Bsr::from_dense(&dense, m, k, block).unwrap();
        assert_eq!(a.block_mask().unwrap(), mask, "seed {seed} {block} {m}x{k}");
        let back = a.try_to_dense().unwrap();
        for (x, y) in back.iter().zip(&dense) {
            assert!(x.to_bits() == y.to_bits() || (*y == f16::NEG_ZERO && *x == f16::ZERO), "seed {seed}: {x} vs {y}");
        }
    }
}

#[test]
fn from_parts_rejects_each_bad_input() {
    let b16 = BlockShape::square(16);
    let v = |blocks: usize| vec![f16::ONE; blocks * 256];
    // A valid 48x64 matrix (3 block rows, 4 block columns) to mutate.
    let ok = || (vec![0u32, 2, 2, 3], vec![0u32, 3, 1], v(3));
    let build = |m, k, block, rp, ci, vals| Bsr::<f16>::from_parts(m, k, block, rp, ci, vals);
    let (rp, ci, vals) = ok();
    assert!(build(48, 64, b16, rp, ci, vals).is_ok());

    for bad in [BlockShape::new(48, 16), BlockShape::new(16, 8), BlockShape::square(256)] {
        let (rp, ci, vals) = ok();
        assert!(matches!(
            build(48, 64, bad, rp, ci, vals),
            Err(Error::UnsupportedBlockSize { bm, bk }) if bm == bad.bm && bk == bad.bk
        ));
    }
    // The block size is checked first, before the zero dimension.
    assert!(matches!(build(0, 64, BlockShape::new(8, 16), vec![0], vec![], vec![]), Err(Error::UnsupportedBlockSize { bm: 8, bk: 16 })));
    assert!(matches!(build(0, 64, b16, vec![0], vec![], vec![]), Err(Error::ZeroDimension { what: "rows" })));
    assert!(matches!(build(48, 0, b16, vec![0, 0, 0, 0], vec![], vec![]), Err(Error::ZeroDimension { what: "cols" })));
    let (rp, ci, vals) = ok();
    assert!(matches!(build(40, 64, b16, rp, ci, vals), Err(Error::NotBlockMultiple { what: "rows", size: 40, block: 16 })));
    let (rp, ci, vals) = ok();
    assert!(matches!(
        build(48, 72, BlockShape::new(16, 32), rp, ci, vals),
        Err(Error::NotBlockMultiple { what: "cols", size: 72, block: 32 })
    ));
    let huge = (i32::MAX as usize / 16 + 1) * 16;
    assert!(matches!(
        build(huge, 64, b16, vec![0], vec![], vec![]),
        Err(Error::TooLarge { what: "rows", value }) if value == huge
    ));
    assert!(matches!(
        build(48, huge, b16, vec![0], vec![], vec![]),
        Err(Error::TooLarge { what: "cols", value }) if value == huge
    ));
    for len in [0usize, 3, 5] {
        let (_, ci, vals) = ok();
        assert!(matches!(
            build(48, 64, b16, vec![0; len], ci, vals),
            Err(Error::RowPtrLength { expected: 4, got }) if got == len
        ));
    }
    let (_, ci, vals) = ok();
    assert!(matches!(build(48, 64, b16, vec![1, 2, 2, 3], ci, vals), Err(Error::RowPtrStart { got: 1 })));
    let (_, ci, vals) = ok();
    assert!(matches!(build(48, 64, b16, vec![0, 2, 1, 3], ci, vals), Err(Error::RowPtrNotMonotone { row: 1, start: 2, end: 1 })));
    let (_, ci, vals) = ok();
    assert!(matches!(build(48, 64, b16, vec![0, 2, 2, 2], ci, vals), Err(Error::RowPtrEnd { expected: 3, got: 2 })));
    let (_, ci, vals) = ok();
    assert!(matches!(build(48, 64, b16, vec![0, 2, 2, 4], ci, vals), Err(Error::RowPtrEnd { expected: 3, got: 4 })));
    let (rp, _, vals) = ok();
    assert!(matches!(build(48, 64, b16, rp, vec![0, 3, 4], vals), Err(Error::ColumnOutOfRange { row: 2, col: 4, block_cols: 4 })));
    let (rp, _, vals) = ok();
    assert!(matches!(
        build(48, 64, b16, rp, vec![0, u32::MAX, 1], vals),
        Err(Error::ColumnOutOfRange { row: 0, col, block_cols: 4 }) if col == u32::MAX as usize
    ));
    let (rp, _, vals) = ok();
    assert!(matches!(build(48, 64, b16, rp, vec![3, 0, 1], vals), Err(Error::ColumnsUnsorted { row: 0, prev: 3, col: 0 })));
    let (rp, _, vals) = ok();
    assert!(matches!(build(48, 64, b16, rp, vec![2, 2, 1], vals), Err(Error::DuplicateColumn { row: 0, col: 2 })));
    // Sortedness is per row: a smaller column in the next row is fine.
    let (rp, _, vals) = ok();
    assert!(build(48, 64, b16, rp, vec![2, 3, 0], vals).is_ok());
    for blocks in [0usize, 2, 4] {
        let (rp, ci, _) = ok();
        let mut vals = v(blocks);
        vals.extend_from_slice(&[f16::ONE; 3]);
        assert!(matches!(
            build(48, 64, b16, rp, ci, vals),
            Err(Error::ValuesLength { expected: 768, got }) if got == blocks * 256 + 3
        ));
    }
}

#[test]
fn from_dense_and_from_block_mask_reject_bad_input() {
    let b32 = BlockShape::square(32);
    let dense = vec![1.0f32; 64 * 96];
    assert!(Bsr::from_dense(&dense, 64, 96, b32).is_ok());
    assert!(matches!(
        Bsr::from_dense(&dense[1..], 64, 96, b32),
        Err(Error::ShapeMismatch { what: "dense length", expected: 6144, got: 6143 })
    ));
    assert!(matches!(Bsr::from_dense(&dense, 96, 64, BlockShape::new(48, 32)), Err(Error::UnsupportedBlockSize { bm: 48, bk: 32 })));
    assert!(matches!(Bsr::from_dense(&dense, 64, 0, b32), Err(Error::ZeroDimension { what: "cols" })));
    assert!(matches!(Bsr::from_dense(&dense, 48, 128, b32), Err(Error::NotBlockMultiple { what: "rows", size: 48, block: 32 })));

    let mask = [true, false, true, false, false, true]; // 2 x 3 blocks
    let vals = vec![f16::ONE; 3 * 32 * 32];
    assert!(Bsr::from_block_mask(64, 96, b32, &mask, vals.clone()).is_ok());
    assert!(matches!(
        Bsr::from_block_mask(64, 96, b32, &mask[..5], vals.clone()),
        Err(Error::ShapeMismatch { what: "mask length", expected: 6, got: 5 })
    ));
    assert!(matches!(Bsr::from_block_mask(64, 96, b32, &mask, vals[1..].to_vec()), Err(Error::ValuesLength { expected: 3072, got: 3071 })));
    assert!(matches!(
        Bsr::from_block_mask(64, 96, BlockShape::new(32, 8), &mask, vals.clone()),
        Err(Error::UnsupportedBlockSize { bm: 32, bk: 8 })
    ));
    assert!(matches!(Bsr::<f16>::from_block_mask(0, 96, b32, &[], vec![]), Err(Error::ZeroDimension { what: "rows" })));
    assert!(matches!(
        Bsr::from_block_mask(64, 100, b32, &mask, vals.clone()),
        Err(Error::NotBlockMultiple { what: "cols", size: 100, block: 32 })
    ));
    assert!(matches!(Bsr::<f32>::empty(64, 100, b32), Err(Error::NotBlockMultiple { what: "cols", .. })));
    let a = Bsr::from_block_mask(64, 96, b32, &mask, vals).unwrap();
    assert!(matches!(a.with_values(vec![f16::ONE; 10]), Err(Error::ValuesLength { expected: 3072, got: 10 })));
}

/// How the block pattern of a test case is made.
#[derive(Clone, Copy, Debug)]
enum Pattern {
    Uniform(f64),
    /// Uniform, then these block rows (modulo the block row count) cleared.
    EmptyRows(f64, usize),
    /// `skewed_mask(density, heavy_rows, heavy_share)`.
    Skewed(f64, usize, f64),
}

#[derive(Clone, Copy, Debug)]
struct Case {
    block: BlockShape,
    block_rows: usize,
    block_cols: usize,
    pattern: Pattern,
    n: usize,
    alpha: f64,
    beta: f64,
}

/// Checks `spmm_reference` against the naive triple loop on `to_dense()`. B and C are padded
/// to `ldb`/`ldc` with NaN so a read outside the matrices shows; with `beta == 0` the whole
/// old C is NaN and must not reach the result.
fn spmm_case<T: Element, O: Element>(seed: u64, rng: &mut TestRng, case: Case) {
    let Case { block, block_rows: br, block_cols: bc, pattern, n, alpha, beta } = case;
    let (m, k) = (br * block.bm, bc * block.bk);
    let ctx = format!("seed {seed}, A/B {} C {}, {case:?}", T::DTYPE, O::DTYPE);
    let mask = match pattern {
        Pattern::Uniform(d) => random_mask(br, bc, d, rng),
        Pattern::EmptyRows(d, every) => {
            let mut mask = random_mask(br, bc, d, rng);
            for (r, row) in mask.chunks_mut(bc).enumerate() {
                if r % every == 0 {
                    row.fill(false);
                }
            }
            mask
        }
        Pattern::Skewed(d, heavy, share) => skewed_mask(br, bc, d, heavy, share, rng),
    };
    let nnzb = count(&mask);
    let a = Bsr::from_block_mask(m, k, block, &mask, random_values::<T>(nnzb * block.elems(), rng)).expect(&ctx);

    // op(A) as the reference streams it, and its dense form.
    let op_a = if rng.random_bool(0.5) { Transpose::Yes } else { Transpose::No };
    let dense_a: Vec<f64> = a.try_to_dense().unwrap().iter().map(|x| x.to_f64()).collect();
    let (rows, inner) = if op_a == Transpose::No { (m, k) } else { (k, m) };
    let op_dense = |i: usize, j: usize| if op_a == Transpose::No { dense_a[i * k + j] } else { dense_a[j * k + i] };

    // B (inner × n) and the old C (rows × n), padded to their leading dimensions with NaN, in
    // a random layout each.
    let b_layout = if rng.random_bool(0.5) { Layout::ColMajor } else { Layout::RowMajor };
    let b_packed: Vec<T> = random_values(inner * n, rng);
    let (b, ldb) = padded(&b_packed, inner, n, b_layout, rng);
    let c_packed: Vec<O> = random_values(rows * n, rng);
    let (c, ldc) = padded(&c_packed, rows, n, Layout::RowMajor, rng);
    let c = if beta == 0.0 { vec![O::nan(); c.len()] } else { c };
    let bm = HostMat { data: &b, rows: inner, cols: n, ld: ldb, layout: b_layout };
    let cm = HostMat { data: &c, rows, cols: n, ld: ldc, layout: Layout::RowMajor };

    let got = spmm_reference(alpha, &a, op_a, bm, beta, cm);
    assert_eq!(got.len(), rows * n, "{ctx}");
    assert!(got.iter().all(|x| x.is_finite()), "{ctx}: non-finite output (NaN leaked?)");

    // The naive triple loop on the dense op(A).
    let mut want = vec![0.0; rows * n];
    for i in 0..rows {
        for j in 0..n {
            let p: f64 = (0..inner).map(|kk| op_dense(i, kk) * b_packed[kk * n + j].to_f64()).sum();
            want[i * n + j] = if beta == 0.0 { alpha * p } else { alpha * p + beta * c_packed[i * n + j].to_f64() };
        }
    }
    if nnzb == 0 {
        // A is zero: the result is exactly beta * C.
        for (g, c) in got.iter().zip(&c_packed) {
            let exact = if beta == 0.0 { 0.0 } else { beta * c.to_f64() };
            assert_eq!(*g, exact, "{ctx}");
        }
    } else {
        assert!(want.iter().any(|&x| x != 0.0), "{ctx}: degenerate test data");
    }
    let err = rel_error(got.iter().copied(), &want);
    assert!(err < 1e-12, "{ctx}: relative error {err}");
}

/// A packed row-major `(rows, cols)` matrix laid out in `layout` with a leading dimension up
/// to 3 past the minimum, the padding NaN.
fn padded<T: Element>(packed: &[T], rows: usize, cols: usize, layout: Layout, rng: &mut TestRng) -> (Vec<T>, usize) {
    let (inner, outer) = if layout == Layout::RowMajor { (cols, rows) } else { (rows, cols) };
    let ld = inner + rng.random_range(0..4);
    let mut out = vec![T::nan(); (outer - 1) * ld + inner];
    for i in 0..rows {
        for j in 0..cols {
            let at = if layout == Layout::RowMajor { i * ld + j } else { j * ld + i };
            out[at] = packed[i * cols + j];
        }
    }
    (out, ld)
}

#[test]
fn spmm_reference_matches_dense_triple_loop() {
    let seed = test_seed("spmm_reference_matches_dense_triple_loop");
    let mut rng = seeded_rng(seed);
    let sq = BlockShape::square;
    let bs = BlockShape::new;
    let cases = [
        // One block.
        Case { block: sq(16), block_rows: 1, block_cols: 1, pattern: Pattern::Uniform(1.0), n: 1, alpha: 1.0, beta: 0.0 },
        Case { block: sq(128), block_rows: 1, block_cols: 1, pattern: Pattern::Uniform(1.0), n: 7, alpha: -0.5, beta: 2.0 },
        // Empty block rows, non-square blocks.
        Case { block: bs(16, 64), block_rows: 9, block_cols: 5, pattern: Pattern::EmptyRows(0.6, 2), n: 7, alpha: 1.5, beta: 0.0 },
        Case { block: bs(64, 16), block_rows: 3, block_cols: 12, pattern: Pattern::EmptyRows(0.4, 3), n: 129, alpha: 1.0, beta: 1.0 },
        // Density 0: the result is beta * C.
        Case { block: sq(32), block_rows: 4, block_cols: 3, pattern: Pattern::Uniform(0.0), n: 7, alpha: 3.0, beta: -0.75 },
        Case { block: sq(32), block_rows: 4, block_cols: 3, pattern: Pattern::Uniform(0.0), n: 1, alpha: 3.0, beta: 0.0 },
        // Skewed rows.
        Case { block: sq(16), block_rows: 32, block_cols: 32, pattern: Pattern::Skewed(0.1, 2, 0.7), n: 7, alpha: 0.25, beta: 0.0 },
        Case { block: bs(32, 128), block_rows: 8, block_cols: 4, pattern: Pattern::Skewed(0.3, 1, 0.5), n: 1, alpha: 1.0, beta: 0.5 },
        // Dense-ish and full.
        Case { block: bs(128, 32), block_rows: 1, block_cols: 4, pattern: Pattern::Uniform(1.0), n: 129, alpha: -1.0, beta: 0.0 },
        Case { block: bs(32, 16), block_rows: 7, block_cols: 11, pattern: Pattern::Uniform(0.5), n: 64, alpha: 2.0, beta: -1.0 },
    ];
    for (i, &case) in cases.iter().enumerate() {
        match i % 4 {
            0 => spmm_case::<f16, f32>(seed, &mut rng, case),
            1 => spmm_case::<bf16, bf16>(seed, &mut rng, case),
            2 => spmm_case::<f16, f16>(seed, &mut rng, case),
            _ => spmm_case::<bf16, f32>(seed, &mut rng, case),
        }
    }
}

/// Random shapes, patterns and scalars, all block shapes.
#[test]
fn spmm_reference_random_cases() {
    let seed = test_seed("spmm_reference_random_cases");
    let mut rng = seeded_rng(seed);
    for _ in 0..12 {
        let block = BlockShape::new(SIZES[rng.random_range(0..4)], SIZES[rng.random_range(0..4)]);
        let block_rows = rng.random_range(1..=256 / block.bm);
        let block_cols = rng.random_range(1..=256 / block.bk);
        let pattern = match rng.random_range(0..3) {
            0 => Pattern::Uniform(rng.random::<f64>()),
            1 => Pattern::EmptyRows(rng.random::<f64>(), rng.random_range(1..4)),
            _ => Pattern::Skewed(rng.random::<f64>() * 0.5, rng.random_range(1..4), 0.6),
        };
        // Keep the naive O(m k n) check cheap in debug builds.
        let mk = block_rows * block.bm * block_cols * block.bk;
        let n = loop {
            let n = [1, 7, 16, 33, 129][rng.random_range(0..5)];
            if mk * n <= 2_000_000 {
                break n;
            }
        };
        let alpha = rng.random_range(-2.0..2.0);
        let beta = if rng.random_bool(0.5) { 0.0 } else { rng.random_range(-2.0..2.0) };
        let case = Case { block, block_rows, block_cols, pattern, n, alpha, beta };
        if rng.random_bool(0.5) {
            spmm_case::<f16, f32>(seed, &mut rng, case);
        } else {
            spmm_case::<bf16, f16>(seed, &mut rng, case);
        }
    }
}

/// `!(e < 1.0)` on purpose: a NaN error must fail a `< tol` check, which `e >= 1.0` would not say.
#[test]
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn rel_error_never_passes_nan() {
    let seed = test_seed("rel_error_never_passes_nan");
    let mut rng = seeded_rng(seed);
    let want: Vec<f64> = random_values::<f32>(100, &mut rng).iter().map(|&x| x as f64).collect();
    assert_eq!(rel_error(want.iter().copied(), &want), 0.0);
    let i = rng.random_range(0..100);
    let mut got = want.clone();
    got[i] = f64::NAN;
    let e = rel_error(got.iter().copied(), &want);
    assert!(!(e < 1.0), "seed {seed}: NaN in got gave {e}");
    let mut bad_want = want.clone();
    bad_want[i] = f64::NAN;
    let e = rel_error(want.iter().copied(), &bad_want);
    assert!(!(e < 1.0), "seed {seed}: NaN in want gave {e}");
    let zeros = vec![0.0; 100];
    assert!(!(rel_error(got.iter().copied(), &zeros) < 1.0));
    let mut inf = want.clone();
    inf[i] = f64::INFINITY;
    assert!(!(rel_error(inf.iter().copied(), &want) < 1.0));
    assert!(!(rel_error(want[..99].iter().copied(), &want) < 1.0));
    // A genuine small perturbation does pass, and its size is measured.
    let scaled: Vec<f64> = want.iter().map(|x| x * (1.0 + 1e-9)).collect();
    let e = rel_error(scaled.iter().copied(), &want);
    assert!((e - 1e-9).abs() < 1e-12, "seed {seed}: {e}");
}
