//! Split-K fix-up: one thread block per split C tile sums the partial tiles in slot order
//! (so the result is bitwise reproducible) and applies alpha/beta.
//!
//! ```text
//! for (r, c) in tile with column < n:
//!     s = sum over slot in first_slot..first_slot+n_slots of partials[slot][r][c]
//!     C[block_row*bm + r][n_tile*bn + c] = alpha*s + beta*C[..][..]
//! ```

use blocksparse_abi::{FIXUP_THREADS, FixupParams, SplitGroup};

use crate::dtype::Output;
use crate::epilogue::Dest;
use crate::ptx::{block_idx, ld_global_f32, ld_global_nc_u32, thread_idx};

#[inline(always)]
pub unsafe fn spmm_fixup<O: Output>(p: &FixupParams) {
    let gp = (p.groups as *const SplitGroup).wrapping_add(block_idx() as usize) as *const u32;
    let g = unsafe {
        SplitGroup {
            block_row: ld_global_nc_u32(gp),
            n_tile: ld_global_nc_u32(gp.wrapping_add(1)),
            first_slot: ld_global_nc_u32(gp.wrapping_add(2)),
            n_slots: ld_global_nc_u32(gp.wrapping_add(3)),
        }
    };
    let dest = Dest { c: p.c, ldc: p.ldc, n: p.n, alpha: p.alpha, beta: p.beta };
    let tile_elems = p.bm * p.bn;
    let partials = p.partials as *const f32;
    let mut e = thread_idx();
    while e < tile_elems {
        let (r, c) = (e / p.bn, e % p.bn);
        let col = g.n_tile * p.bn + c;
        if col < p.n {
            let mut s = 0.0f32;
            let mut k = 0;
            while k < g.n_slots {
                let slot = (g.first_slot + k) as usize;
                s += unsafe { ld_global_f32(partials.wrapping_add(slot * tile_elems as usize + e as usize)) };
                k += 1;
            }
            unsafe { dest.store_one::<O>(g.block_row * p.bm + r, col, s) };
        }
        e += FIXUP_THREADS;
    }
}
