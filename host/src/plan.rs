//! The sparse iteration, planned once per sparsity pattern on the host: which thread block
//! computes which output tile over which blocks, for every op.
//!
//! SpMM-like ops ([`plan_rows`]) run one work item per `(tile row, N tile, matrix)`: a `(tm, tn)`
//! output tile accumulated over a run of the row's blocks. The planner
//! - covers every (tile row, N tile, matrix) exactly once, empty rows included (they still owe
//!   `beta · C`), or, where the caller names the live tiles (`plan_live_rows`, crate-internal:
//!   a product whose C is read only at some blocks), every live one;
//! - splits a row whose work would dominate the launch (more than twice the fair share of one
//!   resident thread block, or more blocks than the portable kernel's block cache holds) into
//!   chunks whose f32 partial tiles the fix-up kernel sums in a fixed order (no atomics:
//!   bitwise-reproducible results);
//! - orders the items longest-first where lengths differ a lot (so a few long rows start early
//!   instead of finishing last; by N-tile group, so that they share B's columns in L2), and
//!   otherwise, matrix by matrix, in groups of `tile_group` N
//!   tiles walked row by row, every other group backwards: the thread blocks resident at one
//!   time share the same columns of B in L2, each row of A is fetched from DRAM at most once per
//!   group instead of once per N tile, and a group starts on the A rows its predecessor left in
//!   L2. (Light items behind long rows keep this order: v18.3 walked them by K instead, which
//!   measured up to 6 % slower once the long rows ran by N-tile group, perf notes v23.)
//!
//! SDDMM ([`plan_blocks`]) runs one item per run of at most `per_item` blocks of a block row;
//! every item costs the full K, so [`balance_full_k`] splits the K of the items that would run
//! in a last, partly idle wave over all thread blocks (stream-K), with the same fix-up.
//!
//! [`schedule_persistent`] deals the items of either kind to a persistent grid.

use blocksparse_abi::{BlockOut, DenseOut, FixupParams, NO_SLOT, SplitGroup, WORK_ITEM_WORDS, WorkItem, WorkParams, fixup_parts};
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr, SyncOnDrop};

use crate::error::{Error, Result};
use crate::kernels::Kernel;
use crate::launch::launch;

/// The host-side plan: what the kernels stream through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkList {
    /// One per thread block of the main kernel (one-block-per-item launches), in launch order.
    pub items: Vec<WorkItem>,
    /// Split output tiles, one per thread block of the fix-up kernel.
    pub groups: Vec<SplitGroup>,
    /// Number of `(tm, tn)` f32 partial tiles the split items write.
    pub n_slots: u32,
    /// The longest item, in blocks.
    pub max_item_blocks: u32,
    /// For a persistent grid of `g` thread blocks: `g + 1` offsets into `items`; block `b` runs
    /// `items[schedule[b]..schedule[b + 1]]`. Empty for one-block-per-item launches.
    pub schedule: Vec<u32>,
}

/// Items a launch may hold (the grid's x extent of one-block-per-item launches).
const MAX_ITEMS: u64 = i32::MAX as u64;

/// What [`plan_rows`] plans: `row_ptr` (rows + 1 entries, monotone from 0) gives each tile row's
/// blocks; every row has `n_tiles` N tiles; `batch` matrices share the pattern.
#[derive(Clone, Copy, Debug)]
pub struct RowsSpec<'a> {
    /// Block pointers of the tile rows.
    pub row_ptr: &'a [u32],
    /// N tiles per row.
    pub n_tiles: u32,
    /// Matrices.
    pub batch: u32,
    /// K extent of one block.
    pub kb: u32,
    /// K depth of one pipeline stage.
    pub ks: u32,
    /// Thread blocks the GPU runs at once.
    pub resident: u32,
    /// N tiles walked together (1: N-tile-major).
    pub tile_group: u32,
    /// Stream positions one item may hold at most (the portable kernel's block cache of
    /// [`MAX_ITEM_BLOCKS`](blocksparse_abi::MAX_ITEM_BLOCKS) words; `u32::MAX` for a kernel without one): longer rows are split.
    pub max_item_blocks: u32,
}

/// A `row_ptr` the planners can walk: from 0, never decreasing (patterns made by the library
/// are; the planners are public, so they check).
fn check_row_ptr(row_ptr: &[u32]) -> Result<()> {
    if let Some(&first) = row_ptr.first()
        && first != 0
    {
        return Err(Error::RowPtrStart { got: first as usize });
    }
    match row_ptr.windows(2).position(|w| w[1] < w[0]) {
        Some(row) => Err(Error::RowPtrNotMonotone { row, start: row_ptr[row] as usize, end: row_ptr[row + 1] as usize }),
        None => Ok(()),
    }
}

/// Plans an SpMM-like op (see the module docs). Fails with [`Error::TooLarge`] before
/// allocating anything proportional to the work when the plan would exceed the launch limits.
pub fn plan_rows(spec: RowsSpec) -> Result<WorkList> {
    plan_live_rows(spec, None)
}

/// [`plan_rows`] of the `(tile row, N tile)` cells `live` names (row-major, `rows · n_tiles`
/// entries; `None`: all of them): the others get no item, and their output tiles are not
/// written (the dense-B route of BSR × BSR, whose product is read only at C's blocks). A live
/// cell's items are the same as in the plan of every cell (its row split into the same chunks),
/// so its tile's sum does not depend on which other cells are live.
pub(crate) fn plan_live_rows(spec: RowsSpec, live: Option<&[bool]>) -> Result<WorkList> {
    let RowsSpec { row_ptr, n_tiles, batch, kb, ks, resident, tile_group, max_item_blocks } = spec;
    check_row_ptr(row_ptr)?;
    let rows = row_ptr.len().saturating_sub(1);
    let n_tiles = n_tiles.max(1);
    if let Some(live) = live
        && live.len() as u128 != rows as u128 * n_tiles as u128
    {
        return Err(Error::Internal(format!("{} live cells for {rows} tile rows of {n_tiles} N tiles", live.len())));
    }
    let is_live = |r: usize, t: u32| live.is_none_or(|l| l[r * n_tiles as usize + t as usize]);
    // N tiles planned per row.
    let row_tiles =
        |r: usize| live.map_or(n_tiles as u64, |l| l[r * n_tiles as usize..][..n_tiles as usize].iter().filter(|&&x| x).count() as u64);
    let row_len = |r: usize| row_ptr[r + 1] - row_ptr[r];
    // In u128: rows · tiles · batch can pass 2^64 (found by the property tests).
    let cells = rows as u128 * n_tiles as u128 * batch as u128;
    if cells > MAX_ITEMS as u128 {
        return Err(Error::TooLarge {
            what: "work items (tile rows x N tiles x batch)",
            value: usize::try_from(cells).unwrap_or(usize::MAX),
        });
    }

    // Fair share of one resident thread block, in blocks (each costs tm·kb·tn MACs). Within
    // u64: blocks < 2^32 and tiles · batch ≤ cells < 2^31.
    // (Over every cell, live or not: a row's chunks are then the same whichever of its cells
    // are live, and so is each tile's sum, bit for bit.)
    let blocks: u64 = row_ptr.last().copied().unwrap_or(0) as u64;
    let total = blocks * n_tiles as u64 * batch as u64;
    let fair = total.div_ceil(resident.max(1) as u64);
    // Never split below a few pipeline stages' worth of K: the fix-up would cost more.
    let min_chunk = (4 * ks).div_ceil(kb.max(1)).max(1) as u64;
    let split_limit = (2 * fair).max(min_chunk).min(max_item_blocks.max(1) as u64) as u32;
    let n_items: u64 = (0..rows).map(|r| row_len(r).div_ceil(split_limit).max(1) as u64 * row_tiles(r)).sum::<u64>() * batch as u64;
    if n_items > MAX_ITEMS {
        return Err(Error::TooLarge { what: "work items", value: n_items as usize });
    }

    let mut items = Vec::with_capacity(n_items as usize);
    let mut groups = Vec::new();
    let mut n_slots = 0u32;
    let tile_group = tile_group.clamp(1, n_tiles);
    for b in 0..batch {
        // Odd groups walk the rows backwards: a group then starts on the rows of A that the
        // previous one read last, which are the ones most likely still in L2 (walking forwards
        // again would reuse A in the order that an LRU cache evicts it).
        let cells = (0..n_tiles).step_by(tile_group as usize).enumerate().flat_map(|(g, g0)| {
            (0..rows).flat_map(move |i| {
                let r = if g % 2 == 0 { i } else { rows - 1 - i };
                (g0..(g0 + tile_group).min(n_tiles)).map(move |t| (r, t))
            })
        });
        let cells = cells.filter(|&(r, t)| is_live(r, t));
        for (r, t) in cells {
            let (begin, end) = (row_ptr[r], row_ptr[r + 1]);
            let len = end - begin;
            let tile_row = r as u32;
            if len <= split_limit {
                items.push(WorkItem {
                    tile_row,
                    n_tile: t,
                    blk_begin: begin,
                    blk_end: end,
                    partial_slot: NO_SLOT,
                    batch: b,
                    ..Default::default()
                });
                continue;
            }
            let chunks = len.div_ceil(split_limit);
            groups.push(SplitGroup { tile_row, n_tile: t, first_slot: n_slots, n_slots: chunks, batch: b, ..Default::default() });
            for c in 0..chunks {
                // Near-equal chunks: chunk c covers [len*c/chunks, len*(c+1)/chunks).
                let lo = begin + (len as u64 * c as u64 / chunks as u64) as u32;
                let hi = begin + (len as u64 * (c + 1) as u64 / chunks as u64) as u32;
                items.push(WorkItem {
                    tile_row,
                    n_tile: t,
                    blk_begin: lo,
                    blk_end: hi,
                    partial_slot: n_slots + c,
                    batch: b,
                    ..Default::default()
                });
            }
            n_slots = n_slots.checked_add(chunks).ok_or(Error::Overflow { what: "split-K slots" })?;
        }
    }

    heavy_first_by_group(&mut items, tile_group);
    let max_item_blocks = items.iter().map(|i| i.blk_end - i.blk_begin).max().unwrap_or(0);
    Ok(WorkList { items, groups, n_slots, max_item_blocks, schedule: Vec::new() })
}

