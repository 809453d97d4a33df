//! Tests of the SpGEMM planner (host only).
use super::*;
use std::collections::HashMap;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// `BLOCKSPARSE_SEED` from the environment (to reproduce a failure), or a fresh one; printed.
fn seed(name: &str) -> u64 {
    let seed = std::env::var("BLOCKSPARSE_SEED").ok().and_then(|s| s.trim().parse().ok()).unwrap_or_else(rand::random);
    eprintln!("{name}: seed {seed} (rerun with BLOCKSPARSE_SEED={seed})");
    seed
}

use crate::pairs::tests::csr;

/// A block grid and its CSR form: `index[r · cols + c]` is the position of block (r, c).
struct Grid {
    rows: usize,
    cols: usize,
    mask: Vec<bool>,
    row_ptr: Vec<u32>,
    col_idx: Vec<u32>,
    index: Vec<u32>,
}

impl Grid {
    fn new(mask: Vec<bool>, rows: usize, cols: usize) -> Grid {
        assert_eq!(mask.len(), rows * cols);
        let (row_ptr, col_idx) = csr(&mask, cols);
        let mut index = vec![u32::MAX; mask.len()];
        let mut n = 0;
        for (e, &x) in mask.iter().enumerate() {
            if x {
                index[e] = n;
                n += 1;
            }
        }
        Grid { rows, cols, mask, row_ptr, col_idx, index }
    }
    fn has(&self, r: usize, c: usize) -> bool {
        self.mask[r * self.cols + c]
    }
    fn at(&self, r: usize, c: usize) -> u32 {
        self.index[r * self.cols + c]
    }
    fn pattern(&self) -> BlockPattern<'_> {
        BlockPattern { cols: self.cols, row_ptr: &self.row_ptr, col_idx: &self.col_idx }
    }
}

/// The product's own pattern by brute force: (i, j) where some k has A(i, k) and B(k, j).
fn product_grid(a: &Grid, b: &Grid) -> Grid {
    let mask = (0..a.rows * b.cols).map(|e| (0..a.cols).any(|k| a.has(e / b.cols, k) && b.has(k, e % b.cols))).collect();
    Grid::new(mask, a.rows, b.cols)
}

/// The layout of `jt` column blocks per group, `groups` groups, without pairing.
fn plain(jt: usize, dense: bool, groups: usize) -> Layout2 {
    Layout2 { j_per_tile: jt, dense, groups, pair: false, matching: false, window: 0 }
}

/// The C blocks of tile `t` of block row `i`, as block columns: `j_per_tile` consecutive
/// columns of a dense C (fewer at the tail), or the row's C blocks `t · jt ..` of a block-sparse
/// one; `None` when the row has no tile `t`.
fn tile_cols(c: Option<&Grid>, nb: usize, i: usize, t: usize, jt: usize) -> Option<Vec<usize>> {
    let cols: Vec<usize> = match c {
        None => (0..nb).collect(),
        Some(c) => (0..nb).filter(|&j| c.has(i, j)).collect(),
    };
    if t * jt >= cols.len() {
        return None;
    }
    Some(cols[t * jt..((t + 1) * jt).min(cols.len())].to_vec())
}

/// The records [`walk`] must produce, by brute force: per tile of every row (in row order), one
/// record per k (increasing) whose A block (i, k) exists and meets at least one B block (k, j)
/// under the tile, with that B block in the slot of j.
fn reference(a: &Grid, b: &Grid, c: Option<&Grid>, jt: usize) -> (Vec<u32>, Vec<[u32; 6]>) {
    let (mut words, mut tiles) = (Vec::new(), Vec::new());
    let mut n_records = 0u32;
    for i in 0..a.rows {
        let c_begin = c.map_or(0, |c| c.row_ptr[i]);
        let mut t = 0;
        while let Some(cols) = tile_cols(c, b.cols, i, t, jt) {
            let first = n_records;
            for k in (0..a.cols).filter(|&k| a.has(i, k)) {
                let slots: Vec<u32> = (0..jt).map(|s| cols.get(s).filter(|&&j| b.has(k, j)).map_or(NO_BLOCK, |&j| b.at(k, j))).collect();
                if slots.iter().any(|&q| q != NO_BLOCK) {
                    words.push(a.at(i, k));
                    words.extend(slots);
                    n_records += 1;
                }
            }
            let (nt, cb, ce) = match c {
                None => (t as u32, 0, 0),
                Some(_) => (t as u32, c_begin + (t * jt) as u32, c_begin + (t * jt + cols.len()) as u32),
            };
            tiles.push([i as u32, nt, cb, ce, first, n_records]);
            t += 1;
        }
    }
    (words, tiles)
}

/// The properties of [`walk`]'s records, checked one by one (with messages that say which):
/// every pair (p, q) of every C block lies in exactly one record of the right tile, at the
/// block's column slot; a tile's records are in increasing p; each holds at least one B block
/// and NO_BLOCK elsewhere.
fn check_records(a: &Grid, b: &Grid, c: Option<&Grid>, jt: usize, rec: &Records, what: &str) {
    let w = 1 + jt;
    assert_eq!(rec.words.len(), w * rec.n_records, "{what}: words per record");
    // Tiles in row order, each row's tiles numbered from 0, record ranges back to back.
    let mut tile_of: HashMap<(usize, usize), usize> = HashMap::new(); // (row, tile in row) -> tile
    let mut next = 0u32;
    for (ti, t) in rec.tiles.iter().enumerate() {
        let [row, nt, cb, ce, first, end] = *t;
        assert_eq!(first, next, "{what}: tile {ti}'s records follow the previous tile's");
        assert!(end >= first, "{what}: tile {ti}");
        next = end;
        let in_row = tile_of.keys().filter(|(r, _)| *r == row as usize).count();
        if ti > 0 {
            assert!(rec.tiles[ti - 1][0] <= row, "{what}: tiles in row order");
        }
        let cols = tile_cols(c, b.cols, row as usize, in_row, jt).unwrap_or_else(|| panic!("{what}: row {row} has no tile {in_row}"));
        match c {
            None => assert_eq!((nt, cb, ce), (in_row as u32, 0, 0), "{what}: dense tile {ti}"),
            Some(c) => {
                assert_eq!(nt, in_row as u32, "{what}: block-sparse tile {ti}");
                let want: Vec<usize> = (cb..ce).map(|x| c.col_idx[x as usize] as usize).collect();
                assert_eq!(want, cols, "{what}: tile {ti}'s C blocks");
            }
        }
        tile_of.insert((row as usize, in_row), ti);
    }
    assert_eq!(next as usize, rec.n_records, "{what}: the tiles cover every record");
    for i in 0..a.rows {
        let n = tile_of.keys().filter(|(r, _)| *r == i).count();
        assert!(tile_cols(c, b.cols, i, n, jt).is_none(), "{what}: row {i} is missing tile {n}");
    }
    // The pairs found in the records: (tile, slot, p, q).
    let mut got = Vec::new();
    for (ti, t) in rec.tiles.iter().enumerate() {
        let row = t[0] as usize;
        let mut last_p = None;
        for r in t[4] as usize..t[5] as usize {
            let words = &rec.words[r * w..(r + 1) * w];
            let p = words[0];
            assert!(
                (a.row_ptr[row]..a.row_ptr[row + 1]).contains(&p),
                "{what}: record {r} of tile {ti}: A block {p} is not in block row {row}"
            );
            assert!(last_p < Some(p), "{what}: tile {ti}: records not in increasing p ({last_p:?} then {p})");
            last_p = Some(p);
            assert!(words[1..].iter().any(|&q| q != NO_BLOCK), "{what}: record {r} of tile {ti} has no B block");
            for (s, &q) in words[1..].iter().enumerate().filter(|(_, q)| **q != NO_BLOCK) {
                got.push((ti, s, p, q));
            }
        }
    }
    // Every pair of every C block, by brute force, where it must be.
    let mut want = Vec::new();
    for i in 0..a.rows {
        let mut t = 0;
        while let Some(cols) = tile_cols(c, b.cols, i, t, jt) {
            for (s, &j) in cols.iter().enumerate() {
                for k in (0..a.cols).filter(|&k| a.has(i, k) && b.has(k, j)) {
                    want.push((tile_of[&(i, t)], s, a.at(i, k), b.at(k, j)));
                }
            }
            t += 1;
        }
    }
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got.len(), want.len(), "{what}: pairs in the records");
    assert_eq!(got, want, "{what}: pairs in the records");
}

