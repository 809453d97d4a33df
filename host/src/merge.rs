//! Merged SpMM plans: `m` adjacent rows of the stream of A's blocks (block rows of A, or block
//! columns for Aᵀ) share one output tile `m` times as tall, over the union of their K blocks;
//! a row that lacks a block of the union multiplies zeros there (`NO_BLOCK`: the portable kernel
//! zero-fills, the Hopper kernel loads a box past the end of the values, which TMA fills with
//! zeros without reading memory). Where neighbouring rows share most of their columns (causal,
//! sliding-window, block-diagonal masks), each B stage then serves `m` rows of A instead of one,
//! and the small tiles' L2 roof (perf notes v13.1) moves up to the tall tile's.
//!
//! The choice between plans is [`plan_cost`]'s model (perf notes v15, v16): the kernels run
//! near the L2 roof of their tiles, so the plan that moves the fewest bytes runs fastest, the
//! zeros of a merged tile counted as traffic that carries no work; and the flops a tile
//! computes, its zeros included, are weighted in too. An item costs at least the store of its
//! C tile ([`ITEM_FLOOR_PER_C_BYTE`], perf notes v23).

use blocksparse_abi::{BOX, CHUNK_ELEMS, KernelFamily, NO_BLOCK, WG_M};

use crate::error::{Error, Result};
use crate::ops::TileChoice;

/// The stream of a merged plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Merged {
    /// Offsets into `kidx`: merged row `g` (stream rows `g · m .. g · m + m`) is positions
    /// `row_ptr[g] .. row_ptr[g + 1]`.
    pub row_ptr: Vec<u32>,
    /// Per position, its K-block index (increasing within a merged row).
    pub kidx: Vec<u32>,
    /// `(positions, m)`: per position, the block of each stream row of the group there, or
    /// `NO_BLOCK`.
    pub blocks: Vec<u32>,
}

/// Merges each run of `m` adjacent rows of the stream (`row_ptr`, K indices `kidx` increasing
/// within each row, position `q` holding block `block(q)`) into one row over the union of
/// their K indices. The last group may hold fewer than `m` rows (its missing rows have no
/// blocks).
pub(crate) fn merge_rows(row_ptr: &[u32], kidx: &[u32], block: impl Fn(usize) -> u32, m: usize) -> Result<Merged> {
    let m = m.max(1);
    let rows = row_ptr.len().saturating_sub(1);
    let groups = rows.div_ceil(m);
    let mut out = Merged { row_ptr: Vec::with_capacity(groups + 1), kidx: Vec::new(), blocks: Vec::new() };
    out.row_ptr.push(0);
    let k_len = k_extent(row_ptr, kidx);
    // Per K index: the last group that holds it (1-based, 0: none yet), and its position in
    // that group's merged row.
    let (mut seen, mut pos_of) = (vec![0u32; k_len], vec![0u32; k_len]);
    // The group's K indices, each once.
    let mut ks: Vec<u32> = Vec::new();
    for g in 0..groups {
        let (first, last) = (g * m, (g * m + m).min(rows));
        let stamp = g as u32 + 1;
        ks.clear();
        for &k in &kidx[row_ptr[first] as usize..row_ptr[last] as usize] {
            if seen[k as usize] != stamp {
                seen[k as usize] = stamp;
                ks.push(k);
            }
        }
        ks.sort_unstable();
        let base = out.kidx.len();
        for (j, &k) in ks.iter().enumerate() {
            pos_of[k as usize] = (base + j) as u32;
        }
        out.kidx.extend_from_slice(&ks);
        out.blocks.resize(out.kidx.len() * m, NO_BLOCK);
        for (h, r) in (first..last).enumerate() {
            for q in row_ptr[r] as usize..row_ptr[r + 1] as usize {
                out.blocks[pos_of[kidx[q] as usize] as usize * m + h] = block(q);
            }
        }
        let positions =
            u32::try_from(out.kidx.len()).map_err(|_| Error::TooLarge { what: "merged stream positions", value: out.kidx.len() })?;
        out.row_ptr.push(positions);
    }
    if u32::try_from(out.blocks.len()).is_err() {
        return Err(Error::TooLarge { what: "merged stream block words", value: out.blocks.len() });
    }
    Ok(out)
}

/// One past the largest K index of the stream (`row_ptr`, `kidx`): the length of a per-K table.
fn k_extent(row_ptr: &[u32], kidx: &[u32]) -> usize {
    let end = row_ptr.last().map_or(0, |&e| e as usize);
    kidx[..end].iter().max().map_or(0, |&k| k as usize + 1)
}

/// What a merge's cost needs of [`merge_rows`]' stream without the stream: see
/// [`merge_counts`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MergeCounts {
    /// [`Merged::row_ptr`].
    pub row_ptr: Vec<u32>,
    /// Per merged row, its (position, consumer warpgroup) pairs that multiply on a skipping
    /// Hopper tile of the given height: where some stream row of the warpgroup's holds a
    /// block (the tests' `multiplied_groups` counts them from the merged stream).
    pub groups: Vec<u64>,
}

