//! Which work a thread block does: the host plan's [`WorkItem`]s, in the order the planner chose
//! (longest items first, then N tiles in L2-sized groups walked row by row, every other group
//! backwards). The portable kernel
//! runs item `blockIdx.x`; the persistent Hopper kernel runs the range the planner dealt it.

use blocksparse_abi::WorkItem;

use crate::ptx::ld_global_nc_u32;

/// Work item `index` of the plan.
#[inline(always)]
pub unsafe fn work_item(items: u64, index: u32) -> WorkItem {
    let p = (items as *const WorkItem).wrapping_add(index as usize) as *const u32;
    unsafe {
        WorkItem {
            block_row: ld_global_nc_u32(p),
            n_tile: ld_global_nc_u32(p.wrapping_add(1)),
            blk_begin: ld_global_nc_u32(p.wrapping_add(2)),
            blk_end: ld_global_nc_u32(p.wrapping_add(3)),
            partial_slot: ld_global_nc_u32(p.wrapping_add(4)),
        }
    }
}
