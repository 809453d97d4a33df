//! The work source shared by every op: the host plan's [`WorkItem`]s, in the order the planner
//! chose. A portable kernel runs item `blockIdx.x`; a persistent Hopper kernel runs the range
//! `schedule[b] .. schedule[b + 1]` the planner dealt thread block `b`, fetching each item's
//! descriptor one item ahead of its use.

use blocksparse_abi::{WorkItem, WorkParams};

use crate::ptx::{block_idx, ld_global_nc_u32};

/// Work item `index` of the plan.
#[inline(always)]
pub unsafe fn work_item(items: u64, index: u32) -> WorkItem {
    let p = (items as *const WorkItem).wrapping_add(index as usize) as *const u32;
    unsafe {
        WorkItem {
            tile_row: ld_global_nc_u32(p),
            n_tile: ld_global_nc_u32(p.wrapping_add(1)),
            blk_begin: ld_global_nc_u32(p.wrapping_add(2)),
            blk_end: ld_global_nc_u32(p.wrapping_add(3)),
            partial_slot: ld_global_nc_u32(p.wrapping_add(4)),
            batch: ld_global_nc_u32(p.wrapping_add(5)),
            k_begin: ld_global_nc_u32(p.wrapping_add(6)),
            k_end: ld_global_nc_u32(p.wrapping_add(7)),
        }
    }
}

/// The item of a one-block-per-item launch.
#[inline(always)]
pub unsafe fn this_block_item(w: &WorkParams) -> WorkItem {
    unsafe { work_item(w.items, block_idx()) }
}

/// A persistent thread block's items, in plan order, each descriptor loaded one item ahead.
#[cfg(target_feature = "sm_90a")]
pub struct ItemCursor {
    items: u64,
    idx: u32,
    end: u32,
    next: WorkItem,
}

#[cfg(target_feature = "sm_90a")]
impl ItemCursor {
    /// This thread block's share: `schedule[b] .. schedule[b + 1]` (host-planned).
    #[inline(always)]
    pub unsafe fn mine(w: &WorkParams) -> Self {
        let s = (w.schedule as *const u32).wrapping_add(block_idx() as usize);
        let (idx, end) = unsafe { (ld_global_nc_u32(s), ld_global_nc_u32(s.wrapping_add(1))) };
        let next = if idx < end { unsafe { work_item(w.items, idx) } } else { WorkItem::default() };
        ItemCursor { items: w.items, idx, end, next }
    }

    /// The item [`ItemCursor::next`] returns next, if any (its descriptor already loaded).
    #[inline(always)]
    pub fn peek(&self) -> Option<WorkItem> {
        if self.idx < self.end { Some(self.next) } else { None }
    }

    /// The next item (and the load of the one after it issued), or `None` at the end.
    #[inline(always)]
    pub unsafe fn next(&mut self) -> Option<WorkItem> {
        if self.idx >= self.end {
            return None;
        }
        let item = self.next;
        self.idx += 1;
        if self.idx < self.end {
            self.next = unsafe { work_item(self.items, self.idx) };
        }
        Some(item)
    }
}
