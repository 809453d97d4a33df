//! Deterministic-from-seed generators of sparsity patterns and values, for tests, benchmarks and
//! the GPU validation tool. Every function draws only from the `rng` it is given, so a seed
//! reproduces the same matrix.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use blocksparse::Element;

/// Clamps a probability to `[0, 1]`; NaN becomes 0.
fn clamp01(p: f64) -> f64 {
    if p >= 0.0 { p.min(1.0) } else { 0.0 }
}

/// A row-major `block_rows x block_cols` block mask where each block is present independently
/// with probability `density` (0 gives all `false`, 1 all `true`).
pub fn random_mask(block_rows: usize, block_cols: usize, density: f64, rng: &mut impl Rng) -> Vec<bool> {
    let density = clamp01(density);
    let len = block_rows.saturating_mul(block_cols);
    // random::<f64>() is in [0, 1): `< 0` is never true, `< 1` always.
    (0..len).map(|_| rng.random::<f64>() < density).collect()
}

/// A row-major `block_rows x block_cols` block mask with exactly `round(density * blocks)`
/// blocks placed uniformly at random (no variance in the block count, which benchmarks want).
pub fn exact_mask(block_rows: usize, block_cols: usize, density: f64, rng: &mut impl Rng) -> Vec<bool> {
    skewed_mask(block_rows, block_cols, density, 0, 0.0, rng)
}

/// Sets exactly `k` of the cells `cells` of `mask` (or all of them if there are fewer), chosen
/// uniformly without replacement.
fn set_random_subset(mask: &mut [bool], mut cells: Vec<usize>, k: usize, rng: &mut impl Rng) {
    let k = k.min(cells.len());
    for i in 0..k {
        let j = rng.random_range(i..cells.len());
        cells.swap(i, j);
        mask[cells[i]] = true;
    }
}

/// A row-major `block_rows x block_cols` block mask with `round(density * blocks)` blocks, of
/// which about `heavy_share` lie in `heavy_rows` block rows chosen at random across the matrix
/// (the rest spread uniformly over the other rows), modelling the load imbalance of real
/// pruned weights. When the heavy rows cannot hold their share the surplus goes to the other
/// rows, and the other way round, so the total is always exact (capped at all blocks).
pub fn skewed_mask(
    block_rows: usize,
    block_cols: usize,
    density: f64,
    heavy_rows: usize,
    heavy_share: f64,
    rng: &mut impl Rng,
) -> Vec<bool> {
    let total = block_rows.saturating_mul(block_cols);
    let mut mask = vec![false; total];
    if total == 0 {
        return mask;
    }
    let target = ((clamp01(density) * total as f64).round() as usize).min(total);
    let heavy_rows = heavy_rows.min(block_rows);

    // Pick the heavy rows: a uniform random subset, so they are spread across the matrix.
    let mut rows: Vec<usize> = (0..block_rows).collect();
    for i in 0..heavy_rows {
        let j = rng.random_range(i..block_rows);
        rows.swap(i, j);
    }
    let mut is_heavy = vec![false; block_rows];
    for &r in &rows[..heavy_rows] {
        is_heavy[r] = true;
    }

    let heavy_cap = heavy_rows * block_cols;
    let light_cap = total - heavy_cap;
    let mut heavy_n = ((clamp01(heavy_share) * target as f64).round() as usize).min(heavy_cap).min(target);
    let light_n = (target - heavy_n).min(light_cap);
    heavy_n = (target - light_n).min(heavy_cap);

    let cells_of = |heavy: bool| -> Vec<usize> {
        (0..block_rows).filter(|&r| is_heavy[r] == heavy).flat_map(|r| r * block_cols..(r + 1) * block_cols).collect()
    };
    set_random_subset(&mut mask, cells_of(true), heavy_n, rng);
    set_random_subset(&mut mask, cells_of(false), light_n, rng);
    mask
}

/// Blocks per row of a structured mask: `round(density · block_cols)`, at least 1 (for a
/// nonzero density) and at most `block_cols`.
fn row_width(block_cols: usize, density: f64) -> usize {
    let d = clamp01(density);
    if d == 0.0 { 0 } else { ((d * block_cols as f64).round() as usize).clamp(1, block_cols) }
}

