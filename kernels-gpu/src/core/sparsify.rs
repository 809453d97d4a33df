//! Sparsify: a dense matrix's values at a block pattern's blocks, scaled into them from f32 or
//! copied where they are the blocks' type already ([`SparsifyParams`] has the loop). Thread
//! `t` of the grid takes chunk `t` ([`SPARSIFY_CHUNK`] elements of one dense row, 16-byte
//! loads and stores) of every matrix of the batch; a chunk whose block cell holds no block
//! ends after reading the cell.

use blocksparse_abi::{NO_BLOCK, SPARSIFY_CHUNK, SPARSIFY_THREADS, SparsifyParams};

use crate::core::cells::{CellChunk, with_chunk_cell};
use crate::core::epilogue::{BlockDest, Dest};
use crate::dtype::Output;
use crate::ptx::{ld_global_nc_v4_u32, ld_global_v4_f32, st_global_v4_u32};

/// The sparsify kernel body.
#[inline(always)]
pub unsafe fn run<O: Output>(p: &SparsifyParams) {
    let body = |ch: CellChunk| {
        let q = ch.block;
        if q == NO_BLOCK {
            return;
        }
        // The chunk's place inside block `q`: row `r`, columns `c .. c + 8`.
        let (r, c) = ch.inner();
        let (dense, matrix) = (ch.dense(), ch.matrix());
        let elem = core::mem::size_of::<O::Elem>();
        let mut b = 0;
        while b < p.batch {
            let values = p.values + b as u64 * p.values_batch_stride * elem as u64;
            let dest = BlockDest::blocks::<O>(values, q, 1, 1 << p.bm_log2, p.bn_log2, 0, p.alpha, p.beta);
            let to = Dest::<O>::at(&dest, r, c) as *mut u32;
            let at = b as usize * matrix + dense;
            if p.dense_as_blocks != 0 {
                // C's values already: the chunk's bytes copied, 16 at a time (one piece of a 16-bit
                // type, two of f32).
                let from = (p.dense as *const O::Elem).wrapping_add(at) as *const u32;
                let mut i = 0;
                while i < elem / 2 {
                    unsafe { st_global_v4_u32(to.wrapping_add(4 * i), ld_global_nc_v4_u32(from.wrapping_add(4 * i))) };
                    i += 1;
                }
            } else {
                let from = (p.dense as *const f32).wrapping_add(at);
                let (lo, hi) = unsafe { (ld_global_v4_f32(from), ld_global_v4_f32(from.wrapping_add(4))) };
                let v = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
                // (8,) the chunk's results.
                let mut s = [0.0f32; 8];
                let mut j = 0;
                while j < 8 {
                    (s[j], s[j + 1]) = unsafe { Dest::<O>::scaled_pair(&dest, r, c + j as u32, v[j], v[j + 1]) };
                    j += 2;
                }
                match O::PACK2 {
                    Some(pack) => unsafe { st_global_v4_u32(to, [pack(s[0], s[1]), pack(s[2], s[3]), pack(s[4], s[5]), pack(s[6], s[7])]) },
                    None => unsafe {
                        st_global_v4_u32(to, [s[0].to_bits(), s[1].to_bits(), s[2].to_bits(), s[3].to_bits()]);
                        st_global_v4_u32(to.wrapping_add(4), [s[4].to_bits(), s[5].to_bits(), s[6].to_bits(), s[7].to_bits()]);
                    },
                }
            }
            b += 1;
        }
    };
    // SAFETY: `cells` is C's cell map (the launch's contract); 8-element chunks divide the rows
    // and the blocks (at least 16 wide).
    unsafe { with_chunk_cell(SPARSIFY_THREADS, SPARSIFY_CHUNK, (p.rows, p.cols), (p.bm_log2, p.bn_log2), p.cells, body) }
}
