//! Epilogues: `alpha · acc + beta · C`, rounded to the output type and written where the op's
//! [`Dest`] says; or the raw f32 tile into a split-K slot. With `beta == 0`, C is not read
//! (BLAS semantics: whatever it held, NaN included, is overwritten).
//!
//! Both kernel families hand over their accumulators in the same fragment layout: per warp, a
//! strip of 16 rows and `8 · J` columns in which lane `l` holds, for column group `j`, the four
//! values `(row l/4, columns 8j + 2(l%4) + {0, 1})` and `(row l/4 + 8, same columns)` (the
//! `mma.sync` C fragment; `wgmma`'s m64nN fragment is four such strips, one per warp).

use blocksparse_abi::{DenseOut, WorkParams};

use crate::dtype::Output;
use crate::ptx::{ld_global_nc_u32, movmatrix_trans, opaque, shfl_xor, st_global_f32x2, st_global_u16, st_global_v4_u32};

/// Where a tile's elements go: element addresses in tile coordinates. Runs of 8 columns
/// starting at a multiple of 8 are contiguous and 16-byte aligned in row-major destinations,
/// runs of 8 rows likewise in column-major ones. Every row of a tile exists; columns from
/// [`Dest::cols`] on do not.
pub trait Dest<O: Output> {
    /// Address of element `(row, col)`.
    fn at(&self, row: u32, col: u32) -> *mut O::Elem;
    /// Columns that exist.
    fn cols(&self) -> u32;
    /// Whether consecutive rows (not columns) are adjacent in memory.
    fn col_major(&self) -> bool;
    /// Scale of the product.
    fn alpha(&self) -> f32;
    /// Scale of the old value.
    fn beta(&self) -> f32;

    /// `alpha · v + beta · C(row, col)`, reading C only when beta != 0.
    #[inline(always)]
    unsafe fn scaled(&self, row: u32, col: u32, v: f32) -> f32 {
        let mut r = self.alpha() * v;
        if self.beta() != 0.0 {
            r += self.beta() * unsafe { O::load1(self.at(row, col)) };
        }
        r
    }

    /// `alpha · (v0, v1) + beta · C(row, col .. col + 2)` for an even `col`, reading C only
    /// when beta != 0 and only the columns that exist.
    #[inline(always)]
    unsafe fn scaled_pair(&self, row: u32, col: u32, v0: f32, v1: f32) -> (f32, f32) {
        let (mut r0, mut r1) = (self.alpha() * v0, self.alpha() * v1);
        if self.beta() != 0.0 && col < self.cols() {
            let p = self.at(row, col);
            if self.col_major() {
                r0 += self.beta() * unsafe { O::load1(p) };
                if col + 1 < self.cols() {
                    r1 += self.beta() * unsafe { O::load1(self.at(row, col + 1)) };
                }
            } else if col + 1 < self.cols() {
                let (c0, c1) = unsafe { O::load2(p) };
                r0 += self.beta() * c0;
                r1 += self.beta() * c1;
            } else {
                r0 += self.beta() * unsafe { O::load1(p) };
            }
        }
        (r0, r1)
    }
}

/// A dense C (SpMM): the tile at `(row0, col0)` of one matrix of the batch.
#[derive(Clone, Copy)]
pub struct DenseDest {
    /// Address of tile element (0, 0), as an integer.
    base: u64,
    /// Elements between rows and between columns.
    row_stride: u32,
    col_stride: u32,
    /// Columns of the tile that exist.
    cols: u32,
    col_major: bool,
    alpha: f32,
    beta: f32,
}

/// C's row of tile-space row `row` of `out`: `row` itself, or through the plan's row map
/// ([`DenseOut::row_map`]).
#[inline(always)]
unsafe fn c_row(out: &DenseOut, row: u32) -> u32 {
    if out.row_map == 0 {
        row
    } else {
        let u = out.row_unit_log2;
        let block = unsafe { ld_global_nc_u32((out.row_map as *const u32).wrapping_add((row >> u) as usize)) };
        block << u | (row & ((1 << u) - 1))
    }
}