/// Moves the items (work items, or the stream rows of a reordered merge) whose length is at
/// least twice the mean over the non-empty ones to the front, ordered by `group` and longest
/// first within a group (a few long items start early
/// instead of finishing last); the stable sort keeps the planned order among the rest.
/// Returns how many items are heavy (the moved prefix).
pub(crate) fn heavy_first<T>(items: &mut [T], len: impl Fn(&T) -> u64, group: impl Fn(&T) -> u64) -> usize {
    let heavy = heavy_len(items, &len);
    items.sort_by_key(|i| {
        let l = len(i);
        if l >= heavy { (0, group(i), u64::MAX - l) } else { (1, 0, 0) }
    });
    items.iter().take_while(|i| len(i) >= heavy).count()
}

/// [`heavy_first`] for a [`plan_rows`] plan walked in groups of `tile_group` N tiles: the
/// heavy items matrix by matrix and N-tile group by group. The heavy items running at one time
/// then share the B columns of a few groups instead of reading all of B: with a dozen full rows
/// of 256 blocks (heavy-tailed 32×32 blocks, 8192³, merged in fours), longest first over the
/// whole plan put all 32 N tiles of the longest rows in the first wave, which read all of B
/// from DRAM again for every wave of heavy items (perf notes v22).
fn heavy_first_by_group(items: &mut [WorkItem], tile_group: u32) {
    let tile_group = tile_group.max(1);
    heavy_first(items, |i| (i.blk_end - i.blk_begin) as u64, |i| (i.batch as u64) << 32 | (i.n_tile / tile_group) as u64);
}

/// The largest N-tile group that [`default_tile_group`] picks where B's strips are not all live
/// at once. Measured (perf notes v32, 8192³, H100): the sliding-window and block-diagonal masks,
/// whose live fraction allows 16 or more, ran within −3 … +3 % at 16 tiles of their time at 8
/// at every block size: no gain was measured past 8.
pub(crate) const MAX_LIVE_TILE_GROUP: u32 = 8;

/// The mean fraction of B's K extent that a walk over the stream rows in order keeps live: a
/// K block of B is live from the first row that uses it to the last, and
///
/// ```text
/// live = Σ_k (last(k) − first(k) + 1) / (rows · k_blocks)      (k over the used K blocks)
/// ```
///
/// About 1 for random rows (every K block is used from the first rows to the last), ½ for a
/// causal mask (K block k from row k on), `band / rows` for a band. 1 where nothing is known
/// (no rows or no K). `kidx`: each position's K-block index (`row_ptr` indexes it).
pub(crate) fn b_live_fraction(row_ptr: &[u32], kidx: &[u32], k_blocks: usize) -> f64 {
    let rows = row_ptr.len().saturating_sub(1);
    if rows == 0 || k_blocks == 0 {
        return 1.0;
    }
    // (first row, last row) that use each K block; u32::MAX: unused.
    let mut span = vec![(u32::MAX, 0u32); k_blocks];
    for (r, w) in row_ptr.windows(2).enumerate() {
        for &k in kidx.get(w[0] as usize..w[1] as usize).unwrap_or(&[]) {
            if let Some(s) = span.get_mut(k as usize) {
                s.0 = s.0.min(r as u32);
                s.1 = r as u32;
            }
        }
    }
    let live: u64 = span.iter().filter(|s| s.0 != u32::MAX).map(|s| (s.1 - s.0) as u64 + 1).sum();
    live as f64 / (rows as f64 * k_blocks as f64)
}

/// The default N-tile group of an SpMM-like plan ([`RowsSpec::tile_group`]): as many `K × tn`
/// strips of B (`strip` bytes each) as fit in a sixth of L2 (`l2_bytes`), counting of each strip
/// the fraction `live` ([`b_live_fraction`]) that the walk keeps live at one time (a third of
/// one of the two L2 halves, each of which keeps its own copy of what the SMs beside it read:
/// perf notes v9; the live fraction: v32). Where the live fraction lets more strips fit than
/// whole strips do, at most [`MAX_LIVE_TILE_GROUP`]. Each group re-reads A from DRAM, so the
/// larger group pays where A is large (causal masks: v31 item 11).
///
/// Where the strips are all live (their live parts let no more of them fit than whole strips
/// do: with the floors, a live fraction above `whole / (whole + 1)`) and the `resident` thread
/// blocks hold every one of the walk's `walk_rows` stream rows at once, at most `⌊sms /
/// walk_rows⌋` strips (at least one), `sms` the GPU's SMs: each strip's rows then spread over
/// every SM. `walk_rows` 0: the rule does not apply (the SpMM planner passes 0 for batches,
/// where it is unmeasured). Measured (perf notes v35 item 7, v36, H100, uniform 12.5 %, rows
/// alternated), against the strips that fit:
///
/// ```text
/// tile (resident blocks)       rows  fit  rule  the rule's group's time ÷ the fit one's
/// 8192³ 16×16 portable (528)    512    2    1   0.97–0.98 (top-16 0.98)
/// 8192³ 32×32 portable (528)    256    2    1   0.98–1.00 (every pair)
/// 4096³ 16×16 portable (528)    256    4    1   0.95–0.96
/// 4096³ 32×32 portable (528)    128    4    1   0.99–1.01
/// 8192³ 64×64 Hopper (132)      128    1    1   (tn = 512; two strips 0.99–1.01 of one)
/// 4096³ 64×64 Hopper (132)       64    2    2   (four strips 1.05 of two, one 1.03)
/// 8192³ 128×128 Hopper (132)     64    2    2
/// ```
pub(crate) fn default_tile_group(l2_bytes: u64, strip: u64, live: f64, walk_rows: u64, resident: u32, sms: u32) -> u32 {
    let budget = l2_bytes / 6;
    let whole = (budget / strip.max(1)).clamp(1, u32::MAX as u64) as u32;
    let live = if live.is_finite() { live.clamp(0.0, 1.0) } else { 1.0 };
    // Strips whose live parts fit (f64: exact below 2^53), then capped.
    let fit_live = if live > 0.0 { budget as f64 / (strip.max(1) as f64 * live) } else { f64::INFINITY };
    let all_live = fit_live < whole as f64 + 1.0;
    let by_live = fit_live.min(MAX_LIVE_TILE_GROUP as f64) as u32;
    if all_live && walk_rows > 0 && walk_rows <= resident as u64 {
        // One wave holds the walk's rows: as many strips as spread their rows over every SM.
        return whole.min(((sms as u64 / walk_rows) as u32).max(1));
    }
    whole.max(by_live)
}

