//! The sparse iteration, planned once per sparsity pattern on the host.
//!
//! The kernel runs one thread block per [`WorkItem`]: a `(bm, bn)` tile of C and a run of the
//! block row's A blocks. The planner
//! - covers every (block row, N tile) exactly once, empty block rows included (they still owe
//!   `beta * C`);
//! - splits a block row whose work would dominate the launch (more than twice the fair share of
//!   one resident thread block, or more blocks than the kernel's column cache holds) into
//!   chunks whose f32 partial tiles the fix-up kernel sums in a fixed order (no atomics:
//!   bitwise-reproducible results);
//! - orders the items longest-first where lengths differ a lot (so a few long rows start early
//!   instead of finishing last), and otherwise in groups of `tile_group` N tiles walked row by
//!   row, every other group backwards: the thread blocks resident at one time share the same
//!   columns of B in L2, each block row of A is fetched from DRAM at most once per group instead
//!   of once per N tile, and a group starts on the A rows its predecessor left in L2.

use blocksparse_abi::{MAX_ITEM_BLOCKS, MmaTile, NO_SLOT, SplitGroup, WorkItem};

/// The host-side plan: what the kernels stream through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkList {
    /// One per thread block of the main kernel, in launch order.
    pub items: Vec<WorkItem>,
    /// Split C tiles, one per thread block of the fix-up kernel.
    pub groups: Vec<SplitGroup>,
    /// Number of `(bm, bn)` f32 partial tiles the split items write.
    pub n_slots: u32,
    /// N tiles per block row.
    pub n_tiles: u32,
    /// The longest item, in A blocks.
    pub max_item_blocks: u32,
    /// The split threshold used, in A blocks.
    pub split_limit: u32,
    /// For a persistent grid of `g` thread blocks: `g + 1` offsets into `items`; block `b` runs
    /// `items[schedule[b]..schedule[b + 1]]`. Empty for one-block-per-item launches.
    pub schedule: Vec<u32>,
}

/// Plans `C(M, n) = A · B` for the block-row structure `row_ptr` (length block rows + 1).
///
/// `bk` is the A block width; `resident` the number of thread blocks the GPU runs at once (SMs ×
/// blocks per SM); `tile_group` how many N tiles are walked together (1: N-tile-major).
/// Callers validate `row_ptr` first (monotone, starting at 0).
pub fn plan_work(row_ptr: &[u32], n: usize, tile: MmaTile, bk: u32, resident: u32, tile_group: u32) -> WorkList {
    let block_rows = row_ptr.len().saturating_sub(1);
    let n_tiles = n.div_ceil(tile.bn as usize).max(1) as u32;
    let row_len = |r: usize| row_ptr[r + 1] - row_ptr[r];

    // Fair share of one resident thread block, in A blocks (each block costs bm·bk·bn MACs).
    let total: u64 = (0..block_rows).map(|r| row_len(r) as u64).sum::<u64>() * n_tiles as u64;
    let fair = total.div_ceil(resident.max(1) as u64);
    // Never split below a few pipeline stages' worth of K: the fix-up would cost more.
    let min_chunk = (4 * tile.ks).div_ceil(bk).max(1) as u64;
    let split_limit = (2 * fair).max(min_chunk).min(MAX_ITEM_BLOCKS as u64) as u32;

    let mut items = Vec::new();
    let mut groups = Vec::new();
    let mut n_slots = 0u32;
    let tile_group = tile_group.clamp(1, n_tiles);
    // Odd groups walk the block rows backwards: a group then starts on the rows of A that the
    // previous one read last, which are the ones most likely still in L2 (walking forwards
    // again would reuse A in the order that an LRU cache evicts it).
    let cells = (0..n_tiles).step_by(tile_group as usize).enumerate().flat_map(|(g, g0)| {
        (0..block_rows).flat_map(move |i| {
            let r = if g % 2 == 0 { i } else { block_rows - 1 - i };
            (g0..(g0 + tile_group).min(n_tiles)).map(move |t| (r, t))
        })
    });
    for (r, t) in cells {
        let (begin, end) = (row_ptr[r], row_ptr[r + 1]);
        let len = end - begin;
        if len <= split_limit {
            items.push(WorkItem { block_row: r as u32, n_tile: t, blk_begin: begin, blk_end: end, partial_slot: NO_SLOT });
            continue;
        }
        let chunks = len.div_ceil(split_limit);
        groups.push(SplitGroup { block_row: r as u32, n_tile: t, first_slot: n_slots, n_slots: chunks });
        for c in 0..chunks {
            // Near-equal chunks: chunk c covers [len*c/chunks, len*(c+1)/chunks).
            let lo = begin + (len as u64 * c as u64 / chunks as u64) as u32;
            let hi = begin + (len as u64 * (c + 1) as u64 / chunks as u64) as u32;
            items.push(WorkItem { block_row: r as u32, n_tile: t, blk_begin: lo, blk_end: hi, partial_slot: n_slots + c });
        }
        n_slots += chunks;
    }

    // Longest-first for the items far above the mean; the stable sort keeps the grouped order
    // among the rest.
    let nonempty = items.iter().filter(|i| i.blk_end > i.blk_begin).count().max(1) as u64;
    let mean = items.iter().map(|i| (i.blk_end - i.blk_begin) as u64).sum::<u64>() / nonempty;
    let heavy = (2 * mean).max(1);
    items.sort_by_key(|i| {
        let len = (i.blk_end - i.blk_begin) as u64;
        if len >= heavy { u64::MAX - len } else { u64::MAX }
    });
    let max_item_blocks = items.iter().map(|i| i.blk_end - i.blk_begin).max().unwrap_or(0);
    WorkList { items, groups, n_slots, n_tiles, max_item_blocks, split_limit, schedule: Vec::new() }
}

