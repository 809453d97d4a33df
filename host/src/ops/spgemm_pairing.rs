//! Which two C blocks of a block row share a tile of the column-split Hopper tile (128-wide C
//! blocks, one per consumer warpgroup; perf notes v31).
//!
//! The tile streams the union of its two blocks' K lists: a record for every A block of the
//! row that meets B under either block. Each record costs an A slice (and a stage of issue) for
//! one or two C blocks, so a row's tiles cost `Σ |S₀ ∪ S₁| = Σ |S| − Σ |S₀ ∩ S₁|` records, where
//! `S_j` is the set of the row's A blocks that meet B's block column `j`. Pairing the blocks
//! whose sets overlap most saves the most A slices: with random 50 % × 50 % patterns at
//! 128×128, 6 % of the records within windows of 8 block columns and 12 % over all 64.
//!
//! ```text
//! for each run of the row's C blocks in one window of `window` block columns:
//!     pairs = the matching of the run's blocks of the largest total |S_x ∩ S_y|: exact for
//!             runs of up to 12 blocks; longer ones greedily (each pair of positive overlap,
//!             largest first, whose blocks are both still free)
//!     pair the blocks left in order
//!     keep those pairs where their total overlap beats neighbours' (x, x + 1), else those
//! ```
//! The window keeps each tile's two blocks in one N-tile group of the plan's order, so that the
//! blocks running at one time still share their columns of B in L2.

use blocksparse_abi::NO_BLOCK;

use crate::pairs::BlockPattern;

/// Buffers [`row_tiles`] reuses from row to row.
#[derive(Default)]
pub(super) struct Scratch {
    /// The position in the A row of each of the row's pairs, by member (C block).
    contrib: Vec<u32>,
    /// Where each member's pairs start in `contrib`.
    start: Vec<u32>,
    /// Per C block column: `(row + 1, member)` where the column is a member of row `row` (0:
    /// never), so that a column outside the row's C blocks is told apart without clearing.
    member_of: Vec<(u32, u32)>,
    /// `(slot value, block column)` of the row's C blocks, by column.
    members: Vec<(u32, u32)>,
    /// `(overlap, x, y)` candidates of one run (positions in `members`).
    cand: Vec<(u32, u32, u32)>,
    /// [`exact`]'s best total per subset.
    best: Vec<u32>,
    /// A run's candidates ordered by decreasing overlap ([`by_overlap`]), and the counts of
    /// its sort.
    sorted: Vec<(u32, u32, u32)>,
    counts: Vec<u32>,
    /// The sets of one run as bitsets over the row's A positions, `words` 64-bit words each
    /// (where that is cheaper than merging the lists: [`Sets`]).
    bits: Vec<u64>,
    taken: Vec<bool>,
    pairs: Vec<[u32; 2]>,
}

/// Runs of at most this many blocks are matched exactly ([`exact`]: 2ⁿ states of n steps),
/// longer ones greedily.
const EXACT_MAX: usize = 12;

/// The pairs of `n` blocks (positions `0..n`) of the largest total overlap, from the `(overlap,
/// x, y)` candidates (every pair of positive overlap), into `pairs`; returns the total. Over
/// the subsets of the blocks still free: the first free block either stays alone or pairs
/// with another free one (ties: alone, then the lowest partner).
fn exact(n: usize, cand: &[(u32, u32, u32)], best: &mut Vec<u32>, pairs: &mut Vec<[u32; 2]>) -> u64 {
    let mut w = [[0u32; EXACT_MAX]; EXACT_MAX];
    for &(o, x, y) in cand {
        w[x as usize][y as usize] = o;
    }
    best.clear();
    best.resize(1 << n, 0);
    for mask in 1usize..1 << n {
        let i = mask.trailing_zeros() as usize;
        let rest = mask & !(1 << i);
        let mut b = best[rest];
        let mut r = rest;
        while r != 0 {
            let j = r.trailing_zeros() as usize;
            r &= r - 1;
            if w[i][j] > 0 {
                b = b.max(w[i][j] + best[rest & !(1 << j)]);
            }
        }
        best[mask] = b;
    }
    // Walk the choices back from the full set.
    let mut mask = (1usize << n) - 1;
    while mask != 0 {
        let i = mask.trailing_zeros() as usize;
        let rest = mask & !(1 << i);
        mask = rest;
        if best[rest] == best[mask | 1 << i] {
            continue; // alone
        }
        let mut r = rest;
        while r != 0 {
            let j = r.trailing_zeros() as usize;
            r &= r - 1;
            if w[i][j] > 0 && w[i][j] + best[rest & !(1 << j)] == best[rest | 1 << i] {
                pairs.push([i as u32, j as u32]);
                mask = rest & !(1 << j);
                break;
            }
        }
    }
    best[(1 << n) - 1] as u64
}