/// The length from which [`heavy_first`] counts an item as heavy: [`heavy_threshold`] of the
/// items' lengths.
fn heavy_len<T>(items: &[T], len: impl Fn(&T) -> u64) -> u64 {
    heavy_threshold(items.iter().map(len))
}

/// The length from which one of `lens` counts as heavy: twice the mean over the non-empty ones
/// (the mean rounded down), at least 1. Shared by the planners' heavy items and the reordered
/// merges' heavy rows.
pub(crate) fn heavy_threshold(lens: impl Iterator<Item = u64>) -> u64 {
    let (sum, nonempty) = lens.fold((0u64, 0u64), |(s, n), l| (s + l, n + (l > 0) as u64));
    (2 * (sum / nonempty.max(1))).max(1)
}

/// Plans SDDMM: for each matrix and block row, its blocks in runs of at most `per_item`, row
/// by row (the runs of one row, which read the same rows of X, run side by side), each over the
/// whole K of `k_chunks` chunks. [`balance_full_k`] then splits the K of the items that would
/// otherwise run in a last, partly idle wave.
pub fn plan_blocks(row_ptr: &[u32], per_item: u32, batch: u32, k_chunks: u32) -> Result<WorkList> {
    check_row_ptr(row_ptr)?;
    let per_item = per_item.max(1);
    let rows = row_ptr.len().saturating_sub(1);
    let per_batch: u64 = (0..rows).map(|r| (row_ptr[r + 1] - row_ptr[r]).div_ceil(per_item) as u64).sum();
    let n_items = per_batch as u128 * batch as u128;
    if n_items > MAX_ITEMS as u128 {
        return Err(Error::TooLarge { what: "work items", value: usize::try_from(n_items).unwrap_or(usize::MAX) });
    }
    let mut items = Vec::with_capacity(n_items as usize);
    for b in 0..batch {
        for r in 0..rows {
            let (begin, end) = (row_ptr[r], row_ptr[r + 1]);
            let mut lo = begin;
            while lo < end {
                let hi = lo.saturating_add(per_item).min(end);
                items.push(WorkItem {
                    tile_row: r as u32,
                    n_tile: 0,
                    blk_begin: lo,
                    blk_end: hi,
                    partial_slot: NO_SLOT,
                    batch: b,
                    k_begin: 0,
                    k_end: k_chunks,
                });
                lo = hi;
            }
        }
    }
    let max_item_blocks = items.iter().map(|i| i.blk_end - i.blk_begin).max().unwrap_or(0);
    Ok(WorkList { items, groups: Vec::new(), n_slots: 0, max_item_blocks, schedule: Vec::new() })
}

/// See [`balance_full_k`]: a split must save each thread block this many times `min_piece`
/// chunks.
pub const SPLIT_MIN_SAVING: u64 = 4;

/// Smallest K piece, in chunks, worth splitting an item of a `(tm, tn)` tile into: twice the
/// chunks whose operand bytes (`(tm + tn) · chunk · 2`) match the f32 partial tile's round trip
/// (written by the piece, read back by the fix-up: `tm · tn · 8` bytes), so that a piece spends
/// at most about a third of its traffic on the split.
pub fn min_piece_chunks(tm: u32, tn: u32, chunk: u32) -> u32 {
    let round_trip = tm as u64 * tn as u64 * 8;
    let per_chunk = (tm as u64 + tn as u64) * chunk as u64 * 2;
    (2 * round_trip.div_ceil(per_chunk.max(1))).clamp(2, u32::MAX as u64) as u32
}

/// Balances a persistent plan whose items all cost the same `k_chunks` K chunks (SDDMM) over
/// `grid` thread blocks. With `n` items, `n / grid` full waves run whole items; the rest would
/// leave a last wave partly idle, so the K range of the items of that last stretch (the tail
/// alone when it fills at most half a wave, else the tail and the last full wave) is cut into
/// `grid` near-equal shares of chunks, one per thread block (stream-K), at least `min_piece`
/// chunks each, snapped to item edges within half of that. An item cut into pieces becomes
/// one [`SplitGroup`]: each piece writes an f32 partial tile to its slot, in K order, and the
/// fix-up kernel sums them in slot order (bitwise reproducible).
///
/// The split costs the partial tiles' round trip and a second launch, so it is made only where
/// it saves each thread block at least [`SPLIT_MIN_SAVING`] × `min_piece` chunks of the idle
/// tail (measured on the H100, perf notes v13: saving 16 chunks of a 128-row tile lost 13 %,
/// saving 120 gained 33 %).
///
/// Whole items go to thread block `i % grid` in plan order (the blocks resident at one time
/// share rows of X), then each block's share; `schedule` gets each block's range. The caller
/// allocates the `n_slots` partial tiles.
pub fn balance_full_k(work: &mut WorkList, k_chunks: u32, grid: u32, min_piece: u32) -> Result<()> {
    let g = grid.max(1) as u64;
    let n = work.items.len() as u64;
    let (full, tail) = (n / g, n % g);
    let min_piece = min_piece.max(1) as u64;
    let k = k_chunks as u64;
    // Chunks of idle tail each block saves: the makespan drops from (full + 1)·k to about
    // (full + tail / g)·k.
    let saves = k * (g - tail) / g;
    let region = if tail == 0 || saves < SPLIT_MIN_SAVING * min_piece {
        0
    } else if 2 * tail <= g || full == 0 {
        tail
    } else {
        tail + g
    };
    let whole = (n - region) as usize;
    // Per thread block: its whole items, then (below) its share of the region.
    let mut per_block: Vec<Vec<WorkItem>> = vec![Vec::new(); g as usize];
    for (i, it) in work.items[..whole].iter().enumerate() {
        per_block[i % g as usize].push(*it);
    }
    let mut groups = Vec::new();
    let mut n_slots = 0u32;
    if region > 0 {
        let units = region * k;
        let used = g.min(units / min_piece).max(1);
        // Share boundaries in units (item `u / k`, chunk `u % k`), snapped to item edges.
        let bounds: Vec<u64> = (0..=used)
            .map(|c| {
                let b = c * units / used;
                let off = b % k;
                if off != 0 && 2 * off < min_piece {
                    b - off
                } else if off != 0 && 2 * (k - off) < min_piece {
                    b + (k - off)
                } else {
                    b
                }
            })
            .collect();
        // Pieces of each region item, in K order: (block, k_begin, k_end).
        let mut pieces: Vec<Vec<(usize, u32, u32)>> = vec![Vec::new(); region as usize];
        for c in 0..used as usize {
            let (mut lo, hi) = (bounds[c], bounds[c + 1]);
            while lo < hi {
                let item = lo / k;
                let end = ((item + 1) * k).min(hi);
                pieces[item as usize].push((c, (lo - item * k) as u32, (end - item * k) as u32));
                lo = end;
            }
        }
        for (r, ps) in pieces.iter().enumerate() {
            let base = work.items[whole + r];
            if let [(c, _, _)] = ps[..] {
                per_block[c].push(base);
                continue;
            }
            let count = u32::try_from(ps.len()).map_err(|_| Error::Overflow { what: "split-K slots" })?;
            groups.push(SplitGroup {
                tile_row: base.tile_row,
                n_tile: base.n_tile,
                first_slot: n_slots,
                n_slots: count,
                batch: base.batch,
                blk_begin: base.blk_begin,
                blk_end: base.blk_end,
            });
            for (j, &(c, k_begin, k_end)) in ps.iter().enumerate() {
                per_block[c].push(WorkItem { partial_slot: n_slots + j as u32, k_begin, k_end, ..base });
            }
            n_slots = n_slots.checked_add(count).ok_or(Error::Overflow { what: "split-K slots" })?;
        }
    }
    set_schedule(work, per_block);
    work.groups = groups;
    work.n_slots = n_slots;
    Ok(())
}