/// The properties of [`split_tiles`]' work list for `tiles` (each tile of every matrix is
/// covered by its record range exactly once: one direct item, or consecutive pieces of one
/// split group in consecutive slots), and its order.
fn check_split(tiles: &[[u32; 6]], batch: u32, resident: u32, stages_per_record: u32, wl: &WorkList, what: &str) {
    let key = |bt: u32, row: u32, nt: u32, cb: u32, ce: u32| (bt, row, nt, cb, ce);
    let mut index = HashMap::new();
    for (ti, t) in tiles.iter().enumerate() {
        for bt in 0..batch {
            assert!(index.insert(key(bt, t[0], t[1], t[2], t[3]), ti).is_none(), "{what}: tiles are told apart by row, N tile, C blocks");
        }
    }
    let total: u64 = tiles.iter().map(|t| (t[5] - t[4]) as u64).sum::<u64>() * batch as u64;
    // The documented rule: a tile is split where its records exceed twice a resident thread
    // block's fair share, and at least 8 stages.
    let limit = (2 * total.div_ceil(resident.max(1) as u64)).max(8u64.div_ceil(stages_per_record as u64));
    let mut per_tile: Vec<Vec<WorkItem>> = vec![Vec::new(); tiles.len() * batch as usize];
    for it in &wl.items {
        let ti = *index
            .get(&key(it.batch, it.tile_row, it.n_tile, it.blk_begin, it.blk_end))
            .unwrap_or_else(|| panic!("{what}: item {it:?} is no tile's"));
        per_tile[it.batch as usize * tiles.len() + ti].push(*it);
    }
    let mut slot_seen = vec![0u32; wl.n_slots as usize];
    let mut groups_seen = 0;
    for (cell, items) in per_tile.iter_mut().enumerate() {
        let (bt, t) = ((cell / tiles.len()) as u32, tiles[cell % tiles.len()]);
        let (begin, end) = (t[4], t[5]);
        let len = (end - begin) as u64;
        assert!(!items.is_empty(), "{what}: tile {t:?} of matrix {bt} not covered");
        if items.len() == 1 && items[0].partial_slot == NO_SLOT {
            assert_eq!((items[0].k_begin, items[0].k_end), (begin, end), "{what}: tile {t:?} of matrix {bt}");
            assert!(len <= limit, "{what}: tile {t:?} of {len} records left whole (limit {limit})");
            continue;
        }
        assert!(len > limit, "{what}: tile {t:?} of {len} records split (limit {limit})");
        items.sort_by_key(|i| i.partial_slot);
        let g: Vec<&SplitGroup> =
            wl.groups.iter().filter(|g| (g.batch, g.tile_row, g.n_tile, g.blk_begin, g.blk_end) == (bt, t[0], t[1], t[2], t[3])).collect();
        assert_eq!(g.len(), 1, "{what}: one split group per split tile");
        groups_seen += 1;
        assert_eq!(g[0].n_slots as usize, items.len(), "{what}: the group's slots are its pieces");
        let mut at = begin;
        let (mut shortest, mut longest) = (u32::MAX, 0);
        for (c, it) in items.iter().enumerate() {
            assert_eq!(it.partial_slot, g[0].first_slot + c as u32, "{what}: consecutive slots");
            slot_seen[it.partial_slot as usize] += 1;
            assert_eq!(it.k_begin, at, "{what}: pieces back to back, in slot order");
            assert!(it.k_end > it.k_begin, "{what}: no empty piece");
            assert!((it.k_end - it.k_begin) as u64 <= limit, "{what}: a piece longer than the limit");
            shortest = shortest.min(it.k_end - it.k_begin);
            longest = longest.max(it.k_end - it.k_begin);
            at = it.k_end;
        }
        assert_eq!(at, end, "{what}: the pieces cover the tile's records");
        assert!(longest - shortest <= 1, "{what}: near-equal pieces ({shortest}..{longest})");
    }
    assert_eq!(groups_seen, wl.groups.len(), "{what}: no group without its items");
    assert!(slot_seen.iter().all(|&s| s == 1), "{what}: every partial slot written exactly once");
    assert_eq!(wl.max_item_blocks, wl.items.iter().map(|i| i.k_end - i.k_begin).max().unwrap_or(0), "{what}: max_item_blocks");
    assert!(wl.schedule.is_empty(), "{what}: no persistent schedule yet");
    // Order: a prefix of the longest items (non-increasing, each longer than every item after
    // it), then the rest matrix by matrix, tile by tile (row order), pieces in slot order.
    let rank: Vec<(u32, usize, u32)> = wl
        .items
        .iter()
        .map(|it| (it.batch, index[&key(it.batch, it.tile_row, it.n_tile, it.blk_begin, it.blk_end)], it.partial_slot))
        .collect();
    let len: Vec<u32> = wl.items.iter().map(|i| i.k_end - i.k_begin).collect();
    let n = len.len();
    let mut canonical_from = n; // the smallest h with rank[h..] increasing
    while canonical_from > 0 && (canonical_from == n || rank[canonical_from - 1] < rank[canonical_from]) {
        canonical_from -= 1;
    }
    let ok = (canonical_from..=n).any(|h| {
        len[..h].windows(2).all(|w| w[0] >= w[1])
            && len[..h].iter().min().copied().unwrap_or(u32::MAX) > len[h..].iter().max().copied().unwrap_or(0)
    });
    assert!(ok, "{what}: items not (longest first, then matrix by matrix in row order): {len:?}");
}

