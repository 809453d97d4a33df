//! Split-K fix-up: the partial tiles of each split output tile are summed in slot order (so the
//! result is bitwise reproducible) and alpha/beta applied, into a dense C (SpMM) or into C's
//! blocks (SDDMM). Thread block `b` sums span `b % parts` ([`FIXUP_SPAN`] elements, four per
//! thread) of group `b / parts`, so that a few groups with many slots still fill the GPU.
//!
//! ```text
//! for (r, c) in tile with column < cols:
//!     s = sum over slot in first_slot..first_slot+n_slots of partials[slot][r][c]
//!     dense:  C[tile_row*tm + r][n_tile*tn + c] = alpha*s + beta*C[..][..]     (either C layout,
//!             rows < M only; the row through the plan's row map, if any)
//!     blocks: values[blk_begin + c/bn][r][c%bn] = alpha*s + beta*values[..][..][..]
//! ```

use blocksparse_abi::{FIXUP_SPAN, FIXUP_TO_BLOCKS, FixupParams, SplitGroup, fixup_parts};

use crate::core::epilogue::{BlockDest, DenseDest, Dest};
use crate::dtype::Output;
use crate::ptx::{block_idx, ld_global_nc_u32, ld_global_v4_f32, thread_idx};

/// The fix-up kernel body.
#[inline(always)]
pub unsafe fn run<O: Output>(p: &FixupParams) {
    let parts = fixup_parts(p.tm, p.tn);
    let (group, part) = (block_idx() / parts, block_idx() % parts);
    let gp = (p.groups as *const SplitGroup).wrapping_add(group as usize) as *const u32;
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
    let e = part * FIXUP_SPAN + 4 * thread_idx();
    if p.to == FIXUP_TO_BLOCKS {
        let b = &p.blocks;
        let values = b.values + g.batch as u64 * b.batch_stride * core::mem::size_of::<O::Elem>() as u64;
        let dest = BlockDest::blocks::<O>(values, g.blk_begin, g.blk_end - g.blk_begin, 1 << b.bm_log2, b.bn_log2, 0, b.alpha, b.beta);
        unsafe { sum4::<O, _>(p, &g, &dest, e) }
    } else {
        let row = g.tile_row * p.tm + e / p.tn;
        // Rows of a merged SpMM tile past the last stream row do not exist.
        if row >= p.out.rows {
            return;
        }
        // This thread's row, through the row map of a reordered SpMM plan.
        let dest = unsafe { DenseDest::mapped::<O>(&p.out, g.batch, row, e / p.tn, g.n_tile * p.tn) };
        unsafe { sum4::<O, _>(p, &g, &dest, e) }
    }
}

/// Sums tile elements `e .. e + 4` (one row, `e` a multiple of 4) of group `g`'s partial tiles
/// and writes those that exist to `dest`.
#[inline(always)]
unsafe fn sum4<O: Output, D: Dest<O>>(p: &FixupParams, g: &SplitGroup, dest: &D, e: u32) {
    let tile_elems = p.tm * p.tn;
    let (r, c) = (e / p.tn, e % p.tn);
    if e >= tile_elems || c >= dest.cols() {
        return;
    }
    let at = |k: u32| (p.partials as *const f32).wrapping_add((g.first_slot + k) as usize * tile_elems as usize + e as usize);
    let mut s = [0.0f32; 4];
    let add = |s: &mut [f32; 4], v: [f32; 4]| {
        let mut j = 0;
        while j < 4 {
            s[j] += v[j];
            j += 1;
        }
    };
    // Four slots' loads in flight at a time, added in slot order.
    let mut k = 0;
    while k + 4 <= g.n_slots {
        let v = unsafe { [ld_global_v4_f32(at(k)), ld_global_v4_f32(at(k + 1)), ld_global_v4_f32(at(k + 2)), ld_global_v4_f32(at(k + 3))] };
        let mut i = 0;
        while i < 4 {
            add(&mut s, v[i]);
            i += 1;
        }
        k += 4;
    }
    while k < g.n_slots {
        add(&mut s, unsafe { ld_global_v4_f32(at(k)) });
        k += 1;
    }
    let mut j = 0;
    while j < 4 {
        let cj = c + j as u32;
        if cj < dest.cols() {
            unsafe { O::store1(dest.at(r, cj), dest.scaled(r, cj, s[j])) };
        }
        j += 1;
    }
}