/// Lays `per_block`'s lists out one after the other as `work`'s items, with `schedule` the
/// offsets of each thread block's range.
fn set_schedule(work: &mut WorkList, per_block: Vec<Vec<WorkItem>>) {
    let mut schedule = Vec::with_capacity(per_block.len() + 1);
    let mut items = Vec::with_capacity(per_block.iter().map(Vec::len).sum());
    schedule.push(0);
    for list in per_block {
        items.extend(list);
        schedule.push(items.len() as u32);
    }
    work.items = items;
    work.schedule = schedule;
}

/// Cost of an SpMM item in the scheduler's units: its blocks, plus one for the epilogue (so
/// that empty items, which still write C, are spread too).
pub fn row_item_cost(i: &WorkItem) -> u64 {
    (i.blk_end - i.blk_begin) as u64 + 1
}

/// Assigns the items of `work` to a persistent grid of `grid` thread blocks: each item, in the
/// planned order, goes to the least-loaded block by `cost` (ties: the lowest index). That is
/// LPT list scheduling for the long items, and for the uniform rest it deals items out in
/// order, so the blocks resident at one time still share columns of B. Reorders `items` block
/// by block and fills `schedule`.
pub fn schedule_persistent(work: &mut WorkList, grid: u32, cost: impl Fn(&WorkItem) -> u64) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let grid = grid.max(1) as usize;
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = (0..grid).map(|b| Reverse((0, b))).collect();
    let mut per_block: Vec<Vec<WorkItem>> = vec![Vec::new(); grid];
    for it in &work.items {
        let Some(Reverse((load, b))) = heap.pop() else { break };
        per_block[b].push(*it);
        heap.push(Reverse((load + cost(it), b)));
    }
    set_schedule(work, per_block);
}

/// [`schedule_persistent`] with the last `tail` items of the plan dealt longest first (LPT
/// list scheduling of the tail): the items before them go out in plan order as there, and the
/// tail, sorted by `cost` (ties keep plan order), then evens out the blocks' loads, where items
/// dealt in plan order leave the blocks up to one long item apart. The items running at one
/// time still come from the end of the plan, so a `tail` within the plan's last group or two of
/// N tiles keeps them on the same columns of B (perf notes v33: over 50 % × 50 % 128×128
/// blocks, where A and B exceed L2, a tail of 4 × 132 items dealt best-fit measured 4 % slower
/// than 2 × 132 dealt the same way).
pub fn schedule_persistent_lpt_tail(work: &mut WorkList, grid: u32, cost: impl Fn(&WorkItem) -> u64, tail: usize) {
    let n = work.items.len();
    let tail = tail.min(n);
    work.items[n - tail..].sort_by_cached_key(|i| std::cmp::Reverse(cost(i)));
    schedule_persistent(work, grid, cost);
}

/// A work list on the device, with the split-K workspace it needs.
pub(crate) struct DeviceWork {
    items: CudaSlice<u32>,
    schedule: Option<CudaSlice<u32>>,
    groups: Option<CudaSlice<u32>>,
    partials: Option<CudaSlice<f32>>,
    /// Thread blocks of the main launch.
    pub grid: u32,
    /// Thread blocks of the fix-up launch (0 without split items).
    pub fixup_grid: u32,
    /// The split-K workspace's user.
    busy: Exclusive,
}

/// A workspace a plan owns and its products write: the event recorded after the last product
/// that used it (the write intent that a guard taken through the plan's `&self` cannot
/// express); its lock also serializes the products of one plan queued from several threads.
#[derive(Default)]
pub(crate) struct Exclusive {
    last_use: Mutex<Option<CudaEvent>>,
}

impl Exclusive {
    /// Exclusive use for one product on `stream` where `active` (the workspace is written):
    /// `stream` waits for the previous product that used it (on whatever stream it was
    /// queued), and [`WorkspaceUse::release`] marks it busy until this product's launches are
    /// done.
    pub fn acquire<'a>(&'a self, cuda: &'a Arc<CudaContext>, stream: &'a Arc<CudaStream>, active: bool) -> Result<WorkspaceUse<'a>> {
        let last_use = self.last_use.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if active && let Some(previous) = last_use.as_ref() {
            stream.wait(previous)?;
        }
        Ok(WorkspaceUse { last_use, cuda, stream, active })
    }
}

/// One product's use of a plan's workspace (see [`Exclusive::acquire`]).
pub(crate) struct WorkspaceUse<'a> {
    last_use: MutexGuard<'a, Option<CudaEvent>>,
    cuda: &'a Arc<CudaContext>,
    stream: &'a Arc<CudaStream>,
    /// The workspace is written (the event still to be recorded).
    active: bool,
}

impl WorkspaceUse<'_> {
    /// Marks the workspace busy until the work queued so far on the stream is done.
    pub fn release(mut self) -> Result<()> {
        self.record()
    }

    fn record(&mut self) -> Result<()> {
        if self.active {
            let event = match self.last_use.take() {
                Some(event) => event,
                None => self.cuda.new_event(None)?,
            };
            event.record(self.stream)?;
            *self.last_use = Some(event);
            self.active = false;
        }
        Ok(())
    }
}

impl Drop for WorkspaceUse<'_> {
    /// A call that failed after queuing a launch (the fix-up's launch failing after the main
    /// kernel's) still marks the workspace busy until that launch is done; the error is the
    /// call's own, already returned.
    fn drop(&mut self) {
        let _ = self.record();
    }
}

/// Guards of a [`DeviceWork`]'s buffers, held across the launches that read them.
pub(crate) struct WorkGuards<'a> {
    _guards: Vec<SyncOnDrop<'a>>,
}