fn random_grid(rows: usize, cols: usize, rng: &mut SmallRng) -> Vec<bool> {
    let density = [0.0, 0.1, 0.3, 0.6, 1.0, rng.random_range(0.0..1.0)][rng.random_range(0..6)];
    let mut m: Vec<bool> = (0..rows * cols).map(|_| rng.random_bool(density)).collect();
    // Some empty rows and some full ones.
    for r in 0..rows {
        match rng.random_range(0..8) {
            0 => m[r * cols..(r + 1) * cols].fill(false),
            1 => m[r * cols..(r + 1) * cols].fill(true),
            _ => {}
        }
    }
    m
}

/// The C patterns of a case: dense, the product's own, a random mask, a mask disjoint from the
/// product in some rows (all their pairs masked out), and the full grid.
fn c_patterns(a: &Grid, b: &Grid, rng: &mut SmallRng) -> Vec<(&'static str, Option<Grid>)> {
    let product = product_grid(a, b);
    let (mb, nb) = (a.rows, b.cols);
    let random = Grid::new((0..mb * nb).map(|_| rng.random_bool(0.4)).collect(), mb, nb);
    let disjoint = Grid::new((0..mb * nb).map(|e| if e / nb % 2 == 0 { !product.mask[e] } else { rng.random_bool(0.5) }).collect(), mb, nb);
    let full = Grid::new(vec![true; mb * nb], mb, nb);
    vec![("dense", None), ("product", Some(product)), ("mask", Some(random)), ("disjoint mask", Some(disjoint)), ("full mask", Some(full))]
}

#[test]
fn walk_matches_brute_force_for_dense_product_and_masked_c() {
    let seed = seed("walk_matches_brute_force_for_dense_product_and_masked_c");
    let mut rng = SmallRng::seed_from_u64(seed);
    for case in 0..200 {
        let (mb, kb) = (rng.random_range(1..10usize), rng.random_range(1..12usize));
        let nb = if case % 4 == 0 { rng.random_range(17..48usize) } else { rng.random_range(1..12usize) };
        let a = Grid::new(random_grid(mb, kb, &mut rng), mb, kb);
        let b = Grid::new(random_grid(kb, nb, &mut rng), kb, nb);
        let (ga, gb) = (a.pattern(), b.pattern());
        let counts_all = pairs::count(&ga, &gb, None).unwrap();
        for (name, c) in c_patterns(&a, &b, &mut rng) {
            let cp = c.as_ref().map(Grid::pattern);
            for jt in [1usize, 2, 4, 16] {
                let what = format!("seed {seed} case {case}: {mb}x{kb}x{nb} blocks, C {name}, j_per_tile {jt}");
                let layout = plain(jt, c.is_none(), 1);
                let rec = walk(&ga, &gb, cp.as_ref(), &layout, true).unwrap();
                check_records(&a, &b, c.as_ref(), jt, &rec, &what);
                let (words, tiles) = reference(&a, &b, c.as_ref(), jt);
                assert_eq!(rec.tiles, tiles, "{what}: tiles");
                assert_eq!(rec.words, words, "{what}: records");
                // The counting pass agrees and stores nothing.
                let counted = walk(&ga, &gb, cp.as_ref(), &layout, false).unwrap();
                assert_eq!((counted.n_records, counted.tiles.len()), (rec.n_records, rec.tiles.len()), "{what}: counting pass");
                assert!(counted.words.is_empty(), "{what}: counting pass stores no records");
                assert_eq!(counted.tiles, rec.tiles, "{what}: counting pass lists the tiles");
                // The pairs in the records are the pair counter's.
                let pairs_in_records = rec.words.chunks(1 + jt).flat_map(|r| &r[1..]).filter(|&&q| q != NO_BLOCK).count();
                let counts = pairs::count(&ga, &gb, cp.as_ref()).unwrap();
                assert_eq!(pairs_in_records, counts.pairs, "{what}: pairs");
                if name == "dense" || name == "full mask" || name == "product" {
                    assert_eq!(counts.pairs, counts_all.pairs, "{what}: no pair masked out");
                }
            }
        }
        // A full mask walks exactly as a dense C (the same tiles of the same columns).
        let full = Grid::new(vec![true; mb * nb], mb, nb);
        for jt in [1usize, 2, 4, 16] {
            let d = walk(&ga, &gb, None, &plain(jt, true, 1), true).unwrap();
            let f = walk(&ga, &gb, Some(&full.pattern()), &plain(jt, false, 1), true).unwrap();
            assert_eq!(d.words, f.words, "seed {seed} case {case}: full mask vs dense, j_per_tile {jt}");
            let rows = |r: &Records| r.tiles.iter().map(|t| (t[0], t[4], t[5])).collect::<Vec<_>>();
            assert_eq!(rows(&d), rows(&f), "seed {seed} case {case}: full mask vs dense tiles");
        }
    }
}

#[test]
fn walk_handles_empty_rows_and_masked_out_rows() {
    // A (3 x 4 blocks): row 0 empty, row 1 on k = 0, 2, 3, row 2 on k = 1 (an empty B row).
    let a = Grid::new(vec![false, false, false, false, true, false, true, true, false, true, false, false], 3, 4);
    // B (4 x 5 blocks): row 0 on j = 0, 4; row 1 empty; row 2 on j = 1, 4; row 3 on j = 4.
    #[rustfmt::skip]
    let b = Grid::new(vec![
        true, false, false, false, true,
        false, false, false, false, false,
        false, true, false, false, true,
        false, false, false, false, true,
    ], 4, 5);
    let n = NO_BLOCK;
    // Dense C, two columns per tile: row 1's tiles (0: j 0-1, 1: j 2-3, 2: j 4).
    let rec = walk(&a.pattern(), &b.pattern(), None, &plain(2, true, 1), true).unwrap();
    assert_eq!(rec.tiles.len(), 9, "three tiles in every row, empty ones included");
    assert_eq!(
        rec.tiles,
        vec![
            [0, 0, 0, 0, 0, 0],
            [0, 1, 0, 0, 0, 0],
            [0, 2, 0, 0, 0, 0],
            [1, 0, 0, 0, 0, 2],
            [1, 1, 0, 0, 2, 2],
            [1, 2, 0, 0, 2, 5],
            [2, 0, 0, 0, 5, 5],
            [2, 1, 0, 0, 5, 5],
            [2, 2, 0, 0, 5, 5],
        ]
    );
    #[rustfmt::skip]
    assert_eq!(rec.words, vec![
        0, 0, n, // p 0 (k 0) meets B block 0 at j 0
        1, n, 2, // p 1 (k 2) meets B block 2 at j 1
        0, 1, n, // tile 2 (j 4): every A block meets j 4
        1, 3, n,
        2, 4, n,
    ]);
    // A mask: row 0 holds (0, 2) (no pairs: A's row is empty), row 1 holds j = 2, 3 (no pair
    // reaches them; the row's pairs at j = 0, 1 are masked out) and j = 4, row 2 holds j = 0
    // (its only A block meets an empty B row).
    let m = Grid::new(vec![false, false, true, false, false, false, false, true, true, true, true, false, false, false, false], 3, 5);
    let rec = walk(&a.pattern(), &b.pattern(), Some(&m.pattern()), &plain(2, false, 1), true).unwrap();
    assert_eq!(rec.tiles, vec![[0, 0, 0, 1, 0, 0], [1, 0, 1, 3, 0, 0], [1, 1, 3, 4, 0, 3], [2, 0, 4, 5, 3, 3]]);
    assert_eq!(rec.words, vec![0, 1, n, 1, 3, n, 2, 4, n]);
}