/// [`merge_rows`]' `row_ptr` and [`MergeCounts::groups`] (a tile of `tm` rows) of the merge of
/// each run of `m` adjacent stream rows, with the same errors, counted through per-K stamps
/// in one pass over the stream: the planner costs every candidate merge this way, and merges
/// only the one it keeps (the merge also sorts each union and writes `positions · m` block
/// words; perf notes v36).
///
/// ```text
/// for each merged row g (stream rows g·m .. g·m + m):
///     positions[g] = |∪ K(r) over its rows|
///     groups[g]    = Σ over its warpgroups' rows (⌈m / warpgroups⌉ each) of |∪ K(r)|
/// ```
pub(crate) fn merge_counts(row_ptr: &[u32], kidx: &[u32], m: usize, tm: u32) -> Result<MergeCounts> {
    let m = m.max(1);
    let rows = row_ptr.len().saturating_sub(1);
    let merged_rows = rows.div_ceil(m);
    // Stream rows per warpgroup, and warpgroups per merged row (as `multiplied_groups`).
    let per = m.div_ceil((tm / WG_M).max(1) as usize).max(1);
    let chunks = m.div_ceil(per) as u64;
    let k_len = k_extent(row_ptr, kidx);
    // Per K index: the last merged row and the last warpgroup's rows that held it (1-based
    // stamps, 0: none yet).
    let (mut seen, mut seen_chunk) = (vec![0u64; k_len], vec![0u64; k_len]);
    let mut out = MergeCounts { row_ptr: Vec::with_capacity(merged_rows + 1), groups: Vec::with_capacity(merged_rows) };
    out.row_ptr.push(0);
    let mut positions = 0u64;
    for g in 0..merged_rows {
        let (first, last) = (g * m, (g * m + m).min(rows));
        let stamp = g as u64 + 1;
        let mut multiplied = 0u64;
        for (c, lo) in (first..last).step_by(per).enumerate() {
            let hi = (lo + per).min(last);
            let chunk_stamp = g as u64 * chunks + c as u64 + 1;
            for &k in &kidx[row_ptr[lo] as usize..row_ptr[hi] as usize] {
                let k = k as usize;
                if seen_chunk[k] != chunk_stamp {
                    seen_chunk[k] = chunk_stamp;
                    multiplied += 1;
                }
                if seen[k] != stamp {
                    seen[k] = stamp;
                    positions += 1;
                }
            }
        }
        let at = u32::try_from(positions).map_err(|_| Error::TooLarge { what: "merged stream positions", value: positions as usize })?;
        out.row_ptr.push(at);
        out.groups.push(multiplied);
    }
    if positions.checked_mul(m as u64).is_none_or(|words| words > u32::MAX as u64) {
        return Err(Error::TooLarge { what: "merged stream block words", value: (positions as usize).saturating_mul(m) });
    }
    Ok(out)
}

/// The model's L2 traffic, in elements, of streaming rows of `positions` blocks in all (K
/// blocks of depth `kb`) through output tiles `tn` wide over `n` columns, `a_rows` rows of A
/// in all: each stage of each of the `⌈n / tn⌉` N tiles reads its `(rows, ks)` slices of A
/// (`tm` rows, or on a skipping tile the multiplying warpgroups' only: `a_rows` is `positions
/// · tm` or fewer), and of B the `(ks, ·)` columns that exist, in units of `b_unit` columns (a
/// 64-column TMA box on the Hopper kernel, a 16-byte chunk on the portable one): `kb · (a_rows ·
/// ⌈n / tn⌉ + positions · ⌈n⌉_b_unit)`. Across the tiles of both kernel families the measured
/// rates follow this traffic (perf notes v15), and the zero rows a merged tile streams are
/// counted like any other.
pub(crate) fn l2_traffic(positions: u64, a_rows: u64, kb: u32, tn: u32, b_unit: u32, n: usize) -> u128 {
    let n = n as u128;
    let (tn, unit) = (tn.max(1) as u128, b_unit.max(1) as u128);
    (a_rows as u128 * n.div_ceil(tn) + positions as u128 * n.div_ceil(unit) * unit) * kb as u128
}

/// The weight of tensor-core work in [`plan_cost`], in bytes of L2 traffic per flop a tile
/// computes (the zero rows of a merged tile included), for the wgmma kernels and for the
/// mma.sync kernels. Refitted in v19 (perf notes) to the candidates of 16- and 32-row blocks
/// measured side by side (uniform 12.5 / 25 / 50 % and the mask families at 8192³, f16, every
/// merge each kernel offers), keeping v16's choices at 64-row blocks: for weights along
/// `MMA ≈ 2.2 × WGMMA`, from 0.0075 to 0.0225 for wgmma, every choice is the fastest candidate
/// measured but BigBird-like 16×16 (portable, 5–6 % slower than k16 with 8 rows merged); these
/// sit in the middle. (v16's 0.03 / 0.04 kept 32×32 at 50 % on the
/// portable tile, 1.43× slower than the 32-deep wgmma tile merged in fours.)
pub(crate) const WGMMA_BYTES_PER_FLOP: f64 = 0.0125;
pub(crate) const MMA_BYTES_PER_FLOP: f64 = 0.0275;

