//! The one source of truth shared by the device crate (`kernels-gpu`, compiled to PTX) and the
//! host library (`blocksparse`): tile shapes, pipeline depths, operand layouts, the list of
//! generated kernels and the `#[repr(C)]` parameter blocks that cross the launch boundary.
//!
//! Nothing here depends on `std`, so the same file compiles for `nvptx64-nvidia-cuda` and for
//! the host.
#![no_std]
#![warn(missing_docs)]

/// FNV-1a (64-bit) hash of this file's text, carriage returns skipped (so a checkout with CRLF
/// line endings hashes the same). The device crate exports it from every PTX module as the
/// global `BLOCKSPARSE_ABI_HASH` ([`ABI_HASH_SYMBOL`]), and the host compares it with its own
/// copy when it loads a module: kernels built from another version of these layouts are
/// refused instead of launched with mismatched parameter blocks.
pub const ABI_HASH: u64 = fnv1a(include_str!("lib.rs").as_bytes());

/// Name of the global each PTX module exports with [`ABI_HASH`].
pub const ABI_HASH_SYMBOL: &str = "BLOCKSPARSE_ABI_HASH";

/// 64-bit FNV-1a over `bytes`, skipping `\r`.
pub const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\r' {
            hash ^= bytes[i] as u64;
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        i += 1;
    }
    hash
}

/// Block heights and widths the kernels support (square or not: `bm` and `bk` each one of these).
pub const BLOCK_SIZES: [u32; 4] = [16, 32, 64, 128];

/// Largest dynamic shared memory one block may use on compute capability 8.0, the oldest target
/// of the portable module. Every portable tile is checked against it at compile time; the host
/// checks the device's own limit before it loads a kernel.
pub const SM80_MAX_DYNAMIC_SMEM: u32 = 163 * 1024;

/// Elements moved by one 16-byte `cp.async` chunk (f16 / bf16).
pub const CHUNK_ELEMS: u32 = 8;

/// Leading dimensions (and batch strides) of dense device matrices are multiples of this many
/// elements, so every row starts on a 16-byte boundary and 16-byte copies never straddle rows.
pub const LD_ALIGN: u32 = 8;

/// A work item longer than this many stream positions is split by the planner: the portable
/// kernel keeps the item's K-block indices and its blocks in shared memory, `MAX_ITEM_BLOCKS`
/// words each (a merged plan's `m` blocks per position: items of at most `MAX_ITEM_BLOCKS / m`
/// positions).
pub const MAX_ITEM_BLOCKS: u32 = 256;

/// Marks a work item that writes its output directly (no split-K partial slot).
pub const NO_SLOT: u32 = u32::MAX;

/// Marks an absent B block in an SpGEMM stage record (see [`SpgemmParams::records`]).
pub const NO_BLOCK: u32 = u32::MAX;

// ---------------------------------------------------------------------------------------------
// Operand layouts
// ---------------------------------------------------------------------------------------------

/// Bits of the `flags` parameter word: how each operand of the tile product `C = A · B` lies in
/// memory. The kernels read every layout in place (no copies); the host derives the bits from
/// the views and transposes it was given.
pub mod flags {
    /// The A operand is MN-major: consecutive elements run along the tile's rows (M), e.g. the
    /// transpose of a row-major BSR block, or a column-major dense X. Otherwise K-major.
    pub const A_MN_MAJOR: u32 = 1;
    /// The B operand is K-major: consecutive elements run along K, e.g. a transposed view of a
    /// row-major matrix. Otherwise MN-major (row-major `(K, N)`).
    pub const B_K_MAJOR: u32 = 2;
    /// The dense output C is column-major (element `(i, j)` at `j · ldc + i`). Otherwise
    /// row-major.
    pub const C_COL_MAJOR: u32 = 4;
    /// SpMM only: A's blocks are visited through a permutation (`perm`), i.e. A is transposed
    /// and the plan streams its blocks column by column.
    pub const A_PERMUTED: u32 = 8;
    /// SpMM only: the plan merges `1 << merge_log2` adjacent rows of the stream (block rows of
    /// A, or of Aᵀ) into one output tile: stream position `q` is one block column of the
    /// merged rows' union, and `perm[(q << merge_log2) + h]` is the block of merged row `h` there,
    /// or [`NO_BLOCK`](super::NO_BLOCK) (zeros).
    pub const A_MERGED: u32 = 16;
    /// SpMM on the Hopper kernels, with [`A_MERGED`]: a consumer warpgroup passes over the
    /// stages where every merged row of its 64 lacks a block, instead of multiplying zeros
    /// (the producer announces which consumers multiply each stage; perf notes v25).
    pub const A_SKIPS: u32 = 32;
}

// ---------------------------------------------------------------------------------------------
// Portable tiles (mma.sync)
// ---------------------------------------------------------------------------------------------

/// Tile configuration of the portable tensor-core kernels (`mma.sync` m16n8k16).
///
/// A thread block computes a `(tm, tn)` tile of the output. Its warps form a
/// `(warps_m, warps_n)` grid, each warp owning a `(tm / warps_m, 64)` sub-tile. The K loop
/// streams `(tm, ks)` slices of A and `(ks, tn)` slices of B through a `stages`-deep ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmaTile {
    /// Rows of the output tile.
    pub tm: u32,
    /// Columns of the output tile.
    pub tn: u32,
    /// K depth of one pipeline stage, in elements.
    pub ks: u32,
    /// Pipeline stages in shared memory.
    pub stages: u32,
    /// Warps along M.
    pub warps_m: u32,
    /// Warps along N.
    pub warps_n: u32,
    /// Thread blocks per SM the register allocation is held to (`.minnctapersm`): registers
    /// per thread ≤ 65536 / (threads · blocks_per_sm).
    pub blocks_per_sm: u32,
}

/// Columns of C owned by one warp of the portable kernels.
pub const WARP_N: u32 = 64;

/// Depth of each warp's ring where a tile runs warp rings ([`MmaTile::warp_rings`],
/// [`MmaTile::warp_rings_by_plan`]): two stages (one copied while the other is multiplied) hold
/// the 32-row tile in 48 KB, four blocks (16 warps) per SM on an H100 (228 KB), where three
/// stages (72 KB) held three (perf notes v42).
pub const WARP_RING_STAGES: u32 = 2;

impl MmaTile {
    /// Threads per block.
    pub const fn threads(&self) -> u32 {
        32 * self.warps_m * self.warps_n
    }
    /// Rows of C owned by one warp.
    pub const fn warp_m(&self) -> u32 {
        self.tm / self.warps_m
    }
    /// Bytes of one A stage `(tm, ks)` in shared memory.
    pub const fn a_stage_bytes(&self) -> u32 {
        self.tm * self.ks * 2
    }
    /// Bytes of one B stage `(ks, tn)` in shared memory.
    pub const fn b_stage_bytes(&self) -> u32 {
        self.ks * self.tn * 2
    }
    /// Byte offset of the block cache (an op's block indices, or the B marks of an op that
    /// marks them), after the A and B rings.
    pub const fn cache_offset(&self) -> u32 {
        self.stages * (self.a_stage_bytes() + self.b_stage_bytes())
    }
    /// Dynamic shared memory of one thread block: the rings and the block cache,
    /// `(MAX_ITEM_BLOCKS, 2)` u32.
    pub const fn smem_bytes(&self) -> u32 {
        self.cache_offset() + MAX_ITEM_BLOCKS * 8
    }
    /// Whether an op that marks absent B (BSR × BSR) runs this tile with a ring per warp: tiles
    /// of one warp row (whose warps share only the A slice) and at least 32 rows. Each warp then
    /// copies its own A slice beside its B columns and passes over the stages where none of its
    /// columns holds a block, with no block barrier between the warps. On the 16-row tile the
    /// copies of A per warp cost more than the barrier where the warps skip little (1.28× slower
    /// at 16×16 blocks, 50 % × 50 %), so the plan chooses there
    /// ([`MmaTile::warp_rings_by_plan`]; perf notes v41, v42).
    pub const fn warp_rings(&self) -> bool {
        self.warps_m == 1 && self.tm >= 32
    }
    /// Whether such an op runs this tile with either ring, the plan choosing per launch
    /// ([`SpgemmParams::warp_rings`]): the tiles of one warp row below 32 rows (the 16-row tile).
    /// There the warps pass over fewer of their stages, and warp rings pay only where they pass
    /// over enough of them to make up for A copied once per warp (16×16 blocks: 1.14–1.22×
    /// faster at 12.5 % and top-16, 1.28× slower at 50 %; perf notes v42). Its kernels hold
    /// both mainloops and take the shared memory of the larger.
    pub const fn warp_rings_by_plan(&self) -> bool {
        self.warps_m == 1 && self.tm < 32
    }
    /// Dynamic shared memory of a thread block with [`MmaTile::warp_rings`]: `A rings (warps,
    /// WARP_RING_STAGES, A stage) | B ring (WARP_RING_STAGES, B stage)` (each warp uses its own
    /// 64 columns of the B ring's slots), no block cache.
    pub const fn warp_rings_smem_bytes(&self) -> u32 {
        WARP_RING_STAGES * (self.warps_n * self.a_stage_bytes() + self.b_stage_bytes())
    }
    /// Compile-time validity: evaluated in a `const` item for every tile in [`MMA_TILES`].
    /// Either operand may lie K-major or MN-major, so both the `(rows, ks)` and the `(ks, rows)`
    /// shapes of each stage must split evenly into 16-byte chunks over the threads.
    pub const fn check(&self) -> bool {
        let wm = self.warp_m();
        let t = self.threads();
        let a_chunks = self.tm * self.ks / CHUNK_ELEMS;
        let b_chunks = self.tn * self.ks / CHUNK_ELEMS;
        self.tn == self.warps_n * WARP_N
            && (wm == 16 || wm == 32 || wm == 64)
            && wm * self.warps_m == self.tm
            && self.ks == 32
            && self.stages >= 3
            && self.stages <= 8
            && (a_chunks.is_multiple_of(t) || t.is_multiple_of(a_chunks))
            && b_chunks.is_multiple_of(t)
            && t <= 1024
            && self.smem_bytes() <= SM80_MAX_DYNAMIC_SMEM
            && (!(self.warp_rings() || self.warp_rings_by_plan()) || self.warp_rings_smem_bytes() <= SM80_MAX_DYNAMIC_SMEM)
            // At least the 64 registers per thread the fragments and addresses need.
            && self.blocks_per_sm >= 1
            && t * self.blocks_per_sm * 64 <= SM90_REGISTERS
    }
}