#[test]
fn split_tiles_covers_every_tile_once() {
    let seed = seed("split_tiles_covers_every_tile_once");
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut splits = 0;
    for case in 0..80 {
        let (mb, kb, nb) = (rng.random_range(1..10usize), rng.random_range(1..40usize), rng.random_range(1..24usize));
        let spr = [1u32, 2, 4][case % 3];
        let a = Grid::new(random_grid(mb, kb, &mut rng), mb, kb);
        let b = Grid::new(random_grid(kb, nb, &mut rng), kb, nb);
        for (name, c) in c_patterns(&a, &b, &mut rng) {
            let cp = c.as_ref().map(Grid::pattern);
            for jt in [1usize, 2, 4, 16] {
                let rec = walk(&a.pattern(), &b.pattern(), cp.as_ref(), &plain(jt, c.is_none(), 1), true).unwrap();
                for batch in [1u32, 3] {
                    for resident in [1u32, 5, 132, 100_000] {
                        let what = format!(
                            "seed {seed} case {case}: {mb}x{kb}x{nb} blocks, C {name}, j_per_tile {jt}, batch {batch}, \
                             resident {resident}, {spr} stages per record"
                        );
                        let wl = split_tiles(&rec.tiles, batch, resident, spr, false).unwrap();
                        check_split(&rec.tiles, batch, resident, spr, &wl, &what);
                        assert!(wl.items.len() >= rec.tiles.len() * batch as usize, "{what}");
                        splits += wl.groups.len();
                    }
                }
            }
        }
    }
    assert!(splits > 0, "seed {seed}: some tiles were split");
}

/// default_group_cols: a sixth of L2 in B strips (a multiple of the tile's columns, at least
/// one tile), and every column on the column-split tile where B fits in half of L2.
#[test]
fn default_groups_fit_a_sixth_of_l2_or_take_every_column() {
    const MB: u64 = 1 << 20;
    // 8192³, 128×128 blocks, 50 % of B: 64 block columns of 1 MB each, L2 50 MB: 8 columns.
    assert_eq!(default_group_cols(64 * MB, 64, 2, 50 * MB, true), 8);
    assert_eq!(default_group_cols(64 * MB, 64, 2, 50 * MB, false), 8);
    // 12.5 %: 16 MB of B fits in half of L2: every column on the column-split tile only.
    assert_eq!(default_group_cols(16 * MB, 64, 2, 50 * MB, true), u64::MAX);
    assert_eq!(default_group_cols(16 * MB, 64, 2, 50 * MB, false), 34);
    assert_eq!(default_group_cols(26 * MB, 64, 2, 50 * MB, true), 20);
    // A strip larger than a sixth of L2: one tile. Degenerate sizes stay at least one tile.
    assert_eq!(default_group_cols(1 << 40, 4, 4, 50 * MB, true), 4);
    assert_eq!(default_group_cols(0, 0, 0, 0, true), u64::MAX);
    assert_eq!(default_group_cols(1, 0, 0, 0, false), 1);
}

/// group_tiles_by_columns: a permutation of the tiles, in groups of columns ascending, rows
/// ascending in even groups and descending in odd ones, a row's tiles of a group in order.
#[test]
fn tiles_are_walked_in_column_groups() {
    let seed = seed("tiles_are_walked_in_column_groups");
    let mut rng = SmallRng::seed_from_u64(seed);
    for case in 0..60 {
        let (mb, kb, nb) = (rng.random_range(1..12usize), rng.random_range(1..20usize), rng.random_range(1..40usize));
        let a = Grid::new(random_grid(mb, kb, &mut rng), mb, kb);
        let b = Grid::new(random_grid(kb, nb, &mut rng), kb, nb);
        for (name, c) in c_patterns(&a, &b, &mut rng) {
            let cp = c.as_ref().map(Grid::pattern);
            let jt = [1usize, 2, 4][case % 3];
            let rec = walk(&a.pattern(), &b.pattern(), cp.as_ref(), &plain(jt, c.is_none(), 1), true).unwrap();
            let first_col = |t: &[u32; 6]| match &cp {
                Some(p) if t[2] < t[3] => p.col_idx[t[2] as usize] as u64,
                Some(_) => 0,
                None => (t[1] as usize * jt) as u64,
            };
            for group_cols in [1u64, 3, 8, 1000, u64::MAX] {
                let what = format!("seed {seed} case {case}: {mb}x{kb}x{nb} blocks, C {name}, j_per_tile {jt}, {group_cols} columns");
                let mut tiles = rec.tiles.clone();
                group_tiles_by_columns(&mut tiles, first_col, group_cols);
                let mut sorted = tiles.clone();
                sorted.sort();
                let mut orig = rec.tiles.clone();
                orig.sort();
                assert_eq!(sorted, orig, "{what}: a permutation");
                let key = |t: &[u32; 6]| {
                    let g = first_col(t) / group_cols;
                    (g, if g.is_multiple_of(2) { t[0] as i64 } else { -(t[0] as i64) })
                };
                for w in tiles.windows(2) {
                    assert!(key(&w[0]) <= key(&w[1]), "{what}: {:?} before {:?}", w[0], w[1]);
                    if key(&w[0]) == key(&w[1]) {
                        assert!(w[0][1] < w[1][1], "{what}: a row's tiles in order");
                    }
                }
            }
        }
    }
}

#[test]
fn one_long_row_is_split_and_runs_first() {
    // A: 64 block rows; row 17 holds all 300 block columns, the others one each. B: one block
    // per row, all in column 0. Dense C of one column block: row 17's tile has 300 records.
    let (mb, kb, nb) = (64usize, 300usize, 1usize);
    let a = Grid::new((0..mb * kb).map(|e| e / kb == 17 || e % kb == e / kb).collect(), mb, kb);
    let b = Grid::new(vec![true; kb * nb], kb, nb);
    let rec = walk(&a.pattern(), &b.pattern(), None, &plain(4, true, 1), true).unwrap();
    assert_eq!(rec.tiles[17][5] - rec.tiles[17][4], 300);
    for batch in [1u32, 3] {
        let wl = split_tiles(&rec.tiles, batch, 132, 1, false).unwrap();
        check_split(&rec.tiles, batch, 132, 1, &wl, &format!("long row, batch {batch}"));
        assert_eq!(wl.groups.len(), batch as usize, "the long tile of every matrix is split");
        assert!(wl.max_item_blocks < 300);
        assert_eq!(wl.items[0].k_end - wl.items[0].k_begin, wl.max_item_blocks, "the longest piece first");
        assert!(wl.groups.iter().all(|g| g.tile_row == 17 && g.n_slots > 1));
    }
    // One resident thread block: its fair share is everything, nothing is split.
    let wl = split_tiles(&rec.tiles, 1, 1, 1, false).unwrap();
    assert!(wl.groups.is_empty() && wl.n_slots == 0);
    check_split(&rec.tiles, 1, 1, 1, &wl, "long row, one resident block");
}