impl DeviceWork {
    /// Uploads `work` for a `(tm, tn)` tile (and allocates a `(tm, tn)` f32 tile per partial
    /// slot). With a schedule, the main launch is a persistent grid of `schedule.len() - 1`
    /// blocks; otherwise one block per item.
    pub fn upload(stream: &std::sync::Arc<CudaStream>, work: &WorkList, (tm, tn): (u32, u32)) -> Result<Self> {
        let tile_elems = tm as usize * tn as usize;
        let fixup_grid = work.groups.len() as u64 * fixup_parts(tm, tn) as u64;
        if fixup_grid > MAX_ITEMS {
            return Err(Error::TooLarge { what: "fix-up thread blocks", value: fixup_grid as usize });
        }
        let flat_items: Vec<u32> = work
            .items
            .iter()
            .flat_map(|i| [i.tile_row, i.n_tile, i.blk_begin, i.blk_end, i.partial_slot, i.batch, i.k_begin, i.k_end])
            .collect();
        let items = stream.clone_htod(if flat_items.is_empty() { &[0u32; WORK_ITEM_WORDS][..] } else { &flat_items })?;
        let schedule = if work.schedule.is_empty() { None } else { Some(stream.clone_htod(&work.schedule)?) };
        let groups = if work.groups.is_empty() {
            None
        } else {
            let flat: Vec<u32> =
                work.groups.iter().flat_map(|g| [g.tile_row, g.n_tile, g.first_slot, g.n_slots, g.batch, g.blk_begin, g.blk_end]).collect();
            Some(stream.clone_htod(&flat)?)
        };
        let partials = if work.n_slots == 0 {
            None
        } else {
            let elems = (work.n_slots as usize).checked_mul(tile_elems).ok_or(Error::Overflow { what: "split-K workspace" })?;
            Some(stream.alloc_zeros::<f32>(elems)?)
        };
        let grid = if work.schedule.is_empty() { work.items.len() } else { work.schedule.len() - 1 };
        Ok(DeviceWork { items, schedule, groups, partials, grid: grid as u32, fixup_grid: fixup_grid as u32, busy: Exclusive::default() })
    }