impl DenseDest {
    /// The tile of `out` whose element (0, 0) is `C(row0, col0)` of matrix `batch`.
    #[inline(always)]
    pub fn tile<O: Output>(out: &DenseOut, batch: u32, row0: u32, col0: u32) -> Self {
        Self::at::<O>(out, batch, row0, 0, col0)
    }

    /// The tile of `out` whose element (`local`, 0) is tile-space row `row`'s, through the row
    /// map of a reordered plan ([`DenseOut::row_map`]), at column `col0` of matrix `batch`: a
    /// caller whose rows `local ..` lie in one stream row addresses them in tile coordinates.
    /// Without a row map, [`DenseDest::tile`] at row `row - local`.
    #[inline(always)]
    pub unsafe fn mapped<O: Output>(out: &DenseOut, batch: u32, row: u32, local: u32, col0: u32) -> Self {
        Self::at::<O>(out, batch, unsafe { c_row(out, row) }, local, col0)
    }

    /// The tile of `out` whose element (`local`, 0) is `C(row, col0)` of matrix `batch`.
    #[inline(always)]
    fn at<O: Output>(out: &DenseOut, batch: u32, row: u32, local: u32, col0: u32) -> Self {
        let col_major = out.col_major != 0;
        let ld = opaque(out.ld);
        let (rs, cs) = if col_major { (1, ld) } else { (ld, 1) };
        // Row `row - local` may lie before C (wrapping): only rows from `local` on are addressed.
        let rows = (row as u64).wrapping_sub(local as u64);
        let off = (batch as u64 * out.batch_stride).wrapping_add(rows.wrapping_mul(rs as u64)).wrapping_add(col0 as u64 * cs as u64);
        let base = out.c.wrapping_add(off.wrapping_mul(core::mem::size_of::<O::Elem>() as u64));
        // (Written out rather than `saturating_sub`: the same value, and the PTX of the validated
        // build.)
        #[allow(clippy::implicit_saturating_sub)]
        let cols = if col0 < out.cols { out.cols - col0 } else { 0 };
        DenseDest { base, row_stride: rs, col_stride: cs, cols, col_major, alpha: out.alpha, beta: out.beta }
    }
}

impl<O: Output> Dest<O> for DenseDest {
    #[inline(always)]
    fn at(&self, row: u32, col: u32) -> *mut O::Elem {
        (self.base as *mut O::Elem).wrapping_add(row as usize * self.row_stride as usize + col as usize * self.col_stride as usize)
    }
    #[inline(always)]
    fn cols(&self) -> u32 {
        self.cols
    }
    #[inline(always)]
    fn col_major(&self) -> bool {
        self.col_major
    }
    #[inline(always)]
    fn alpha(&self) -> f32 {
        self.alpha
    }
    #[inline(always)]
    fn beta(&self) -> f32 {
        self.beta
    }
}

/// Consecutive blocks of a BSR output (SDDMM): tile column `c` lies in block `first + c / bn`,
/// whose `(bm, bn)` values are row-major.
#[derive(Clone, Copy)]
pub struct BlockDest {
    /// Address of the first block's element (row0, 0), as an integer.
    base: u64,
    bm: u32,
    bn_log2: u32,
    cols: u32,
    alpha: f32,
    beta: f32,
}

impl BlockDest {
    /// Blocks `first .. first + n_blocks` of `values` (element pointer), `(bm, 1 << bn_log2)`
    /// each, from their row `row0` on.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn blocks<O: Output>(values: u64, first: u32, n_blocks: u32, bm: u32, bn_log2: u32, row0: u32, alpha: f32, beta: f32) -> Self {
        let off = ((first as u64 * bm as u64) << bn_log2) + ((row0 as u64) << bn_log2);
        let base = values + off * core::mem::size_of::<O::Elem>() as u64;
        BlockDest { base, bm: opaque(bm), bn_log2: opaque(bn_log2), cols: n_blocks << bn_log2, alpha, beta }
    }
}

