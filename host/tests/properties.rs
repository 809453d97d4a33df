//! Property tests of the public API that needs no GPU: constructors, views, planners and
//! conversions, with adversarial sizes (0, 1, 2^31 − 1, 2^32, `usize::MAX`, overflowing
//! products). Each asserts the documented error of its input's class, not just "no panic".

use blocksparse::plan::{RowsSpec, plan_blocks, plan_rows};
use blocksparse::{BlockShape, Bsr, Error, Layout, MatShape};
use half::f16;
use proptest::prelude::*;

/// `prop_assert!` that `$got` matches `$pat` (the pattern is kept out of the format string).
macro_rules! assert_class {
    ($got:expr, $pat:pat) => {{
        let ok = matches!($got, $pat);
        prop_assert!(ok, "got {:?}", $got);
    }};
}

/// Sizes a caller might pass: tiny, ordinary, at and past the 32-bit limits, and huge.
fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        Just(0usize),
        Just(1),
        Just(16),
        Just(64),
        Just(i32::MAX as usize),
        Just(1usize << 31),
        Just(1usize << 32),
        Just(usize::MAX),
        Just(usize::MAX / 2 + 1),
        1usize..4096,
    ]
}

fn block_side() -> impl Strategy<Value = usize> {
    prop_oneof![Just(16usize), Just(32), Just(64), Just(128), Just(0), Just(8), Just(48), Just(256)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// `Bsr::empty` checks, in order: the block shape, zero dimensions, block multiples, the
    /// 32-bit limits; and builds the matrix otherwise (never allocating more than block rows).
    #[test]
    fn empty_matrix_errors_by_class(nrows in size(), ncols in size(), bm in block_side(), bk in block_side()) {
        let block = BlockShape::new(bm, bk);
        let supported = |b: usize| [16, 32, 64, 128].contains(&b);
        let valid = supported(bm) && supported(bk) && nrows > 0 && ncols > 0 && nrows % bm == 0 && ncols % bk == 0
            && nrows <= i32::MAX as usize && ncols <= i32::MAX as usize;
        // A valid matrix of more than 4 M block rows is built by the limit test below, once.
        if valid && nrows / bm >= 1 << 22 {
            return Ok(());
        }
        let got = Bsr::<f16>::empty(nrows, ncols, block);
        if !supported(bm) || !supported(bk) {
            assert_class!(got, Err(Error::UnsupportedBlockSize { .. }));
        } else if nrows == 0 || ncols == 0 {
            assert_class!(got, Err(Error::ZeroDimension { .. }));
        } else if nrows % bm != 0 || ncols % bk != 0 {
            assert_class!(got, Err(Error::NotBlockMultiple { .. }));
        } else if nrows > i32::MAX as usize || ncols > i32::MAX as usize {
            assert_class!(got, Err(Error::TooLarge { .. }));
        } else {
            let a = got.expect("valid empty matrix");
            prop_assert_eq!(a.nnzb(), 0);
            prop_assert_eq!(a.row_ptr().len(), nrows / bm + 1);
        }
    }

    /// `from_parts` with a valid shape and arbitrary index arrays reports the first problem in
    /// the documented order and never panics.
    #[test]
    fn from_parts_index_errors(rows in 1usize..6, cols in 1usize..6, ptr in proptest::collection::vec(0u32..12, 0..8), idx in proptest::collection::vec(0u32..8, 0..12), extra in 0usize..3) {
        let block = BlockShape::square(16);
        let values = vec![f16::ONE; idx.len() * 256 + extra];
        let got = Bsr::from_parts(rows * 16, cols * 16, block, ptr.clone(), idx.clone(), values);
        if ptr.len() != rows + 1 {
            assert_class!(got, Err(Error::RowPtrLength { .. }));
        } else if ptr[0] != 0 {
            assert_class!(got, Err(Error::RowPtrStart { .. }));
        } else if ptr.windows(2).any(|w| w[0] > w[1]) {
            assert_class!(got, Err(Error::RowPtrNotMonotone { .. }));
        } else if *ptr.last().unwrap() as usize != idx.len() {
            assert_class!(got, Err(Error::RowPtrEnd { .. }));
        } else {
            let bad_col = ptr.windows(2).any(|w| idx[w[0] as usize..w[1] as usize].iter().any(|&c| c as usize >= cols));
            let unsorted = ptr.windows(2).any(|w| idx[w[0] as usize..w[1] as usize].windows(2).any(|p| p[0] >= p[1]));
            if bad_col || unsorted {
                assert_class!(got, Err(Error::ColumnOutOfRange { .. } | Error::ColumnsUnsorted { .. } | Error::DuplicateColumn { .. }));
            } else if extra != 0 {
                assert_class!(got, Err(Error::ValuesLength { .. }));
            } else {
                let a = got.expect("valid parts");
                // Conversions of a valid matrix succeed and agree with each other.
                let mask = a.block_mask().expect("small mask");
                prop_assert_eq!(mask.iter().filter(|&&m| m).count(), a.nnzb());
                let dense = a.try_to_dense().expect("small dense");
                let back = Bsr::from_block_mask(a.nrows(), a.ncols(), block, &mask, a.values().to_vec()).expect("round trip");
                prop_assert_eq!(back.try_to_dense().expect("small dense"), dense);
            }
        }
    }

    /// `from_index_arrays` (int64 as PyTorch's, int32 as scipy's) reports a negative entry as
    /// `NegativeIndex` and one above `u32::MAX` as `TooLarge` (row_ptr before col_idx, each at
    /// its first bad position), and otherwise gives exactly what `from_parts` gives for the
    /// same values as u32.
    #[test]
    fn index_arrays_convert_or_report_bad_entries(
        rows in 1usize..5,
        cols in 1usize..5,
        ptr in proptest::collection::vec(prop_oneof![Just(-1i64), Just(i64::MIN), Just(1i64 << 32), 0i64..10], 0..7),
        idx in proptest::collection::vec(prop_oneof![Just(-3i64), Just(u32::MAX as i64 + 1), Just(i64::MAX), 0i64..6], 0..10),
        as_i32 in any::<bool>(),
    ) {
        let block = BlockShape::square(16);
        let values = vec![f16::ONE; idx.len() * 256];
        let got = if as_i32 {
            let c = |v: &[i64]| v.iter().map(|&x| x.clamp(i32::MIN as i64, i32::MAX as i64) as i32).collect::<Vec<_>>();
            let (p32, i32s) = (c(&ptr), c(&idx));
            // Entries above i32::MAX clamp to it: still valid u32s, out of range as indices.
            let want = if let Some(position) = p32.iter().position(|&x| x < 0) {
                Err(("row_ptr", position))
            } else if let Some(position) = i32s.iter().position(|&x| x < 0) {
                Err(("col_idx", position))
            } else {
                Ok((p32.iter().map(|&x| x as u32).collect::<Vec<_>>(), i32s.iter().map(|&x| x as u32).collect::<Vec<_>>()))
            };
            (Bsr::from_index_arrays(rows * 16, cols * 16, block, &p32, &i32s, values.clone()), want)
        } else {
            let first_bad = |v: &[i64]| v.iter().position(|&x| !(0..=u32::MAX as i64).contains(&x));
            let want = if let Some(position) = first_bad(&ptr) {
                Err(("row_ptr", position))
            } else if let Some(position) = first_bad(&idx) {
                Err(("col_idx", position))
            } else {
                Ok((ptr.iter().map(|&x| x as u32).collect(), idx.iter().map(|&x| x as u32).collect()))
            };
            (Bsr::from_index_arrays(rows * 16, cols * 16, block, &ptr, &idx, values.clone()), want)
        };
        match got {
            (got, Ok((p, i))) => {
                let parts = Bsr::from_parts(rows * 16, cols * 16, block, p, i, values);
                prop_assert_eq!(format!("{got:?}"), format!("{parts:?}"));
            }
            (got, Err((array, position))) => {
                let src = if array == "row_ptr" { &ptr } else { &idx };
                if src[position] < 0 {
                    let ok = matches!(got, Err(Error::NegativeIndex { what, position: p, .. }) if what == array && p == position);
                    prop_assert!(ok, "{array}[{position}] = {}: got {got:?}", src[position]);
                } else {
                    let ok = matches!(got, Err(Error::TooLarge { what, .. }) if what == array);
                    prop_assert!(ok, "{array}[{position}] = {}: got {got:?}", src[position]);
                }
            }
        }
    }

    /// Dense shapes: every class of bad shape gets its error; a valid one spans exactly what
    /// `extent` says, and its transpose spans the same memory.
    #[test]
    fn mat_shape_errors_by_class(rows in size(), cols in size(), ld in size(), batch in prop_oneof![Just(0usize), Just(1), Just(3), Just(usize::MAX)], stride in size(), len in size(), col_major in any::<bool>()) {
        let layout = if col_major { Layout::ColMajor } else { Layout::RowMajor };
        let s = MatShape { rows, cols, ld, layout, batch, batch_stride: stride };
        let got = s.check("m", len);
        let (inner, outer) = if col_major { (rows, cols) } else { (cols, rows) };
        if rows == 0 || cols == 0 || batch == 0 {
            assert_class!(got, Err(Error::ZeroDimension { .. }));
        } else if ld < inner || ld % 8 != 0 {
            assert_class!(got, Err(Error::LeadingDimension { .. }));
        } else if outer.checked_mul(ld).is_none() {
            assert_class!(got, Err(Error::Overflow { .. }));
        } else if batch > 1 && (stride < outer * ld || stride % 8 != 0) {
            assert_class!(got, Err(Error::BatchStride { .. }));
        } else {
            match s.extent() {
                Err(_) => assert_class!(got, Err(Error::Overflow { .. })),
                Ok(ext) if len < ext => assert_class!(got, Err(Error::BufferTooSmall { .. })),
                Ok(ext) => {
                    prop_assert!(got.is_ok(), "{got:?}");
                    prop_assert_eq!(s.t().extent().ok(), Some(ext));
                    prop_assert!(s.t().check("t", len).is_ok());
                }
            }
        }
    }

    /// The planners never allocate proportionally to an absurd request: they plan, or they
    /// return `TooLarge` first.
    #[test]
    fn planners_check_sizes_first(lens in proptest::collection::vec(0u32..40, 1..64), n_tiles in prop_oneof![Just(1u32), Just(7), Just(u32::MAX), 1u32..64], batch in prop_oneof![Just(1u32), Just(3), Just(u32::MAX), 1u32..8], resident in 1u32..600, max_item in prop_oneof![Just(blocksparse::abi::MAX_ITEM_BLOCKS), 0u32..300]) {
        let mut row_ptr = vec![0u32];
        for l in &lens {
            row_ptr.push(row_ptr.last().unwrap() + l);
        }
        let cells = lens.len() as u128 * n_tiles as u128 * batch as u128;
        let got = plan_rows(RowsSpec { row_ptr: &row_ptr, n_tiles, batch, kb: 64, ks: 32, resident, tile_group: 2, max_item_blocks: max_item });
        if cells > i32::MAX as u128 {
            assert_class!(got, Err(Error::TooLarge { .. }));
        } else if cells <= 1 << 16 {
            let w = got.expect("small plan");
            // No item longer than the kernel's block cache allows (a merged plan's is shorter).
            let limit = max_item.clamp(1, blocksparse::abi::MAX_ITEM_BLOCKS);
            prop_assert!(w.items.iter().all(|i| i.blk_end - i.blk_begin <= limit));
            let covered = w.items.iter().filter(|i| i.partial_slot == u32::MAX).count() as u128 + w.groups.len() as u128;
            prop_assert_eq!(covered, cells);
        }
        let blocks = plan_blocks(&row_ptr, 8, batch, 1);
        let items = lens.iter().map(|&l| l.div_ceil(8) as u128).sum::<u128>() * batch as u128;
        if items > i32::MAX as u128 {
            assert_class!(blocks, Err(Error::TooLarge { .. }));
        } else if items <= 1 << 16 {
            prop_assert_eq!(blocks.expect("small plan").items.len() as u128, items);
        }
    }
}

/// Issue "hardening" #6: the block mask and the dense form of a valid matrix at the size limits
/// are reported (`Allocation` / `Overflow`), not attempted.
#[test]
fn conversions_at_the_size_limits_are_errors() {
    // 2147483520 × 2147483632 in 128 × 16 blocks: a 16.7 M × 134 M block mask (2 PB of bools).
    let a = Bsr::<f16>::empty(2147483520, 2147483632, BlockShape::new(128, 16)).expect("valid empty matrix");
    assert!(matches!(a.block_mask(), Err(Error::Allocation { .. })), "{:?}", a.block_mask().map(|m| m.len()));
    // Its dense form: 4.6e18 elements, past the host's address space for 2-byte elements.
    assert!(matches!(a.try_to_dense(), Err(Error::Allocation { .. } | Error::Overflow { .. })));
}