/// Tile configurations of the portable kernels, one per output-tile height in [`BLOCK_SIZES`]
/// (same order).
pub const MMA_TILES: [MmaTile; 4] = [
    MmaTile { tm: 16, tn: 256, ks: 32, stages: 3, warps_m: 1, warps_n: 4, blocks_per_sm: 4 },
    MmaTile { tm: 32, tn: 256, ks: 32, stages: 3, warps_m: 1, warps_n: 4, blocks_per_sm: 4 },
    MmaTile { tm: 64, tn: 256, ks: 32, stages: 4, warps_m: 2, warps_n: 4, blocks_per_sm: 2 },
    MmaTile { tm: 128, tn: 128, ks: 32, stages: 4, warps_m: 4, warps_n: 2, blocks_per_sm: 2 },
];

const _: () = {
    let mut i = 0;
    while i < MMA_TILES.len() {
        assert!(MMA_TILES[i].check(), "invalid MMA tile configuration");
        assert!(MMA_TILES[i].tm == BLOCK_SIZES[i]);
        i += 1;
    }
};

/// Index into [`MMA_TILES`] of the tile with `tm` rows, if there is one.
pub const fn mma_tile_index(tm: u32) -> Option<usize> {
    let mut i = 0;
    while i < MMA_TILES.len() {
        if MMA_TILES[i].tm == tm {
            return Some(i);
        }
        i += 1;
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Hopper tiles (wgmma + TMA)
// ---------------------------------------------------------------------------------------------

/// K depth of one stage of the Hopper kernels (but SpMM's shallow tiles, [`WGMMA_SHALLOW_TILES`]):
/// one 128-byte swizzle span of f16/bf16.
pub const WG_K: u32 = 64;
/// Columns of C one consumer warpgroup owns (`wgmma m64n256k16`).
pub const WG_N: u32 = 256;
/// Rows of C one consumer warpgroup owns.
pub const WG_M: u32 = 64;
/// Elements of one TMA box side along M or N: one 128-byte swizzle span. The boxes the Hopper
/// kernels load are `(ks, BOX)` (B, MN-major A; on SpMM's shallow tiles MN-major A in `(ks,
/// rb)` boxes, `rb ≤ BOX`) or `(ks, rows)` (K-major A), `ks` the tile's stage depth.
pub const BOX: u32 = 64;
/// Bytes of a `(BOX, BOX)` 16-bit box.
pub const BOX_BYTES: u32 = BOX * BOX * 2;

/// Tile configuration of the Hopper kernels (sm_90a): one producer warpgroup issues TMA loads
/// into a `stages`-deep ring guarded by full/empty mbarriers; `tm / 64 × wg_n` consumer
/// warpgroups each run `wgmma m64n256k16` (or, with grouped A, two `m64n128k16`) on a
/// `(64, 256)` sub-tile of the `(tm, 256 · wg_n)` output tile. The grid is persistent: thread block `b` runs the items
/// `schedule[b] .. schedule[b + 1]` that the host planner dealt it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WgmmaTile {
    /// Rows of the output tile.
    pub tm: u32,
    /// Consumer warpgroups along N.
    pub wg_n: u32,
    /// Ring stages.
    pub stages: u32,
    /// Epilogue of a row-major dense C: 0 = each thread stores its accumulators to C directly;
    /// 2 = C goes through two `(WG_M, 128 bytes)` shared-memory chunks per consumer warpgroup
    /// and is written by TMA stores that overlap the next item's main loop (needs the shared
    /// memory beside the ring).
    pub c_buffers: u32,
    /// Stages by which consumer warpgroup 1 trails consumer warpgroup 0 (0: in step). With a
    /// lag, one warpgroup's epilogue runs while the other still has loaded stages to multiply,
    /// so the tensor cores do not idle during stores. Needs two consumers and `skew < stages`.
    pub skew: u32,
    /// 1: one A slice per stage, shared by every column of the tile. Else `tn / 128` (on a
    /// `zero_fill` tile): each 128-column group of the tile has its own A slice in the stage,
    /// which the group's two B boxes multiply (SpGEMM: each group streams its own K list).
    pub a_groups: u32,
    /// K depth of one stage: [`WG_K`] (64), or 32 / 16 for blocks 32 / 16 deep (SpMM's
    /// `(rb, ks)` A boxes; K-major operands then lie in rows of 64 / 32 bytes, swizzled over
    /// the row).
    pub ks: u32,
    /// A reaches the tensor cores through registers: each consumer warp loads its 16 rows of
    /// the stage's A with `ldmatrix` from a row-major, unswizzled `(tm, ks)` slice (rows of 32
    /// bytes; Aᵀ with `ldmatrix.trans` from its `(ks, rb)` boxes, swizzled where `rb > ks`) and
    /// runs `wgmma` with A in registers. For the 16-deep tile, whose K-major A rows
    /// are 32 bytes: TMA fetches a 32-byte-swizzled box 16 bytes at a time (twice the L2
    /// sector reads, four times the requests: perf notes v18), while a 16-wide block's values
    /// are one contiguous run that unswizzled boxes read in whole 128-byte lines.
    pub a_regs: bool,
    /// Consumer warpgroup `c` owns the tile's columns `128 · c ..` over all of its rows (two
    /// `m64n128` per k16, rows 0–63 and 64–127 of one A slice) instead of rows `64 · c ..` over
    /// all of its columns: each consumer then multiplies only the B boxes of its own columns,
    /// and passes over the stages where they are all absent (SpGEMM: one C block of 128 columns
    /// per consumer).
    pub n_split: bool,
    /// B is multiplied box by box (`m64n64` steps, one per 64-column box), and the producer
    /// loads only the boxes that hold a block and the A slices of the groups that have one:
    /// an absent box (or A slice) is read from a zero box beside the ring, which the kernel
    /// fills once. A box TMA fills with zeros out of bounds still moves its bytes from L2 to
    /// the SM (perf notes v27), so absent boxes are not loaded at all (SpGEMM's 64-row tile).
    pub zero_fill: bool,
}

impl WgmmaTile {
    /// Columns of the output tile.
    pub const fn tn(&self) -> u32 {
        WG_N * self.wg_n
    }
    /// Consumer warpgroups.
    pub const fn consumers(&self) -> u32 {
        (self.tm / WG_M) * self.wg_n
    }
    /// Threads per block: the producer warpgroup and the consumers.
    pub const fn threads(&self) -> u32 {
        128 * (1 + self.consumers())
    }
    /// `a_groups` A slices of `(tm, ks)`: K-major boxes, or `tm / 64` MN-major boxes (on
    /// SpMM's shallow tiles `tm / rb` of `(ks, rb)`, as many bytes).
    pub const fn a_stage_bytes(&self) -> u32 {
        self.a_groups * self.a_group_bytes()
    }
    /// One A slice `(tm, ks)`.
    pub const fn a_group_bytes(&self) -> u32 {
        self.tm * self.ks * 2
    }
    /// `(tn / 64)` TMA boxes of `(ks, 64)` B.
    pub const fn b_stage_bytes(&self) -> u32 {
        self.ks * self.tn() * 2
    }
    /// One `(ks, 64)` box: of B, or of an MN-major A (but on SpMM's shallow tiles, whose
    /// MN-major A boxes are `(ks, rb)`).
    pub const fn box_bytes(&self) -> u32 {
        self.ks * BOX * 2
    }
    /// Bytes of one row of a K-major operand in the stage (`ks` elements), which is also its
    /// swizzle span: 128, 64 or 32.
    pub const fn k_row_bytes(&self) -> u32 {
        self.ks * 2
    }
    /// Whether this tile takes the A values of blocks `bk` wide packed: as rows of
    /// [`PACKED_ROW`] elements, unswizzled, each box whole rows (one contiguous run: a K-major
    /// block, or `ks` rows of an Aᵀ block). Tiles that take A through registers, for blocks
    /// exactly `ks` wide; the host's map, the producer's coordinates and the consumers'
    /// `ldmatrix` addresses all follow it.
    pub const fn a_packed(&self, bk: u32) -> bool {
        self.a_regs && bk == self.ks
    }
    /// Bytes one stage's loads deliver.
    pub const fn stage_bytes(&self) -> u32 {
        self.a_stage_bytes() + self.b_stage_bytes()
    }
    /// Offset of the zero box (`zero_fill`) after the ring.
    pub const fn zero_box_offset(&self) -> u32 {
        self.stages * self.stage_bytes()
    }
    /// The zero box: one `(ks, 64)` box of zeros (`zero_fill`; else none).
    pub const fn zero_box_bytes(&self) -> u32 {
        if self.zero_fill { self.box_bytes() } else { 0 }
    }
    /// Offset of the C staging chunks after the ring and the zero box.
    pub const fn c_stage_offset(&self) -> u32 {
        self.zero_box_offset() + self.zero_box_bytes()
    }
    /// `(consumers, c_buffers)` chunks of [`C_CHUNK_BYTES`].
    pub const fn c_stage_bytes(&self) -> u32 {
        self.consumers() * self.c_buffers * C_CHUNK_BYTES
    }
    /// Offset of the mbarriers (full[stages], empty[stages]) after the C staging chunks.
    pub const fn barrier_offset(&self) -> u32 {
        self.c_stage_offset() + self.c_stage_bytes()
    }
    /// Offset of the stages' consumer masks (one u32 per slot: bit `c` set when consumer
    /// warpgroup `c` multiplies the stage) after the mbarriers.
    pub const fn consumer_mask_offset(&self) -> u32 {
        self.barrier_offset() + 16 * self.stages
    }
    /// Dynamic shared memory: 1024 bytes of alignment slack, the ring, the zero box, C staging,
    /// the barriers and the consumer masks.
    pub const fn smem_bytes(&self) -> u32 {
        1024 + self.consumer_mask_offset() + 4 * self.stages
    }
    /// Compile-time validity (shared memory and the register budget of `setmaxnreg`).
    pub const fn check(&self) -> bool {
        (self.tm == 64 || self.tm == 128)
            && self.wg_n >= 1
            && self.consumers() <= 2
            && self.stages >= 2
            && (self.c_buffers == 0 || self.c_buffers == 2)
            && (self.skew == 0 || (self.consumers() == 2 && self.skew < self.stages))
            && (self.a_groups == 1 || (self.a_groups == self.tn() / 128 && self.zero_fill))
            && (self.ks == WG_K || ((self.ks == 32 || self.ks == 16) && self.a_groups == 1))
            && (!self.a_regs || (self.ks == 16 && self.a_groups == 1))
            && (!self.n_split || (self.tm == 128 && self.wg_n == 1 && self.a_groups == 1 && self.ks == WG_K && !self.a_regs))
            && (!self.zero_fill || (self.ks == WG_K && !self.a_regs && !self.n_split && self.skew == 0))
            && 128 * (PRODUCER_REGS + self.consumers() * CONSUMER_REGS) <= SM90_REGISTERS
            && self.smem_bytes() <= SM90_MAX_DYNAMIC_SMEM
    }
}

/// Registers per thread of the producer warpgroup after `setmaxnreg.dec` (it only runs one
/// thread's TMA loop).
pub const PRODUCER_REGS: u32 = 56;
/// Registers per thread of a consumer warpgroup after `setmaxnreg.inc`: 128 accumulators of
/// `m64n256` plus descriptors, addresses and the epilogue.
pub const CONSUMER_REGS: u32 = 224;
/// Registers per SM on compute capability 9.0 (the budget `setmaxnreg` redistributes).
pub const SM90_REGISTERS: u32 = 65536;

/// Largest dynamic shared memory one block may use on compute capability 9.0.
pub const SM90_MAX_DYNAMIC_SMEM: u32 = 227 * 1024;

/// The Hopper tiles: first the ones indexed like [`WGMMA_TILE_ROWS`] (one A slice per stage),
/// then SpGEMM's 64-row grouped-A tile (64 × 256, one consumer warpgroup: a 64 × 512 tile's
/// 96 KB stages left room for two, and its consumers waited on data, perf notes v26; absent
/// boxes read from the zero box and C through TMA-store chunks, v27), SpMM's shallow tiles
/// ([`WGMMA_SHALLOW_TILES`]) and SpGEMM's 128-row column-split tile ([`WGMMA_SPGEMM_TILES`]).
/// (Tile 0, 64 × 512, has no room beside its 3 × 72 KB ring for C chunks: direct stores.)
pub const WGMMA_TILES: [WgmmaTile; 6] = [
    WgmmaTile { tm: 64, wg_n: 2, stages: 3, c_buffers: 0, skew: 0, a_groups: 1, ks: 64, a_regs: false, n_split: false, zero_fill: false },
    WgmmaTile { tm: 128, wg_n: 1, stages: 4, c_buffers: 2, skew: 1, a_groups: 1, ks: 64, a_regs: false, n_split: false, zero_fill: false },
    WgmmaTile { tm: 64, wg_n: 1, stages: 4, c_buffers: 2, skew: 0, a_groups: 2, ks: 64, a_regs: false, n_split: false, zero_fill: true },
    WgmmaTile { tm: 128, wg_n: 1, stages: 8, c_buffers: 2, skew: 1, a_groups: 1, ks: 32, a_regs: false, n_split: false, zero_fill: false },
    WgmmaTile { tm: 128, wg_n: 1, stages: 16, c_buffers: 2, skew: 1, a_groups: 1, ks: 16, a_regs: true, n_split: false, zero_fill: false },
    WgmmaTile { tm: 128, wg_n: 1, stages: 4, c_buffers: 2, skew: 1, a_groups: 1, ks: 64, a_regs: false, n_split: true, zero_fill: false },
];

/// Elements of one row of the block values as a tile with [`WgmmaTile::a_regs`] maps them when
/// its blocks are exactly `ks` wide: 128 bytes, so that a block's box is `bm · ks / 64` whole
/// rows, read in full lines.
pub const PACKED_ROW: u32 = 64;

/// Indices into [`WGMMA_TILES`] of SpMM's shallow tiles, deepest first: 128 rows, stages of
/// one 32-deep (16-deep) block column, A in `(ks, rb)` boxes, one per merged block row of `rb ≥
/// ks` rows (`128 / rb` rows merged): K-major, or MN-major for a stream of Aᵀ (`rb ≤` [`BOX`],
/// rows of `2 · rb` bytes swizzled over the row). The planner takes the deepest one whose `ks`
/// divides the blocks' K extent.
pub const WGMMA_SHALLOW_TILES: [usize; 2] = [3, 4];

/// Index into [`WGMMA_TILES`] of SpGEMM's tile with `WGMMA_TILE_ROWS[i]` rows: the grouped-A
/// tile of 64 rows (each of its two 128-column groups streams its own list), the column-split tile of 128
/// (one list for the tile, each consumer warpgroup skipping the stages its 128 columns lack).
pub const WGMMA_SPGEMM_TILES: [usize; 2] = [2, 5];

/// One C staging chunk: `(WG_M, 128 bytes)`, i.e. 64 columns of a 16-bit C or 32 of f32, in
/// the 128-byte swizzle that the C tensor map's TMA stores read.
pub const C_CHUNK_BYTES: u32 = WG_M * 128;
// A chunk of a block-sparse C lies inside one block: its columns (at most 64, 16-bit) divide the
// blocks' width, a multiple of WG_K on the Hopper tiles.
const _: () = assert!(C_CHUNK_BYTES / WG_M / 2 <= WG_K && WG_K.is_multiple_of(C_CHUNK_BYTES / WG_M / 2));
/// Output-tile heights of the Hopper kernels. Operands enter in boxes `ks` deep, so the blocks
/// they stream must be a multiple of `ks` wide along K (64; 32 or 16 on [`WGMMA_SHALLOW_TILES`]).
pub const WGMMA_TILE_ROWS: [u32; 2] = [64, 128];

const _: () = {
    let mut i = 0;
    while i < WGMMA_TILES.len() {
        assert!(WGMMA_TILES[i].check(), "invalid WGMMA tile configuration");
        i += 1;
    }
    let mut i = 0;
    while i < WGMMA_SHALLOW_TILES.len() {
        let t = WGMMA_TILES[WGMMA_SHALLOW_TILES[i]];
        assert!(t.ks < WG_K && t.tm == WGMMA_TILE_ROWS[WGMMA_TILE_ROWS.len() - 1]);
        assert!(i == 0 || t.ks < WGMMA_TILES[WGMMA_SHALLOW_TILES[i - 1]].ks);
        i += 1;
    }
    let mut i = 0;
    while i < WGMMA_TILE_ROWS.len() {
        // SDDMM's and SpGEMM's tiles stream stages of WG_K.
        assert!(WGMMA_TILES[i].ks == WG_K && WGMMA_TILES[WGMMA_SPGEMM_TILES[i]].ks == WG_K);
        assert!(WGMMA_TILES[i].tm == WGMMA_TILE_ROWS[i] && WGMMA_TILES[i].a_groups == 1);
        let g = WGMMA_TILES[WGMMA_SPGEMM_TILES[i]];
        assert!(g.tm == WGMMA_TILE_ROWS[i] && (g.a_groups > 1 || g.zero_fill) != g.n_split);
        assert!(g.a_groups as usize <= MAX_A_GROUPS);
        i += 1;
    }
};

/// Index into [`WGMMA_TILES`] of the tile with `tm` rows, if there is one.
pub const fn wgmma_tile_index(tm: u32) -> Option<usize> {
    let mut i = 0;
    while i < WGMMA_TILE_ROWS.len() {
        if WGMMA_TILE_ROWS[i] == tm {
            return Some(i);
        }
        i += 1;
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Work items and parameter blocks
// ---------------------------------------------------------------------------------------------

/// One unit of a host plan: the output tile `(tile_row, n_tile)` of matrix `batch`, accumulated
/// over the blocks `blk_begin..blk_end`.
///
/// - SpMM: positions in the stream of A's blocks (row by row for A, column by column for Aᵀ);
///   `n_tile` counts `tn`-wide tiles of C; `k_begin`, `k_end` are 0 (the blocks are the K range).
/// - SDDMM: C's blocks `blk_begin..blk_end` of block row `tile_row` (at most `tn / bn` of
///   them), computed over K from `WG_K · k_begin` to `min(WG_K · k_end, K)`: the whole K, or one
///   piece of it when the planner split the item (its partial tile then goes to a slot); `n_tile`
///   is unused.
/// - SpGEMM: block row `tile_row` of C over the stage records `k_begin..k_end` (each one A block
///   of that row and the B blocks it meets, [`SpgemmParams::records`]); a dense C's tile is N
///   tile `n_tile`, a block-sparse C's tile is its blocks `blk_begin..blk_end` side by side
///   (a paired plan's tile: the two C blocks `blk_begin` and `blk_end`, and `n_tile` only its
///   index in the row, [`SpgemmParams::paired`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkItem {
    /// Row of the output tile, in tiles of `tm` rows.
    pub tile_row: u32,
    /// Column of the output tile, in tiles of `tn` columns (SpMM).
    pub n_tile: u32,
    /// First block position.
    pub blk_begin: u32,
    /// One past the last block position.
    pub blk_end: u32,
    /// [`NO_SLOT`]: apply alpha/beta and write C. Otherwise the index of the `(tm, tn)` f32
    /// partial tile this item writes, summed later by the fix-up kernel.
    pub partial_slot: u32,
    /// Matrix of the batch.
    pub batch: u32,
    /// SDDMM: first K chunk of [`WG_K`] elements; SpGEMM: first stage record.
    pub k_begin: u32,
    /// SDDMM: one past the last K chunk; SpGEMM: one past the last stage record.
    pub k_end: u32,
}

/// Number of u32 words of a [`WorkItem`].
pub const WORK_ITEM_WORDS: usize = 8;

/// An output tile whose K range was split over several work items: `n_slots` consecutive
/// partial tiles starting at `first_slot`, summed in slot order (deterministic), then alpha/beta.
/// The tile is `(tile_row, n_tile)` of a dense C (SpMM) or C's blocks `blk_begin..blk_end`
/// (SDDMM).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SplitGroup {
    /// Row of the output tile, in tiles of `tm` rows.
    pub tile_row: u32,
    /// Column of the output tile, in tiles of `tn` columns.
    pub n_tile: u32,
    /// First partial slot.
    pub first_slot: u32,
    /// Number of partial slots.
    pub n_slots: u32,
    /// Matrix of the batch.
    pub batch: u32,
    /// SDDMM: the tile's first block of C.
    pub blk_begin: u32,
    /// SDDMM: one past its last block.
    pub blk_end: u32,
}

/// Number of u32 words of a [`SplitGroup`].
pub const SPLIT_GROUP_WORDS: usize = 7;

const _: () = {
    assert!(core::mem::size_of::<WorkItem>() == 4 * WORK_ITEM_WORDS);
    assert!(core::mem::size_of::<SplitGroup>() == 4 * SPLIT_GROUP_WORDS);
};

/// What every op's kernel reads to find its work.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkParams {
    /// `(n_items,)` work items.
    pub items: u64,
    /// Persistent kernels: `(grid + 1,)` offsets; thread block `b` runs items
    /// `schedule[b] .. schedule[b + 1]`. Unused (0) by the one-block-per-item kernels.
    pub schedule: u64,
    /// `(n_slots, tm, tn)` f32 split-K partial tiles.
    pub partials: u64,
}