/// The planner's cost of a plan of `positions` stream positions and `a_rows` rows of A
/// ([`l2_traffic`]), in bytes: its [`l2_traffic`] (of `elem_bytes` elements) plus
/// `bytes_per_flop` times the flops its tiles compute, `2 · a_rows · kb · ⌈n / tn⌉ · tn`
/// (perf notes v16).
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_cost(
    positions: u64,
    a_rows: u64,
    kb: u32,
    tn: u32,
    b_unit: u32,
    n: usize,
    elem_bytes: usize,
    bytes_per_flop: f64,
) -> f64 {
    let traffic = l2_traffic(positions, a_rows, kb, tn, b_unit, n) as f64 * elem_bytes as f64;
    let tn = tn.max(1) as f64;
    let flops = 2.0 * a_rows as f64 * kb as f64 * (n as f64 / tn).ceil() * tn;
    traffic + bytes_per_flop * flops
}

/// The least an item costs in [`tile_cost`], in model bytes per byte of C it writes
/// (`elem_bytes` per element): an item runs at least as long as it takes to write its tile.
/// Each stream row's [`plan_cost`] is raised to this floor times its `(tm, n)` C rows, which
/// only matters for rows of a few blocks. The traces of perf notes v22 put such items (one to
/// four stages) at 5.4–5.9 µs, most of it the C store, as long as eight stages of the 128-row
/// tile: in model bytes about ten times the C tile. Without the floor, merging light rows in
/// pairs looked like twice the tensor work, while their time is their stores (heavy-tailed
/// 64×64: the reordered merge ran 0.28 ms against the unmerged plan's 0.31, and the model
/// preferred the latter). Every floor from 6 to 17 picks the fastest measured plan of the 16-,
/// 32- and 64-row candidates in the tests below; 10 sits in the middle (perf notes v23).
pub(crate) const ITEM_FLOOR_PER_C_BYTE: f64 = 10.0;

/// How much longer the Hopper tiles of 32- and 16-deep stages (`(ks, factor)`) take than the
/// 64-deep 128-row tile for the same modelled work ([`plan_cost`] counts their stages alike):
/// the re-blocked candidate of the SpMM planner ([`PlanOptions::coarse_a`]) is weighed against
/// a shallow plan's cost times this. Measured on the H100 at 8192³ f16 with A's 128×128 cells
/// the same on both tiles (README's mask table, v37: causal 16×16 merged on the 16-deep tile
/// 1.332 ms against causal 128×128 on the 64-deep one 0.952, block-diagonal 0.355 against
/// 0.255; 32×32 on the 32-deep tile 1.140 and 0.303; perf notes v47's probe, every 128×128
/// cell of an 8192² A: the 16-deep tile 2.25 ms against 1.737): 1.30–1.40 at 16, 1.19–1.20 at
/// 32. The lower ends are taken.
///
/// [`PlanOptions::coarse_a`]: crate::PlanOptions::coarse_a
pub(crate) const SHALLOW_TIME: [(u32, f64); 2] = [(16, 1.30), (32, 1.19)];

/// [`SHALLOW_TIME`]'s factor of `choice` (1 for the 64-deep Hopper tiles and the portable ones,
/// which the model's weights already place).
pub(crate) fn shallow_time(choice: TileChoice) -> f64 {
    match choice.family {
        KernelFamily::Hopper => SHALLOW_TIME.iter().find(|&&(ks, _)| ks == choice.ks()).map_or(1.0, |&(_, f)| f),
        KernelFamily::Portable => 1.0,
    }
}

/// The re-blocked candidate's copy, in model bytes per element of the coarse blocks it writes
/// (A's blocks read, the 128×128 cells written, zeros included). From two H100 measurements:
/// the densify kernel writes an element in about 0.85 ps (perf notes v44), and the model's
/// cost of causal 128×128 at 8192³ (1.35 · 10¹⁰ bytes) ran 0.952 ms (README's mask table,
/// v37): 14.2 model bytes per ps.
pub(crate) const COPY_BYTES_PER_ELEMENT: f64 = 12.0;

/// [`plan_cost`] of streaming the rows `row_ptr` delimits through `choice`'s tile, row by row,
/// each row at least [`ITEM_FLOOR_PER_C_BYTE`] times the C it writes: B read in TMA boxes
/// and weighted by [`WGMMA_BYTES_PER_FLOP`] on the Hopper kernels, in 16-byte chunks and by
/// [`MMA_BYTES_PER_FLOP`] on the portable ones.
pub(crate) fn tile_cost(row_ptr: &[u32], kb: u32, choice: TileChoice, n: usize, elem_bytes: usize) -> f64 {
    tile_costs(row_ptr, kb, choice, n, elem_bytes).sum()
}

/// [`tile_cost`] row by row: each tile row's cost, in order.
pub(crate) fn tile_costs(row_ptr: &[u32], kb: u32, choice: TileChoice, n: usize, elem_bytes: usize) -> impl Iterator<Item = f64> {
    let tm = choice.shape().0 as u64;
    rows_cost(row_ptr.windows(2).map(move |w| (w[1] - w[0]) as u64).map(move |len| (len, len * tm)), kb, choice, n, elem_bytes, 1.0)
}