impl<O: Output> Dest<O> for BlockDest {
    #[inline(always)]
    fn at(&self, row: u32, col: u32) -> *mut O::Elem {
        let blk = col >> self.bn_log2;
        let within = col & ((1 << self.bn_log2) - 1);
        let off = (((blk * self.bm + row) as usize) << self.bn_log2) + within as usize;
        (self.base as *mut O::Elem).wrapping_add(off)
    }
    #[inline(always)]
    fn cols(&self) -> u32 {
        self.cols
    }
    #[inline(always)]
    fn col_major(&self) -> bool {
        false
    }
    #[inline(always)]
    fn alpha(&self) -> f32 {
        self.alpha
    }
    #[inline(always)]
    fn beta(&self) -> f32 {
        self.beta
    }
}

/// A destination seen with `beta == 0`: C is not read. The epilogues run their body through
/// it when the launch's beta is zero, so that the per-pair tests of beta fold away (one
/// warp-uniform branch per tile instead of one per pair).
struct NoBeta<'a, D>(&'a D);

impl<O: Output, D: Dest<O>> Dest<O> for NoBeta<'_, D> {
    #[inline(always)]
    fn at(&self, row: u32, col: u32) -> *mut O::Elem {
        self.0.at(row, col)
    }
    #[inline(always)]
    fn cols(&self) -> u32 {
        self.0.cols()
    }
    #[inline(always)]
    fn col_major(&self) -> bool {
        self.0.col_major()
    }
    #[inline(always)]
    fn alpha(&self) -> f32 {
        self.0.alpha()
    }
    #[inline(always)]
    fn beta(&self) -> f32 {
        0.0
    }
}

/// Writes one warp's `(16, 8·J)` accumulator strip (layout in the module docs) whose element
/// (0, 0) is tile element `(row0, col0)`; `frag(j)` returns lane `lane`'s four values of column
/// group `j`. `J` is a multiple of 4. Must be called by all 32 lanes.
///
/// 16-bit outputs travel as packed pairs and leave in 16-byte runs: for a row-major
/// destination, a 4×4 transpose across each quad (shuffles) gives each lane 8 consecutive
/// columns; for a column-major one, each 8×8 sub-block is first transposed in registers
/// (`movmatrix`), after which the same quad transpose gives each lane 8 consecutive rows. Either
/// way a warp writes full 32-byte sectors. f32 outputs are written as they lie: pairs along a
/// row, or single elements down 8 consecutive rows.
#[inline(always)]
pub unsafe fn store_strip<O: Output, D: Dest<O>, const J: usize>(d: &D, row0: u32, col0: u32, lane: u32, frag: impl Fn(usize) -> [f32; 4]) {
    unsafe {
        // (f32 C keeps one body: on the Hopper tiles two spill under the consumer's registers.)
        if O::PACK2.is_some() && d.beta() == 0.0 {
            strip::<O, _, J>(&NoBeta(d), row0, col0, lane, &frag)
        } else {
            strip::<O, _, J>(d, row0, col0, lane, &frag)
        }
    }
}

/// [`store_strip`] as one body for any beta, for callers whose registers cannot take two (the
/// 128-row SDDMM tile spills with two).
#[cfg(target_feature = "sm_90a")]
#[inline(always)]
pub unsafe fn store_strip_one_body<O: Output, D: Dest<O>, const J: usize>(
    d: &D,
    row0: u32,
    col0: u32,
    lane: u32,
    frag: impl Fn(usize) -> [f32; 4],
) {
    unsafe { strip::<O, _, J>(d, row0, col0, lane, &frag) }
}

