//! Densify: a block-sparse matrix's values written out as a dense row-major matrix, zeros
//! outside its blocks ([`DensifyParams`] has the loop). Thread `t` of the grid moves chunk `t`
//! ([`DENSIFY_CHUNK`] elements of one row, 16 bytes) of every matrix of the batch: the stores
//! run along the dense rows (coalesced), the loads read 16-byte pieces of the block rows.

use blocksparse_abi::{DENSIFY_CHUNK, DENSIFY_THREADS, DensifyParams, NO_BLOCK};

use crate::ptx::{block_idx, ld_global_nc_u32, ld_global_nc_v4_u32, st_global_v4_u32, thread_idx};

/// The densify kernel body (16-bit elements, moved as bits).
#[inline(always)]
pub unsafe fn run(p: &DensifyParams) {
    let chunk = block_idx() * DENSIFY_THREADS + thread_idx();
    let row_chunks = p.cols / DENSIFY_CHUNK;
    // The host launches at least one thread per chunk; the last block's tail has none.
    if chunk >= p.rows * row_chunks {
        return;
    }
    let (row, col) = (chunk / row_chunks, chunk % row_chunks * DENSIFY_CHUNK);
    let cell = (row >> p.bm_log2) * (p.cols >> p.bn_log2) + (col >> p.bn_log2);
    let q = unsafe { ld_global_nc_u32((p.cells as *const u32).wrapping_add(cell as usize)) };
    // The chunk's place inside its block (the block's start in 64 bits, the rest under 2^14).
    let inner = (((row & ((1 << p.bm_log2) - 1)) << p.bn_log2) + (col & ((1 << p.bn_log2) - 1))) as usize;
    let block_start = (q as usize) << (p.bm_log2 + p.bn_log2);
    let dense = row as usize * p.cols as usize + col as usize;
    let matrix = p.rows as usize * p.cols as usize;
    let mut b = 0;
    while b < p.batch {
        let v = if q == NO_BLOCK {
            [0; 4]
        } else {
            let src = b as usize * p.values_batch_stride as usize + block_start + inner;
            unsafe { ld_global_nc_v4_u32((p.values as *const u16).wrapping_add(src) as *const u32) }
        };
        unsafe { st_global_v4_u32((p.out as *mut u16).wrapping_add(b as usize * matrix + dense) as *mut u32, v) };
        b += 1;
    }
}