/// zip_groups joins `groups` consecutive group tiles of a row: record s holds each group's
/// record s or NO_BLOCK padding; counts, C-block ranges and tile indices follow.
#[test]
fn zip_groups_interleaves_each_groups_list() {
    let n = NO_BLOCK;
    // Row 0: group tiles 0 (2 records), 1 (1 record), 2 (0 records); row 1: group tile 0 (1).
    // Group words: 1 + 1 (one B block per group).
    let rec = Records {
        words: vec![10, 20, 11, 21, 12, 22, 13, 23],
        tiles: vec![[0, 0, 0, 1, 0, 2], [0, 1, 1, 2, 2, 3], [0, 2, 2, 3, 3, 3], [1, 0, 3, 4, 3, 4]],
        n_records: 4,
    };
    let l = plain(1, false, 2);
    let z = zip_groups(rec, &l, Some(0)).unwrap();
    assert_eq!(z.tiles, vec![[0, 0, 0, 2, 0, 2], [0, 1, 2, 3, 2, 2], [1, 0, 3, 4, 2, 3]]);
    assert_eq!(z.words, vec![10, 20, 12, 22, 11, 21, n, n, 13, 23, n, n]);
    assert_eq!((z.n_records, z.tiles.len()), (3, 3));
    // The counting pass agrees.
    let rec = Records {
        words: Vec::new(),
        tiles: vec![[0, 0, 0, 1, 0, 2], [0, 1, 1, 2, 2, 3], [0, 2, 2, 3, 3, 3], [1, 0, 3, 4, 3, 4]],
        n_records: 4,
    };
    let c = zip_groups(rec, &l, None).unwrap();
    assert_eq!((c.n_records, c.tiles.len(), &c.tiles), (3, 3, &z.tiles));
}

/// Case `case`'s random A and B ([`random_grid`]): 1 to `mb_end - 1` block rows, 1–15 blocks
/// along K, 1–11 block columns of B, or 17–47 every third case.
fn random_operands(case: usize, mb_end: usize, rng: &mut SmallRng) -> (Grid, Grid) {
    let (mb, kb) = (rng.random_range(1..mb_end), rng.random_range(1..16usize));
    let nb = if case.is_multiple_of(3) { rng.random_range(17..48usize) } else { rng.random_range(1..12usize) };
    let a = Grid::new(random_grid(mb, kb, rng), mb, kb);
    let b = Grid::new(random_grid(kb, nb, rng), kb, nb);
    (a, b)
}

/// The storing walk that zips each row as it goes ([`walk_zipped`]) stores what
/// [`zip_groups`] makes of the whole walk: same records, same tiles, for one to four column
/// groups, every C kind, empty and full rows.
#[test]
fn zipped_walk_is_the_walk_zipped() {
    let seed = seed("zipped_walk_is_the_walk_zipped");
    let mut rng = SmallRng::seed_from_u64(seed);
    for case in 0..150 {
        let (a, b) = random_operands(case, 10, &mut rng);
        let (mb, kb, nb) = (a.rows, a.cols, b.cols);
        let (ga, gb) = (a.pattern(), b.pattern());
        for (name, c) in c_patterns(&a, &b, &mut rng) {
            let cp = c.as_ref().map(Grid::pattern);
            for (jt, groups) in [(1usize, 1usize), (1, 2), (2, 2), (1, 4), (4, 1)] {
                let what = format!("seed {seed} case {case}: {mb}x{kb}x{nb} blocks, C {name}, {groups} groups of {jt}");
                let l = plain(jt, c.is_none(), groups);
                let counted = zip_groups(walk(&ga, &gb, cp.as_ref(), &l, false).unwrap(), &l, None).unwrap();
                let whole = zip_groups(walk(&ga, &gb, cp.as_ref(), &l, true).unwrap(), &l, Some(counted.n_records)).unwrap();
                let zipped = walk_zipped(&ga, &gb, cp.as_ref(), &l, counted.n_records, None).unwrap();
                assert_eq!((&zipped.words, &zipped.tiles, zipped.n_records), (&whole.words, &whole.tiles, whole.n_records), "{what}");
                assert_eq!((&counted.tiles, counted.n_records), (&whole.tiles, whole.n_records), "{what}: counting pass");
                assert_eq!(zipped.words.len(), groups * (1 + jt) * zipped.n_records, "{what}: words per record");
            }
        }
    }
}

/// The planner's walks on several threads (contiguous row ranges, joined in row order) make
/// the one-thread walks' records and tiles: counting and storing, zipped groups and paired
/// layouts (with the counting pass's pairs given), every C kind, one to seven threads.
#[test]
fn walks_on_threads_match_one_thread() {
    let seed = seed("walks_on_threads_match_one_thread");
    let mut rng = SmallRng::seed_from_u64(seed);
    for case in 0..40 {
        let (a, b) = random_operands(case, 14, &mut rng);
        let (mb, kb, nb) = (a.rows, a.cols, b.cols);
        let (ga, gb) = (a.pattern(), b.pattern());
        for (name, c) in c_patterns(&a, &b, &mut rng) {
            let cp = c.as_ref().map(Grid::pattern);
            let plain_l = |jt, groups| plain(jt, c.is_none(), groups);
            let layouts = [
                plain_l(2, 1),
                plain_l(1, 2),
                plain_l(2, 2),
                Layout2 { pair: true, ..plain_l(2, 1) },
                Layout2 { pair: true, matching: true, window: 8, ..plain_l(2, 1) },
            ];
            for l in &layouts {
                let one = zip_groups(walk_rows(&ga, &gb, cp.as_ref(), l, None, None, 1).unwrap(), l, None).unwrap();
                let given = l.pair.then_some(&one.tiles[..]);
                let stored = walk_rows(&ga, &gb, cp.as_ref(), l, Some((&one.tiles, one.n_records)), given, 1).unwrap();
                assert_eq!((&stored.tiles, stored.n_records), (&one.tiles, one.n_records));
                for threads in [2, 3, 7] {
                    let what = format!(
                        "seed {seed} case {case}: {mb}x{kb}x{nb} blocks, C {name}, {} groups of {}, pair {} matching {}, {threads} threads",
                        l.groups, l.j_per_tile, l.pair, l.matching
                    );
                    let counted = walk_rows(&ga, &gb, cp.as_ref(), l, None, None, threads).unwrap();
                    let counted = zip_groups(counted, l, None).unwrap();
                    assert_eq!((&counted.tiles, counted.n_records), (&one.tiles, one.n_records), "{what}: counting");
                    let st = walk_rows(&ga, &gb, cp.as_ref(), l, Some((&one.tiles, one.n_records)), given, threads).unwrap();
                    assert_eq!((&st.words, &st.tiles, st.n_records), (&stored.words, &stored.tiles, stored.n_records), "{what}: storing");
                }
            }
        }
    }
}

