//! C = alpha·acc + beta·C, rounded to the output type; or the raw f32 tile into a split-K slot.
//! With beta == 0, C is not read (BLAS semantics: whatever C held, NaN included, is overwritten).

use crate::dtype::Output;
use crate::ptx::st_global_f32x2;

/// Where a thread's accumulator pair lands.
#[derive(Clone, Copy)]
pub struct Dest {
    /// C, `(M, ldc)` row-major, as an element pointer.
    pub c: u64,
    pub ldc: u32,
    /// Columns of C: elements at or past `n` are not written.
    pub n: u32,
    pub alpha: f32,
    pub beta: f32,
}

impl Dest {
    /// Writes the pair at (row, col) and (row, col + 1); `col` is even.
    #[inline(always)]
    pub unsafe fn store_pair<O: Output>(&self, row: u32, col: u32, v0: f32, v1: f32) {
        if col >= self.n {
            return;
        }
        let p = (self.c as *mut O::Elem).wrapping_add(row as usize * self.ldc as usize + col as usize);
        let (mut r0, mut r1) = (self.alpha * v0, self.alpha * v1);
        unsafe {
            if col + 1 < self.n {
                if self.beta != 0.0 {
                    let (c0, c1) = O::load2(p);
                    r0 += self.beta * c0;
                    r1 += self.beta * c1;
                }
                O::store2(p, r0, r1);
            } else {
                if self.beta != 0.0 {
                    r0 += self.beta * O::load1(p);
                }
                O::store1(p, r0);
            }
        }
    }

    /// Writes one element (fix-up kernel).
    #[inline(always)]
    pub unsafe fn store_one<O: Output>(&self, row: u32, col: u32, v: f32) {
        let p = (self.c as *mut O::Elem).wrapping_add(row as usize * self.ldc as usize + col as usize);
        let mut r = self.alpha * v;
        unsafe {
            if self.beta != 0.0 {
                r += self.beta * O::load1(p);
            }
            O::store1(p, r);
        }
    }
}

/// Writes an unscaled f32 pair into a `(bm, bn)` partial tile.
#[inline(always)]
pub unsafe fn store_partial_pair(tile: *mut f32, bn: u32, row: u32, col: u32, v0: f32, v1: f32) {
    unsafe { st_global_f32x2(tile.wrapping_add((row * bn + col) as usize), v0, v1) }
}
