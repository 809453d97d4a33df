//! The portable tensor-core kernel (sm_80+): `mma.sync` m16n8k16 fed by `ldmatrix`, a
//! multistage `cp.async` ring, f32 accumulators in registers.
//!
//! Semantics, for the work item (block row `br`, N tile `nt`, A blocks `b0..b1`):
//! ```text
//! for i in 0..bm, j in nt*bn .. min((nt+1)*bn, n):
//!     acc = 0
//!     for p in b0..b1, kk in 0..bk:
//!         acc += values[p][i][kk] * B[col_idx[p]*bk + kk][j]
//!     C[br*bm + i][j] = alpha*acc + beta*C[br*bm + i][j]      (or acc → partial slot)
//! ```
//! The item's blocks are streamed as one virtual K axis of length `(b1 - b0) * bk`, cut into
//! stages of `ks`: a stage may hold several small blocks or part of a large one. Virtual k
//! past the end is zero-filled in both A and B.

use blocksparse_abi::{MMA_TILES, MmaTile, NO_SLOT, SpmmParams, WARP_N};

use crate::dtype::{Input, Output};
use crate::epilogue::{Dest, store_partial_pair};
use crate::pipeline;
use crate::ptx::{
    block_idx, cp_async_16, ld_global_nc_u32, ld_shared_u32, ldmatrix_x4, ldmatrix_x4_trans,
    smem_base, st_shared_u32, sync_threads, thread_idx, trap,
};
use crate::scheduler::work_item;
use crate::tile::SmemTile;

/// Compile-time constants of tile configuration `MMA_TILES[TILE]`.
struct Cfg<const TILE: usize>;

impl<const TILE: usize> Cfg<TILE> {
    const T: MmaTile = MMA_TILES[TILE];
    const THREADS: u32 = Self::T.threads();
    /// m16 fragments per warp along M.
    const MI: usize = (Self::T.warp_m() / 16) as usize;
}

/// n8 fragments per warp along N.
const NJ: usize = (WARP_N / 8) as usize;

/// Per-warp accumulators: `(MI, NJ, 4)` f32, MI ≤ 4 (unused rows are optimised away).
type Acc = [[[f32; 4]; NJ]; 4];