/// With two groups, zip_groups puts the records that meet the same A block (word 0) side by
/// side first, then pairs the rest in order; the record count stays the longer list's.
#[test]
fn zip_groups_pairs_records_of_one_a_block() {
    let n = NO_BLOCK;
    // One tile of two groups: group 0 meets A blocks 3, 5, 7, 9; group 1 meets 5, 6, 9.
    let rec = Records {
        words: vec![3, 30, 5, 50, 7, 70, 9, 90, 5, 51, 6, 61, 9, 91],
        tiles: vec![[0, 0, 0, 1, 0, 4], [0, 1, 1, 2, 4, 7]],
        n_records: 7,
    };
    let l = plain(1, false, 2);
    let z = zip_groups(rec, &l, Some(0)).unwrap();
    assert_eq!(z.tiles, vec![[0, 0, 0, 2, 0, 4]]);
    assert_eq!(z.words, vec![5, 50, 5, 51, 9, 90, 9, 91, 3, 30, 6, 61, 7, 70, n, n]);
    let count = Records { words: Vec::new(), tiles: vec![[0, 0, 0, 1, 0, 4], [0, 1, 1, 2, 4, 7]], n_records: 7 };
    assert_eq!(zip_groups(count, &l, None).unwrap().n_records, 4);
}

/// The Hopper record layout follows the tiles the kernels run: on the grouped tile one group
/// per 128 columns (`128 / bn` blocks each), on the column-split tile one group for the whole
/// tile, covering it either way.
#[test]
fn hopper_layout_follows_the_spgemm_tiles() {
    for &tile in blocksparse_abi::WGMMA_SPGEMM_TILES.iter() {
        let t = WGMMA_TILES[tile];
        for bn in [64usize, 128] {
            let l = Layout2::new(TileChoice { family: KernelFamily::Hopper, tile }, bn, true);
            assert_eq!(l.groups as u32, t.a_groups, "tile {tile}");
            let group_cols = if t.n_split { t.tn() } else { 128 };
            assert_eq!((l.j_per_tile * bn) as u32, group_cols, "tile {tile}, bn {bn}");
            assert_eq!(l.groups * l.j_per_tile * bn, t.tn() as usize, "tile {tile}, bn {bn}");
        }
    }
}

/// A paired walk (the column-split tile with 128-wide C blocks): every C block of a row
/// (every block column of a dense C) in exactly one tile slot of its row; every pair of it in
/// exactly one record of that tile, at that slot, records in increasing p; with matching, a
/// tile's two blocks in one window and, for a dense C, no more records per row than the
/// neighbours' tiles; without it, exactly the unpaired walk's records with the tiles' blocks
/// named. The counting pass agrees.
#[test]
fn paired_walk_covers_every_block_once() {
    let seed = seed("paired_walk_covers_every_block_once");
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut reordered = 0;
    for case in 0..150 {
        let (mb, kb) = (rng.random_range(1..8usize), rng.random_range(1..24usize));
        let nb = if case % 3 == 0 { rng.random_range(17..70usize) } else { rng.random_range(1..12usize) };
        let a = Grid::new(random_grid(mb, kb, &mut rng), mb, kb);
        let b = Grid::new(random_grid(kb, nb, &mut rng), kb, nb);
        let (ga, gb) = (a.pattern(), b.pattern());
        for (name, c) in c_patterns(&a, &b, &mut rng) {
            let cp = c.as_ref().map(Grid::pattern);
            let dense = c.is_none();
            let plain = Layout2 { j_per_tile: 2, dense, groups: 1, pair: false, matching: false, window: 0 };
            let unpaired = walk(&ga, &gb, cp.as_ref(), &plain, true).unwrap();
            for (matching, window) in [(false, 0), (true, 2), (true, 3), (true, 8), (true, 64)] {
                let what = format!("seed {seed} case {case}: {mb}x{kb}x{nb} blocks, C {name}, matching {matching}, window {window}");
                let l = Layout2 { pair: true, matching, window, ..plain };
                let rec = walk(&ga, &gb, cp.as_ref(), &l, true).unwrap();
                let counted = walk(&ga, &gb, cp.as_ref(), &l, false).unwrap();
                assert_eq!((counted.n_records, &counted.tiles), (rec.n_records, &rec.tiles), "{what}: counting pass");
                // The storing pass with the counting pass's pairs stores the same records.
                let again = walk_zipped(&ga, &gb, cp.as_ref(), &l, counted.n_records, Some(&counted.tiles)).unwrap();
                assert_eq!((&again.words, &again.tiles), (&rec.words, &rec.tiles), "{what}: the storing pass with given pairs");
                assert_eq!(rec.words.len(), 3 * rec.n_records, "{what}: words per record");
                // The planner's bound that skips the matching: at most a record per pair, at
                // least half a tile per C block.
                let pairs = crate::pairs::count(&ga, &gb, cp.as_ref()).unwrap().pairs;
                assert!(rec.n_records <= pairs, "{what}: {} records of {pairs} pairs", rec.n_records);
                let min_tiles = min_paired_tiles(mb, nb, cp.as_ref());
                assert!(min_tiles <= rec.tiles.len() as u64, "{what}: {} tiles, bound {min_tiles}", rec.tiles.len());
                // The C block column of a slot value.
                let col = |m: u32| c.as_ref().map_or(m as usize, |c| c.col_idx[m as usize] as usize);
                let mut slot_of: HashMap<(usize, usize), (usize, usize)> = HashMap::new(); // (row, column) -> (tile, slot)
                let mut next = 0;
                for (ti, t) in rec.tiles.iter().enumerate() {
                    let [row, _, s0, s1, first, end] = *t;
                    assert_eq!(first, next, "{what}: tile {ti}'s records follow the previous tile's");
                    next = end;
                    assert_ne!(s0, NO_BLOCK, "{what}: tile {ti} has a first block");
                    for (s, m) in [(0, s0), (1, s1)].into_iter().filter(|(_, m)| *m != NO_BLOCK) {
                        if let Some(c) = &c {
                            assert!(
                                (c.row_ptr[row as usize]..c.row_ptr[row as usize + 1]).contains(&m),
                                "{what}: tile {ti}: C block {m} in row {row}"
                            );
                        }
                        assert!(
                            slot_of.insert((row as usize, col(m)), (ti, s)).is_none(),
                            "{what}: C block ({row}, {}) in two slots",
                            col(m)
                        );
                    }
                    if matching && s1 != NO_BLOCK {
                        assert_eq!(col(s0) / window, col(s1) / window, "{what}: tile {ti}'s blocks in one window");
                    }
                }
                assert_eq!(next as usize, rec.n_records, "{what}: the tiles cover every record");
                let blocks = match &c {
                    None => mb * nb,
                    Some(c) => c.mask.iter().filter(|&&x| x).count(),
                };
                assert_eq!(slot_of.len(), blocks, "{what}: every C block in a tile");
                let mut got = Vec::new();
                for (ti, t) in rec.tiles.iter().enumerate() {
                    let mut last_p = None;
                    for r in t[4] as usize..t[5] as usize {
                        let w = &rec.words[3 * r..3 * r + 3];
                        assert!(last_p < Some(w[0]), "{what}: tile {ti}: records in increasing p");
                        last_p = Some(w[0]);
                        assert!(w[1] != NO_BLOCK || w[2] != NO_BLOCK, "{what}: record {r} has no B block");
                        for s in 0..2 {
                            if w[1 + s] != NO_BLOCK {
                                got.push((ti, s, w[0], w[1 + s]));
                            }
                        }
                    }
                }
                let mut want = Vec::new();
                for (&(i, j), &(ti, s)) in &slot_of {
                    for k in (0..kb).filter(|&k| a.has(i, k) && b.has(k, j)) {
                        want.push((ti, s, a.at(i, k), b.at(k, j)));
                    }
                }
                got.sort_unstable();
                want.sort_unstable();
                assert_eq!(got, want, "{what}: pairs in the records");
                let per_row = |r: &Records| {
                    let mut v = vec![0u32; mb];
                    r.tiles.iter().for_each(|t| v[t[0] as usize] += t[5] - t[4]);
                    v
                };
                if !matching {
                    assert_eq!(rec.words, unpaired.words, "{what}: unpaired records");
                    let tiles: Vec<_> = rec.tiles.iter().map(|t| [t[0], t[1], t[4], t[5]]).collect();
                    let want: Vec<_> = unpaired.tiles.iter().map(|t| [t[0], t[1], t[4], t[5]]).collect();
                    assert_eq!(tiles, want, "{what}: unpaired tiles");
                } else if dense && window % 2 == 0 {
                    // Windows start at even columns: the neighbours within a window are the
                    // unpaired tiles, which the pairing keeps unless it beats them.
                    for (r, (p, u)) in per_row(&rec).into_iter().zip(per_row(&unpaired)).enumerate() {
                        assert!(p <= u, "{what}: row {r}: {p} records paired against {u} in column order");
                        reordered += (p < u) as usize;
                    }
                }
            }
        }
    }
    assert!(reordered > 0, "seed {seed}: some rows were paired to fewer records");
}