/// A dense output: `C(i, j)` of matrix `b` at `c + b · batch_stride + i · row_stride + j ·
/// col_stride` (one of the two strides is 1), scaled as `alpha · acc + beta · C`.
///
/// With a row map (`row_map` not 0: an SpMM plan whose stream rows were reordered), the
/// kernels' tile-space row `i` is C's row `row_map[i >> row_unit_log2] << row_unit_log2 | (i &
/// (unit - 1))`: the map holds, per stream row of `1 << row_unit_log2` rows, the C row block it
/// belongs to (a permutation of the stream rows).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DenseOut {
    /// Element pointer.
    pub c: u64,
    /// Elements between matrices of the batch.
    pub batch_stride: u64,
    /// Leading dimension.
    pub ld: u32,
    /// Rows (valid rows are `< rows`).
    pub rows: u32,
    /// Columns (valid columns are `< cols`).
    pub cols: u32,
    /// [`flags::C_COL_MAJOR`] or 0.
    pub col_major: u32,
    /// Scale of the product.
    pub alpha: f32,
    /// Scale of the old C (not read when 0).
    pub beta: f32,
    /// `(stream rows,)` u32 C row block of each stream row, or 0 (tile rows are C's rows).
    pub row_map: u64,
    /// log2 of the rows of one stream row (with `row_map`).
    pub row_unit_log2: u32,
    /// Padding (keeps the layout the same on host and device).
    pub _pad: u32,
}