/// Number of common elements of two increasing lists.
fn overlap(x: &[u32], y: &[u32]) -> u32 {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            core::cmp::Ordering::Less => i += 1,
            core::cmp::Ordering::Greater => j += 1,
            core::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// The sets `S_x` of one run of a row's C blocks, for their pairwise overlaps: the increasing
/// lists of A positions, or the same sets as bitsets of `words` 64-bit words where a row's
/// lists are long against its length (then an overlap costs `words` AND + popcount steps, not a
/// merge of two lists). Both give the same counts.
enum Sets<'a> {
    Lists(Vec<&'a [u32]>),
    Bits { bits: &'a [u64], words: usize },
}

impl Sets<'_> {
    fn overlap(&self, x: usize, y: usize) -> u32 {
        match self {
            Sets::Lists(l) => overlap(l[x], l[y]),
            Sets::Bits { bits, words } => {
                let (bx, by) = (&bits[x * words..(x + 1) * words], &bits[y * words..(y + 1) * words]);
                bx.iter().zip(by).map(|(u, v)| (u & v).count_ones()).sum()
            }
        }
    }
}

/// `cand`, generated in increasing `(x, y)`, into `sorted` by decreasing overlap, ties in
/// increasing `(x, y)`: the order of `sort_by_key((Reverse(o), x, y))`, by a stable counting
/// sort on the overlap (at most the row's A blocks).
fn by_overlap(cand: &[(u32, u32, u32)], counts: &mut Vec<u32>, sorted: &mut Vec<(u32, u32, u32)>) {
    let max = cand.iter().map(|c| c.0).max().unwrap_or(0) as usize;
    counts.clear();
    counts.resize(max + 2, 0);
    // Bucket `max - o`: the largest overlap first.
    for c in cand {
        counts[max - c.0 as usize + 1] += 1;
    }
    for o in 1..counts.len() {
        counts[o] += counts[o - 1];
    }
    sorted.clear();
    sorted.resize(cand.len(), (0, 0, 0));
    for &c in cand {
        let at = &mut counts[max - c.0 as usize];
        sorted[*at as usize] = c;
        *at += 1;
    }
}

/// The tiles of block row `i` of `C = A · B` as pairs of slot values (a dense C's block column,
/// or a block-sparse C's block index; `c` is C's pattern then), `NO_BLOCK` in the second slot
/// where a tile holds one block, appended to `out` in tile order. `matching: None`: the row's C
/// blocks in column order, two by two (the tiles of an unpaired plan). `Some(window)`: paired
/// within each window of `window` block columns as the module says.
pub(super) fn row_tiles(
    a: &BlockPattern,
    b: &BlockPattern,
    c: Option<&BlockPattern>,
    i: usize,
    matching: Option<usize>,
    s: &mut Scratch,
    out: &mut Vec<[u32; 2]>,
) {
    s.members.clear();
    match c {
        None => s.members.extend((0..b.cols as u32).map(|j| (j, j))),
        Some(c) => s.members.extend((c.row_ptr[i]..c.row_ptr[i + 1]).map(|ci| (ci, c.col_idx[ci as usize]))),
    }
    let natural = |m: &[(u32, u32)], out: &mut Vec<[u32; 2]>| {
        out.extend(m.chunks(2).map(|p| [p[0].0, p.get(1).map_or(NO_BLOCK, |q| q.0)]));
    };
    let Some(window) = matching else {
        natural(&s.members, out);
        return;
    };
    // The row's pairs bucketed by member (a counting sort over the row's C blocks, so a row
    // costs its pairs and its blocks, not C's width): S of member x is
    // `contrib[start[x]..start[x + 1]]`, the A positions in increasing order.
    if s.member_of.len() < b.cols {
        s.member_of.resize(b.cols, (0, 0));
    }
    let stamp = i as u32 + 1;
    for (x, &(_, j)) in s.members.iter().enumerate() {
        s.member_of[j as usize] = (stamp, x as u32);
    }
    let a_row = a.row_ptr[i]..a.row_ptr[i + 1];
    let b_row = |p: u32| {
        let k = a.col_idx[p as usize] as usize;
        b.row_ptr[k]..b.row_ptr[k + 1]
    };
    let member = |member_of: &[(u32, u32)], q: u32| match member_of[b.col_idx[q as usize] as usize] {
        (r, x) if r == stamp => Some(x as usize),
        _ => None, // outside C's pattern in this row
    };
    s.start.clear();
    s.start.resize(s.members.len() + 2, 0);
    for p in a_row.clone() {
        for q in b_row(p) {
            if let Some(x) = member(&s.member_of, q) {
                s.start[x + 2] += 1;
            }
        }
    }
    for x in 2..s.start.len() {
        s.start[x] += s.start[x - 1];
    }
    // `start[x + 1]` is now where member x's run starts; filling moves it to the run's end,
    // which is where member x + 1's run starts.
    s.contrib.clear();
    s.contrib.resize(s.start[s.members.len() + 1] as usize, 0);
    for p in a_row.clone() {
        for q in b_row(p) {
            if let Some(x) = member(&s.member_of, q) {
                let at = &mut s.start[x + 1];
                s.contrib[*at as usize] = p - a_row.start;
                *at += 1;
            }
        }
    }
    let window = window.max(2) as u32;
    let mut lo = 0;
    while lo < s.members.len() {
        let w = s.members[lo].1 / window;
        let mut hi = lo + 1;
        while hi < s.members.len() && s.members[hi].1 / window == w {
            hi += 1;
        }
        let run = &s.members[lo..hi];
        let list = |x: usize| &s.contrib[s.start[x] as usize..s.start[x + 1] as usize];
        // Bitsets where a pair's merge (about `2 · mean |S|` steps) would cost more than its
        // `words` AND + popcount steps.
        let words = (a_row.len()).div_ceil(64);
        let listed = (s.start[hi] - s.start[lo]) as usize;
        let sets = if run.len() > 2 && words * run.len() <= 2 * listed {
            s.bits.clear();
            s.bits.resize(words * run.len(), 0);
            for x in 0..run.len() {
                for &pos in list(lo + x) {
                    s.bits[x * words + pos as usize / 64] |= 1 << (pos % 64);
                }
            }
            Sets::Bits { bits: &s.bits, words }
        } else {
            Sets::Lists((lo..hi).map(list).collect())
        };
        s.cand.clear();
        for x in 0..run.len() {
            for y in x + 1..run.len() {
                let o = sets.overlap(x, y);
                if o > 0 {
                    s.cand.push((o, x as u32, y as u32));
                }
            }
        }
        s.taken.clear();
        s.taken.resize(run.len(), false);
        s.pairs.clear();
        let matched = if run.len() <= EXACT_MAX {
            exact(run.len(), &s.cand, &mut s.best, &mut s.pairs)
        } else {
            by_overlap(&s.cand, &mut s.counts, &mut s.sorted);
            let mut total = 0u64;
            for &(o, x, y) in &s.sorted {
                if !s.taken[x as usize] && !s.taken[y as usize] {
                    s.taken[x as usize] = true;
                    s.taken[y as usize] = true;
                    s.pairs.push([x, y]);
                    total += o as u64;
                }
            }
            total
        };
        for p in &s.pairs {
            s.taken[p[0] as usize] = true;
            s.taken[p[1] as usize] = true;
        }
        // The blocks left, in order, two by two.
        let left: Vec<u32> = (0..run.len() as u32).filter(|&x| !s.taken[x as usize]).collect();
        s.pairs.extend(left.chunks(2).map(|p| [p[0], p.get(1).copied().unwrap_or(u32::MAX)]));
        let mut neighbours = 0u64;
        let mut x = 0;
        while x + 1 < run.len() {
            neighbours += sets.overlap(x, x + 1) as u64;
            x += 2;
        }
        if matched > neighbours {
            // Tiles in the order of their first block (a lone block last).
            s.pairs.sort_unstable_by_key(|p| (p[1] == u32::MAX, p[0]));
            out.extend(s.pairs.iter().map(|p| [run[p[0] as usize].0, if p[1] == u32::MAX { NO_BLOCK } else { run[p[1] as usize].0 }]));
        } else {
            natural(run, out);
        }
        lo = hi;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// The best total over every matching, by brute force.
    fn brute(free: &mut Vec<usize>, w: &[[u32; EXACT_MAX]; EXACT_MAX]) -> u64 {
        let Some(i) = free.pop() else { return 0 };
        let mut best = brute(free, w);
        for k in 0..free.len() {
            let j = free.remove(k);
            best = best.max(w[i.min(j)][i.max(j)] as u64 + brute(free, w));
            free.insert(k, j);
        }
        free.push(i);
        best
    }

    #[test]
    fn bitset_overlaps_and_the_counting_sort_match_the_merge_and_the_sort() {
        let mut rng = SmallRng::seed_from_u64(rand::random());
        for _ in 0..200 {
            // Sets of A positions in a row of `len` blocks, some empty, some full.
            let len = rng.random_range(1..200usize);
            let n = rng.random_range(1..24usize);
            let lists: Vec<Vec<u32>> = (0..n)
                .map(|_| {
                    let d = [0.0, 0.05, 0.5, 1.0][rng.random_range(0..4)];
                    (0..len as u32).filter(|_| rng.random_bool(d)).collect()
                })
                .collect();
            let words = len.div_ceil(64);
            let mut bits = vec![0u64; words * n];
            for (x, l) in lists.iter().enumerate() {
                for &p in l {
                    bits[x * words + p as usize / 64] |= 1 << (p % 64);
                }
            }
            let as_bits = Sets::Bits { bits: &bits, words };
            let as_lists = Sets::Lists(lists.iter().map(|l| &l[..]).collect());
            let mut cand = Vec::new();
            for x in 0..n {
                for y in x + 1..n {
                    let o = as_lists.overlap(x, y);
                    let naive = lists[x].iter().filter(|p| lists[y].contains(p)).count() as u32;
                    assert_eq!((as_bits.overlap(x, y), o), (naive, naive), "{len} blocks, sets {x} and {y}");
                    if o > 0 || rng.random_bool(0.1) {
                        cand.push((o, x as u32, y as u32));
                    }
                }
            }
            let (mut counts, mut sorted) = (Vec::new(), Vec::new());
            by_overlap(&cand, &mut counts, &mut sorted);
            let mut want = cand.clone();
            want.sort_unstable_by_key(|&(o, x, y)| (core::cmp::Reverse(o), x, y));
            assert_eq!(sorted, want);
        }
    }

    #[test]
    #[allow(clippy::needless_range_loop)]
    fn exact_matching_is_the_best_and_consistent() {
        let mut rng = SmallRng::seed_from_u64(rand::random());
        for _ in 0..300 {
            let n = rng.random_range(1..=9usize);
            let mut w = [[0u32; EXACT_MAX]; EXACT_MAX];
            let mut cand = Vec::new();
            for x in 0..n {
                for y in x + 1..n {
                    if rng.random_bool(0.6) {
                        let o = rng.random_range(1..6u32);
                        w[x][y] = o;
                        cand.push((o, x as u32, y as u32));
                    }
                }
            }
            let (mut best, mut pairs) = (Vec::new(), Vec::new());
            let total = exact(n, &cand, &mut best, &mut pairs);
            assert_eq!(total, brute(&mut (0..n).collect(), &w), "{n} blocks, {cand:?}");
            // The pairs found are disjoint, of positive overlap, and sum to the total.
            let mut seen = vec![false; n];
            let mut sum = 0;
            for &[x, y] in &pairs {
                assert!(x < y && w[x as usize][y as usize] > 0);
                assert!(!seen[x as usize] && !seen[y as usize]);
                seen[x as usize] = true;
                seen[y as usize] = true;
                sum += w[x as usize][y as usize] as u64;
            }
            assert_eq!(sum, total);
        }
    }
}
