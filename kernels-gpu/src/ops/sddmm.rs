//! SDDMM: `C.values = alpha · (op(X) · op(Y)) at C's blocks + beta · C.values`, on either
//! kernel family. X is `(M, K)` and Y `(K, N)` after their ops, dense; C is block-sparse with
//! `(bm, bn)` blocks, and the tile height is bm.
//!
//! A work item is block row `r` and a run of its blocks `q0..q1` (at most `tn / bn`), gathered
//! side by side into one `(bm, tn)` tile, for matrix `b`, over the K range `k0..k1` the plan
//! gave it (`64 · k_begin .. min(64 · k_end, K)`):
//! ```text
//! for q in q0..q1, i in 0..bm, jj in 0..bn:
//!     acc = 0
//!     for k in k0..k1:
//!         acc += opX[b][r*bm + i][k] * opY[b][k][col_idx[q]*bn + jj]
//!     if the item has no partial slot (its range is the whole K):
//!         values[b][q][i][jj] = alpha*acc + beta*values[b][q][i][jj]
//!     else:
//!         partials[slot][i][(q - q0)*bn + jj] = acc       (summed by the fix-up kernel)
//! ```
//! The K axis is dense, cut into stages; k past the range is zero-filled in both operands. Tile
//! columns past the item's last block load a copy of its first block's columns and are not
//! stored.

use blocksparse_abi::{MmaTile, NO_SLOT, SddmmParams, WG_K, WorkItem};

use crate::core::epilogue::{BlockDest, partial_tile};
use crate::core::portable::{Acc, Chunk, ChunkAt, PortableOp, WarpTile};
use crate::core::work::this_block_item;
use crate::dtype::Output;
use crate::ptx::{ld_global_nc_u32, ld_shared_u32, opaque, st_shared_u32};

/// The SDDMM op.
pub struct Sddmm;

/// Output blocks `blk_begin .. blk_end` of matrix `batch`, from row `row0` of each block.
#[inline(always)]
fn dest<O: Output>(p: &SddmmParams, item: &WorkItem, row0: u32) -> BlockDest {
    let values = p.c_values + item.batch as u64 * p.c_batch_stride * core::mem::size_of::<O::Elem>() as u64;
    BlockDest::blocks::<O>(values, item.blk_begin, item.blk_end - item.blk_begin, 1 << p.bm_log2, p.bn_log2, row0, p.alpha, p.beta)
}

/// The item's K range in elements: `64 · k_begin .. min(64 · k_end, K)`.
#[inline(always)]
fn k_range(p: &SddmmParams, item: &WorkItem) -> (u32, u32) {
    (item.k_begin * WG_K, (item.k_end * WG_K).min(p.k))
}

/// A portable thread block's item: the block columns of its blocks sit in the block cache.
#[derive(Clone, Copy)]
pub struct PortableItem {
    item: WorkItem,
    cache: u32,
    /// K range in elements.
    k_lo: u32,
    k_hi: u32,
}

impl PortableOp for Sddmm {
    type Params = SddmmParams;
    type Item = PortableItem;
    type AStage = ();
    type BStage = ();

    #[inline(always)]
    fn flags(p: &SddmmParams) -> u32 {
        p.flags
    }

    #[inline(always)]
    unsafe fn prepare(p: &SddmmParams, t: MmaTile, cache: u32, tid: u32) -> PortableItem {
        let item = unsafe { this_block_item(&p.work) };
        let mut i = tid;
        while i < item.blk_end - item.blk_begin {
            let col = unsafe { ld_global_nc_u32((p.col_idx as *const u32).wrapping_add((item.blk_begin + i) as usize)) };
            unsafe { st_shared_u32(cache + 4 * i, col) };
            i += t.threads();
        }
        let (k_lo, k_hi) = k_range(p, &item);
        PortableItem { item, cache, k_lo, k_hi }
    }