/// Launch parameters of the SpMM kernels (`C = alpha · op(A) · op(B) + beta · C`), passed by
/// value. Pointers are device addresses; strides are in elements.
///
/// The tile product is `C(tile) = Σ_k A(tile, k) · B(k, tile)` where the stream of A's blocks
/// for an item is `blk_begin..blk_end`: position `q` holds block `perm[q]` (or `q` itself when
/// `flags` lacks [`flags::A_PERMUTED`] and [`flags::A_MERGED`]) whose rows of op(B) start at
/// `kidx[q] · kb`. A merged plan ([`flags::A_MERGED`]) stacks `1 << merge_log2` stream rows in
/// one tile: rows `h · rb ..` of the tile (rb = bm for A, bk for Aᵀ) take block
/// `perm[(q << merge_log2) + h]`, zeros where that is [`NO_BLOCK`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SpmmParams {
    /// Where the work is.
    pub work: WorkParams,
    /// `(batch, nnzb, bm, bk)` block values, row-major within each block.
    pub a_values: u64,
    /// `(positions,)` K-block index of each stream position (A's column indices, or for Aᵀ the
    /// block rows in column order; for a merged plan, the block columns of each merged row's
    /// union). Unmerged, the positions are A's nnzb blocks.
    pub kidx: u64,
    /// `(positions, 1 << merge_log2)` block of each stream position (Aᵀ), or of each merged
    /// row there ([`flags::A_MERGED`]; `NO_BLOCK` where it has none); 0 when the stream is A's
    /// own order.
    pub perm: u64,
    /// Dense op(B).
    pub b: u64,
    /// Elements between the A values of consecutive matrices of the batch.
    pub a_batch_stride: u64,
    /// Elements between consecutive B matrices.
    pub b_batch_stride: u64,
    /// Leading dimension of B's storage.
    pub ldb: u32,
    /// Rows of op(B) that exist (K of the product).
    pub k: u32,
    /// log2 of the block height bm (rows of a stored block).
    pub bm_log2: u32,
    /// log2 of the block width bk (columns of a stored block).
    pub bk_log2: u32,
    /// [`flags`] bits.
    pub flags: u32,
    /// log2 of the stream rows merged into one tile (0 unless [`flags::A_MERGED`]).
    pub merge_log2: u32,
    /// Rows of A's values as the tensor map sees them (`nnzb · bm`): a box loaded from this
    /// row on lies wholly past the end and reads zeros (the Hopper kernel's absent blocks of a
    /// merged tile).
    pub a_rows: u32,
    /// Padding (keeps the layout the same on host and device).
    pub _pad: u32,
    /// C.
    pub out: DenseOut,
}