/// The [`tile_cost`] of each stream row given as (positions, rows of A streamed), times
/// `factor`.
fn rows_cost(
    rows: impl Iterator<Item = (u64, u64)>,
    kb: u32,
    choice: TileChoice,
    n: usize,
    elem_bytes: usize,
    factor: f64,
) -> impl Iterator<Item = f64> {
    let (b_unit, bytes_per_flop) = match choice.family {
        KernelFamily::Hopper => (BOX, WGMMA_BYTES_PER_FLOP),
        KernelFamily::Portable => (CHUNK_ELEMS, MMA_BYTES_PER_FLOP),
    };
    let (tm, tn) = choice.shape();
    // The C a stream row's items write: `(tm, n)`.
    let row_floor = ITEM_FLOOR_PER_C_BYTE * tm as f64 * n as f64 * elem_bytes as f64;
    rows.map(move |(positions, a_rows)| {
        (factor * plan_cost(positions, a_rows, kb, tn, b_unit, n, elem_bytes, bytes_per_flop)).max(row_floor)
    })
}

/// Per merged row of `merged` (`m` stream rows per tile of `tm` rows): how many of its
/// (position, consumer warpgroup) pairs multiply on a Hopper tile that skips
/// ([`PlanOptions::skip_absent`](crate::PlanOptions::skip_absent)), i.e. where some stream row
/// of the warpgroup's [`WG_M`] rows holds a block. (The planner counts them with
/// [`merge_counts`]; this is its reference in the tests.)
#[cfg(test)]
pub(crate) fn multiplied_groups(merged: &Merged, m: usize, tm: u32) -> Vec<u64> {
    let groups = (tm / WG_M).max(1) as usize;
    // Stream rows per group (a merged row is at most WG_M tall).
    let per = m.div_ceil(groups).max(1);
    merged
        .row_ptr
        .windows(2)
        .map(|w| {
            (w[0] as usize..w[1] as usize)
                .map(|q| {
                    let rows = &merged.blocks[q * m..(q + 1) * m];
                    rows.chunks(per).filter(|g| g.iter().any(|&b| b != NO_BLOCK)).count() as u64
                })
                .sum()
        })
        .collect()
}

/// The factor on a skipping plan's [`skip_tile_cost`], on the tiles of 32- and 16-deep
/// stages and on the 64-deep one, fitted to the candidates measured side by side in v25 (perf
/// notes; `bench --masks --densities 0.125,0.25,0.5 --blocks 16,32,64 --merge 1,2,4,8
/// --skips --reorder`) by the tests below.
/// - Shallow tiles: their producers' and consumers' per-stage bookkeeping (a consumer mask
///   and a byte count per stage, per-warp releases) is not free on stages of a quarter or half
///   the 64-deep tile's work: with little to skip (causal, block-diagonal, uniform 50 % at
///   16×16) the skipping plans ran 0–12 % slower. Every factor from 1.05 to 1.2 picks the
///   fastest of the 16- and 32-row candidates (within 7 %).
/// - The 64-deep tile: there the model overrates pairs of short rows (BigBird-like 64×64: 9 %
///   cheaper than the unmerged 64-row tile by the model, 6–11 % slower measured, as it was
///   without skipping in v21), and only a factor from 1.11 to 1.115 both sends them back to the
///   unmerged tile and keeps skipping heavy-tailed pairs (4–10 % faster measured). A narrow fit:
///   the model's error on 64-row pairs is as large as what skipping gains there.
pub(crate) const SKIP_FACTOR_SHALLOW: f64 = 1.12;
pub(crate) const SKIP_FACTOR_DEEP: f64 = 1.11;

/// [`tile_cost`] of a merged plan on a Hopper tile whose consumers skip the stages where
/// their rows hold no block (`groups`: [`MergeCounts::groups`]): A's traffic and the tensor
/// work count only the multiplying warpgroups' rows, B's every stage; times
/// [`SKIP_FACTOR_SHALLOW`] or [`SKIP_FACTOR_DEEP`].
#[cfg(test)]
pub(crate) fn skip_tile_cost(row_ptr: &[u32], groups: &[u64], kb: u32, choice: TileChoice, n: usize, elem_bytes: usize) -> f64 {
    skip_tile_costs(row_ptr, groups, kb, choice, n, elem_bytes).sum()
}

/// [`skip_tile_cost`] row by row: each merged row's cost, in order.
pub(crate) fn skip_tile_costs<'a>(
    row_ptr: &'a [u32],
    groups: &'a [u64],
    kb: u32,
    choice: TileChoice,
    n: usize,
    elem_bytes: usize,
) -> impl Iterator<Item = f64> + 'a {
    let factor = if choice.ks() < blocksparse_abi::WG_K { SKIP_FACTOR_SHALLOW } else { SKIP_FACTOR_DEEP };
    let rows = row_ptr.windows(2).zip(groups).map(|(w, &g)| ((w[1] - w[0]) as u64, g * WG_M as u64));
    rows_cost(rows, kb, choice, n, elem_bytes, factor)
}