    #[inline(always)]
    fn k_stages(_p: &SddmmParams, it: &PortableItem, t: MmaTile) -> u32 {
        (it.k_hi - it.k_lo).div_ceil(t.ks)
    }

    // The chunks of SDDMM keep the sized copy (`Chunk::Part` of 16 or 0 bytes). Whole chunks
    // gained 1.02-1.05x at 16x16 (column-major Y), but the 32-row tile's time is bimodal by
    // more than any chunk form moves it, so it could not be measured (perf notes v30, items 4
    // and 8).
    #[inline(always)]
    unsafe fn a_chunk<const A_MN: bool, const FORM: u32>(p: &SddmmParams, it: &PortableItem, _st: (), at: ChunkAt) -> Chunk {
        let ChunkAt { k0, row, chunk } = at;
        // K-major (X row-major): row = M, chunk along K. MN-major (X stored (K, M)): row = K,
        // chunk along M.
        let m0 = it.item.tile_row << p.bm_log2;
        let x = (p.x as *const u16).wrapping_add(it.item.batch as usize * p.x_batch_stride as usize);
        let k = it.k_lo + if A_MN { k0 + row } else { k0 + 8 * chunk };
        if k >= it.k_hi {
            return Chunk::Part(x as *const u8, 0);
        }
        // Strides through `opaque`: per-chunk row offsets stay out of the K loop's registers.
        let ldx = opaque(p.ldx) as usize;
        let off = if A_MN { k as usize * ldx + (m0 + 8 * chunk) as usize } else { (m0 + row) as usize * ldx + k as usize };
        Chunk::Part(x.wrapping_add(off) as *const u8, 16)
    }

    #[inline(always)]
    unsafe fn b_chunk<const B_K: bool, const FORM: u32>(p: &SddmmParams, it: &PortableItem, _st: (), at: ChunkAt) -> Chunk {
        let ChunkAt { k0, row, chunk } = at;
        // MN-major (Y row-major): row = K, chunk along the tile's columns. K-major (Y stored
        // (N, K)): row = tile column, chunk along K.
        let y = (p.y as *const u16).wrapping_add(it.item.batch as usize * p.y_batch_stride as usize);
        let (k, tcol) = if B_K { (it.k_lo + k0 + 8 * chunk, row) } else { (it.k_lo + k0 + row, 8 * chunk) };
        // Per stage (`opaque`), so that the chunks' block columns are not all held in registers.
        let bn_log2 = opaque(p.bn_log2);
        let blk = tcol >> bn_log2;
        if k >= it.k_hi || blk >= it.item.blk_end - it.item.blk_begin {
            return Chunk::Part(y as *const u8, 0);
        }
        let col = (unsafe { ld_shared_u32(it.cache + 4 * blk) } << bn_log2) + (tcol & ((1 << bn_log2) - 1));
        let ldy = opaque(p.ldy) as usize;
        let off = if B_K { col as usize * ldy + k as usize } else { k as usize * ldy + col as usize };
        Chunk::Part(y.wrapping_add(off) as *const u8, 16)
    }

    #[inline(always)]
    unsafe fn store<O: Output>(p: &SddmmParams, it: &PortableItem, t: MmaTile, w: WarpTile, acc: &Acc) {
        if it.item.partial_slot == NO_SLOT {
            unsafe { w.store::<O, _>(&dest::<O>(p, &it.item, w.row0), w.col0, acc) };
        } else {
            unsafe { w.store_partial(partial_tile(&p.work, it.item.partial_slot, t.tm * t.tn), t.tn, acc) };
        }
    }
}

#[cfg(target_feature = "sm_90a")]
mod hopper {
    use super::*;
    use crate::core::hopper::{Consumer, HopperOp, Maps, Slot, StageStream, load_a, load_b_box};
    use crate::core::work::ItemCursor;
    use blocksparse_abi::{BOX, WG_M, WgmmaTile, WorkParams, flags};

    /// B boxes of one stage at most (`tn / 64`).
    const MAX_BOXES: usize = 8;