/// Launch parameters of the SDDMM kernels
/// (`C.values = alpha · (op(X) · op(Y)) at C's blocks + beta · C.values`), passed by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SddmmParams {
    /// Where the work is.
    pub work: WorkParams,
    /// Dense op(X), `(M, K)` after the op.
    pub x: u64,
    /// Dense op(Y), `(K, N)` after the op.
    pub y: u64,
    /// `(batch, nnzb, bm, bn)` output block values.
    pub c_values: u64,
    /// `(nnzb,)` block columns of C.
    pub col_idx: u64,
    /// Elements between consecutive X matrices.
    pub x_batch_stride: u64,
    /// Elements between consecutive Y matrices.
    pub y_batch_stride: u64,
    /// Elements between the C values of consecutive matrices.
    pub c_batch_stride: u64,
    /// Leading dimensions of X's and Y's storage.
    pub ldx: u32,
    /// Leading dimension of Y's storage.
    pub ldy: u32,
    /// K of the product (a multiple of 16).
    pub k: u32,
    /// log2 of the output block height bm.
    pub bm_log2: u32,
    /// log2 of the output block width bn.
    pub bn_log2: u32,
    /// [`flags`] bits (A = op(X), B = op(Y)).
    pub flags: u32,
    /// Scale of the product.
    pub alpha: f32,
    /// Scale of the old values (not read when 0).
    pub beta: f32,
}

/// A block-sparse output (SDDMM): blocks of `(1 << bm_log2, 1 << bn_log2)` values, row-major,
/// matrix `b`'s at `values + b · batch_stride`, scaled as `alpha · acc + beta · C`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct BlockOut {
    /// Element pointer of the values.
    pub values: u64,
    /// Elements between matrices of the batch.
    pub batch_stride: u64,
    /// log2 of the block height.
    pub bm_log2: u32,
    /// log2 of the block width.
    pub bn_log2: u32,
    /// Scale of the product.
    pub alpha: f32,
    /// Scale of the old values (not read when 0).
    pub beta: f32,
}

/// Launch parameters of the SpGEMM kernels (`C = alpha · A · B + beta · C`, A and B
/// block-sparse), passed by value.
///
/// The plan lists, per output tile, its *stage records*: record `r` is `rec_words` u32 at
/// `records + 4 · rec_words · r`, one group of `group_words` per column group of the tile (the
/// whole tile for the portable kernels and the column-split Hopper tile, each 128 columns for
/// the grouped Hopper tile). In
/// group `g`, word 0 is an A block `p` (of the tile's block row; [`NO_BLOCK`] where the group's
/// own list has ended) and word `1 + j` the B block `q` (in row `col(p)` of B) that meets the
/// group's column block `j`, or [`NO_BLOCK`]. Each group's entries run in increasing K. The
/// tile's column block `j` is block column `n_tile · tn / bn + j` of a dense C, or the C block
/// `blk_begin + j` of a block-sparse one; on a paired plan ([`SpgemmParams::paired`]) its two
/// column blocks are the C blocks `blk_begin` and `blk_end` names instead.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SpgemmParams {
    /// Where the work is.
    pub work: WorkParams,
    /// `(batch, nnzA, bm, bk)` A block values.
    pub a_values: u64,
    /// `(batch, nnzB, bk, bn)` B block values.
    pub b_values: u64,
    /// `(n_records, rec_words)` stage records.
    pub records: u64,
    /// Elements between the A values of consecutive matrices.
    pub a_batch_stride: u64,
    /// Elements between the B values of consecutive matrices.
    pub b_batch_stride: u64,
    /// Words per record: `groups · group_words`.
    pub rec_words: u32,
    /// log2 of bm.
    pub bm_log2: u32,
    /// log2 of bk.
    pub bk_log2: u32,
    /// log2 of bn.
    pub bn_log2: u32,
    /// [`FIXUP_TO_DENSE`] (C is `out`) or [`FIXUP_TO_BLOCKS`] (C is `blocks`).
    pub to: u32,
    /// Rows of B's values as one `(nnzB · bk, bn)` matrix: a TMA box from this row on lies
    /// past the end and reads zeros (the Hopper kernel's absent B boxes).
    pub b_rows: u32,
    /// Rows of A's values as one `(nnzA · bm, bk)` matrix (the Hopper kernel's absent A
    /// slices, as `b_rows`).
    pub a_rows: u32,
    /// Words of one column group of a record: its A block and one B block per column block of
    /// the group (`1 + tn / bn` = `rec_words` for the portable kernels, whose tile is one group;
    /// `1 + 128 / bn` for the grouped Hopper tile).
    pub group_words: u32,
    /// 1 on the column-split tile (`WgmmaTile::n_split`) with `bn = 128`, whose plans may pair
    /// each row's C blocks by the K they share: a tile's two C blocks (one per consumer
    /// warpgroup) are then the item's `blk_begin` and `blk_end` (a dense C's block columns, or
    /// a block-sparse C's block indices), `NO_BLOCK` where the tile has one; a dense C's
    /// `n_tile` is then only the tile's index in its row. The pieces of a split tile store
    /// partial tiles; only plans that keep every row's blocks in column order split tiles,
    /// and their [`SplitGroup`]s name the tile as the fix-up kernel reads it. 0 otherwise.
    pub paired: u32,
    /// 1 where the plan runs its portable tile with a ring per warp (read only on tiles of
    /// [`MmaTile::warp_rings_by_plan`]: tiles of [`MmaTile::warp_rings`] always run warp rings,
    /// the Hopper tiles none); 0 otherwise.
    pub warp_rings: u32,
    /// A dense C.
    pub out: DenseOut,
    /// A block-sparse C (`(bm, bn)` blocks).
    pub blocks: BlockOut,
}

/// Column groups of a grouped (`zero_fill`) Hopper tile at most (`tn / 128`).
pub const MAX_A_GROUPS: usize = 2;

/// One 64-deep stage of a Hopper SpGEMM record as the kernel's producer reads it: each column
/// group's A block ([`NO_BLOCK`] where the group's list has ended) and the tile's B boxes that
/// hold a block (bit `j`: box `j`, tile columns `64 j ..`). What the stage loads, and so the
/// bytes its full barrier expects, follows from it; the host planner costs its items with the
/// same functions. (No `Default`: block 0 in every group would read as a shared A block.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpgemmStage {
    /// Per column group, its A block.
    pub a_blk: [u32; MAX_A_GROUPS],
    /// The boxes that hold a B block.
    pub boxes: u32,
}

impl SpgemmStage {
    /// Columns of one column group of tile `t`'s records: 128 on the grouped tiles, the whole
    /// tile otherwise.
    pub const fn group_cols(t: WgmmaTile) -> u32 {
        t.tn() / t.a_groups
    }

