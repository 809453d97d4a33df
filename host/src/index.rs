//! Index element types of BSR index arrays: `u32` (the library's own), `i32` (scipy's
//! `indptr` / `indices`) and `i64` (PyTorch's `crow_indices` / `col_indices`). Every entry is
//! converted to the kernels' `u32` with a typed error: [`Error::NegativeIndex`] for a negative
//! entry, [`Error::TooLarge`] for one above `u32::MAX`.

use crate::error::{Error, Result};

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
}

/// An element type of BSR index arrays (`row_ptr`, `col_idx`). Sealed: `u32`, `i32`, `i64`.
pub trait BsrIndex: sealed::Sealed + Copy + Send + Sync + core::fmt::Debug + cudarc::driver::DeviceRepr + 'static {
    /// The entry, exactly.
    fn to_i64(self) -> i64;
}

impl BsrIndex for u32 {
    fn to_i64(self) -> i64 {
        self as i64
    }
}
impl BsrIndex for i32 {
    fn to_i64(self) -> i64 {
        self as i64
    }
}
impl BsrIndex for i64 {
    fn to_i64(self) -> i64 {
        self
    }
}

/// `what`'s entries as `u32`, or the first that does not fit (its position and value).
pub(crate) fn to_u32_indices<I: BsrIndex>(what: &'static str, src: &[I]) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    out.try_reserve_exact(src.len()).map_err(|_| Error::Allocation { what, elements: src.len() })?;
    for (position, &x) in src.iter().enumerate() {
        let value = x.to_i64();
        if value < 0 {
            return Err(Error::NegativeIndex { what, position, value });
        }
        let v = u32::try_from(value).map_err(|_| Error::TooLarge { what, value: value as usize })?;
        out.push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_keep_values_and_name_the_first_bad_entry() {
        assert_eq!(to_u32_indices("row_ptr", &[0u32, 7, u32::MAX]).unwrap(), vec![0, 7, u32::MAX]);
        assert_eq!(to_u32_indices("row_ptr", &[0i32, 5, i32::MAX]).unwrap(), vec![0, 5, i32::MAX as u32]);
        assert_eq!(to_u32_indices("col_idx", &[3i64, u32::MAX as i64]).unwrap(), vec![3, u32::MAX]);
        assert!(matches!(
            to_u32_indices("col_idx", &[1i32, -1, -5]),
            Err(Error::NegativeIndex { what: "col_idx", position: 1, value: -1 })
        ));
        assert!(matches!(
            to_u32_indices("row_ptr", &[0i64, 1 << 32]),
            Err(Error::TooLarge { what: "row_ptr", value }) if value == 1 << 32
        ));
        assert!(matches!(to_u32_indices("row_ptr", &[i64::MIN]), Err(Error::NegativeIndex { position: 0, value: i64::MIN, .. })));
        assert!(to_u32_indices::<i64>("row_ptr", &[]).unwrap().is_empty());
    }
}
