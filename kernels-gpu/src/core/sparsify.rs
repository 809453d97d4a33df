//! Sparsify: a dense f32 matrix's values at a block pattern's blocks, scaled into them
//! ([`SparsifyParams`] has the loop). Thread `t` of the grid takes chunk `t`
//! ([`SPARSIFY_CHUNK`] elements of one dense row, one 16-byte load) of every matrix of the
//! batch; a chunk whose block cell holds no block ends after reading the cell.

use blocksparse_abi::{NO_BLOCK, SPARSIFY_CHUNK, SPARSIFY_THREADS, SparsifyParams};

use crate::core::epilogue::{BlockDest, Dest};
use crate::dtype::Output;
use crate::ptx::{block_idx, ld_global_nc_u32, ld_global_v4_f32, thread_idx};

/// The sparsify kernel body.
#[inline(always)]
pub unsafe fn run<O: Output>(p: &SparsifyParams) {
    let chunk = block_idx() * SPARSIFY_THREADS + thread_idx();
    let row_chunks = p.cols / SPARSIFY_CHUNK;
    // The host launches at least one thread per chunk; the last block's tail has none.
    if chunk >= p.rows * row_chunks {
        return;
    }
    let (row, col) = (chunk / row_chunks, chunk % row_chunks * SPARSIFY_CHUNK);
    let cell = (row >> p.bm_log2) * (p.cols >> p.bn_log2) + (col >> p.bn_log2);
    let q = unsafe { ld_global_nc_u32((p.cells as *const u32).wrapping_add(cell as usize)) };
    if q == NO_BLOCK {
        return;
    }
    // The chunk's place inside block `q`: row `r`, columns `c .. c + 4`.
    let (r, c) = (row & ((1 << p.bm_log2) - 1), col & ((1 << p.bn_log2) - 1));
    let dense = row as usize * p.cols as usize + col as usize;
    let matrix = p.rows as usize * p.cols as usize;
    let elem = core::mem::size_of::<O::Elem>() as u64;
    let mut b = 0;
    while b < p.batch {
        let v = unsafe { ld_global_v4_f32((p.dense as *const f32).wrapping_add(b as usize * matrix + dense)) };
        let values = p.values + b as u64 * p.values_batch_stride * elem;
        let dest = BlockDest::blocks::<O>(values, q, 1, 1 << p.bm_log2, p.bn_log2, 0, p.alpha, p.beta);
        let mut j = 0;
        while j < SPARSIFY_CHUNK {
            let (x0, x1) = unsafe { Dest::<O>::scaled_pair(&dest, r, c + j, v[j as usize], v[j as usize + 1]) };
            unsafe { O::store2(Dest::<O>::at(&dest, r, c + j), x0, x1) };
            j += 2;
        }
        b += 1;
    }
}