/// A split plan's two parts (perf notes v38): of a merged candidate whose merged row `g`
/// (stream rows at places `g · m .. g · m + m` of its order, `rows` in all) costs
/// `group_costs[g]`, the merged rows that cost less merged than their stream rows unmerged
/// (`row_cost(i)`: the unmerged cost of the stream row at place `i`), whole groups only (a
/// last group of fewer than `m` rows stays unmerged), and the split's cost (each group at the
/// cheaper of the two). `None` where no group is cheaper merged, or no whole group unmerged
/// (the single merged plan then runs every group as the split would).
///
/// ```text
/// merged[g] = |rows of g| == m  and  group_costs[g] < Σ_{i in g} row_cost(i)
/// cost      = Σ_g (merged[g] ? group_costs[g] : Σ_{i in g} row_cost(i))
/// ```
pub(crate) fn split_groups(group_costs: &[f64], row_cost: impl Fn(usize) -> f64, m: usize, rows: usize) -> Option<(Vec<bool>, f64)> {
    let m = m.max(1);
    let (mut cost, mut merged, mut whole_plain) = (0.0, 0usize, 0usize);
    let mut take = vec![false; group_costs.len()];
    for (g, &merged_cost) in group_costs.iter().enumerate() {
        let span = g * m..(g * m + m).min(rows);
        let whole = span.len() == m;
        let plain: f64 = span.map(&row_cost).sum();
        if whole && merged_cost < plain {
            take[g] = true;
            merged += 1;
            cost += merged_cost;
        } else {
            whole_plain += whole as usize;
            cost += plain;
        }
    }
    (merged > 0 && whole_plain > 0).then_some((take, cost))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::tests::csr;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// Stream positions of the rows `row_ptr` delimits: the sum of their lengths.
    fn positions(row_ptr: &[u32]) -> u64 {
        match (row_ptr.first(), row_ptr.last()) {
            (Some(&first), Some(&last)) => (last - first) as u64,
            _ => 0,
        }
    }

    /// A random `(rows, cols)` pattern of the given density, as CSR.
    fn pattern(rows: usize, cols: usize, density: f64, rng: &mut SmallRng) -> (Vec<u32>, Vec<u32>) {
        let mask: Vec<bool> = (0..rows * cols).map(|_| rng.random_bool(density)).collect();
        csr(&mask, cols)
    }

    /// A stream row's blocks as (K index, block); none past the last row.
    fn row_blocks(row_ptr: &[u32], kidx: &[u32], block: &dyn Fn(usize) -> u32, r: usize) -> Vec<(u32, u32)> {
        if r + 1 >= row_ptr.len() {
            return Vec::new();
        }
        (row_ptr[r] as usize..row_ptr[r + 1] as usize).map(|q| (kidx[q], block(q))).collect()
    }

    #[test]
    fn merged_rows_hold_each_block_once_at_its_column() {
        let seed: u64 = rand::random();
        let mut rng = SmallRng::seed_from_u64(seed);
        for m in [1usize, 2, 3, 4, 8] {
            for rows in [0usize, 1, 2, 5, 9, 16] {
                let density = rng.random_range(0.0..1.0);
                let (row_ptr, kidx) = pattern(rows, 11, density, &mut rng);
                // Blocks through a permutation, as the stream of Aᵀ has them.
                let perm: Vec<u32> = (0..kidx.len() as u32).rev().collect();
                let block = |q: usize| perm[q];
                let g = merge_rows(&row_ptr, &kidx, block, m).unwrap();
                assert_eq!(g.row_ptr.len(), rows.div_ceil(m) + 1, "seed {seed}");
                assert_eq!(g.blocks.len(), g.kidx.len() * m, "seed {seed}");
                for grp in 0..rows.div_ceil(m) {
                    let (lo, hi) = (g.row_ptr[grp] as usize, g.row_ptr[grp + 1] as usize);
                    // Positions: the sorted union of the group's K indices.
                    let mut union: Vec<u32> =
                        (grp * m..(grp * m + m).min(rows)).flat_map(|r| row_blocks(&row_ptr, &kidx, &block, r)).map(|(k, _)| k).collect();
                    union.sort_unstable();
                    union.dedup();
                    assert_eq!(&g.kidx[lo..hi], &union[..], "seed {seed}");
                    // Each row's blocks, read back from the table.
                    for h in 0..m {
                        let got: Vec<(u32, u32)> =
                            (lo..hi).filter(|&p| g.blocks[p * m + h] != NO_BLOCK).map(|p| (g.kidx[p], g.blocks[p * m + h])).collect();
                        assert_eq!(
                            got,
                            row_blocks(&row_ptr, &kidx, &block, grp * m + h),
                            "seed {seed}: m {m} rows {rows} group {grp} row {h}"
                        );
                    }
                }
            }
        }
    }

    /// The planner's counts equal the merge's row offsets and multiplying warpgroups, for
    /// every merge size and tile height, empty and full rows, and a last group of fewer rows.
    #[test]
    fn merge_counts_match_the_merge() {
        let seed: u64 = rand::random();
        let mut rng = SmallRng::seed_from_u64(seed);
        for m in [1usize, 2, 3, 4, 8] {
            for rows in [0usize, 1, 2, 5, 9, 16, 37] {
                for cols in [1usize, 7, 64] {
                    let density = [0.0, 0.05, rng.random_range(0.0..1.0), 1.0][rng.random_range(0..4)];
                    let (row_ptr, kidx) = pattern(rows, cols, density, &mut rng);
                    let g = merge_rows(&row_ptr, &kidx, |q| q as u32, m).unwrap();
                    for tm in [16u32, 64, 128] {
                        let counts = merge_counts(&row_ptr, &kidx, m, tm).unwrap();
                        let want = MergeCounts { row_ptr: g.row_ptr.clone(), groups: multiplied_groups(&g, m, tm) };
                        assert_eq!(counts, want, "seed {seed}: m {m} rows {rows} cols {cols} density {density} tm {tm}");
                    }
                }
            }
        }
    }

    /// The merged stream, evaluated as the kernels' docs say (tile rows `h · rb ..` multiply
    /// their row's block or nothing; rows past M are not stored), gives A · B.
    #[test]
    fn merged_stream_computes_the_product() {
        let seed: u64 = rand::random();
        let mut rng = SmallRng::seed_from_u64(seed);
        let (bm, bk, n, cols) = (3usize, 2usize, 5usize, 6usize);
        for m in [2usize, 4] {
            for rows in [1usize, 3, 6, 7] {
                let (row_ptr, kidx) = pattern(rows, cols, 0.4, &mut rng);
                let vals: Vec<f64> = (0..kidx.len() * bm * bk).map(|_| rng.random_range(-1.0..1.0)).collect();
                let b: Vec<f64> = (0..cols * bk * n).map(|_| rng.random_range(-1.0..1.0)).collect();
                let a_at = |blk: usize, i: usize, kk: usize| vals[(blk * bm + i) * bk + kk];
                let b_at = |kblk: u32, kk: usize, j: usize| b[(kblk as usize * bk + kk) * n + j];
                // Reference: C = A · B.
                let mut want = vec![0.0; rows * bm * n];
                for r in 0..rows {
                    let lo = row_ptr[r] as usize;
                    for (q, &k) in kidx.iter().enumerate().take(row_ptr[r + 1] as usize).skip(lo) {
                        for (i, kk, j) in (0..bm).flat_map(|i| (0..bk).flat_map(move |kk| (0..n).map(move |j| (i, kk, j)))) {
                            want[(r * bm + i) * n + j] += a_at(q, i, kk) * b_at(k, kk, j);
                        }
                    }
                }
                let g = merge_rows(&row_ptr, &kidx, |q| q as u32, m).unwrap();
                let tm = m * bm;
                let mut got = vec![f64::NAN; rows * bm * n];
                for t in 0..rows.div_ceil(m) {
                    for ti in 0..tm {
                        let (h, i, row) = (ti / bm, ti % bm, t * tm + ti);
                        if row >= rows * bm {
                            continue;
                        }
                        for j in 0..n {
                            let mut acc = 0.0;
                            for p in g.row_ptr[t] as usize..g.row_ptr[t + 1] as usize {
                                let blk = g.blocks[p * m + h];
                                if blk != NO_BLOCK {
                                    acc += (0..bk).map(|kk| a_at(blk as usize, i, kk) * b_at(g.kidx[p], kk, j)).sum::<f64>();
                                }
                            }
                            got[row * n + j] = acc;
                        }
                    }
                }
                for (e, (w, g)) in want.iter().zip(&got).enumerate() {
                    assert!((w - g).abs() <= 1e-12 * (1.0 + w.abs()), "seed {seed}: m {m} rows {rows} element {e}: {g} vs {w}");
                }
            }
        }
    }

    /// The full cost model merges rows that share most of their columns (causal, banded,
    /// block-diagonal) and not rows that share a few (BigBird-like: a window of 3, 2 global
    /// columns, 3 random ones per row), on the 64-row Hopper tiles at N = 8192.
    #[test]
    fn cost_merges_shared_columns_and_not_a_few_shared_ones() {
        let rows = 128usize;
        let seed: u64 = rand::random();
        let mut rng = SmallRng::seed_from_u64(seed);
        let causal: Vec<bool> = (0..rows * rows).map(|e| e % rows <= e / rows).collect();
        let banded: Vec<bool> = (0..rows * rows).map(|e| (e / rows).abs_diff(e % rows) <= 8).collect();
        let blockdiag: Vec<bool> = (0..rows * rows).map(|e| (e / rows) / 16 == (e % rows) / 16).collect();
        let mut bigbird: Vec<bool> = (0..rows * rows).map(|e| (e / rows).abs_diff(e % rows) <= 1 || e % rows < 2 || e / rows < 2).collect();
        for r in 2..rows {
            let mut added = 0;
            while added < 3 {
                let c = rng.random_range(0..rows);
                if !bigbird[r * rows + c] {
                    bigbird[r * rows + c] = true;
                    added += 1;
                }
            }
        }
        for (name, mask, merge) in
            [("causal", causal, true), ("banded", banded, true), ("blockdiag", blockdiag, true), ("bigbird", bigbird, false)]
        {
            let (row_ptr, kidx) = csr(&mask, rows);
            let plain = plan_cost(positions(&row_ptr), 64 * positions(&row_ptr), 64, 256, 64, 8192, 2, WGMMA_BYTES_PER_FLOP);
            let g = merge_rows(&row_ptr, &kidx, |q| q as u32, 2).unwrap();
            let merged = plan_cost(positions(&g.row_ptr), 128 * positions(&g.row_ptr), 64, 256, 64, 8192, 2, WGMMA_BYTES_PER_FLOP);
            assert_eq!(merged < plain, merge, "seed {seed}: {name}: merged {merged} vs plain {plain}");
        }
    }

    #[test]
    fn traffic_prefers_merging_shared_columns_and_not_random_ones() {
        // 64-row blocks, 128 K blocks: the Hopper tiles (64, 512) unmerged and (128, 256)
        // merged in pairs (B in 64-column boxes); and 32-row blocks on the portable tiles
        // (32, 256) unmerged, (128, 128) merged in fours (B in 8-column chunks). A wide N and
        // narrow ones (one N tile, where B's columns that do not exist must not count).
        let rows = 128usize;
        let seed: u64 = rand::random();
        let mut rng = SmallRng::seed_from_u64(seed);
        let banded: Vec<bool> = (0..rows * rows).map(|e| (e / rows).abs_diff(e % rows) <= 8).collect();
        let causal: Vec<bool> = (0..rows * rows).map(|e| e % rows <= e / rows).collect();
        let random: Vec<bool> = (0..rows * rows).map(|_| rng.random_bool(0.125)).collect();
        for (name, mask, merge) in [("banded", banded, true), ("causal", causal, true), ("random", random, false)] {
            let (row_ptr, kidx) = csr(&mask, rows);
            for n in [8192usize, 1000, 256, 64, 1] {
                for (kb, plain_tile, merged_tile, m, unit) in [(64, (64, 512), (128, 256), 2, 64), (32, (32, 256), (128, 128), 4, 8)] {
                    let g = merge_rows(&row_ptr, &kidx, |q| q as u32, m).unwrap();
                    let (p, q) = (positions(&row_ptr), positions(&g.row_ptr));
                    let plain = l2_traffic(p, p * plain_tile.0, kb, plain_tile.1, unit, n);
                    let merged = l2_traffic(q, q * merged_tile.0, kb, merged_tile.1, unit, n);
                    assert_eq!(merged < plain, merge, "seed {seed}: {name}, N {n}, m {m}: merged {merged} vs plain {plain}");
                }
            }
        }
    }

    /// The candidates of 16- and 32-row blocks as the planner weighs them, against their times
    /// measured side by side (H100, 8192³, f16, `bench --densities 0.125,0.25,0.5 --blocks
    /// 16,32 --merge 1,2,4,8 --masks`, docs/results/v19/planner_candidates.txt; ms, the mean
    /// of the runs; the skipping plans from v25's run of the same with `--skips`,
    /// docs/results/v25/candidates.txt, the best of the rows that ran them). Masks drawn fresh:
    /// the choice must hold for any draw of the random families.
    #[test]
    fn the_cost_model_picks_the_measured_fastest_candidates() {
        use blocksparse_abi::{WGMMA_SHALLOW_TILES, mma_tile_index};
        use blocksparse_testkit::testgen::{MaskFamily, seeded_rng};
        let seed: u64 = rand::random();
        let portable = |tm: u32| TileChoice { family: KernelFamily::Portable, tile: mma_tile_index(tm).unwrap() };
        let (p16, p32, p64, p128) = (portable(16), portable(32), portable(64), portable(128));
        let k32 = TileChoice { family: KernelFamily::Hopper, tile: WGMMA_SHALLOW_TILES[0] };
        let k16 = TileChoice { family: KernelFamily::Hopper, tile: WGMMA_SHALLOW_TILES[1] };
        // (rows merged per tile, tile, skipping, measured ms; None: not measured, must not be
        // chosen).
        let c16 = |p: f64, k: f64, ks: Option<f64>| vec![(1, p16, false, Some(p)), (8, k16, false, Some(k)), (8, k16, true, ks)];
        let c32 = |p: f64, p2: f64, k: f64, ks: f64| {
            vec![
                (1, p32, false, Some(p)),
                (2, p64, false, Some(p2)),
                (4, p128, false, None),
                (4, k32, false, Some(k)),
                (4, k32, true, Some(ks)),
            ]
        };
        let cases = [
            (16, MaskFamily::Uniform(0.125), c16(1.159, 1.601, Some(1.435))),
            (16, MaskFamily::Uniform(0.25), c16(2.289, 2.073, Some(2.075))),
            (16, MaskFamily::Uniform(0.5), c16(4.711, 2.172, Some(2.421))),
            (16, MaskFamily::Causal, c16(4.601, 1.135, Some(1.292))),
            (16, MaskFamily::Window(8), c16(0.367, 0.150, Some(0.146))),
            (16, MaskFamily::BlockDiagonal(8), c16(1.114, 0.315, Some(0.367))),
            (16, MaskFamily::BigBird, c16(0.253, 0.238, Some(0.209))),
            (16, MaskFamily::Zipf(0.1), c16(1.138, 1.527, None)),
            (16, MaskFamily::TopK(16), c16(0.330, 0.582, Some(0.490))),
            (32, MaskFamily::Uniform(0.125), c32(0.666, 1.014, 0.958, 0.709)),
            (32, MaskFamily::Uniform(0.25), c32(1.300, 1.789, 1.535, 1.184)),
            (32, MaskFamily::Uniform(0.5), c32(2.723, 3.308, 1.904, 1.783)),
            (32, MaskFamily::Causal, c32(2.730, 2.303, 0.951, 1.119)),
            (32, MaskFamily::Window(8), c32(0.386, 0.367, 0.192, 0.183)),
            (32, MaskFamily::BlockDiagonal(8), c32(0.679, 0.564, 0.277, 0.284)),
            (32, MaskFamily::BigBird, c32(0.269, 0.280, 0.257, 0.197)),
            (32, MaskFamily::Zipf(0.1), c32(0.625, 0.876, 0.888, 0.638)),
            (32, MaskFamily::TopK(16), c32(0.363, 0.532, 0.558, 0.394)),
        ];
        let mut rng = seeded_rng(seed);
        for (bs, family, cands) in cases {
            let nb = 8192 / bs;
            let (row_ptr, kidx) = csr(&family.mask(nb, nb, &mut rng), nb);
            let cost = |m: usize, choice: TileChoice, skip: bool| {
                if m == 1 {
                    return tile_cost(&row_ptr, bs as u32, choice, 8192, 2);
                }
                let merged = merge_rows(&row_ptr, &kidx, |q| q as u32, m).unwrap();
                if skip {
                    let groups = multiplied_groups(&merged, m, choice.shape().0);
                    skip_tile_cost(&merged.row_ptr, &groups, bs as u32, choice, 8192, 2)
                } else {
                    tile_cost(&merged.row_ptr, bs as u32, choice, 8192, 2)
                }
            };
            let fastest = cands.iter().filter_map(|c| c.3).fold(f64::INFINITY, f64::min);
            let costs: Vec<f64> = cands.iter().map(|c| cost(c.0, c.1, c.2)).collect();
            let (&(m, choice, skip, ms), _) = cands.iter().zip(&costs).min_by(|a, b| a.1.total_cmp(b.1)).unwrap();
            // Within 7 %: e.g. uniform 50 % 32×32 without skipping, 7 % slower (perf notes v25).
            assert!(
                ms.is_some_and(|ms| ms <= 1.07 * fastest),
                "seed {seed}: {bs}x{bs} {}: the model picks {choice}/{m} skipping {skip} ({ms:?} ms), the fastest ran {fastest} ms",
                family.name()
            );
        }
    }

    /// 64×64 blocks: the unmerged 64-row tile against pairs merged on the 128-row tile, in A's
    /// row order and reordered (heavy rows first), as the planner weighs them, against their
    /// times measured side by side (H100, 8192³, f16; perf notes v22 and v23: `bench --masks
    /// --blocks 64 --merge 1,2 --reorder`, the best of the runs; None: no heavy rows to reorder).
    #[test]
    fn the_cost_model_picks_the_measured_fastest_64_row_plans() {
        use crate::ops::spmm::{heavy_rows_first, permute_stream};
        use blocksparse_abi::wgmma_tile_index;
        use blocksparse_testkit::testgen::{MaskFamily, seeded_rng};
        let seed: u64 = rand::random();
        let hopper = |tm: u32| TileChoice { family: KernelFamily::Hopper, tile: wgmma_tile_index(tm).unwrap() };
        let (h64, h128) = (hopper(64), hopper(128));
        // Measured ms: unmerged, pairs in A's order, pairs reordered; then pairs skipping, in
        // A's order and reordered (v25: docs/results/v25/candidates.txt and the A/B runs beside
        // it, the best of the rows).
        let cases = [
            (MaskFamily::Uniform(0.125), 0.321, 0.480, None, 0.333, None),
            (MaskFamily::Causal, 1.054, 0.778, None, 0.761, None),
            (MaskFamily::Window(8), 0.317, 0.242, None, 0.234, None),
            (MaskFamily::BlockDiagonal(8), 0.238, 0.213, None, 0.246, None),
            (MaskFamily::BigBird, 0.206, 0.223, Some(0.235), 0.232, Some(0.227)),
            (MaskFamily::Zipf(0.1), 0.311, 0.315, Some(0.279), 0.259, Some(0.252)),
            (MaskFamily::TopK(16), 0.321, 0.471, None, 0.333, None),
        ];
        let mut rng = seeded_rng(seed);
        for (family, plain_ms, merged_ms, reordered_ms, skip_ms, skip_reordered_ms) in cases {
            let (row_ptr, kidx) = csr(&family.mask(128, 128, &mut rng), 128);
            let plain = tile_cost(&row_ptr, 64, h64, 8192, 2);
            // (without skipping, skipping)
            let costs = |merged: Merged| {
                let groups = multiplied_groups(&merged, 2, 128);
                (tile_cost(&merged.row_ptr, 64, h128, 8192, 2), skip_tile_cost(&merged.row_ptr, &groups, 64, h128, 8192, 2))
            };
            let merged = costs(merge_rows(&row_ptr, &kidx, |q| q as u32, 2).unwrap());
            let reordered = heavy_rows_first(&row_ptr).map(|order| {
                let (rp, kx, _) = permute_stream(&row_ptr, &kidx, &order);
                costs(merge_rows(&rp, &kx, |q| q as u32, 2).unwrap())
            });
            let mut picks = vec![
                (plain, Some(plain_ms), "unmerged"),
                (merged.0, Some(merged_ms), "merged"),
                (merged.1, Some(skip_ms), "merged, skipping"),
            ];
            if let Some(r) = reordered {
                picks.push((r.0, reordered_ms, "reordered"));
                picks.push((r.1, skip_reordered_ms, "reordered, skipping"));
            }
            let fastest = picks.iter().filter_map(|p| p.1).fold(f64::INFINITY, f64::min);
            let &(_, ms, name) = picks.iter().min_by(|a, b| a.0.total_cmp(&b.0)).unwrap();
            assert!(
                ms.is_some_and(|ms| ms <= 1.05 * fastest),
                "seed {seed}: 64x64 {}: the model picks {name} ({ms:?} ms), the fastest ran {fastest} ms (costs {picks:?})",
                family.name()
            );
        }
    }
}