/// [`store_strip`]'s body.
#[inline(always)]
unsafe fn strip<O: Output, D: Dest<O>, const J: usize>(d: &D, row0: u32, col0: u32, lane: u32, frag: &impl Fn(usize) -> [f32; 4]) {
    // Per call, so that the column indices below are not hoisted out of the item loop.
    let lane = opaque(lane);
    let (g, q) = (lane / 4, lane % 4);
    match (O::PACK2, d.col_major()) {
        (None, false) => {
            let mut j = 0;
            while j < J {
                let f = frag(j);
                let col = col0 + 8 * j as u32 + 2 * q;
                let mut h = 0;
                while h < 2 {
                    if col < d.cols() {
                        let row = row0 + g + 8 * h as u32;
                        let (r0, r1) = unsafe { d.scaled_pair(row, col, f[2 * h], f[2 * h + 1]) };
                        let p = d.at(row, col);
                        unsafe { if col + 1 < d.cols() { O::store2(p, r0, r1) } else { O::store1(p, r0) } }
                    }
                    h += 1;
                }
                j += 1;
            }
        }
        (None, true) => {
            let mut j = 0;
            while j < J {
                let f = frag(j);
                let mut e = 0;
                while e < 4 {
                    let col = col0 + 8 * j as u32 + 2 * q + (e & 1) as u32;
                    let row = row0 + g + 8 * (e >> 1) as u32;
                    if col < d.cols() {
                        unsafe { O::store1(d.at(row, col), d.scaled(row, col, f[e])) };
                    }
                    e += 1;
                }
                j += 1;
            }
        }
        (Some(pack), false) => {
            // Groups j0 .. j0 + 4 at a time, both row halves: the accumulators die in order.
            let mut j0 = 0;
            while j0 < J {
                let mut h = 0;
                while h < 2 {
                    let row = row0 + g + 8 * h as u32;
                    // Words of groups j0 .. j0 + 4 at this lane's columns 2q, 2q + 1.
                    let mut v = [0u32; 4];
                    let mut t = 0;
                    while t < 4 {
                        let f = frag(j0 + t);
                        let col = col0 + 8 * (j0 + t) as u32 + 2 * q;
                        let (r0, r1) = unsafe { d.scaled_pair(row, col, f[2 * h], f[2 * h + 1]) };
                        v[t] = pack(r0, r1);
                        t += 1;
                    }
                    // This lane now holds columns 8·(j0 + q) .. + 8.
                    let w = quad_transpose(v, q);
                    let col = col0 + 8 * (j0 as u32 + q);
                    unsafe { store_run::<O, D>(d, row, col, w, d.cols().saturating_sub(col)) };
                    h += 1;
                }
                j0 += 4;
            }
        }
        (Some(pack), true) => {
            let mut j0 = 0;
            while j0 < J {
                // Words (h, j) for h in 0..2, j in j0..j0 + 2, each transposed in its 8×8
                // sub-block: lane (g, q) then holds rows 8h + 2q, 8h + 2q + 1 of column 8j + g.
                let mut v = [0u32; 4];
                let mut t = 0;
                while t < 4 {
                    let (h, j) = (t & 1, j0 + (t >> 1));
                    let f = frag(j);
                    let row = row0 + g + 8 * h as u32;
                    let col = col0 + 8 * j as u32 + 2 * q;
                    let (r0, r1) = unsafe { d.scaled_pair(row, col, f[2 * h], f[2 * h + 1]) };
                    v[t] = movmatrix_trans(pack(r0, r1));
                    t += 1;
                }
                // Lane q now holds word q: rows 8h .. 8h + 8 of column 8j + g, (h, j) =
                // (q & 1, j0 + q / 2).
                let w = quad_transpose(v, q);
                let (h, j) = (q & 1, j0 as u32 + q / 2);
                let col = col0 + 8 * j + g;
                if col < d.cols() {
                    unsafe { store_run::<O, D>(d, row0 + 8 * h, col, w, 8) };
                }
                j0 += 2;
            }
        }
    }
}