    /// The producer's stream: every stage of an item loads the same tile rows of X and the
    /// same gathered columns of Y, at the next 64 of the item's K range. The column of each B
    /// box is computed when the item starts.
    pub struct SddmmStages {
        items: ItemCursor,
        item: WorkItem,
        /// First op(Y) column of each B box: box j holds columns 64 j .. of the tile, i.e.
        /// part `j % (bn / 64)` of block `j / (bn / 64)` (the item's first block past its last).
        box_col: [u32; MAX_BOXES],
        /// The next K chunk, and one past the item's last.
        kt: u32,
        k_end: u32,
    }

    impl StageStream for SddmmStages {
        type Params = SddmmParams;
        /// The K chunk (of 64) of the current item.
        type Stage = u32;

        #[inline(always)]
        unsafe fn new(_p: &SddmmParams, items: ItemCursor, _t: WgmmaTile, _producer: u32) -> Self {
            SddmmStages { items, item: WorkItem::default(), box_col: [0; MAX_BOXES], kt: 0, k_end: 0 }
        }

        #[inline(always)]
        unsafe fn next(&mut self, p: &SddmmParams) -> Option<u32> {
            if self.kt >= self.k_end {
                self.item = unsafe { self.items.next() }?;
                self.kt = self.item.k_begin;
                self.k_end = self.item.k_end;
                let n = self.item.blk_end - self.item.blk_begin;
                let col_idx = (p.col_idx as *const u32).wrapping_add(self.item.blk_begin as usize);
                // Boxes per block: 1 << parts_log2 (bn = 64 or 128).
                let parts_log2 = p.bn_log2 - 6;
                let mut j = 0;
                while j < MAX_BOXES {
                    // Constant j: the array stays in registers; the block is a global address.
                    let blk = (j as u32) >> parts_log2;
                    let q = if blk < n { blk } else { 0 };
                    let col = unsafe { ld_global_nc_u32(col_idx.wrapping_add(q as usize)) };
                    self.box_col[j] = (col << p.bn_log2) + (((j as u32) & ((1 << parts_log2) - 1)) << 6);
                    j += 1;
                }
            }
            let kt = self.kt;
            self.kt += 1;
            Some(kt)
        }

        #[inline(always)]
        unsafe fn issue(&self, p: &SddmmParams, kt: &u32, maps: &Maps, t: WgmmaTile, slot: Slot, full: u32, _consumers: u32) {
            let a_mn = p.flags & flags::A_MN_MAJOR != 0;
            let b_k = p.flags & flags::B_K_MAJOR != 0;
            let (k, batch) = (kt * WG_K, self.item.batch);
            unsafe {
                load_a(maps, t, a_mn, slot, k, self.item.tile_row << p.bm_log2, batch, full);
                let mut j = 0;
                while j < t.tn() / BOX {
                    load_b_box(maps, t, b_k, slot, j, self.box_col[j as usize], k, batch, full);
                    j += 1;
                }
            }
        }
    }

    impl HopperOp for Sddmm {
        type Params = SddmmParams;
        type Stream = SddmmStages;

        #[inline(always)]
        fn work(p: &SddmmParams) -> &WorkParams {
            &p.work
        }

        #[inline(always)]
        fn flags(p: &SddmmParams) -> u32 {
            p.flags
        }

        #[inline(always)]
        fn k_stages(_p: &SddmmParams, item: &WorkItem, _t: WgmmaTile) -> u32 {
            item.k_end - item.k_begin
        }

        #[inline(always)]
        unsafe fn store<O: Output>(p: &SddmmParams, item: &WorkItem, acc: &[f32; 128], c: &Consumer) {
            unsafe {
                if item.partial_slot == NO_SLOT {
                    c.store_blocks::<O>(&dest::<O>(p, item, c.wm * WG_M), acc);
                } else {
                    c.store_partial(&p.work, item.partial_slot, acc);
                }
            }
        }
    }
}
