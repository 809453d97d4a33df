//! Split-K fix-up: one thread block per split output tile sums the partial tiles in slot order
//! (so the result is bitwise reproducible) and applies alpha/beta, into a dense C (SpMM) or into
//! C's blocks (SDDMM).
//!
//! ```text
//! for (r, c) in tile with column < cols:
//!     s = sum over slot in first_slot..first_slot+n_slots of partials[slot][r][c]
//!     dense:  C[tile_row*tm + r][n_tile*tn + c] = alpha*s + beta*C[..][..]     (either C layout)
//!     blocks: values[blk_begin + c/bn][r][c%bn] = alpha*s + beta*values[..][..][..]
//! ```

use blocksparse_abi::{FIXUP_THREADS, FIXUP_TO_BLOCKS, FixupParams, SplitGroup};

use crate::core::epilogue::{BlockDest, DenseDest, Dest};
use crate::dtype::Output;
use crate::ptx::{block_idx, ld_global_f32, ld_global_nc_u32, thread_idx};

/// The fix-up kernel body.
#[inline(always)]
pub unsafe fn run<O: Output>(p: &FixupParams) {
    let gp = (p.groups as *const SplitGroup).wrapping_add(block_idx() as usize) as *const u32;
    let g = unsafe {
        SplitGroup {
            tile_row: ld_global_nc_u32(gp),
            n_tile: ld_global_nc_u32(gp.wrapping_add(1)),
            first_slot: ld_global_nc_u32(gp.wrapping_add(2)),
            n_slots: ld_global_nc_u32(gp.wrapping_add(3)),
            batch: ld_global_nc_u32(gp.wrapping_add(4)),
            blk_begin: ld_global_nc_u32(gp.wrapping_add(5)),
            blk_end: ld_global_nc_u32(gp.wrapping_add(6)),
        }
    };
    if p.to == FIXUP_TO_BLOCKS {
        let b = &p.blocks;
        let values = b.values + g.batch as u64 * b.batch_stride * core::mem::size_of::<O::Elem>() as u64;
        let dest = BlockDest::blocks::<O>(values, g.blk_begin, g.blk_end - g.blk_begin, 1 << b.bm_log2, b.bn_log2, 0, b.alpha, b.beta);
        unsafe { sum_into::<O, _>(p, &g, &dest) }
    } else {
        let dest = DenseDest::tile::<O>(&p.out, g.batch, g.tile_row * p.tm, g.n_tile * p.tn);
        unsafe { sum_into::<O, _>(p, &g, &dest) }
    }
}

/// Sums group `g`'s partial tiles into `dest`, element by element.
#[inline(always)]
unsafe fn sum_into<O: Output, D: Dest<O>>(p: &FixupParams, g: &SplitGroup, dest: &D) {
    let tile_elems = p.tm * p.tn;
    let partials = p.partials as *const f32;
    let mut e = thread_idx();
    while e < tile_elems {
        let (r, c) = (e / p.tn, e % p.tn);
        if c < dest.cols() {
            let mut s = 0.0f32;
            let mut k = 0;
            while k < g.n_slots {
                let slot = (g.first_slot + k) as usize;
                s += unsafe { ld_global_f32(partials.wrapping_add(slot * tile_elems as usize + e as usize)) };
                k += 1;
            }
            unsafe { O::store1(dest.at(r, c), dest.scaled(r, c, s)) };
        }
        e += FIXUP_THREADS;
    }
}