/// A paired layout in column order (what a plan with split tiles keeps) gives the fix-up
/// kernel the unpaired plan's split groups: the same tiles, slots and, for a block-sparse C,
/// the same runs of C blocks.
#[test]
fn paired_layout_splits_as_the_unpaired_one() {
    let seed = seed("paired_layout_splits_as_the_unpaired_one");
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut splits = 0;
    for case in 0..60 {
        let (mb, kb, nb) = (rng.random_range(1..8usize), rng.random_range(1..40usize), rng.random_range(1..20usize));
        let a = Grid::new(random_grid(mb, kb, &mut rng), mb, kb);
        let b = Grid::new(random_grid(kb, nb, &mut rng), kb, nb);
        for (name, c) in c_patterns(&a, &b, &mut rng) {
            let cp = c.as_ref().map(Grid::pattern);
            let plain = plain(2, c.is_none(), 1);
            let unpaired = walk(&a.pattern(), &b.pattern(), cp.as_ref(), &plain, true).unwrap();
            let paired = walk(&a.pattern(), &b.pattern(), cp.as_ref(), &Layout2 { pair: true, ..plain }, true).unwrap();
            for resident in [1u32, 4, 132] {
                let what = format!("seed {seed} case {case}: {mb}x{kb}x{nb} blocks, C {name}, resident {resident}");
                let u = split_tiles(&unpaired.tiles, 2, resident, 2, false).unwrap();
                let p = split_tiles(&paired.tiles, 2, resident, 2, true).unwrap();
                assert_eq!(u.groups.len(), p.groups.len(), "{what}: split groups");
                for (gu, gp) in u.groups.iter().zip(&p.groups) {
                    assert_eq!(
                        (gu.tile_row, gu.n_tile, gu.first_slot, gu.n_slots, gu.batch),
                        (gp.tile_row, gp.n_tile, gp.first_slot, gp.n_slots, gp.batch),
                        "{what}"
                    );
                    if c.is_some() {
                        assert_eq!((gu.blk_begin, gu.blk_end), (gp.blk_begin, gp.blk_end), "{what}: C blocks of a split tile");
                    }
                }
                let key = |w: &WorkList| {
                    w.items.iter().map(|i| (i.tile_row, i.n_tile, i.partial_slot, i.batch, i.k_begin, i.k_end)).collect::<Vec<_>>()
                };
                assert_eq!(key(&u), key(&p), "{what}: items");
                splits += p.groups.len();
            }
        }
    }
    assert!(splits > 0, "seed {seed}: some tiles were split");
}

/// Pairing windows tile the N-tile groups (a tile's two blocks in one group), at most 64 wide.
#[test]
fn pair_windows_tile_the_groups() {
    for (group, cols, want) in
        [(8, 64, 8), (16, 64, 16), (96, 1000, 48), (130, 1000, 26), (2, 64, 2), (64, 64, 64), (u64::MAX, 64, 64), (200, 150, 64)]
    {
        assert_eq!(pair_window(group, cols), want, "group {group} of {cols}");
    }
    for group in (2..400u64).step_by(2) {
        let w = pair_window(group, 10_000) as u64;
        assert!(w.is_multiple_of(2) && w <= PAIR_WINDOW_MAX && group.is_multiple_of(w), "group {group}: window {w}");
    }
}

/// The planner's split test agrees with `split_tiles` (a paired plan must never be split: the
/// fix-up kernel writes a split tile's blocks in column order).
#[test]
fn splits_any_agrees_with_split_tiles() {
    let seed = seed("splits_any_agrees_with_split_tiles");
    let mut rng = SmallRng::seed_from_u64(seed);
    let (mut split, mut whole) = (0, 0);
    for case in 0..200 {
        let (mb, kb, nb) = (rng.random_range(1..10usize), rng.random_range(1..40usize), rng.random_range(1..24usize));
        let a = Grid::new(random_grid(mb, kb, &mut rng), mb, kb);
        let b = Grid::new(random_grid(kb, nb, &mut rng), kb, nb);
        let rec = walk(&a.pattern(), &b.pattern(), None, &plain(2, true, 1), false).unwrap();
        for (batch, resident, spr) in [(1u32, 1u32, 1u32), (1, 4, 2), (2, 132, 2), (3, 7, 1), (1, 100_000, 4)] {
            let wl = split_tiles(&rec.tiles, batch, resident, spr, false).unwrap();
            let any = splits_any(&rec.tiles, batch, resident, spr);
            assert_eq!(any, !wl.groups.is_empty(), "seed {seed} case {case}: batch {batch}, resident {resident}, {spr} stages per record");
            if any { split += 1 } else { whole += 1 }
        }
    }
    assert!(split > 0 && whole > 0, "seed {seed}: both kinds of plan");
}

