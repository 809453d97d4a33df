//! Which work the thread block does: one host-planned [`WorkItem`] per block, in the order the
//! planner chose (longest items first, then N-tile-major for L2 reuse of B).

use blocksparse_abi::WorkItem;

use crate::ptx::ld_global_nc_u32;

/// The work item of thread block `index`.
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