/// Cost of an item in the scheduler's units: its A blocks, plus one for the epilogue (so that
/// empty items, which still write C, are spread too).
fn item_cost(i: &WorkItem) -> u64 {
    (i.blk_end - i.blk_begin) as u64 + 1
}

/// Assigns the items of `work` to a persistent grid of `grid` thread blocks: each item, in the
/// planned order (longest first, then the N-tile groups), goes to the least-loaded block (ties: the
/// lowest index). That is LPT list scheduling for the long items, and for the uniform rest it
/// deals items out in order, so the blocks resident at one time still share columns of B.
/// Reorders `items` block by block and fills `schedule`.
pub fn schedule_persistent(work: &mut WorkList, grid: u32) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let grid = grid.max(1) as usize;
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = (0..grid).map(|b| Reverse((0, b))).collect();
    let mut per_block: Vec<Vec<WorkItem>> = vec![Vec::new(); grid];
    for it in &work.items {
        let Some(Reverse((load, b))) = heap.pop() else { break };
        per_block[b].push(*it);
        heap.push(Reverse((load + item_cost(it), b)));
    }
    let mut schedule = Vec::with_capacity(grid + 1);
    let mut items = Vec::with_capacity(work.items.len());
    schedule.push(0);
    for list in per_block {
        items.extend(list);
        schedule.push(items.len() as u32);
    }
    work.items = items;
    work.schedule = schedule;
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocksparse_abi::MMA_TILES;

    fn row_ptr_from_lens(lens: &[u32]) -> Vec<u32> {
        let mut rp = vec![0];
        for l in lens {
            rp.push(rp.last().unwrap() + l);
        }
        rp
    }

    /// Every (row, tile) covered exactly once, chunks partition the row, slots consistent.
    fn check_cover(rp: &[u32], n: usize, tile: MmaTile, w: &WorkList) {
        let rows = rp.len() - 1;
        let n_tiles = n.div_ceil(tile.bn as usize);
        assert_eq!(w.n_tiles as usize, n_tiles);
        let mut covered = vec![vec![Vec::new(); n_tiles]; rows];
        for it in &w.items {
            assert!(it.blk_begin <= it.blk_end);
            assert!(it.blk_end - it.blk_begin <= MAX_ITEM_BLOCKS);
            covered[it.block_row as usize][it.n_tile as usize].push(*it);
        }
        let mut slots_seen = vec![0u32; w.n_slots as usize];
        for r in 0..rows {
            for t in 0..n_tiles {
                let mut v = covered[r][t].clone();
                assert!(!v.is_empty(), "row {r} tile {t} not covered");
                v.sort_by_key(|i| i.blk_begin);
                assert_eq!(v[0].blk_begin, rp[r]);
                assert_eq!(v.last().unwrap().blk_end, rp[r + 1]);
                for p in v.windows(2) {
                    assert_eq!(p[0].blk_end, p[1].blk_begin, "chunks of row {r} overlap or leave a gap");
                }
                if v.len() == 1 {
                    assert_eq!(v[0].partial_slot, NO_SLOT);
                } else {
                    let g = w.groups.iter().find(|g| g.block_row as usize == r && g.n_tile as usize == t).expect("split group");
                    assert_eq!(g.n_slots as usize, v.len());
                    for (c, it) in v.iter().enumerate() {
                        assert_eq!(it.partial_slot, g.first_slot + c as u32);
                        slots_seen[it.partial_slot as usize] += 1;
                    }
                }
            }
        }
        assert!(slots_seen.iter().all(|&s| s == 1), "every partial slot written exactly once");
    }

    #[test]
    fn covers_uniform_empty_and_skewed_rows() {
        let tile = MMA_TILES[2];
        let cases: Vec<Vec<u32>> = vec![
            vec![0; 7],                        // all rows empty
            vec![1],                           // one block
            vec![16; 64],                      // uniform
            vec![0, 128, 0, 3, 128, 1, 0, 2],  // skewed with empty rows
            vec![5000, 1, 1],                  // longer than the column cache
        ];
        for lens in cases {
            let rp = row_ptr_from_lens(&lens);
            for n in [1usize, 7, 129, 256, 257, 8192] {
                for resident in [1u32, 132, 264] {
                    let w = plan_work(&rp, n, tile, 64, resident, 1 + resident % 3);
                    check_cover(&rp, n, tile, &w);
                }
            }
        }
    }

    #[test]
    fn long_rows_are_split_and_scheduled_first() {
        let tile = MMA_TILES[2];
        // One row holds half of all blocks; N small so it would serialize the launch.
        let mut lens = vec![4u32; 255];
        lens.insert(100, 1020);
        let rp = row_ptr_from_lens(&lens);
        let w = plan_work(&rp, 64, tile, 64, 132, 1);
        check_cover(&rp, 64, tile, &w);
        let total: u32 = lens.iter().sum();
        assert!(w.max_item_blocks < 1020, "the long row must be split");
        // Balance: no item is longer than twice the fair share of a resident block (or the
        // minimum chunk).
        let fair = total.div_ceil(132);
        assert!(w.max_item_blocks <= (2 * fair).max(4 * tile.ks / 64 + 1), "max item {}", w.max_item_blocks);
        // Longest first.
        let first = w.items[0].blk_end - w.items[0].blk_begin;
        assert_eq!(first, w.max_item_blocks);
    }

    #[test]
    fn persistent_schedule_is_balanced_and_complete() {
        let tile = MMA_TILES[2];
        // Two full rows among light ones: the skewed benchmark pattern.
        let mut lens = vec![14u32; 126];
        lens.insert(10, 128);
        lens.insert(90, 128);
        let rp = row_ptr_from_lens(&lens);
        for grid in [1u32, 7, 132] {
            let mut w = plan_work(&rp, 8192, tile, 64, grid, 2);
            let before = w.items.clone();
            schedule_persistent(&mut w, grid);
            check_cover(&rp, 8192, tile, &w);
            assert_eq!(w.schedule.len(), grid as usize + 1);
            assert_eq!(*w.schedule.last().unwrap() as usize, w.items.len());
            let mut a = before.clone();
            let mut b = w.items.clone();
            a.sort_by_key(|i| (i.n_tile, i.block_row, i.blk_begin));
            b.sort_by_key(|i| (i.n_tile, i.block_row, i.blk_begin));
            assert_eq!(a, b, "same items, only reordered");
            // List-scheduling bound: max load <= mean load + longest item.
            let loads: Vec<u64> = w.schedule.windows(2).map(|r| w.items[r[0] as usize..r[1] as usize].iter().map(item_cost).sum()).collect();
            let total: u64 = loads.iter().sum();
            let longest = w.items.iter().map(item_cost).max().unwrap();
            let max = *loads.iter().max().unwrap();
            assert!(max <= total / grid as u64 + longest, "max {max} total {total} longest {longest}");
        }
    }

    #[test]
    fn uniform_rows_walk_groups_in_alternating_row_order() {
        let tile = MMA_TILES[2];
        let rp = row_ptr_from_lens(&vec![16; 128]);
        let w = plan_work(&rp, 8192, tile, 64, 264, 1);
        assert!(w.groups.is_empty());
        assert_eq!(w.items.len(), 128 * 32);
        for (i, it) in w.items.iter().enumerate() {
            assert_eq!(it.n_tile as usize, i / 128);
            let k = i % 128;
            assert_eq!(it.block_row as usize, if (i / 128) % 2 == 0 { k } else { 127 - k });
        }
        // Groups of 3 N tiles (32 = 10 × 3 + 2): row by row within each group, odd groups
        // from the last row up.
        let w = plan_work(&rp, 8192, tile, 64, 264, 3);
        check_cover(&rp, 8192, tile, &w);
        let mut i = 0;
        for (g, g0) in (0..32).step_by(3).enumerate() {
            for k in 0..128 {
                let r = if g % 2 == 0 { k } else { 127 - k };
                for t in g0..(g0 + 3).min(32) {
                    assert_eq!((w.items[i].block_row as usize, w.items[i].n_tile as usize), (r, t));
                    i += 1;
                }
            }
        }
    }
}