/// A row-major `block_rows x block_cols` banded block mask (sliding-window attention): block
/// row `r` holds `w = round(density · block_cols)` consecutive block columns centred on its
/// diagonal column `r · block_cols / block_rows`, wrapping around at the edges, so that every
/// row holds exactly `w` blocks. Neighbouring rows share all but one of their columns.
pub fn banded_mask(block_rows: usize, block_cols: usize, density: f64) -> Vec<bool> {
    let w = row_width(block_cols, density);
    let mut mask = vec![false; block_rows * block_cols];
    for r in 0..block_rows {
        let diag = r * block_cols / block_rows.max(1);
        let start = (diag + block_cols - w / 2) % block_cols.max(1);
        for j in 0..w {
            mask[r * block_cols + (start + j) % block_cols] = true;
        }
    }
    mask
}

/// A row-major `block_rows x block_cols` block-diagonal mask (experts, heads): the block rows
/// fall into `block_cols / w` equal groups (`w = round(density · block_cols)`), and every row
/// of group `g` holds the same `w` block columns `g·w .. g·w + w`.
pub fn block_diagonal_mask(block_rows: usize, block_cols: usize, density: f64) -> Vec<bool> {
    let w = row_width(block_cols, density);
    let mut mask = vec![false; block_rows * block_cols];
    if w == 0 {
        return mask;
    }
    let groups = (block_cols / w).max(1);
    for r in 0..block_rows {
        let g = r * groups / block_rows;
        for c in g * w..(g * w + w).min(block_cols) {
            mask[r * block_cols + c] = true;
        }
    }
    mask
}

/// A row-major causal block mask: block row `r` holds every block column up to its diagonal
/// `(r + 1) · block_cols / block_rows` (exclusive), so about half the blocks (causal attention).
pub fn causal_mask(block_rows: usize, block_cols: usize) -> Vec<bool> {
    let mut mask = vec![false; block_rows * block_cols];
    for r in 0..block_rows {
        let end = ((r + 1) * block_cols).div_ceil(block_rows.max(1)).min(block_cols);
        for c in 0..end {
            mask[r * block_cols + c] = true;
        }
    }
    mask
}

/// A row-major sliding-window block mask: block row `r` holds the block columns within `half`
/// of its diagonal column `r · block_cols / block_rows` (clipped at the edges, no wrap-around):
/// local attention with a window of `2 · half + 1` blocks.
pub fn window_mask(block_rows: usize, block_cols: usize, half: usize) -> Vec<bool> {
    let mut mask = vec![false; block_rows * block_cols];
    for r in 0..block_rows {
        let diag = r * block_cols / block_rows.max(1);
        for c in diag.saturating_sub(half)..(diag + half + 1).min(block_cols) {
            mask[r * block_cols + c] = true;
        }
    }
    mask
}

/// A BigBird-like block mask: a sliding window of `window` blocks around the diagonal, the first
/// `global` block rows and block columns full (global tokens), and `random` more blocks per row
/// at random columns (fewer where the row has no room).
pub fn bigbird_mask(block_rows: usize, block_cols: usize, window: usize, global: usize, random: usize, rng: &mut impl Rng) -> Vec<bool> {
    let mut mask = window_mask(block_rows, block_cols, window / 2);
    for r in 0..block_rows {
        for c in 0..block_cols {
            if r < global || c < global {
                mask[r * block_cols + c] = true;
            }
        }
        let free: Vec<usize> = (r * block_cols..(r + 1) * block_cols).filter(|&i| !mask[i]).collect();
        set_random_subset(&mut mask, free, random, rng);
    }
    mask
}