    /// Record word of B box `j` (tile columns `64 j ..`) of a record of column groups of `gw`
    /// words, each over `group_cols` columns: in group `64 j / group_cols`, block
    /// `(64 j mod group_cols) / bn` of it.
    pub const fn box_word(j: u32, gw: u32, bn_log2: u32, group_cols: u32) -> u32 {
        let col = j * BOX;
        (col / group_cols) * gw + 1 + ((col % group_cols) >> bn_log2)
    }

    /// Whether every column group of a zero-fill stage meets the same A block (the planner
    /// lists such records together, perf notes v27): its A slice is then loaded once, into
    /// group 0's slice.
    pub const fn a_shared(&self, t: WgmmaTile) -> bool {
        let mut shared = t.zero_fill && t.a_groups > 1 && self.a_blk[0] != NO_BLOCK;
        let mut g = 1;
        while g < t.a_groups as usize && g < MAX_A_GROUPS {
            shared &= self.a_blk[g] == self.a_blk[0];
            g += 1;
        }
        shared
    }

    /// Whether a zero-fill stage loads column group `g`'s A slice: where the group has a
    /// present B box, and not where it shares group 0's ([`SpgemmStage::a_shared`]).
    pub const fn loads_a(&self, t: WgmmaTile, g: u32) -> bool {
        let per_group = Self::group_cols(t) / BOX;
        (self.boxes >> (g * per_group)) & ((1 << per_group) - 1) != 0 && !(g > 0 && self.a_shared(t))
    }

    /// On the column-split tile (`n_split`), the consumer warpgroups whose 128 columns (boxes
    /// `2 c, 2 c + 1`) hold a block of the stage: bit `c`. The others skip the stage, and their
    /// boxes are not loaded.
    pub const fn split_consumers(&self, t: WgmmaTile) -> u32 {
        let (mut mask, mut c) = (0, 0);
        while c < t.consumers() {
            if (self.boxes >> (2 * c)) & 3 != 0 {
                mask |= 1 << c;
            }
            c += 1;
        }
        mask
    }

    /// The bytes the stage loads on tile `t`: on a zero-fill tile its present boxes and the A
    /// slices [`SpgemmStage::loads_a`] names; on the column-split tile the A slice and both
    /// boxes of each consumer that multiplies it; otherwise the whole stage.
    pub const fn bytes(&self, t: WgmmaTile) -> u32 {
        if t.zero_fill {
            let mut bytes = self.boxes.count_ones() * t.box_bytes();
            let mut g = 0;
            while g < t.a_groups {
                if self.loads_a(t, g) {
                    bytes += t.a_group_bytes();
                }
                g += 1;
            }
            bytes
        } else if t.n_split {
            t.a_stage_bytes() + self.split_consumers(t).count_ones() * 2 * t.box_bytes()
        } else {
            t.stage_bytes()
        }
    }
}

/// Where a fix-up kernel writes: [`FixupParams::out`] (a dense C, SpMM).
pub const FIXUP_TO_DENSE: u32 = 0;
/// Where a fix-up kernel writes: [`FixupParams::blocks`] (C's blocks, SDDMM).
pub const FIXUP_TO_BLOCKS: u32 = 1;

/// Launch parameters of the split-K fix-up kernel (one thread block per [`SplitGroup`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct FixupParams {
    /// `(n_slots, tm, tn)` f32 partial tiles.
    pub partials: u64,
    /// `(n_groups,)` split groups.
    pub groups: u64,
    /// Tile shape of the partials: rows `tm`, columns `tn`.
    pub tm: u32,
    /// Columns of a partial tile.
    pub tn: u32,
    /// [`FIXUP_TO_DENSE`] or [`FIXUP_TO_BLOCKS`].
    pub to: u32,
    /// Padding (keeps the layout the same on host and device).
    pub _pad: u32,
    /// C, with [`FIXUP_TO_DENSE`].
    pub out: DenseOut,
    /// C's blocks, with [`FIXUP_TO_BLOCKS`].
    pub blocks: BlockOut,
}

/// Threads per block of the fix-up kernel.
pub const FIXUP_THREADS: u32 = 256;
/// Elements of a partial tile one fix-up thread block sums: four per thread (one 16-byte load
/// per slot).
pub const FIXUP_SPAN: u32 = 4 * FIXUP_THREADS;

/// Thread blocks of the fix-up kernel per split group of a `(tm, tn)` tile: the group's tile is
/// cut into spans of [`FIXUP_SPAN`] elements, so that a few groups with many slots still
/// spread over the GPU.
pub const fn fixup_parts(tm: u32, tn: u32) -> u32 {
    (tm * tn).div_ceil(FIXUP_SPAN)
}

/// Launch parameters of the densify kernel: a block-sparse matrix's values written out as a
/// dense row-major `(rows, cols)` matrix, zeros outside its blocks (per matrix `b` of a batch):
/// ```text
/// for r in 0..rows, c in 0..cols:
///     q = cells[(r >> bm_log2) * (cols >> bn_log2) + (c >> bn_log2)]
///     out[b][r * cols + c] = if q == NO_BLOCK { 0 } else { values[b][q][r % bm][c % bn] }
/// ```
/// BSR × BSR streams B that way where its blocks are small and most are present (the SpMM
/// kernels then read it as a dense operand). 16-bit elements, moved as bits.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DensifyParams {
    /// The blocks' values, `(nnzb, bm, bn)` row-major per block, matrix after matrix.
    pub values: u64,
    /// `((rows / bm) · (cols / bn),)`: per block cell, row-major, its block or [`NO_BLOCK`].
    pub cells: u64,
    /// The dense output, `(batch, rows, cols)` row-major.
    pub out: u64,
    /// Elements between matrices of `values`.
    pub values_batch_stride: u64,
    /// Rows of a matrix.
    pub rows: u32,
    /// Columns of a matrix (a multiple of the block width, at least 16).
    pub cols: u32,
    /// log2 of the block height.
    pub bm_log2: u32,
    /// log2 of the block width (at least 3: a thread moves 8 elements of one block row).
    pub bn_log2: u32,
    /// Matrices.
    pub batch: u32,
    /// Padding (keeps the layout the same on host and device).
    pub _pad: u32,
}

/// Threads per block of the densify kernel.
pub const DENSIFY_THREADS: u32 = 256;
/// Elements one densify thread moves per step (one 16-byte load and store).
pub const DENSIFY_CHUNK: u32 = 8;

/// Launch parameters of the sparsify kernel: a dense row-major `(rows, cols)` matrix's values
/// at a block pattern's blocks, scaled into those blocks from f32, or copied where they are
/// the blocks' own type already (per matrix `b` of a batch):
/// ```text
/// for r in 0..rows, c in 0..cols:
///     q = cells[(r >> bm_log2) * (cols >> bn_log2) + (c >> bn_log2)]
///     if q != NO_BLOCK:
///         values[b][q][r % bm][c % bn] = if dense_as_blocks { dense[b][r * cols + c] }
///             else { alpha * dense[b][r * cols + c] + beta * values[b][q][r % bm][c % bn] }
/// ```
/// (C is read only where `beta != 0`.) BSR × BSR into a block-sparse C with B streamed dense:
/// the SpMM kernels write `A · B` into a workspace, this kernel gathers C's blocks from it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SparsifyParams {
    /// The dense matrix, `(batch, rows, cols)` row-major, f32 or the blocks' type
    /// ([`SparsifyParams::dense_as_blocks`]).
    pub dense: u64,
    /// `((rows / bm) · (cols / bn),)`: per block cell, row-major, its block or [`NO_BLOCK`].
    pub cells: u64,
    /// The blocks' values, `(nnzb, bm, bn)` row-major per block, matrix after matrix.
    pub values: u64,
    /// Elements between matrices of `values`.
    pub values_batch_stride: u64,
    /// Rows of a matrix.
    pub rows: u32,
    /// Columns of a matrix (a multiple of the block width, at least 16).
    pub cols: u32,
    /// log2 of the block height.
    pub bm_log2: u32,
    /// log2 of the block width (at least 3: a thread moves 8 elements of one block row).
    pub bn_log2: u32,
    /// Matrices.
    pub batch: u32,
    /// Scale of the dense f32 values.
    pub alpha: f32,
    /// Scale of the blocks' old values (with f32 dense values).
    pub beta: f32,
    /// 0: `dense` holds f32, scaled into the blocks; 1: it holds the blocks' own element type,
    /// copied (alpha and beta unused).
    pub dense_as_blocks: u32,
}

