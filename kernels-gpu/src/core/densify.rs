//! Densify: a block-sparse matrix's values written out as a dense row-major matrix, zeros
//! outside its blocks ([`DensifyParams`] has the loop). Thread `t` of the grid moves chunk `t`
//! ([`DENSIFY_CHUNK`] elements of one row, 16 bytes) of every matrix of the batch: the stores
//! run along the dense rows (coalesced), the loads read 16-byte pieces of the block rows.

use blocksparse_abi::{DENSIFY_CHUNK, DENSIFY_THREADS, DensifyParams, NO_BLOCK};

use crate::core::cells::{CellChunk, with_chunk_cell};
use crate::ptx::{ld_global_nc_v4_u32, st_global_v4_u32};

/// The densify kernel body (16-bit elements, moved as bits).
#[inline(always)]
pub unsafe fn run(p: &DensifyParams) {
    let body = |c: CellChunk| {
        // The chunk's place inside its block (the block's start in 64 bits, the rest under
        // 2^14).
        let (r, col) = c.inner();
        let inner = ((r << p.bn_log2) + col) as usize;
        let block_start = (c.block as usize) << (p.bm_log2 + p.bn_log2);
        let mut b = 0;
        while b < p.batch {
            let v = if c.block == NO_BLOCK {
                [0; 4]
            } else {
                let src = b as usize * p.values_batch_stride as usize + block_start + inner;
                unsafe { ld_global_nc_v4_u32((p.values as *const u16).wrapping_add(src) as *const u32) }
            };
            unsafe { st_global_v4_u32((p.out as *mut u16).wrapping_add(b as usize * c.matrix() + c.dense()) as *mut u32, v) };
            b += 1;
        }
    };
    // SAFETY: `cells` is B's cell map (the launch's contract); 8-element chunks divide the rows
    // and the blocks (at least 16 wide).
    unsafe { with_chunk_cell(DENSIFY_THREADS, DENSIFY_CHUNK, (p.rows, p.cols), (p.bm_log2, p.bn_log2), p.cells, body) }
}