/// A block mask with heavy-tailed row lengths, like the rows of magnitude-pruned weights: every
/// row draws a light length of 1–3 blocks, and the row of rank `i` (ranks shuffled over the
/// rows) holds `max(light, c / (i + 1)³)` blocks, at most `block_cols`, with `c` chosen so that
/// the mask holds about `density · blocks` blocks. At 10 %: a few percent of the rows full, a
/// short tail of intermediate rows, and most rows with one to three blocks; columns at random.
pub fn zipf_rows_mask(block_rows: usize, block_cols: usize, density: f64, rng: &mut impl Rng) -> Vec<bool> {
    let target = clamp01(density) * (block_rows * block_cols) as f64;
    let light: Vec<usize> = (0..block_rows).map(|_| rng.random_range(1..=3usize).min(block_cols)).collect();
    let lens = |c: f64| -> Vec<usize> {
        (0..block_rows).map(|i| ((c / ((i + 1) as f64).powi(3)).round() as usize).max(light[i]).min(block_cols)).collect()
    };
    // The total grows with c: bisect c for the target.
    let (mut lo, mut hi) = (0.0f64, 4.0 * (block_rows.max(block_cols) as f64).powi(4) + 1.0);
    for _ in 0..128 {
        let mid = 0.5 * (lo + hi);
        if (lens(mid).iter().sum::<usize>() as f64) < target { lo = mid } else { hi = mid }
    }
    let lens = lens(hi);
    let mut rows: Vec<usize> = (0..block_rows).collect();
    for i in 0..block_rows {
        let j = rng.random_range(i..block_rows);
        rows.swap(i, j);
    }
    let mut mask = vec![false; block_rows * block_cols];
    for (rank, &r) in rows.iter().enumerate() {
        set_random_subset(&mut mask, (r * block_cols..(r + 1) * block_cols).collect(), lens[rank], rng);
    }
    mask
}

/// A top-k block mask: every block row holds `k` blocks (all of them if `k ≥ block_cols`) at
/// random columns, as when attention keeps the k highest-scoring blocks of each row.
pub fn topk_mask(block_rows: usize, block_cols: usize, k: usize, rng: &mut impl Rng) -> Vec<bool> {
    let mut mask = vec![false; block_rows * block_cols];
    for r in 0..block_rows {
        set_random_subset(&mut mask, (r * block_cols..(r + 1) * block_cols).collect(), k, rng);
    }
    mask
}

/// A block mask whose rows are of two kinds: `bands` bands of block rows (as equal as the rows
/// allow), the even ones a sliding window of `±half` blocks ([`window_mask`]), the odd ones `k`
/// blocks at random columns ([`topk_mask`]). Neighbouring rows of the window bands share most
/// of their columns, those of the random bands few: a mask where merging rows pays for some
/// rows and not for others (local and top-k attention in one mask, a layer pruned two ways).
pub fn mixed_mask(block_rows: usize, block_cols: usize, half: usize, k: usize, bands: usize, rng: &mut impl Rng) -> Vec<bool> {
    let window = window_mask(block_rows, block_cols, half);
    let topk = topk_mask(block_rows, block_cols, k, rng);
    let bands = bands.clamp(1, block_rows.max(1));
    let mut mask = window;
    for r in 0..block_rows {
        if (r * bands / block_rows) % 2 == 1 {
            mask[r * block_cols..(r + 1) * block_cols].copy_from_slice(&topk[r * block_cols..(r + 1) * block_cols]);
        }
    }
    mask
}

/// The mask families of real block-sparse workloads, as `bench --masks` and `validate` use them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MaskFamily {
    /// Blocks placed uniformly at random, exactly this density.
    Uniform(f64),
    /// Causal attention ([`causal_mask`]).
    Causal,
    /// Sliding-window attention, `±half` blocks ([`window_mask`]).
    Window(usize),
    /// Block-diagonal with this many groups ([`block_diagonal_mask`]).
    BlockDiagonal(usize),
    /// BigBird-like: window 3, 2 global rows and columns, 3 random blocks per row
    /// ([`bigbird_mask`]).
    BigBird,
    /// Heavy-tailed row lengths at about this density ([`zipf_rows_mask`]).
    Zipf(f64),
    /// `k` random blocks per row ([`topk_mask`]).
    TopK(usize),
    /// Rows of two kinds ([`mixed_mask`]): bands of sliding-window rows (±8 blocks) and of
    /// top-16 rows, alternating.
    Mixed,
}