/// The schedule's item cost counts the bytes a stage loads as the kernels load them: on the
/// column-split tile the A block and each B block a record holds; on the zero-fill tile a
/// group's A slice only where it has a block and does not share group 0's, and its boxes.
#[test]
fn item_bytes_counts_the_loaded_boxes() {
    let n = NO_BLOCK;
    let split = WGMMA_TILES[blocksparse_abi::WGMMA_SPGEMM_TILES[1]];
    assert!(split.n_split && split.tm == 128);
    let l = Layout2 { j_per_tile: 2, dense: true, groups: 1, pair: true, matching: true, window: 8 };
    let words = [0, 1, n, 1, 2, 3, 4, n, 5];
    let item = |k_begin, k_end| WorkItem { k_begin, k_end, ..Default::default() };
    let (blk, epi) = (128 * 128 * 2, 3 * 128 * 256);
    assert_eq!(item_bytes(&words, &l, split, 128, 128, &item(0, 2)), 5 * blk + epi);
    assert_eq!(item_bytes(&words, &l, split, 128, 128, &item(2, 3)), 2 * blk + epi);
    assert_eq!(item_bytes(&words, &l, split, 128, 128, &item(1, 1)), epi, "an empty item stores C");
    // 64-wide C blocks on the column-split tile: a consumer that multiplies a stage loads both
    // of its boxes, one of them absent or not (as the kernel's producer does).
    let l = Layout2 { j_per_tile: 4, dense: true, groups: 1, pair: false, matching: false, window: 0 };
    let words = [0, 1, n, n, n, 1, 2, 3, n, 4];
    let (a64, box64) = (128 * 64 * 2, 64 * 64 * 2);
    assert_eq!(item_bytes(&words, &l, split, 64, 64, &item(0, 1)), a64 + 2 * box64 + epi);
    assert_eq!(item_bytes(&words, &l, split, 64, 64, &item(1, 2)), a64 + 4 * box64 + epi);

    let grouped = WGMMA_TILES[blocksparse_abi::WGMMA_SPGEMM_TILES[0]];
    assert!(grouped.zero_fill && grouped.a_groups == 2 && grouped.tm == 64);
    let l = Layout2 { j_per_tile: 2, dense: true, groups: 2, pair: false, matching: false, window: 0 };
    #[rustfmt::skip]
    let words = [
        5, 1, n,   5, n, 2, // one A block for both groups: one slice, two boxes
        7, n, n,   8, 3, 4, // group 0 empty; group 1 its slice and two boxes
        n, n, n,   9, 5, n, // group 1 alone
    ];
    let b = 64 * 64 * 2;
    assert_eq!(item_bytes(&words, &l, grouped, 64, 64, &item(0, 3)), 8 * b + 3 * 64 * 256);
}

/// The work items of one matrix, a tile each (none split).
fn tile_items(rec: &Records) -> Vec<WorkItem> {
    let item = |t: &[u32; 6]| WorkItem {
        tile_row: t[0],
        n_tile: t[1],
        blk_begin: t[2],
        blk_end: t[3],
        partial_slot: NO_SLOT,
        batch: 0,
        k_begin: t[4],
        k_end: t[5],
    };
    rec.tiles.iter().map(item).collect()
}

/// The share of live warp-stages, brute force from the grids: per tile of a dense C, the A
/// blocks of its row that meet B under its columns, `ks / bk` to a stage (a record spanning
/// `bk / ks` stages), and per warp whether one of them meets B under the warp's 64 columns.
fn brute_warp_share(a: &Grid, b: &Grid, rec: &Records, bk: usize, bn: usize, t: MmaTile) -> f64 {
    let jt = t.tn as usize / bn;
    let (per_stage, stages) = ((t.ks as usize / bk).max(1), (bk / t.ks as usize).max(1));
    let (mut live, mut all) = (0, 0);
    for tile in &rec.tiles {
        let (i, nt) = (tile[0] as usize, tile[1] as usize);
        let held = |k: usize, j: usize| nt * jt + j < b.cols && b.has(k, nt * jt + j);
        let ks: Vec<usize> = (0..a.cols).filter(|&k| a.has(i, k) && (0..jt).any(|j| held(k, j))).collect();
        assert_eq!(ks.len(), (tile[5] - tile[4]) as usize, "records of tile {tile:?}");
        for stage in ks.chunks(per_stage) {
            for w in 0..t.warps_n as usize {
                let js = (64 * w / bn)..(64 * (w + 1)).div_ceil(bn).min(jt);
                live += stages * stage.iter().any(|&k| js.clone().any(|j| held(k, j))) as usize;
                all += stages;
            }
        }
    }
    if all == 0 { 1.0 } else { live as f64 / all as f64 }
}

/// `warp_stage_share` counts what the warps of the 16-row tile would copy: brute force on small
/// random patterns of every block depth and width, and on uniform 16×16 patterns the shares
/// that decide the ring (perf notes v42: 12.5 % below the threshold, 50 % above it).
#[test]
fn warp_stage_share_counts_the_stages_where_each_warp_meets_b() {
    let seed = seed("warp_stage_share_counts_the_stages_where_each_warp_meets_b");
    let mut rng = SmallRng::seed_from_u64(seed);
    let t = MMA_TILES[mma_tile_index(16).unwrap()];
    assert!(t.warp_rings_by_plan());
    for case in 0..100 {
        let (bk, bn) = ([16, 32, 64, 128][case % 4], [16, 32, 64, 128][case / 4 % 4]);
        let (mb, kb, nb) = (rng.random_range(1..8usize), rng.random_range(1..24usize), rng.random_range(1..40usize));
        let a = Grid::new(random_grid(mb, kb, &mut rng), mb, kb);
        let b = Grid::new(random_grid(kb, nb, &mut rng), kb, nb);
        let jt = t.tn as usize / bn;
        let rec = walk(&a.pattern(), &b.pattern(), None, &plain(jt, true, 1), true).unwrap();
        let items = tile_items(&rec);
        let got = warp_stage_share(&rec.words, &items, 1 + jt, bk, bn, t);
        let want = brute_warp_share(&a, &b, &rec, bk, bn, t);
        assert!((got - want).abs() < 1e-12, "seed {seed} case {case}: {mb}x{kb}x{nb} blocks of {bk}x{bn}: {got} != {want}");
    }
    for (density, below) in [(0.125, true), (0.5, false)] {
        let grid = |r, c, rng: &mut SmallRng| Grid::new((0..r * c).map(|_| rng.random_bool(density)).collect(), r, c);
        let (a, b) = (grid(64, 256, &mut rng), grid(256, 256, &mut rng));
        let rec = walk(&a.pattern(), &b.pattern(), None, &plain(16, true, 1), true).unwrap();
        let share = warp_stage_share(&rec.words, &tile_items(&rec), 17, 16, 16, t);
        eprintln!("uniform {density} x {density}, 16x16 blocks: share of live warp-stages {share:.3}");
        assert_eq!(share < WARP_RINGS_BELOW, below, "seed {seed}: uniform {density}: share {share}");
    }
}