/// Writes a run of 8 packed 16-bit values (`w`) starting at `(row, col)` along the
/// destination's contiguous direction, of which the first `valid` exist.
#[inline(always)]
unsafe fn store_run<O: Output, D: Dest<O>>(d: &D, row: u32, col: u32, w: [u32; 4], valid: u32) {
    let p = d.at(row, col);
    if valid >= 8 {
        unsafe { st_global_v4_u32(p as *mut u32, w) };
    } else {
        // Constant element indices (a run-time index would move `w` to local memory).
        let mut e = 0;
        while e < 8 {
            if e < valid {
                let bits = (w[(e / 2) as usize] >> (16 * (e % 2))) as u16;
                unsafe { st_global_u16((p as *mut u16).wrapping_add(e as usize), bits) };
            }
            e += 1;
        }
    }
}

/// 4×4 transpose across the lanes of a quad: lane `q`'s word `t` becomes lane `t`'s word `q`.
/// Two butterfly rounds, each swapping one bit of the lane index with the same bit of the word
/// index; all indices stay compile-time constants (selects, no local memory).
#[inline(always)]
fn quad_transpose(v: [u32; 4], q: u32) -> [u32; 4] {
    let (q0, q1) = (q & 1 == 1, q & 2 == 2);
    let mut a = v;
    let mut k = 0;
    while k < 2 {
        let recv = shfl_xor::<1>(if q0 { v[2 * k] } else { v[2 * k + 1] });
        if q0 {
            a[2 * k] = recv;
        } else {
            a[2 * k + 1] = recv;
        }
        k += 1;
    }
    let mut b = a;
    let mut k = 0;
    while k < 2 {
        let recv = shfl_xor::<2>(if q1 { a[k] } else { a[k + 2] });
        if q1 {
            b[k] = recv;
        } else {
            b[k + 2] = recv;
        }
        k += 1;
    }
    b
}

/// Slot `slot`'s row-major `(tm, tn)` f32 partial tile (`tile_elems = tm · tn`) in the plan's
/// split-K workspace.
#[inline(always)]
pub fn partial_tile(work: &WorkParams, slot: u32, tile_elems: u32) -> *mut f32 {
    (work.partials as *mut f32).wrapping_add(slot as usize * tile_elems as usize)
}

/// Writes one warp's strip (layout as in [`store_strip`]), unscaled, into a row-major f32
/// partial tile with `tn` columns; `(row0, col0)` is the strip's origin in the tile.
#[inline(always)]
pub unsafe fn store_partial_strip<const J: usize>(
    tile: *mut f32,
    tn: u32,
    row0: u32,
    col0: u32,
    lane: u32,
    frag: impl Fn(usize) -> [f32; 4],
) {
    let lane = opaque(lane);
    let (g, q) = (lane / 4, lane % 4);
    let mut j = 0;
    while j < J {
        let f = frag(j);
        let col = col0 + 8 * j as u32 + 2 * q;
        let mut h = 0;
        while h < 2 {
            let row = row0 + g + 8 * h as u32;
            unsafe { st_global_f32x2(tile.wrapping_add((row * tn + col) as usize), f[2 * h], f[2 * h + 1]) };
            h += 1;
        }
        j += 1;
    }
}

/// Shared-memory staging of one consumer warpgroup's C: two `(WG_M, 128 bytes)` chunks in the
/// 128-byte swizzle of the C tensor map, and the warpgroup's named barrier.
#[cfg(target_feature = "sm_90a")]
#[derive(Clone, Copy)]
pub struct CStage {
    /// Shared address of chunk 0 (1024-byte aligned); chunk 1 follows.
    pub chunks: u32,
    /// Named barrier of the warpgroup.
    pub barrier: u32,
    /// Generic address of C's tensor map (3D: columns, rows, batch).
    pub tmap: u64,
}