impl MaskFamily {
    /// The families of the "real masks" issue, at the parameters its targets name.
    pub const REAL: [MaskFamily; 7] = [
        MaskFamily::Causal,
        MaskFamily::Window(8),
        MaskFamily::BlockDiagonal(8),
        MaskFamily::BigBird,
        MaskFamily::Zipf(0.10),
        MaskFamily::TopK(16),
        MaskFamily::Uniform(0.125),
    ];

    /// A short name for tables and JSON (`causal`, `window8`, `blockdiag8`, `bigbird`,
    /// `zipf0.1`, `top16`, `uniform0.125`).
    pub fn name(&self) -> String {
        match self {
            MaskFamily::Uniform(d) => format!("uniform{d}"),
            MaskFamily::Causal => "causal".into(),
            MaskFamily::Window(h) => format!("window{h}"),
            MaskFamily::BlockDiagonal(g) => format!("blockdiag{g}"),
            MaskFamily::BigBird => "bigbird".into(),
            MaskFamily::Zipf(d) => format!("zipf{d}"),
            MaskFamily::TopK(k) => format!("top{k}"),
            MaskFamily::Mixed => "mixed".into(),
        }
    }

    /// The family's mask on a `block_rows × block_cols` grid.
    pub fn mask(&self, block_rows: usize, block_cols: usize, rng: &mut impl Rng) -> Vec<bool> {
        match *self {
            MaskFamily::Uniform(d) => exact_mask(block_rows, block_cols, d, rng),
            MaskFamily::Causal => causal_mask(block_rows, block_cols),
            MaskFamily::Window(h) => window_mask(block_rows, block_cols, h),
            MaskFamily::BlockDiagonal(g) => block_diagonal_mask(block_rows, block_cols, 1.0 / g.max(1) as f64),
            MaskFamily::BigBird => bigbird_mask(block_rows, block_cols, 3, 2, 3, rng),
            MaskFamily::Zipf(d) => zipf_rows_mask(block_rows, block_cols, d, rng),
            MaskFamily::TopK(k) => topk_mask(block_rows, block_cols, k, rng),
            MaskFamily::Mixed => mixed_mask(block_rows, block_cols, 8, 16, 8, rng),
        }
    }
}

/// `len` values uniform in `[-1, 1]`, none of them zero after rounding to `T` (a value that
/// rounds to zero is drawn again), so every stored block really is non-zero.
pub fn random_values<T: Element>(len: usize, rng: &mut impl Rng) -> Vec<T> {
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let v = T::from_f64(rng.random_range(-1.0..=1.0));
        if v.to_f64() != 0.0 {
            out.push(v);
        }
    }
    out
}

/// A seed for a randomized test: `BLOCKSPARSE_SEED` from the environment if set (to reproduce
/// a failure), otherwise a fresh random one. The seed is printed to stderr, which the test
/// harness shows when the test fails.
pub fn test_seed(name: &str) -> u64 {
    let seed =
        std::env::var("BLOCKSPARSE_SEED").ok().and_then(|s| s.trim().parse::<u64>().ok()).unwrap_or_else(|| rand::rng().random::<u64>());
    eprintln!("{name}: seed {seed} (rerun with BLOCKSPARSE_SEED={seed})");
    seed
}

/// The generator [`seeded_rng`] returns: fast even in debug builds (about ten times faster than
/// `StdRng` there), and deterministic for a seed with a given `rand` version on 64-bit targets,
/// which is all tests and the validation tool need (it is not cryptographic, and not promised
/// to give the same stream across `rand` versions).
pub type TestRng = SmallRng;