/// Threads per block of the sparsify kernel.
pub const SPARSIFY_THREADS: u32 = 256;
/// Elements one sparsify thread moves per step (16 bytes of a 16-bit type, 32 of f32).
pub const SPARSIFY_CHUNK: u32 = 8;

/// A Hopper kernel's parameter block: three `CUtensorMap`s (128 bytes each) and the op's own
/// parameters. The build step declares this parameter 64-byte aligned, as TMA requires, and the
/// kernel hands the maps' parameter-space addresses to `cp.async.bulk.tensor`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct HopperParams<P> {
    /// Map of the A operand (SpMM: the block values; SDDMM: X).
    pub tmap_a: [u64; 16],
    /// Map of the B operand (op(B) or op(Y)).
    pub tmap_b: [u64; 16],
    /// Map of a row-major dense C, for tiles that store through TMA (else zeros).
    pub tmap_c: [u64; 16],
    /// The op's parameters.
    pub p: P,
}

// ---------------------------------------------------------------------------------------------
// The kernel list
// ---------------------------------------------------------------------------------------------

/// The ops the kernels implement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// Block-sparse × dense (`C = alpha · op(A) · op(B) + beta · C`).
    Spmm,
    /// Sampled dense × dense (`C.values = alpha · op(X) · op(Y) at C's blocks + beta · C`).
    Sddmm,
    /// Block-sparse × block-sparse (`C = alpha · A · B + beta · C`, C dense or block-sparse).
    Spgemm,
    /// Sum of split-K partial tiles into C.
    Fixup,
    /// A block-sparse matrix's values written out dense ([`DensifyParams`]).
    Densify,
    /// A dense matrix's values at a block pattern's blocks, scaled into them from f32 or copied
    /// ([`SparsifyParams`]).
    Sparsify,
}

impl OpKind {
    /// Whether the op's kernels are products on the tensor cores (with tiles), not helpers
    /// (the fix-up, densify and sparsify kernels).
    pub const fn tensor_core(self) -> bool {
        matches!(self, OpKind::Spmm | OpKind::Sddmm | OpKind::Spgemm)
    }
}

/// Which instruction family a kernel is built on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelFamily {
    /// `mma.sync` + `cp.async` (sm_80 and newer; in both modules).
    Portable,
    /// `wgmma` + TMA (sm_90a module only).
    Hopper,
}