/// Where [`CStage::store`] sends a fragment's chunks in C's tensor map (3D: columns, rows,
/// batch).
#[cfg(target_feature = "sm_90a")]
#[derive(Clone, Copy)]
pub enum ChunkTo {
    /// A dense C: the fragment's element (0, 0) at map column `col0`, tile row `row0` (a row
    /// through `out`'s row map, [`DenseOut::row_map`], where it has one).
    Dense { col0: u32, row0: u32 },
    /// Blocks of a block-sparse C, its values seen as one `(nnz · bm, bn)` row-major matrix:
    /// fragment column `c` lies in block `first + c / bn`, at its row `row0` (each chunk, at
    /// most `bn` wide, inside one block).
    Blocks { first: u32, bm: u32, bn_log2: u32, row0: u32 },
}

#[cfg(target_feature = "sm_90a")]
impl ChunkTo {
    /// Map coordinates `(column, row)` of fragment column `c`'s chunk, rows through no row map.
    #[inline(always)]
    fn at(self, c: u32) -> (u32, u32) {
        match self {
            ChunkTo::Dense { col0, row0 } => (col0 + c, row0),
            ChunkTo::Blocks { first, bm, bn_log2, row0 } => (c & ((1 << bn_log2) - 1), (first + (c >> bn_log2)) * bm + row0),
        }
    }
}