    /// Exclusive use of the split-K workspace for one product on `stream`
    /// ([`Exclusive::acquire`]; nothing to wait for without split items).
    pub fn workspace<'a>(&'a self, cuda: &'a Arc<CudaContext>, stream: &'a Arc<CudaStream>) -> Result<WorkspaceUse<'a>> {
        self.busy.acquire(cuda, stream, self.fixup_grid > 0)
    }

    /// The kernels' view of the work (pointers valid while the guards live).
    pub fn params<'a>(&'a self, stream: &'a CudaStream) -> (WorkParams, WorkGuards<'a>) {
        let mut guards = Vec::new();
        let mut ptr = |s: Option<&'a CudaSlice<u32>>| {
            s.map_or(0, |s| {
                let (p, g) = s.device_ptr(stream);
                guards.push(g);
                p
            })
        };
        let items = ptr(Some(&self.items));
        let schedule = ptr(self.schedule.as_ref());
        let partials = self.partials.as_ref().map_or(0, |s| {
            let (p, g) = s.device_ptr(stream);
            guards.push(g);
            p
        });
        (WorkParams { items, schedule, partials }, WorkGuards { _guards: guards })
    }

    /// Queues the split-K fix-up after a product's main launch on `stream` (nothing without
    /// split tiles): `fixup` sums each group's partial tiles of a `(tm, tn)` tile in slot order
    /// into C, dense (`out`) or block-sparse (`blocks`) as `to` says.
    #[allow(clippy::too_many_arguments)]
    pub fn launch_fixup(
        &self,
        stream: &CudaStream,
        fixup: Option<&Kernel>,
        partials: u64,
        (tm, tn): (u32, u32),
        to: u32,
        out: DenseOut,
        blocks: BlockOut,
    ) -> Result<()> {
        if let (Some((groups, _guard)), Some(fixup)) = (self.groups(stream), fixup) {
            let fix = FixupParams { partials, groups, tm, tn, to, _pad: 0, out, blocks };
            // SAFETY: the fix-up's own parameter block; it reads this plan's partial tiles,
            // written by the main kernel queued before it on the same stream, and its groups
            // (guarded until the launch is queued), and writes the split tiles of C, which the
            // caller holds a write guard on.
            unsafe { launch(stream, fixup, self.fixup_grid, fix) }?;
        }
        Ok(())
    }

    /// The split groups' device address (0 without split items), and its guard.
    pub fn groups<'a>(&'a self, stream: &'a CudaStream) -> Option<(u64, SyncOnDrop<'a>)> {
        self.groups.as_ref().map(|g| g.device_ptr(stream))
    }

    /// The device the work list lives on.
    pub fn ordinal(&self) -> usize {
        self.items.ordinal()
    }

    /// Bytes of device memory the work list and workspace take.
    pub fn bytes(&self) -> usize {
        4 * (self.items.len() + self.schedule.as_ref().map_or(0, |s| s.len()) + self.groups.as_ref().map_or(0, |s| s.len()))
            + 4 * self.partials.as_ref().map_or(0, |s| s.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocksparse_abi::MAX_ITEM_BLOCKS;
    use blocksparse_testkit::testgen::{seeded_rng, test_seed};
    use rand::Rng;

    fn row_ptr_from_lens(lens: &[u32]) -> Vec<u32> {
        let mut rp = vec![0];
        for l in lens {
            rp.push(rp.last().unwrap() + l);
        }
        rp
    }

    fn spec(rp: &[u32], n_tiles: u32, batch: u32, resident: u32, tile_group: u32) -> RowsSpec<'_> {
        RowsSpec { row_ptr: rp, n_tiles, batch, kb: 64, ks: 32, resident, tile_group, max_item_blocks: MAX_ITEM_BLOCKS }
    }

    /// Every (row, tile, matrix) covered exactly once, chunks partition the row, slots
    /// consistent.
    fn check_cover(rp: &[u32], n_tiles: u32, batch: u32, w: &WorkList) {
        check_live_cover(rp, n_tiles, batch, None, w);
    }

    /// [`check_cover`] of the cells `live` names (all: `None`); the others have no item.
    fn check_live_cover(rp: &[u32], n_tiles: u32, batch: u32, live: Option<&[bool]>, w: &WorkList) {
        let rows = rp.len() - 1;
        let nt = n_tiles as usize;
        let mut covered = vec![vec![Vec::new(); nt * batch as usize]; rows];
        for it in &w.items {
            assert!(it.blk_begin <= it.blk_end);
            assert!(it.blk_end - it.blk_begin <= MAX_ITEM_BLOCKS);
            covered[it.tile_row as usize][it.batch as usize * nt + it.n_tile as usize].push(*it);
        }
        let mut slots_seen = vec![0u32; w.n_slots as usize];
        for (r, row) in covered.iter().enumerate() {
            for (bt, cell) in row.iter().enumerate() {
                let mut v = cell.clone();
                if live.is_some_and(|l| !l[r * nt + bt % nt]) {
                    assert!(v.is_empty(), "row {r} tile/batch {bt} is not live but has items");
                    assert!(
                        !w.groups.iter().any(|g| g.tile_row as usize == r && g.n_tile as usize == bt % nt),
                        "a dead cell's split group"
                    );
                    continue;
                }
                assert!(!v.is_empty(), "row {r} tile/batch {bt} not covered");
                v.sort_by_key(|i| i.blk_begin);
                assert_eq!(v[0].blk_begin, rp[r]);
                assert_eq!(v.last().unwrap().blk_end, rp[r + 1]);
                for p in v.windows(2) {
                    assert_eq!(p[0].blk_end, p[1].blk_begin, "chunks of row {r} overlap or leave a gap");
                }
                if v.len() == 1 {
                    assert_eq!(v[0].partial_slot, NO_SLOT);
                } else {
                    let (b, t) = ((bt / nt) as u32, (bt % nt) as u32);
                    let g = w.groups.iter().find(|g| g.tile_row as usize == r && g.n_tile == t && g.batch == b).expect("split group");
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
        let cases: Vec<Vec<u32>> = vec![
            vec![0; 7],                       // all rows empty
            vec![1],                          // one block
            vec![16; 64],                     // uniform
            vec![0, 128, 0, 3, 128, 1, 0, 2], // skewed with empty rows
            vec![5000, 1, 1],                 // longer than the block cache
        ];
        for lens in cases {
            let rp = row_ptr_from_lens(&lens);
            for n_tiles in [1u32, 2, 32] {
                for batch in [1u32, 3] {
                    for resident in [1u32, 132, 264] {
                        let w = plan_rows(spec(&rp, n_tiles, batch, resident, 1 + resident % 3)).unwrap();
                        check_cover(&rp, n_tiles, batch, &w);
                    }
                }
            }
        }
    }

    /// With live cells named, exactly those are covered (split rows included), each by the
    /// same items (chunks and all) as in the plan of every cell: a tile's sum does not depend
    /// on which other tiles are live.
    #[test]
    fn covers_only_the_live_cells() {
        let mut rng = seeded_rng(test_seed("covers_only_the_live_cells"));
        for lens in [vec![0, 128, 0, 3, 128, 1, 0, 2], vec![5000, 1, 1], vec![16; 64], vec![0; 5]] {
            let rp = row_ptr_from_lens(&lens);
            for n_tiles in [1u32, 3, 32] {
                for density in [0.0, 0.3, 1.0] {
                    let live: Vec<bool> = (0..lens.len() * n_tiles as usize).map(|_| rng.random_bool(density)).collect();
                    for resident in [1u32, 132] {
                        let w = plan_live_rows(spec(&rp, n_tiles, 2, resident, 2), Some(&live)).unwrap();
                        check_live_cover(&rp, n_tiles, 2, Some(&live), &w);
                        let live_cells = live.iter().filter(|&&x| x).count();
                        assert_eq!(w.items.iter().filter(|i| i.partial_slot == NO_SLOT).count() + w.groups.len(), 2 * live_cells);
                        // The full plan's items at the live cells, chunk for chunk.
                        let all = plan_rows(spec(&rp, n_tiles, 2, resident, 2)).unwrap();
                        let key = |i: &WorkItem| (i.batch, i.tile_row, i.n_tile, i.blk_begin, i.blk_end);
                        let mut want: Vec<_> = all
                            .items
                            .iter()
                            .filter(|i| live[i.tile_row as usize * n_tiles as usize + i.n_tile as usize])
                            .map(key)
                            .collect();
                        let mut got: Vec<_> = w.items.iter().map(key).collect();
                        want.sort_unstable();
                        got.sort_unstable();
                        assert_eq!(got, want);
                    }
                }
            }
        }
        // A live mask of the wrong size is refused.
        let rp = row_ptr_from_lens(&[4000, 4000]);
        let live = vec![true; 63];
        assert!(plan_live_rows(spec(&rp, 32, 1, 132, 1), Some(&live)).is_err());
    }

    /// Heavy items come first, by matrix and N-tile group and then longest first; the light
    /// ones follow in the planned order.
    #[test]
    fn heavy_items_first_by_n_tile_group() {
        let mut rng = seeded_rng(test_seed("heavy_items_first_by_n_tile_group"));
        for _ in 0..20 {
            let lens: Vec<u32> =
                (0..40).map(|_| if rng.random_bool(0.15) { rng.random_range(20..200) } else { rng.random_range(0..4) }).collect();
            let rp = row_ptr_from_lens(&lens);
            for (n_tiles, group) in [(8u32, 2u32), (32, 3), (5, 1)] {
                let w = plan_rows(spec(&rp, n_tiles, 2, 100_000, group)).unwrap();
                check_cover(&rp, n_tiles, 2, &w);
                let len = |i: &WorkItem| (i.blk_end - i.blk_begin) as u64;
                let heavy = heavy_len(&w.items, len);
                let first_light = w.items.iter().take_while(|&i| len(i) >= heavy).count();
                assert!(w.items[first_light..].iter().all(|i| len(i) < heavy), "heavy items first");
                let key = |i: &WorkItem| (i.batch, i.n_tile / group, u64::MAX - len(i));
                assert!(w.items[..first_light].windows(2).all(|p| key(&p[0]) <= key(&p[1])), "by matrix, group, length");
                // The light ones in the planned order: matrix by matrix, group by group.
                let lkey = |i: &WorkItem| (i.batch, i.n_tile / group);
                assert!(w.items[first_light..].windows(2).all(|p| lkey(&p[0]) <= lkey(&p[1])), "light items as planned");
            }
        }
    }

    #[test]
    fn long_rows_are_split_and_scheduled_first() {
        // One row holds half of all blocks; one N tile, so it would serialize the launch.
        let mut lens = vec![4u32; 255];
        lens.insert(100, 1020);
        let rp = row_ptr_from_lens(&lens);
        let w = plan_rows(spec(&rp, 1, 1, 132, 1)).unwrap();
        check_cover(&rp, 1, 1, &w);
        let total: u32 = lens.iter().sum();
        assert!(w.max_item_blocks < 1020, "the long row must be split");
        // Balance: no item is longer than twice the fair share of a resident block (or the
        // minimum chunk of 4 stages).
        let fair = total.div_ceil(132);
        assert!(w.max_item_blocks <= (2 * fair).max(2), "max item {}", w.max_item_blocks);
        // Longest first.
        let first = w.items[0].blk_end - w.items[0].blk_begin;
        assert_eq!(first, w.max_item_blocks);
    }

    #[test]
    fn persistent_schedule_is_balanced_and_complete() {
        // Two full rows among light ones: the skewed benchmark pattern.
        let mut lens = vec![14u32; 126];
        lens.insert(10, 128);
        lens.insert(90, 128);
        let rp = row_ptr_from_lens(&lens);
        for grid in [1u32, 7, 132] {
            for batch in [1u32, 2] {
                let mut w = plan_rows(spec(&rp, 16, batch, grid, 2)).unwrap();
                let before = w.items.clone();
                schedule_persistent(&mut w, grid, row_item_cost);
                check_cover(&rp, 16, batch, &w);
                assert_eq!(w.schedule.len(), grid as usize + 1);
                assert_eq!(*w.schedule.last().unwrap() as usize, w.items.len());
                let key = |i: &WorkItem| (i.batch, i.n_tile, i.tile_row, i.blk_begin);
                let mut a = before.clone();
                let mut b = w.items.clone();
                a.sort_by_key(key);
                b.sort_by_key(key);
                assert_eq!(a, b, "same items, only reordered");
                // List-scheduling bound: max load <= mean load + longest item.
                let loads: Vec<u64> =
                    w.schedule.windows(2).map(|r| w.items[r[0] as usize..r[1] as usize].iter().map(row_item_cost).sum()).collect();
                let total: u64 = loads.iter().sum();
                let longest = w.items.iter().map(row_item_cost).max().unwrap();
                let max = *loads.iter().max().unwrap();
                assert!(max <= total / grid as u64 + longest, "max {max} total {total} longest {longest}");
            }
        }
    }

    /// The LPT tail: the same items, the head dealt as [`schedule_persistent`] deals it, the
    /// tail's items in each block longest first, and the LPT bound: a block that took a tail
    /// item ends at most that item above the mean load; the others keep their head loads.
    #[test]
    fn lpt_tail_schedule_keeps_the_head_and_bounds_the_tail() {
        let mut rng = seeded_rng(test_seed("lpt_tail_schedule_keeps_the_head_and_bounds_the_tail"));
        for case in 0..200 {
            let grid = rng.random_range(1..=40u32);
            let n = rng.random_range(0..400usize);
            let tail = rng.random_range(0..2 * grid as usize + 2);
            let longest = if case % 2 == 0 { 8 } else { 60 };
            let items: Vec<WorkItem> = (0..n as u32)
                .map(|i| WorkItem { tile_row: i, k_begin: 0, k_end: rng.random_range(1..=longest), ..Default::default() })
                .collect();
            let cost = |i: &WorkItem| (i.k_end - i.k_begin) as u64 + 1;
            let what = format!("case {case}: grid {grid}, {n} items, tail {tail}");
            let mut w = WorkList { items: items.clone(), groups: Vec::new(), n_slots: 0, max_item_blocks: 0, schedule: Vec::new() };
            schedule_persistent_lpt_tail(&mut w, grid, cost, tail);
            let mut got = w.items.clone();
            got.sort_by_key(|i| i.tile_row);
            assert_eq!(got, items, "{what}: every item once");
            let head = n - tail.min(n);
            let mut plain = WorkList { items: items[..head].to_vec(), ..w.clone() };
            schedule_persistent(&mut plain, grid, cost);
            let block = |w: &WorkList, b: usize| w.items[w.schedule[b] as usize..w.schedule[b + 1] as usize].to_vec();
            let total: u64 = items.iter().map(cost).sum();
            for b in 0..grid as usize {
                let (mine, theirs) = (block(&w, b), block(&plain, b));
                let split = mine.iter().take_while(|i| (i.tile_row as usize) < head).count();
                assert_eq!(&mine[..split], &theirs[..], "{what}: block {b}'s head items");
                assert!(mine[split..].iter().all(|i| i.tile_row as usize >= head), "{what}: block {b}: the tail after the head");
                assert!(mine[split..].windows(2).all(|p| cost(&p[0]) >= cost(&p[1])), "{what}: block {b}: tail longest first");
                let load: u64 = mine.iter().map(cost).sum();
                match mine.last().filter(|i| i.tile_row as usize >= head) {
                    Some(last) => assert!(load * grid as u64 <= total + cost(last) * grid as u64, "{what}: block {b}'s load {load}"),
                    None => assert_eq!(load, theirs.iter().map(cost).sum::<u64>(), "{what}: block {b}"),
                }
            }
        }
        // Dealt in plan order, 2 then 1 then 3 leave one block 4; longest first, 3 and 3.
        let item = |c: u32| WorkItem { k_end: c - 1, ..Default::default() };
        let mut w =
            WorkList { items: vec![item(2), item(1), item(3)], groups: Vec::new(), n_slots: 0, max_item_blocks: 0, schedule: Vec::new() };
        let mut plain = w.clone();
        let cost = |i: &WorkItem| (i.k_end - i.k_begin) as u64 + 1;
        schedule_persistent(&mut plain, 2, cost);
        schedule_persistent_lpt_tail(&mut w, 2, cost, 2);
        let loads = |w: &WorkList| -> Vec<u64> {
            w.schedule.windows(2).map(|r| w.items[r[0] as usize..r[1] as usize].iter().map(cost).sum()).collect()
        };
        assert_eq!(loads(&plain), [2, 4]);
        assert_eq!(loads(&w), [3, 3]);
    }

    #[test]
    fn uniform_rows_walk_groups_in_alternating_row_order() {
        let rp = row_ptr_from_lens(&[16; 128]);
        let w = plan_rows(spec(&rp, 32, 1, 264, 1)).unwrap();
        assert!(w.groups.is_empty());
        assert_eq!(w.items.len(), 128 * 32);
        for (i, it) in w.items.iter().enumerate() {
            assert_eq!(it.n_tile as usize, i / 128);
            let k = i % 128;
            assert_eq!(it.tile_row as usize, if (i / 128) % 2 == 0 { k } else { 127 - k });
        }
        // Groups of 3 N tiles (32 = 10 × 3 + 2): row by row within each group, odd groups
        // from the last row up; a second matrix repeats the walk after the first.
        let w = plan_rows(spec(&rp, 32, 2, 264, 3)).unwrap();
        check_cover(&rp, 32, 2, &w);
        let mut i = 0;
        for b in 0..2 {
            for (g, g0) in (0..32).step_by(3).enumerate() {
                for k in 0..128 {
                    let r = if g % 2 == 0 { k } else { 127 - k };
                    for t in g0..(g0 + 3).min(32) {
                        let it = &w.items[i];
                        assert_eq!((it.batch, it.tile_row as usize, it.n_tile as usize), (b, r, t));
                        i += 1;
                    }
                }
            }
        }
    }

    #[test]
    fn plan_blocks_covers_every_block_once() {
        for lens in [vec![0u32, 0, 0], vec![1], vec![17, 0, 8, 9, 16, 1], vec![40; 10]] {
            let rp = row_ptr_from_lens(&lens);
            for per_item in [1u32, 2, 8, 16] {
                for batch in [1u32, 3] {
                    let w = plan_blocks(&rp, per_item, batch, 5).unwrap();
                    let mut seen = vec![0u32; *rp.last().unwrap() as usize * batch as usize];
                    for it in &w.items {
                        assert!(it.blk_end > it.blk_begin && it.blk_end - it.blk_begin <= per_item);
                        assert_eq!((it.k_begin, it.k_end, it.partial_slot), (0, 5, NO_SLOT), "whole K, direct store");
                        let r = it.tile_row as usize;
                        assert!(it.blk_begin >= rp[r] && it.blk_end <= rp[r + 1], "item stays in its row");
                        for q in it.blk_begin..it.blk_end {
                            seen[it.batch as usize * *rp.last().unwrap() as usize + q as usize] += 1;
                        }
                    }
                    assert!(seen.iter().all(|&s| s == 1));
                }
            }
        }
    }

    #[test]
    fn planners_reject_row_pointers_they_cannot_walk() {
        for (rp, row) in [(vec![0u32, 3, 2, 4], Some(1)), (vec![1u32, 2], None)] {
            let got = plan_blocks(&rp, 2, 1, 1);
            match row {
                Some(r) => assert!(matches!(got, Err(Error::RowPtrNotMonotone { row, .. }) if row == r), "{got:?}"),
                None => assert!(matches!(got, Err(Error::RowPtrStart { got: 1 })), "{got:?}"),
            }
            assert!(plan_rows(spec(&rp, 1, 1, 132, 1)).is_err());
        }
    }

    #[test]
    fn huge_plans_fail_before_allocating() {
        // 4096 rows with 2^31 - 1 columns worth of N tiles: rejected, not allocated.
        let rp = row_ptr_from_lens(&[1; 4096]);
        let n_tiles = (i32::MAX as u32).div_ceil(256);
        assert!(matches!(plan_rows(spec(&rp, n_tiles, 1, 132, 1)), Err(Error::TooLarge { .. })));
        assert!(matches!(plan_rows(spec(&rp, 1, u32::MAX, 132, 1)), Err(Error::TooLarge { .. })));
        assert!(matches!(plan_blocks(&rp, 1, u32::MAX, 1), Err(Error::TooLarge { .. })));
    }

    /// `balance_full_k` keeps every item's K covered exactly once (pieces in K order in
    /// consecutive slots, one group per split item), never lengthens the launch, and brings the
    /// busiest thread block within one share (plus the snap) of the even split.
    #[test]
    fn balance_full_k_splits_the_last_wave_evenly() {
        for (n, grid, k, min_piece) in [
            (272u32, 132u32, 128u32, 12u32),
            (565, 132, 128, 8),
            (330, 132, 32, 8),
            (264, 132, 128, 12),
            (5, 132, 64, 8),
            (100, 132, 64, 8),
            (200, 132, 64, 8),
            (7, 3, 9, 2),
            (10, 4, 3, 2),
            (1, 1, 100, 4),
        ] {
            {
                let rp: Vec<u32> = (0..=n).collect();
                let mut w = plan_blocks(&rp, 1, 1, k).unwrap();
                let before = w.items.clone();
                balance_full_k(&mut w, k, grid, min_piece).unwrap();
                let ctx = format!("n {n} grid {grid} k {k} min {min_piece}");
                // Coverage.
                for orig in &before {
                    let mut pieces: Vec<&WorkItem> = w.items.iter().filter(|i| i.blk_begin == orig.blk_begin).collect();
                    pieces.sort_by_key(|i| i.k_begin);
                    let mut at = 0;
                    for p in &pieces {
                        assert_eq!(p.k_begin, at, "{ctx}: contiguous pieces");
                        assert!(p.k_end > p.k_begin, "{ctx}: no empty piece");
                        at = p.k_end;
                    }
                    assert_eq!(at, k, "{ctx}: the whole K");
                    if pieces.len() == 1 {
                        assert_eq!(pieces[0].partial_slot, NO_SLOT, "{ctx}");
                    } else {
                        let g = w.groups.iter().find(|g| g.blk_begin == orig.blk_begin).expect("a group per split item");
                        assert_eq!(g.n_slots as usize, pieces.len(), "{ctx}");
                        for (j, p) in pieces.iter().enumerate() {
                            assert_eq!(p.partial_slot, g.first_slot + j as u32, "{ctx}: slots in K order");
                        }
                    }
                }
                let slots: u32 = w.groups.iter().map(|g| g.n_slots).sum();
                assert_eq!(slots, w.n_slots, "{ctx}");
                assert_eq!(w.schedule.len(), grid as usize + 1, "{ctx}");
                assert_eq!(*w.schedule.last().unwrap() as usize, w.items.len(), "{ctx}");
                let load = |b: usize| -> u64 {
                    w.items[w.schedule[b] as usize..w.schedule[b + 1] as usize].iter().map(|i| (i.k_end - i.k_begin) as u64).sum()
                };
                let max = (0..grid as usize).map(load).max().unwrap();
                let (n64, g64, k64) = (n as u64, grid as u64, k as u64);
                assert!(max <= n64.div_ceil(g64) * k64, "{ctx}: never longer than whole items ({max})");
                let even = (n64 * k64).div_ceil(g64);
                let saves = k64 * (g64 - n64 % g64) / g64;
                assert_eq!(
                    w.n_slots > 0 || n % grid == 0,
                    saves >= SPLIT_MIN_SAVING * min_piece as u64 || n % grid == 0,
                    "{ctx}: split where it pays"
                );
                if n % grid != 0 && saves >= SPLIT_MIN_SAVING * min_piece as u64 {
                    let slack = k64.min(2 * min_piece as u64 + (n64 % g64) * k64 / g64 + k64 / 2);
                    assert!(max <= even + slack, "{ctx}: busiest block {max}, even split {even}");
                }
            }
        }
    }

    #[test]
    fn live_fraction_of_causal_band_and_random_rows() {
        // Causal, 64 rows over 64 K blocks: K block k is live from row k to the last row.
        let n = 64usize;
        let lens: Vec<u32> = (1..=n as u32).collect();
        let rp = row_ptr_from_lens(&lens);
        let kx: Vec<u32> = (0..n as u32).flat_map(|r| 0..=r).collect();
        let want = (n * (n + 1) / 2) as f64 / (n * n) as f64;
        assert!((b_live_fraction(&rp, &kx, n) - want).abs() < 1e-12);
        // A band of ±h: an inner K block is live for 2h + 1 rows.
        let h = 3usize;
        let band: Vec<Vec<u32>> = (0..n).map(|r| (r.saturating_sub(h)..(r + h + 1).min(n)).map(|k| k as u32).collect()).collect();
        let rp = row_ptr_from_lens(&band.iter().map(|b| b.len() as u32).collect::<Vec<_>>());
        let kx: Vec<u32> = band.concat();
        let spans: usize = (0..n).map(|k| (k + h + 1).min(n) - k.saturating_sub(h)).sum();
        assert!((b_live_fraction(&rp, &kx, n) - spans as f64 / (n * n) as f64).abs() < 1e-12);
        // Random rows between two full ones: every K block is live throughout.
        let mut rng = seeded_rng(test_seed("live_fraction_of_causal_band_and_random_rows"));
        let mut rows: Vec<Vec<u32>> = vec![(0..n as u32).collect()];
        rows.extend((0..10).map(|_| (0..n as u32).filter(|_| rng.random_bool(0.2)).collect()));
        rows.push((0..n as u32).collect());
        let rp = row_ptr_from_lens(&rows.iter().map(|b| b.len() as u32).collect::<Vec<_>>());
        assert_eq!(b_live_fraction(&rp, &rows.concat(), n), 1.0);
        // Nothing known: 1. Unused K blocks count as not live.
        assert_eq!(b_live_fraction(&[0], &[], n), 1.0);
        assert_eq!(b_live_fraction(&[0, 1], &[5], 0), 1.0);
        assert_eq!(b_live_fraction(&[0, 1, 1], &[5], 8), 1.0 / 16.0);
    }

    #[test]
    fn tile_group_counts_the_live_part_of_the_strips() {
        let l2 = 50u64 << 20;
        let strip = 8192 * 256 * 2;
        // Whole strips: the rule of v9 (a sixth of L2 per strip).
        let whole = (l2 / 6 / strip) as u32;
        assert_eq!(whole, 2);
        // More rows than resident blocks (the rule of v9 and v32 alone).
        let g = |strip, live| default_tile_group(l2, strip, live, 1024, 528, 132);
        assert_eq!(g(strip, 1.0), whole);
        // Half live (causal): twice as many; a band: at most the cap; never fewer than whole.
        assert_eq!(g(strip, 0.5), 4);
        assert_eq!(g(strip, 0.05), MAX_LIVE_TILE_GROUP);
        assert_eq!(g(strip, 0.0), MAX_LIVE_TILE_GROUP);
        assert_eq!(g(strip, f64::NAN), whole);
        // Small strips: the whole-strip rule may pass the cap, and stays.
        assert_eq!(g(strip / 8, 0.1), whole * 8);
        assert_eq!(g(u64::MAX, 1.0), 1);
        assert_eq!(g(0, 1.0), (l2 / 6) as u32);
    }

    #[test]
    fn tile_group_of_a_walk_one_wave_holds() {
        let l2 = 50u64 << 20;
        let strip = 8192 * 256 * 2;
        // The portable tiles (528 blocks on 132 SMs) at 16×16 and 32×32 (512 and 256 rows):
        // one strip of the two that fit.
        assert_eq!(default_tile_group(l2, strip, 1.0, 512, 528, 132), 1);
        assert_eq!(default_tile_group(l2, strip, 1.0, 256, 528, 132), 1);
        // 4096³ (2 MB strips, four fit): 32×32 portable (128 rows) one; 64 rows on 132 blocks
        // two; 16 rows four, the fit count (not the eight the SMs would allow).
        assert_eq!(default_tile_group(l2, strip / 2, 1.0, 128, 528, 132), 1);
        assert_eq!(default_tile_group(l2, strip / 2, 1.0, 64, 132, 132), 2);
        assert_eq!(default_tile_group(l2, strip / 2, 1.0, 16, 132, 132), 4);
        // Strips partly live (causal, bands): the live rule, whatever the rows, also where the
        // live part allows more strips than the cap (small strips).
        assert_eq!(default_tile_group(l2, strip, 0.5, 64, 132, 132), 4);
        assert_eq!(default_tile_group(l2, strip, 0.05, 64, 132, 132), MAX_LIVE_TILE_GROUP);
        assert_eq!(default_tile_group(l2, strip / 8, 0.5, 128, 132, 132), 16);
        // No rows (or a batch), or more rows than resident blocks: whole strips.
        assert_eq!(default_tile_group(l2, strip, 1.0, 0, 528, 132), 2);
        assert_eq!(default_tile_group(l2, strip, 1.0, 529, 528, 132), 2);
        assert_eq!(default_tile_group(l2, strip, 1.0, 512, 0, 132), 2);
        // No SMs reported: one strip.
        assert_eq!(default_tile_group(l2, strip, 1.0, 512, 528, 0), 1);
    }
}