/// Calls `$m!(entry_name, OpKind, KernelFamily, InputType, tile_index, OutputType)` once for
/// every kernel the device crate exports: per op and family, inputs f16 / bf16 × tiles × outputs
/// f16 / bf16 / f32 (the tile index points into [`MMA_TILES`] or [`WGMMA_TILES`]; the fix-up
/// kernels have no input type or tile, and list F16 and 0; the densify kernel moves 16-bit
/// values as bits, for f16 and bf16 alike, and lists F16, 0 and F16; the sparsify kernels read
/// f32 or their output type, and list F16, 0 and their output type). The device crate defines the entry
/// points from it, the build step patches the Hopper entries' headers, and the host crate loads
/// its typed kernel handles and checks the PTX and SASS, so they cannot drift.
#[macro_export]
macro_rules! for_each_kernel {
    ($m:ident) => {
        $m!(spmm_mma_f16_t16_f16, Spmm, Portable, F16, 0, F16);
        $m!(spmm_mma_f16_t16_bf16, Spmm, Portable, F16, 0, Bf16);
        $m!(spmm_mma_f16_t16_f32, Spmm, Portable, F16, 0, F32);
        $m!(spmm_mma_f16_t32_f16, Spmm, Portable, F16, 1, F16);
        $m!(spmm_mma_f16_t32_bf16, Spmm, Portable, F16, 1, Bf16);
        $m!(spmm_mma_f16_t32_f32, Spmm, Portable, F16, 1, F32);
        $m!(spmm_mma_f16_t64_f16, Spmm, Portable, F16, 2, F16);
        $m!(spmm_mma_f16_t64_bf16, Spmm, Portable, F16, 2, Bf16);
        $m!(spmm_mma_f16_t64_f32, Spmm, Portable, F16, 2, F32);
        $m!(spmm_mma_f16_t128_f16, Spmm, Portable, F16, 3, F16);
        $m!(spmm_mma_f16_t128_bf16, Spmm, Portable, F16, 3, Bf16);
        $m!(spmm_mma_f16_t128_f32, Spmm, Portable, F16, 3, F32);
        $m!(spmm_mma_bf16_t16_f16, Spmm, Portable, Bf16, 0, F16);
        $m!(spmm_mma_bf16_t16_bf16, Spmm, Portable, Bf16, 0, Bf16);
        $m!(spmm_mma_bf16_t16_f32, Spmm, Portable, Bf16, 0, F32);
        $m!(spmm_mma_bf16_t32_f16, Spmm, Portable, Bf16, 1, F16);
        $m!(spmm_mma_bf16_t32_bf16, Spmm, Portable, Bf16, 1, Bf16);
        $m!(spmm_mma_bf16_t32_f32, Spmm, Portable, Bf16, 1, F32);
        $m!(spmm_mma_bf16_t64_f16, Spmm, Portable, Bf16, 2, F16);
        $m!(spmm_mma_bf16_t64_bf16, Spmm, Portable, Bf16, 2, Bf16);
        $m!(spmm_mma_bf16_t64_f32, Spmm, Portable, Bf16, 2, F32);
        $m!(spmm_mma_bf16_t128_f16, Spmm, Portable, Bf16, 3, F16);
        $m!(spmm_mma_bf16_t128_bf16, Spmm, Portable, Bf16, 3, Bf16);
        $m!(spmm_mma_bf16_t128_f32, Spmm, Portable, Bf16, 3, F32);
        $m!(sddmm_mma_f16_t16_f16, Sddmm, Portable, F16, 0, F16);
        $m!(sddmm_mma_f16_t16_bf16, Sddmm, Portable, F16, 0, Bf16);
        $m!(sddmm_mma_f16_t16_f32, Sddmm, Portable, F16, 0, F32);
        $m!(sddmm_mma_f16_t32_f16, Sddmm, Portable, F16, 1, F16);
        $m!(sddmm_mma_f16_t32_bf16, Sddmm, Portable, F16, 1, Bf16);
        $m!(sddmm_mma_f16_t32_f32, Sddmm, Portable, F16, 1, F32);
        $m!(sddmm_mma_f16_t64_f16, Sddmm, Portable, F16, 2, F16);
        $m!(sddmm_mma_f16_t64_bf16, Sddmm, Portable, F16, 2, Bf16);
        $m!(sddmm_mma_f16_t64_f32, Sddmm, Portable, F16, 2, F32);
        $m!(sddmm_mma_f16_t128_f16, Sddmm, Portable, F16, 3, F16);
        $m!(sddmm_mma_f16_t128_bf16, Sddmm, Portable, F16, 3, Bf16);
        $m!(sddmm_mma_f16_t128_f32, Sddmm, Portable, F16, 3, F32);
        $m!(sddmm_mma_bf16_t16_f16, Sddmm, Portable, Bf16, 0, F16);
        $m!(sddmm_mma_bf16_t16_bf16, Sddmm, Portable, Bf16, 0, Bf16);
        $m!(sddmm_mma_bf16_t16_f32, Sddmm, Portable, Bf16, 0, F32);
        $m!(sddmm_mma_bf16_t32_f16, Sddmm, Portable, Bf16, 1, F16);
        $m!(sddmm_mma_bf16_t32_bf16, Sddmm, Portable, Bf16, 1, Bf16);
        $m!(sddmm_mma_bf16_t32_f32, Sddmm, Portable, Bf16, 1, F32);
        $m!(sddmm_mma_bf16_t64_f16, Sddmm, Portable, Bf16, 2, F16);
        $m!(sddmm_mma_bf16_t64_bf16, Sddmm, Portable, Bf16, 2, Bf16);
        $m!(sddmm_mma_bf16_t64_f32, Sddmm, Portable, Bf16, 2, F32);
        $m!(sddmm_mma_bf16_t128_f16, Sddmm, Portable, Bf16, 3, F16);
        $m!(sddmm_mma_bf16_t128_bf16, Sddmm, Portable, Bf16, 3, Bf16);
        $m!(sddmm_mma_bf16_t128_f32, Sddmm, Portable, Bf16, 3, F32);
        $m!(spmm_wgmma_f16_t64_f16, Spmm, Hopper, F16, 0, F16);
        $m!(spmm_wgmma_f16_t64_bf16, Spmm, Hopper, F16, 0, Bf16);
        $m!(spmm_wgmma_f16_t64_f32, Spmm, Hopper, F16, 0, F32);
        $m!(spmm_wgmma_f16_t128_f16, Spmm, Hopper, F16, 1, F16);
        $m!(spmm_wgmma_f16_t128_bf16, Spmm, Hopper, F16, 1, Bf16);
        $m!(spmm_wgmma_f16_t128_f32, Spmm, Hopper, F16, 1, F32);
        $m!(spmm_wgmma_bf16_t64_f16, Spmm, Hopper, Bf16, 0, F16);
        $m!(spmm_wgmma_bf16_t64_bf16, Spmm, Hopper, Bf16, 0, Bf16);
        $m!(spmm_wgmma_bf16_t64_f32, Spmm, Hopper, Bf16, 0, F32);
        $m!(spmm_wgmma_bf16_t128_f16, Spmm, Hopper, Bf16, 1, F16);
        $m!(spmm_wgmma_bf16_t128_bf16, Spmm, Hopper, Bf16, 1, Bf16);
        $m!(spmm_wgmma_bf16_t128_f32, Spmm, Hopper, Bf16, 1, F32);
        $m!(spmm_wgmma_f16_t128k32_f16, Spmm, Hopper, F16, 3, F16);
        $m!(spmm_wgmma_f16_t128k32_bf16, Spmm, Hopper, F16, 3, Bf16);
        $m!(spmm_wgmma_f16_t128k32_f32, Spmm, Hopper, F16, 3, F32);
        $m!(spmm_wgmma_bf16_t128k32_f16, Spmm, Hopper, Bf16, 3, F16);
        $m!(spmm_wgmma_bf16_t128k32_bf16, Spmm, Hopper, Bf16, 3, Bf16);
        $m!(spmm_wgmma_bf16_t128k32_f32, Spmm, Hopper, Bf16, 3, F32);
        $m!(spmm_wgmma_f16_t128k16_f16, Spmm, Hopper, F16, 4, F16);
        $m!(spmm_wgmma_f16_t128k16_bf16, Spmm, Hopper, F16, 4, Bf16);
        $m!(spmm_wgmma_f16_t128k16_f32, Spmm, Hopper, F16, 4, F32);
        $m!(spmm_wgmma_bf16_t128k16_f16, Spmm, Hopper, Bf16, 4, F16);
        $m!(spmm_wgmma_bf16_t128k16_bf16, Spmm, Hopper, Bf16, 4, Bf16);
        $m!(spmm_wgmma_bf16_t128k16_f32, Spmm, Hopper, Bf16, 4, F32);
        $m!(sddmm_wgmma_f16_t64_f16, Sddmm, Hopper, F16, 0, F16);
        $m!(sddmm_wgmma_f16_t64_bf16, Sddmm, Hopper, F16, 0, Bf16);
        $m!(sddmm_wgmma_f16_t64_f32, Sddmm, Hopper, F16, 0, F32);
        $m!(sddmm_wgmma_f16_t128_f16, Sddmm, Hopper, F16, 1, F16);
        $m!(sddmm_wgmma_f16_t128_bf16, Sddmm, Hopper, F16, 1, Bf16);
        $m!(sddmm_wgmma_f16_t128_f32, Sddmm, Hopper, F16, 1, F32);
        $m!(sddmm_wgmma_bf16_t64_f16, Sddmm, Hopper, Bf16, 0, F16);
        $m!(sddmm_wgmma_bf16_t64_bf16, Sddmm, Hopper, Bf16, 0, Bf16);
        $m!(sddmm_wgmma_bf16_t64_f32, Sddmm, Hopper, Bf16, 0, F32);
        $m!(sddmm_wgmma_bf16_t128_f16, Sddmm, Hopper, Bf16, 1, F16);
        $m!(sddmm_wgmma_bf16_t128_bf16, Sddmm, Hopper, Bf16, 1, Bf16);
        $m!(sddmm_wgmma_bf16_t128_f32, Sddmm, Hopper, Bf16, 1, F32);
        $m!(spgemm_mma_f16_t16_f16, Spgemm, Portable, F16, 0, F16);
        $m!(spgemm_mma_f16_t16_bf16, Spgemm, Portable, F16, 0, Bf16);
        $m!(spgemm_mma_f16_t16_f32, Spgemm, Portable, F16, 0, F32);
        $m!(spgemm_mma_f16_t32_f16, Spgemm, Portable, F16, 1, F16);
        $m!(spgemm_mma_f16_t32_bf16, Spgemm, Portable, F16, 1, Bf16);
        $m!(spgemm_mma_f16_t32_f32, Spgemm, Portable, F16, 1, F32);
        $m!(spgemm_mma_f16_t64_f16, Spgemm, Portable, F16, 2, F16);
        $m!(spgemm_mma_f16_t64_bf16, Spgemm, Portable, F16, 2, Bf16);
        $m!(spgemm_mma_f16_t64_f32, Spgemm, Portable, F16, 2, F32);
        $m!(spgemm_mma_f16_t128_f16, Spgemm, Portable, F16, 3, F16);
        $m!(spgemm_mma_f16_t128_bf16, Spgemm, Portable, F16, 3, Bf16);
        $m!(spgemm_mma_f16_t128_f32, Spgemm, Portable, F16, 3, F32);
        $m!(spgemm_mma_bf16_t16_f16, Spgemm, Portable, Bf16, 0, F16);
        $m!(spgemm_mma_bf16_t16_bf16, Spgemm, Portable, Bf16, 0, Bf16);
        $m!(spgemm_mma_bf16_t16_f32, Spgemm, Portable, Bf16, 0, F32);
        $m!(spgemm_mma_bf16_t32_f16, Spgemm, Portable, Bf16, 1, F16);
        $m!(spgemm_mma_bf16_t32_bf16, Spgemm, Portable, Bf16, 1, Bf16);
        $m!(spgemm_mma_bf16_t32_f32, Spgemm, Portable, Bf16, 1, F32);
        $m!(spgemm_mma_bf16_t64_f16, Spgemm, Portable, Bf16, 2, F16);
        $m!(spgemm_mma_bf16_t64_bf16, Spgemm, Portable, Bf16, 2, Bf16);
        $m!(spgemm_mma_bf16_t64_f32, Spgemm, Portable, Bf16, 2, F32);
        $m!(spgemm_mma_bf16_t128_f16, Spgemm, Portable, Bf16, 3, F16);
        $m!(spgemm_mma_bf16_t128_bf16, Spgemm, Portable, Bf16, 3, Bf16);
        $m!(spgemm_mma_bf16_t128_f32, Spgemm, Portable, Bf16, 3, F32);
        $m!(spgemm_wgmma_f16_t64_f16, Spgemm, Hopper, F16, 2, F16);
        $m!(spgemm_wgmma_f16_t64_bf16, Spgemm, Hopper, F16, 2, Bf16);
        $m!(spgemm_wgmma_f16_t64_f32, Spgemm, Hopper, F16, 2, F32);
        $m!(spgemm_wgmma_f16_t128_f16, Spgemm, Hopper, F16, 5, F16);
        $m!(spgemm_wgmma_f16_t128_bf16, Spgemm, Hopper, F16, 5, Bf16);
        $m!(spgemm_wgmma_f16_t128_f32, Spgemm, Hopper, F16, 5, F32);
        $m!(spgemm_wgmma_bf16_t64_f16, Spgemm, Hopper, Bf16, 2, F16);
        $m!(spgemm_wgmma_bf16_t64_bf16, Spgemm, Hopper, Bf16, 2, Bf16);
        $m!(spgemm_wgmma_bf16_t64_f32, Spgemm, Hopper, Bf16, 2, F32);
        $m!(spgemm_wgmma_bf16_t128_f16, Spgemm, Hopper, Bf16, 5, F16);
        $m!(spgemm_wgmma_bf16_t128_bf16, Spgemm, Hopper, Bf16, 5, Bf16);
        $m!(spgemm_wgmma_bf16_t128_f32, Spgemm, Hopper, Bf16, 5, F32);
        $m!(fixup_f16, Fixup, Portable, F16, 0, F16);
        $m!(fixup_bf16, Fixup, Portable, F16, 0, Bf16);
        $m!(fixup_f32, Fixup, Portable, F16, 0, F32);
        $m!(densify_b16, Densify, Portable, F16, 0, F16);
        $m!(sparsify_f16, Sparsify, Portable, F16, 0, F16);
        $m!(sparsify_bf16, Sparsify, Portable, F16, 0, Bf16);
        $m!(sparsify_f32, Sparsify, Portable, F16, 0, F32);
    };
}