#[cfg(target_feature = "sm_90a")]
impl CStage {
    /// Writes one warpgroup's `(64, 8·G)` wgmma fragment (`acc`, G = N_REGS / 4) to a row-major
    /// C through shared memory: per 128-byte-wide column chunk, the threads write their scaled,
    /// rounded values into a free staging chunk, and thread 0 of the warpgroup issues one TMA
    /// store of it. The stores complete asynchronously while the warpgroup goes on to the next
    /// item; a chunk is rewritten only after the store two chunks back has read it. `d` is the
    /// destination of each warp's rows (for beta and the column limit), `to` and `batch` where
    /// the chunks go in C's tensor map: for a dense C with a row map (`out`'s,
    /// [`DenseOut::row_map`]) each stream row of the fragment is its own TMA store, whose box
    /// (C's tensor map) is one stream row tall. Must be called by all 128 threads of the
    /// warpgroup; thread 0 must call [`CStage::drain`] before the kernel exits.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub unsafe fn store<O: Output, D: Dest<O>, const N_REGS: usize>(
        &self,
        d: &D,
        out: &DenseOut,
        acc: &[f32; N_REGS],
        to: ChunkTo,
        batch: u32,
        lt: u32,
    ) {
        unsafe {
            // (f32 C keeps one body: two spill under the consumer's register budget.)
            if O::PACK2.is_some() && d.beta() == 0.0 {
                self.store_chunks::<O, _, N_REGS>(&NoBeta(d), out, acc, (to, batch), lt)
            } else {
                self.store_chunks::<O, _, N_REGS>(d, out, acc, (to, batch), lt)
            }
        }
    }

    /// [`CStage::store`]'s body.
    #[inline(always)]
    unsafe fn store_chunks<O: Output, D: Dest<O>, const N_REGS: usize>(
        &self,
        d: &D,
        out: &DenseOut,
        acc: &[f32; N_REGS],
        at: (ChunkTo, u32),
        lt: u32,
    ) {
        let (to, batch) = at;
        use crate::ptx::st_shared_v2_u32;
        use crate::ptx_sm90::{bulk_commit, bulk_wait_read, fence_proxy_async_smem, named_barrier, stmatrix_x4, tma_store_3d};
        use blocksparse_abi::{C_CHUNK_BYTES, WG_M};

        // Per item, so that the shared addresses below are not hoisted out of the item loop.
        let lt = opaque(lt);
        let (w, l) = (lt / 32, lt % 32);
        let q = l % 4;
        let elem = core::mem::size_of::<O::Elem>() as u32;
        // (WG_M, 128 bytes) per chunk: 8-column groups per chunk, chunks per fragment.
        let chunk_cols = 128 / elem;
        let groups = chunk_cols / 8;
        let n_chunks = (N_REGS as u32 / 4) / groups;
        // 16-bit C leaves through `stmatrix`, four 8x8 matrices at a time: matrix m of groups
        // (2p, 2p + 1) of a chunk is row half m % 2 of group 2p + m / 2. Lane l addresses row
        // l % 8 of matrix l / 8: chunk row r = 16 w + 8 (m % 2) + l % 8, whose 16-byte unit u
        // (one 8-column group) sits at u ^ (r % 8). With u = 2p ^ (m / 2), the lane's offset
        // for pair p is its offset for p = 0 with bits 5.. of the unit flipped by 2p.
        let m = l / 8;
        let st_off = (16 * w + 8 * (m % 2) + l % 8) * 128 + (((m / 2) ^ (l % 8)) * 16);
        let mut k = 0;
        while k < n_chunks {
            if k * chunk_cols >= d.cols() {
                break; // the same for the whole warpgroup
            }
            let buf = self.chunks + (k % 2) * C_CHUNK_BYTES;
            // Chunk k reuses the buffer of chunk k - 2. At k = 0, every store of the previous
            // item (issued a main loop ago) must have read its buffer, chunk 1's included; from
            // k = 2 on, the store of chunk k - 2.
            if k != 1 {
                if lt == 0 {
                    if k == 0 { bulk_wait_read::<0>() } else { bulk_wait_read::<1>() }
                }
                named_barrier(self.barrier, 128);
            }
            match O::PACK2 {
                Some(pack) => {
                    let mut p = 0;
                    while p < groups / 2 {
                        let mut v = [0u32; 4];
                        let mut mm = 0;
                        while mm < 4 {
                            let (j, h) = (k * groups + 2 * p + mm / 2, mm % 2);
                            let i = (4 * j + 2 * h) as usize;
                            let (v0, v1) = unsafe { d.scaled_pair(16 * w + l / 4 + 8 * h, 8 * j + 2 * q, acc[i], acc[i + 1]) };
                            v[mm as usize] = pack(v0, v1);
                            mm += 1;
                        }
                        unsafe { stmatrix_x4(buf + (st_off ^ (32 * p)), v) };
                        p += 1;
                    }
                }
                None => {
                    let mut jj = 0;
                    while jj < groups {
                        let j = k * groups + jj;
                        let mut h = 0;
                        while h < 2 {
                            let i = (4 * j + 2 * h) as usize;
                            let r = 16 * w + l / 4 + 8 * h;
                            let (v0, v1) = unsafe { d.scaled_pair(r, 8 * j + 2 * q, acc[i], acc[i + 1]) };
                            // Byte column in the chunk row; 16-byte unit `u` sits at `u ^ (r % 8)`.
                            let bc = (8 * jj + 2 * q) * elem;
                            let addr = buf + r * 128 + (((bc / 16) ^ (r % 8)) * 16) + bc % 16;
                            unsafe { st_shared_v2_u32(addr, v0.to_bits(), v1.to_bits()) };
                            h += 1;
                        }
                        jj += 1;
                    }
                }
            }
            fence_proxy_async_smem();
            named_barrier(self.barrier, 128);
            if lt == 0 {
                match to {
                    ChunkTo::Dense { col0, row0 } if out.row_map != 0 => {
                        // One store per stream row of the chunk (128-byte rows; a stream row of at
                        // least 16 rows starts 2 KB in, so the 128-byte swizzle pattern lines up).
                        let u = out.row_unit_log2;
                        let mut r = 0;
                        while r < WG_M {
                            let row = unsafe { c_row(out, row0 + r) };
                            unsafe { tma_store_3d(self.tmap, col0 + k * chunk_cols, row, batch, buf + r * 128) };
                            r += 1 << u;
                        }
                    }
                    _ => {
                        let (x, y) = to.at(k * chunk_cols);
                        unsafe { tma_store_3d(self.tmap, x, y, batch, buf) };
                    }
                }
                bulk_commit();
            }
            k += 1;
        }
    }

    /// Thread 0 of the warpgroup, before exit: waits for its TMA stores to finish.
    #[inline(always)]
    pub fn drain(&self) {
        crate::ptx_sm90::bulk_wait_all();
    }
}