/// The deterministic generator for `seed`.
pub fn seeded_rng(seed: u64) -> TestRng {
    TestRng::seed_from_u64(seed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    fn row_lens(mask: &[bool], cols: usize) -> Vec<usize> {
        mask.chunks(cols).map(|r| r.iter().filter(|&&x| x).count()).collect()
    }

    /// Each real-mask family has the structure its name promises, on square and non-square
    /// grids, and is reproducible from its seed.
    #[test]
    fn mask_families_have_their_structure() {
        let seed = test_seed("mask_families_have_their_structure");
        for (br, bc) in [(128usize, 128usize), (256, 256), (64, 64), (96, 160)] {
            let mut rng = seeded_rng(seed);
            // Causal: row r holds a prefix, ending at its diagonal; about half the blocks.
            let m = causal_mask(br, bc);
            for r in 0..br {
                let l = row_lens(&m, bc)[r];
                assert!(m[r * bc..r * bc + l].iter().all(|&x| x) && l >= 1, "causal row {r}");
            }
            let d = m.iter().filter(|&&x| x).count() as f64 / (br * bc) as f64;
            assert!((0.5..0.5 + 1.5 / br as f64).contains(&d), "causal density {d}");
            // Window ±8: 17 blocks away from the edges, contiguous around the diagonal.
            let m = window_mask(br, bc, 8);
            let mid = br / 2;
            assert_eq!(row_lens(&m, bc)[mid], 17.min(bc));
            assert!(m[mid * bc + mid * bc / br], "window holds its diagonal");
            // BigBird: window + 2 global rows/cols + 3 random per row.
            let m = bigbird_mask(br, bc, 3, 2, 3, &mut rng);
            let lens = row_lens(&m, bc);
            assert_eq!(lens[0], bc, "global row full");
            assert!(m.chunks(bc).all(|r| r[0] && r[1]), "global columns full");
            assert!(lens[2..].iter().all(|&l| (5..=8).contains(&l)), "bigbird rows {:?}", &lens[..8]);
            // Zipf at 10 %: total within 2 % of the target, a few long rows, most short.
            let m = zipf_rows_mask(br, bc, 0.10, &mut rng);
            let lens = row_lens(&m, bc);
            let total: usize = lens.iter().sum();
            let target = 0.10 * (br * bc) as f64;
            assert!((total as f64 - target).abs() <= 0.02 * target + 2.0, "zipf total {total} vs {target}");
            assert!(lens.iter().all(|&l| l >= 1));
            let short = lens.iter().filter(|&&l| l <= 3).count();
            assert!(short * 2 > br, "most zipf rows short: {short} of {br}");
            assert!(*lens.iter().max().unwrap() >= bc / 4, "a long zipf row: {lens:?}");
            // Top-16: exactly 16 per row.
            assert!(row_lens(&topk_mask(br, bc, 16, &mut rng), bc).iter().all(|&l| l == 16.min(bc)));
            // Every family reproducible from the seed.
            for f in MaskFamily::REAL {
                assert_eq!(f.mask(br, bc, &mut seeded_rng(seed)), f.mask(br, bc, &mut seeded_rng(seed)), "{}", f.name());
            }
        }
    }

    #[test]
    fn exact_mask_has_exact_count() {
        let mut rng = seeded_rng(test_seed("exact_mask_has_exact_count"));
        for (r, c, d) in [(128usize, 128usize, 0.125f64), (17, 33, 0.5), (64, 64, 0.03125), (8, 8, 1.0), (8, 8, 0.0)] {
            let m = exact_mask(r, c, d, &mut rng);
            assert_eq!(m.iter().filter(|&&x| x).count(), (d * (r * c) as f64).round() as usize);
        }
    }

    #[test]
    fn masks_are_deterministic_and_respect_density() {
        let seed = test_seed("masks_are_deterministic_and_respect_density");
        let a = random_mask(40, 50, 0.3, &mut seeded_rng(seed));
        let b = random_mask(40, 50, 0.3, &mut seeded_rng(seed));
        assert_eq!(a, b, "seed {seed}");
        let n = a.iter().filter(|&&x| x).count();
        // 2000 Bernoulli(0.3): mean 600, sd ~20.5; 8 sd margin.
        assert!((436..=764).contains(&n), "seed {seed}: {n} blocks");
        let mut rng = seeded_rng(seed);
        assert!(random_mask(7, 9, 0.0, &mut rng).iter().all(|&x| !x));
        assert!(random_mask(7, 9, 1.0, &mut rng).iter().all(|&x| x));
        assert!(random_mask(7, 9, f64::NAN, &mut rng).iter().all(|&x| !x));
        assert_eq!(random_mask(7, 9, 0.5, &mut rng).len(), 63);
    }

    #[test]
    fn structured_masks_have_their_shape() {
        for (r, c, d) in [(128usize, 128usize, 0.125f64), (64, 128, 0.25), (17, 33, 0.5), (8, 8, 1.0), (5, 7, 0.01), (6, 6, 0.0)] {
            let w = row_width(c, d);
            let band = banded_mask(r, c, d);
            let diag = block_diagonal_mask(r, c, d);
            for row in 0..r {
                let cols = |m: &[bool]| (0..c).filter(|&j| m[row * c + j]).collect::<Vec<_>>();
                let b = cols(&band);
                assert_eq!(b.len(), w, "band row {row} of {r}x{c} at {d}");
                // Consecutive modulo c: at most one wrap-around gap.
                let gaps = (0..b.len()).filter(|&i| (b[i] + 1) % c != b[(i + 1) % b.len()]).count();
                assert!(w == 0 || w == c || gaps == 1, "band row {row} is not one run: {b:?}");
                let g = cols(&diag);
                assert!(g.len() <= w && (w == 0 || !g.is_empty()), "diag row {row}: {g:?}");
                assert!(g.windows(2).all(|p| p[1] == p[0] + 1), "diag row {row} is not one run: {g:?}");
            }
        }
        // 128x128 at 1/8: 8 groups of 16 rows, each on its own 16 columns.
        let diag = block_diagonal_mask(128, 128, 0.125);
        for row in 0..128 {
            assert_eq!(
                (0..128).filter(|&j| diag[row * 128 + j]).collect::<Vec<_>>(),
                ((row / 16) * 16..(row / 16) * 16 + 16).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn skewed_mask_concentrates_blocks() {
        let seed = test_seed("skewed_mask_concentrates_blocks");
        let (br, bc) = (64, 32);
        for &(density, heavy, share) in &[(0.1, 4, 0.5), (0.05, 1, 0.9), (0.5, 8, 0.3), (1.0, 4, 0.9), (0.0, 4, 0.5)] {
            let mut rng = seeded_rng(seed);
            let m = skewed_mask(br, bc, density, heavy, share, &mut rng);
            assert_eq!(m, skewed_mask(br, bc, density, heavy, share, &mut seeded_rng(seed)));
            let total = m.iter().filter(|&&x| x).count();
            let target = (density * (br * bc) as f64).round() as usize;
            assert_eq!(total, target, "seed {seed} density {density}");
            let mut per_row: Vec<usize> = m.chunks(bc).map(|r| r.iter().filter(|&&x| x).count()).collect();
            per_row.sort_unstable_by(|a, b| b.cmp(a));
            let top: usize = per_row[..heavy].iter().sum();
            let want = ((share * target as f64).round() as usize).min(heavy * bc);
            assert!(top >= want, "seed {seed}: heavy rows hold {top} < {want}");
        }
        // Degenerate arguments do not panic.
        assert!(skewed_mask(0, 5, 0.5, 3, 0.5, &mut seeded_rng(seed)).is_empty());
        assert_eq!(skewed_mask(3, 5, 2.0, 10, f64::NAN, &mut seeded_rng(seed)), vec![true; 15]);
    }

    #[test]
    fn values_are_nonzero_and_bounded() {
        let seed = test_seed("values_are_nonzero_and_bounded");
        let mut rng = seeded_rng(seed);
        let h: Vec<f16> = random_values(5000, &mut rng);
        let b: Vec<bf16> = random_values(5000, &mut rng);
        let f: Vec<f32> = random_values(5000, &mut rng);
        for x in h.iter().map(|v| v.to_f64()).chain(b.iter().map(|v| v.to_f64())).chain(f.iter().map(|&v| v as f64)) {
            assert!(x != 0.0 && (-1.0..=1.0).contains(&x), "seed {seed}: {x}");
        }
        // Both signs and a spread of magnitudes.
        assert!(f.iter().any(|&x| x < -0.5) && f.iter().any(|&x| x > 0.5), "seed {seed}");
        let again: Vec<f32> = {
            let mut rng = seeded_rng(seed);
            let _: Vec<f16> = random_values(5000, &mut rng);
            let _: Vec<bf16> = random_values(5000, &mut rng);
            random_values(5000, &mut rng)
        };
        assert_eq!(f, again);
    }
}