#[inline(always)]
pub unsafe fn spmm_mma<I: Input, O: Output, const TILE: usize>(p: &SpmmParams) {
    let t = Cfg::<TILE>::T;
    let threads = Cfg::<TILE>::THREADS;
    let mi = Cfg::<TILE>::MI;
    let tid = thread_idx();
    let (warp, lane) = (tid / 32, tid % 32);
    let (warp_m, warp_n) = (warp / t.warps_n, warp % t.warps_n);

    let item = unsafe { work_item(p.items, block_idx()) };
    let nblk = item.blk_end - item.blk_begin;
    if nblk > blocksparse_abi::MAX_ITEM_BLOCKS {
        trap(); // the planner never emits this
    }
    let bk_log2 = p.bk_log2;
    let bk_mask = (1u32 << bk_log2) - 1;
    let ktot = nblk << bk_log2;
    let n_k = ktot.div_ceil(t.ks);
    let n0 = item.n_tile * t.bn;

    // Shared memory: A ring (stages, bm, ks) | B ring (stages, ks, bn) | column cache (MAX_ITEM_BLOCKS,)
    let smem = smem_base();
    let a_ring = SmemTile { base: smem, row_chunks: t.ks / 8 };
    let b_ring = SmemTile { base: smem + t.stages * t.a_stage_bytes(), row_chunks: t.bn / 8 };
    let cols = smem + t.col_cache_offset();

    // Column indices of this item's blocks → shared memory, read by every B copy.
    let col_idx = p.col_idx as *const u32;
    let mut i = tid;
    while i < nblk {
        unsafe { st_shared_u32(cols + 4 * i, ld_global_nc_u32(col_idx.wrapping_add((item.blk_begin + i) as usize))) };
        i += threads;
    }
    sync_threads();

    // ---- load: one K stage of A (bm, ks) and B (ks, bn) into ring slot `slot` ----
    let a_item = (p.a_values as *const u16).wrapping_add(((item.blk_begin as usize) * t.bm as usize) << bk_log2);
    let b = p.b as *const u16;
    let (ldb, n) = (p.ldb as usize, p.n);
    // A chunk coordinates: column chunk fixed per thread, rows step by threads / (ks/8).
    let a_kc = tid % (t.ks / 8);
    let a_r0 = tid / (t.ks / 8);
    let a_rstep = threads / (t.ks / 8);
    // B chunk coordinates: column chunk fixed per thread, K rows step by threads / (bn/8).
    let b_nc = tid % (t.bn / 8);
    let b_r0 = tid / (t.bn / 8);
    let b_rstep = threads / (t.bn / 8);
    let b_col = n0 + b_nc * 8;
    let b_col_bytes = if b_col < n { (n - b_col).min(8) * 2 } else { 0 };

    let load = |stage: u32, slot: u32| {
        let k0 = stage * t.ks;
        let a_slot = a_ring.offset(slot * t.a_stage_bytes());
        let mut c = 0;
        while c < t.a_chunks_per_thread() {
            let r = a_r0 + c * a_rstep;
            if r >= t.bm {
                break; // fewer A chunks than threads (small blocks)
            }
            let k = k0 + a_kc * 8;
            let (src, bytes) = if k < ktot {
                let (blk, kin) = (k >> bk_log2, k & bk_mask);
                let off = (((blk * t.bm + r) as usize) << bk_log2) + kin as usize;
                (a_item.wrapping_add(off), 16)
            } else {
                (a_item, 0)
            };
            unsafe { cp_async_16(a_slot.chunk_addr(r, a_kc), src as *const u8, bytes) };
            c += 1;
        }
        let b_slot = b_ring.offset(slot * t.b_stage_bytes());
        let mut c = 0;
        while c < t.b_chunks_per_thread() {
            let r = b_r0 + c * b_rstep;
            let k = k0 + r;
            let (src, bytes) = if k < ktot && b_col_bytes > 0 {
                let (blk, kin) = (k >> bk_log2, k & bk_mask);
                let col = unsafe { ld_shared_u32(cols + 4 * blk) };
                let row = ((col << bk_log2) + kin) as usize;
                (b.wrapping_add(row * ldb + b_col as usize), b_col_bytes)
            } else {
                (b, 0)
            };
            unsafe { cp_async_16(b_slot.chunk_addr(r, b_nc), src as *const u8, bytes) };
            c += 1;
        }
    };

    // ---- compute: the warp's (warp_m, 64) sub-tile over one slot ----
    let mut acc: Acc = [[[0.0; 4]; NJ]; 4];
    let a_row = warp_m * (mi as u32 * 16) + lane % 16; // + 16*i
    let a_hi = lane / 16; // which k8 half this lane addresses
    let b_krow = (lane & 7) + 8 * ((lane >> 3) & 1); // + 16*kk
    let b_nchunk = warp_n * (WARP_N / 8) + (lane >> 4); // + 2*j
    let compute = |slot: u32| {
        let a_slot = a_ring.offset(slot * t.a_stage_bytes());
        let b_slot = b_ring.offset(slot * t.b_stage_bytes());
        let mut kk = 0;
        while kk < t.ks / 16 {
            let mut af = [[0u32; 4]; 4];
            let mut i = 0;
            while i < mi {
                af[i] = unsafe { ldmatrix_x4(a_slot.chunk_addr(a_row + 16 * i as u32, 2 * kk + a_hi)) };
                i += 1;
            }
            let mut bf = [[0u32; 4]; NJ / 2];
            let mut j = 0;
            while j < NJ / 2 {
                bf[j] = unsafe { ldmatrix_x4_trans(b_slot.chunk_addr(16 * kk + b_krow, b_nchunk + 2 * j as u32)) };
                j += 1;
            }
            let mut i = 0;
            while i < mi {
                let mut j = 0;
                while j < NJ / 2 {
                    I::mma(&mut acc[i][2 * j], &af[i], bf[j][0], bf[j][1]);
                    I::mma(&mut acc[i][2 * j + 1], &af[i], bf[j][2], bf[j][3]);
                    j += 1;
                }
                i += 1;
            }
            kk += 1;
        }
    };

    pipeline::run(t.stages, n_k, load, compute);

    // ---- store: accumulator fragment (row g / g+8, cols 2q, 2q+1 of each n8) → C or partial ----
    let (g, q) = (lane / 4, lane % 4);
    let row0 = warp_m * (mi as u32 * 16) + g;
    let col0 = warp_n * WARP_N + 2 * q;
    if item.partial_slot == NO_SLOT {
        let dest = Dest { c: p.c, ldc: p.ldc, n, alpha: p.alpha, beta: p.beta };
        let grow0 = item.block_row * t.bm + row0;
        let mut i = 0;
        while i < mi {
            let mut j = 0;
            while j < NJ {
                let (r, c) = (grow0 + 16 * i as u32, n0 + col0 + 8 * j as u32);
                let f = &acc[i][j];
                unsafe {
                    dest.store_pair::<O>(r, c, f[0], f[1]);
                    dest.store_pair::<O>(r + 8, c, f[2], f[3]);
                }
                j += 1;
            }
            i += 1;
        }
    } else {
        let tile = (p.partials as *mut f32).wrapping_add(item.partial_slot as usize * (t.bm * t.bn) as usize);
        let mut i = 0;
        while i < mi {
            let mut j = 0;
            while j < NJ {
                let (r, c) = (row0 + 16 * i as u32, col0 + 8 * j as u32);
                let f = &acc[i][j];
                unsafe {
                    store_partial_pair(tile, t.bn, r, c, f[0], f[1]);
                    store_partial_pair(tile, t.bn, r + 8, c, f[2], f[3]);
                }
                j += 1;
            }
            i += 1;
        }
    }
}
