//! The one source of truth shared by the device crate (`kernels-gpu`, compiled to PTX) and the
//! host library (`blocksparse`): tile shapes, pipeline depths, the list of generated kernels and
//! the `#[repr(C)]` parameter blocks that cross the launch boundary.
//!
//! Nothing here depends on `std`, so the same file compiles for `nvptx64-nvidia-cuda` and for
//! the host.
#![no_std]

/// Block heights and widths the kernels support (square or not: `bm` and `bk` each one of these).
pub const BLOCK_SIZES: [u32; 4] = [16, 32, 64, 128];

/// Largest dynamic shared memory one block may use on compute capability 8.0, the oldest target
/// of the portable module. Every tile configuration is checked against it at compile time; the
/// host checks the device's own limit again before the first launch.
pub const SM80_MAX_DYNAMIC_SMEM: u32 = 163 * 1024;

/// Elements moved by one 16-byte `cp.async` chunk (f16 / bf16).
pub const CHUNK_ELEMS: u32 = 8;

/// Leading dimensions of dense device matrices are multiples of this many elements, so every
/// row starts on a 16-byte boundary and 16-byte copies never straddle rows.
pub const LD_ALIGN: u32 = 8;

/// A work item longer than this many A blocks is split by the planner: the kernel keeps the
/// item's column indices in shared memory, `(MAX_ITEM_BLOCKS,)` of them.
pub const MAX_ITEM_BLOCKS: u32 = 512;

/// Marks a work item that writes C directly (no split-K partial slot).
pub const NO_SLOT: u32 = u32::MAX;

/// Tile configuration of the portable tensor-core kernel (`mma.sync` m16n8k16).
///
/// A thread block computes a `(bm, bn)` tile of C for one block row of A. Its warps form a
/// `(warps_m, warps_n)` grid, each warp owning a `(bm / warps_m, 64)` sub-tile. The K loop
/// streams `(bm, ks)` slices of A and `(ks, bn)` slices of B through a `stages`-deep ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmaTile {
    /// Rows of C per thread block: the A block height.
    pub bm: u32,
    /// Columns of C per thread block.
    pub bn: u32,
    /// K depth of one pipeline stage, in elements.
    pub ks: u32,
    /// Pipeline stages in shared memory.
    pub stages: u32,
    pub warps_m: u32,
    pub warps_n: u32,
}

/// Columns of C owned by one warp.
pub const WARP_N: u32 = 64;

impl MmaTile {
    pub const fn threads(&self) -> u32 {
        32 * self.warps_m * self.warps_n
    }
    /// Rows of C owned by one warp.
    pub const fn warp_m(&self) -> u32 {
        self.bm / self.warps_m
    }
    /// Bytes of one A stage `(bm, ks)` in shared memory.
    pub const fn a_stage_bytes(&self) -> u32 {
        self.bm * self.ks * 2
    }
    /// Bytes of one B stage `(ks, bn)` in shared memory.
    pub const fn b_stage_bytes(&self) -> u32 {
        self.ks * self.bn * 2
    }
    /// Byte offset of the column-index cache, after the A and B rings.
    pub const fn col_cache_offset(&self) -> u32 {
        self.stages * (self.a_stage_bytes() + self.b_stage_bytes())
    }
    /// Dynamic shared memory of one thread block.
    pub const fn smem_bytes(&self) -> u32 {
        self.col_cache_offset() + MAX_ITEM_BLOCKS * 4
    }
    /// 16-byte chunks of the A stage each thread copies (rounded up: with few rows, the
    /// threads past the last chunk copy nothing).
    pub const fn a_chunks_per_thread(&self) -> u32 {
        (self.bm * self.ks / CHUNK_ELEMS).div_ceil(self.threads())
    }
    /// 16-byte chunks of the B stage each thread copies.
    pub const fn b_chunks_per_thread(&self) -> u32 {
        self.ks * self.bn / CHUNK_ELEMS / self.threads()
    }
    /// Compile-time validity: evaluated in a `const` item for every tile in [`MMA_TILES`].
    pub const fn check(&self) -> bool {
        let wm = self.warp_m();
        self.bn == self.warps_n * WARP_N
            && (wm == 16 || wm == 32 || wm == 64)
            && wm * self.warps_m == self.bm
            && self.ks % 16 == 0
            && (self.ks / CHUNK_ELEMS == 4 || self.ks / CHUNK_ELEMS == 8)
            && self.stages >= 3
            && self.stages <= 8
            && self.threads() % (self.ks / CHUNK_ELEMS) == 0
            && self.threads() % (self.bn / CHUNK_ELEMS) == 0
            && self.b_chunks_per_thread() * CHUNK_ELEMS * self.threads() == self.ks * self.bn
            && self.threads() <= 1024
            && self.smem_bytes() <= SM80_MAX_DYNAMIC_SMEM
    }
}

/// Tile configurations of the portable kernel. The first four are the defaults for the block
/// heights in [`BLOCK_SIZES`] (same order); the rest are tuning candidates that the benchmark
/// can time against them (`cargo xtask bench --tiles`), generated for f16 → f16 only.
pub const MMA_TILES: [MmaTile; 18] = [
    MmaTile { bm: 16, bn: 256, ks: 32, stages: 3, warps_m: 1, warps_n: 4 },
    MmaTile { bm: 32, bn: 256, ks: 32, stages: 3, warps_m: 1, warps_n: 4 },
    MmaTile { bm: 64, bn: 256, ks: 32, stages: 4, warps_m: 2, warps_n: 4 },
    MmaTile { bm: 128, bn: 128, ks: 32, stages: 4, warps_m: 4, warps_n: 2 },
    // 4..: tuning candidates
    MmaTile { bm: 64, bn: 256, ks: 32, stages: 4, warps_m: 1, warps_n: 4 },
    MmaTile { bm: 64, bn: 256, ks: 64, stages: 3, warps_m: 1, warps_n: 4 },
    MmaTile { bm: 64, bn: 256, ks: 64, stages: 3, warps_m: 2, warps_n: 4 },
    MmaTile { bm: 64, bn: 256, ks: 32, stages: 6, warps_m: 1, warps_n: 4 },
    MmaTile { bm: 128, bn: 256, ks: 32, stages: 4, warps_m: 2, warps_n: 4 },
    MmaTile { bm: 128, bn: 128, ks: 32, stages: 4, warps_m: 2, warps_n: 2 },
    MmaTile { bm: 128, bn: 128, ks: 64, stages: 3, warps_m: 2, warps_n: 2 },
    MmaTile { bm: 32, bn: 256, ks: 64, stages: 4, warps_m: 1, warps_n: 4 },
    MmaTile { bm: 32, bn: 512, ks: 32, stages: 4, warps_m: 1, warps_n: 8 },
    MmaTile { bm: 16, bn: 512, ks: 32, stages: 4, warps_m: 1, warps_n: 8 },
    MmaTile { bm: 64, bn: 512, ks: 32, stages: 4, warps_m: 2, warps_n: 8 },
    MmaTile { bm: 128, bn: 256, ks: 32, stages: 4, warps_m: 4, warps_n: 4 },
    MmaTile { bm: 32, bn: 256, ks: 32, stages: 4, warps_m: 1, warps_n: 4 },
    MmaTile { bm: 16, bn: 256, ks: 32, stages: 4, warps_m: 1, warps_n: 4 },
];

const _: () = {
    let mut i = 0;
    while i < MMA_TILES.len() {
        assert!(MMA_TILES[i].check(), "invalid MMA tile configuration");
        if i < BLOCK_SIZES.len() {
            assert!(MMA_TILES[i].bm == BLOCK_SIZES[i]);
        }
        i += 1;
    }
};

/// Index into [`MMA_TILES`] of the default tile for block height `bm`, if supported.
pub const fn default_tile_index(bm: u32) -> Option<usize> {
    let mut i = 0;
    while i < BLOCK_SIZES.len() {
        if BLOCK_SIZES[i] == bm {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// One unit of the host plan: the C tile `(block_row, n_tile)` accumulated over the A blocks
/// `blk_begin..blk_end` (indices into `col_idx` / the block values).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkItem {
    pub block_row: u32,
    pub n_tile: u32,
    pub blk_begin: u32,
    pub blk_end: u32,
    /// [`NO_SLOT`]: apply alpha/beta and write C. Otherwise the index of the `(bm, bn)` f32
    /// partial tile this item writes, summed later by the fix-up kernel.
    pub partial_slot: u32,
}

/// A C tile whose K range was split over several work items: `n_slots` consecutive partial
/// tiles starting at `first_slot`, summed in slot order (deterministic), then alpha/beta.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SplitGroup {
    pub block_row: u32,
    pub n_tile: u32,
    pub first_slot: u32,
    pub n_slots: u32,
}

/// Launch parameters of the main kernel, passed by value. Pointers are device addresses.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SpmmParams {
    /// `(nnzb, bm, bk)` block values, row-major within each block.
    pub a_values: u64,
    /// `(nnzb,)` block column indices.
    pub col_idx: u64,
    /// `(n_items,)` work items.
    pub items: u64,
    /// `(K, ldb)` dense B, row-major.
    pub b: u64,
    /// `(M, ldc)` dense C, row-major.
    pub c: u64,
    /// `(n_slots, bm, bn)` f32 split-K partial tiles.
    pub partials: u64,
    /// Persistent kernels: `(grid + 1,)` offsets; thread block `b` runs items
    /// `schedule[b] .. schedule[b + 1]`. Unused (0) by the one-block-per-item kernel.
    pub schedule: u64,
    pub ldb: u32,
    pub ldc: u32,
    /// Columns of B and C.
    pub n: u32,
    /// log2 of the A block width bk.
    pub bk_log2: u32,
    pub alpha: f32,
    pub beta: f32,
}

/// Launch parameters of the split-K fix-up kernel (one thread block per [`SplitGroup`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct FixupParams {
    pub partials: u64,
    pub groups: u64,
    pub c: u64,
    pub ldc: u32,
    pub n: u32,
    /// Tile shape of the partials: rows `bm`, columns `bn`.
    pub bm: u32,
    pub bn: u32,
    pub alpha: f32,
    pub beta: f32,
}

/// Threads per block of the fix-up kernel.
pub const FIXUP_THREADS: u32 = 256;

/// Calls `$m!(entry_name, InputType, tile_index, OutputType)` once for every generated portable
/// kernel: inputs f16 / bf16 × default tiles (one per block height) × outputs f16 / bf16 / f32,
/// then the tuning candidates (f16 → f16). The device crate defines the entry points from it and
/// the host crate its typed kernel handles, so the two cannot drift.
#[macro_export]
macro_rules! for_each_mma_kernel {
    ($m:ident) => {
        $m!(spmm_mma_f16_b16_f16, F16, 0, F16);
        $m!(spmm_mma_f16_b16_bf16, F16, 0, Bf16);
        $m!(spmm_mma_f16_b16_f32, F16, 0, F32);
        $m!(spmm_mma_f16_b32_f16, F16, 1, F16);
        $m!(spmm_mma_f16_b32_bf16, F16, 1, Bf16);
        $m!(spmm_mma_f16_b32_f32, F16, 1, F32);
        $m!(spmm_mma_f16_b64_f16, F16, 2, F16);
        $m!(spmm_mma_f16_b64_bf16, F16, 2, Bf16);
        $m!(spmm_mma_f16_b64_f32, F16, 2, F32);
        $m!(spmm_mma_f16_b128_f16, F16, 3, F16);
        $m!(spmm_mma_f16_b128_bf16, F16, 3, Bf16);
        $m!(spmm_mma_f16_b128_f32, F16, 3, F32);
        $m!(spmm_mma_bf16_b16_f16, Bf16, 0, F16);
        $m!(spmm_mma_bf16_b16_bf16, Bf16, 0, Bf16);
        $m!(spmm_mma_bf16_b16_f32, Bf16, 0, F32);
        $m!(spmm_mma_bf16_b32_f16, Bf16, 1, F16);
        $m!(spmm_mma_bf16_b32_bf16, Bf16, 1, Bf16);
        $m!(spmm_mma_bf16_b32_f32, Bf16, 1, F32);
        $m!(spmm_mma_bf16_b64_f16, Bf16, 2, F16);
        $m!(spmm_mma_bf16_b64_bf16, Bf16, 2, Bf16);
        $m!(spmm_mma_bf16_b64_f32, Bf16, 2, F32);
        $m!(spmm_mma_bf16_b128_f16, Bf16, 3, F16);
        $m!(spmm_mma_bf16_b128_bf16, Bf16, 3, Bf16);
        $m!(spmm_mma_bf16_b128_f32, Bf16, 3, F32);
        $m!(spmm_mma_f16_t4_f16, F16, 4, F16);
        $m!(spmm_mma_f16_t5_f16, F16, 5, F16);
        $m!(spmm_mma_f16_t6_f16, F16, 6, F16);
        $m!(spmm_mma_f16_t7_f16, F16, 7, F16);
        $m!(spmm_mma_f16_t8_f16, F16, 8, F16);
        $m!(spmm_mma_f16_t9_f16, F16, 9, F16);
        $m!(spmm_mma_f16_t10_f16, F16, 10, F16);
        $m!(spmm_mma_f16_t11_f16, F16, 11, F16);
        $m!(spmm_mma_f16_t12_f16, F16, 12, F16);
        $m!(spmm_mma_f16_t13_f16, F16, 13, F16);
        $m!(spmm_mma_f16_t14_f16, F16, 14, F16);
        $m!(spmm_mma_f16_t15_f16, F16, 15, F16);
        $m!(spmm_mma_f16_t16_f16, F16, 16, F16);
        $m!(spmm_mma_f16_t17_f16, F16, 17, F16);
    };
}

/// K depth of one stage of the Hopper kernel: one 128-byte swizzle span of f16/bf16.
pub const WG_K: u32 = 64;
/// Columns of C one consumer warpgroup owns (`wgmma m64n256k16`).
pub const WG_N: u32 = 256;
/// Rows of C one consumer warpgroup owns.
pub const WG_M: u32 = 64;
/// Columns of one TMA box of B: one 128-byte swizzle span.
pub const TMA_B_BOX_N: u32 = 64;

/// Tile configuration of the Hopper kernel (sm_90a): one producer warpgroup issues TMA loads
/// into a `stages`-deep ring guarded by full/empty mbarriers; `bm / 64 × wg_n` consumer
/// warpgroups each run `wgmma m64n256k16` on a `(64, 256)` sub-tile of the `(bm, 256 · wg_n)`
/// C tile. The grid is persistent: thread block `b` runs the items `schedule[b] .. schedule[b + 1]`
/// that the host planner dealt it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WgmmaTile {
    pub bm: u32,
    /// Consumer warpgroups along N.
    pub wg_n: u32,
    pub stages: u32,
    /// Epilogue: 0 = each thread stores its accumulators to C directly; 2 = C goes through two
    /// `(WG_M, 128 bytes)` shared-memory chunks per consumer warpgroup and is written by TMA
    /// stores that overlap the next item's main loop (needs the shared memory beside the ring).
    pub c_buffers: u32,
    /// Stages by which consumer warpgroup 1 trails consumer warpgroup 0 (0: in step). With a
    /// lag, one warpgroup's epilogue runs while the other still has loaded stages to multiply,
    /// so the tensor cores do not idle during stores. Needs two consumers and `skew < stages`.
    pub skew: u32,
}

impl WgmmaTile {
    pub const fn bn(&self) -> u32 {
        WG_N * self.wg_n
    }
    pub const fn consumers(&self) -> u32 {
        (self.bm / WG_M) * self.wg_n
    }
    pub const fn threads(&self) -> u32 {
        128 * (1 + self.consumers())
    }
    /// `(bm, WG_K)` A slice, 128-byte swizzled rows.
    pub const fn a_stage_bytes(&self) -> u32 {
        self.bm * WG_K * 2
    }
    /// `(bn / 64)` TMA boxes of `(WG_K, 64)` B, each 128-byte swizzled.
    pub const fn b_stage_bytes(&self) -> u32 {
        WG_K * self.bn() * 2
    }
    pub const fn stage_bytes(&self) -> u32 {
        self.a_stage_bytes() + self.b_stage_bytes()
    }
    /// Offset of the C staging chunks after the ring.
    pub const fn c_stage_offset(&self) -> u32 {
        self.stages * self.stage_bytes()
    }
    /// `(consumers, c_buffers)` chunks of [`C_CHUNK_BYTES`].
    pub const fn c_stage_bytes(&self) -> u32 {
        self.consumers() * self.c_buffers * C_CHUNK_BYTES
    }
    /// Offset of the mbarriers (full[stages], empty[stages]) after the C staging chunks.
    pub const fn barrier_offset(&self) -> u32 {
        self.c_stage_offset() + self.c_stage_bytes()
    }
    /// Dynamic shared memory: 1024 bytes of alignment slack, the ring, C staging, the barriers.
    pub const fn smem_bytes(&self) -> u32 {
        1024 + self.barrier_offset() + 16 * self.stages
    }
    /// The equivalent tile description the planner works with.
    pub const fn as_mma_tile(&self) -> MmaTile {
        MmaTile { bm: self.bm, bn: self.bn(), ks: WG_K, stages: self.stages, warps_m: self.bm / 16, warps_n: self.wg_n }
    }
    pub const fn check(&self) -> bool {
        (self.bm == 64 || self.bm == 128)
            && self.wg_n >= 1
            && self.consumers() <= 2
            && self.stages >= 2
            && (self.c_buffers == 0 || self.c_buffers == 2)
            && (self.skew == 0 || (self.consumers() == 2 && self.skew < self.stages))
            && 128 * (PRODUCER_REGS + self.consumers() * CONSUMER_REGS) <= SM90_REGISTERS
            && self.smem_bytes() <= SM90_MAX_DYNAMIC_SMEM
    }
}

/// Registers per thread of the producer warpgroup after `setmaxnreg.dec` (it only runs one
/// thread's TMA loop).
pub const PRODUCER_REGS: u32 = 40;
/// Registers per thread of a consumer warpgroup after `setmaxnreg.inc`: 128 accumulators of
/// `m64n256` plus descriptors, addresses and the epilogue.
pub const CONSUMER_REGS: u32 = 232;
/// Registers per SM on compute capability 9.0 (the budget `setmaxnreg` redistributes).
pub const SM90_REGISTERS: u32 = 65536;

/// Largest dynamic shared memory one block may use on compute capability 9.0.
pub const SM90_MAX_DYNAMIC_SMEM: u32 = 227 * 1024;

/// The Hopper kernel's tiles, indexed like [`WGMMA_BLOCK_SIZES`].
/// (bm = 64 has no room beside its 3 × 72 KB ring for C chunks: direct stores.)
pub const WGMMA_TILES: [WgmmaTile; 2] = [
    WgmmaTile { bm: 64, wg_n: 2, stages: 3, c_buffers: 0, skew: 0 },
    WgmmaTile { bm: 128, wg_n: 1, stages: 4, c_buffers: 2, skew: 1 },
];

/// One C staging chunk: `(WG_M, 128 bytes)`, i.e. 64 columns of a 16-bit C or 32 of f32, in
/// the 128-byte swizzle that the C tensor map's TMA stores read.
pub const C_CHUNK_BYTES: u32 = WG_M * 128;
/// Block heights the Hopper kernel takes (block widths: 64 and 128, multiples of [`WG_K`]).
pub const WGMMA_BLOCK_SIZES: [u32; 2] = [64, 128];

const _: () = {
    let mut i = 0;
    while i < WGMMA_TILES.len() {
        assert!(WGMMA_TILES[i].check(), "invalid WGMMA tile configuration");
        assert!(WGMMA_TILES[i].bm == WGMMA_BLOCK_SIZES[i]);
        i += 1;
    }
};

/// Launch parameters of the Hopper kernel, passed by value. The two tensor maps come first:
/// the build step declares this parameter 64-byte aligned, as TMA requires, and the kernel
/// hands their parameter-space addresses to `cp.async.bulk.tensor`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WgmmaParams {
    /// `CUtensorMap` of the A values seen as a `(nnzb · bm, bk)` row-major matrix; box `(64, bm)`.
    pub tmap_a: [u64; 16],
    /// `CUtensorMap` of B `(K, N)`, row pitch `ldb`; box `(64, 64)`; out-of-range columns read 0.
    pub tmap_b: [u64; 16],
    /// `CUtensorMap` of C `(M, N)`, row pitch `ldc`; box `(WG_M, 128 bytes)`; used by tiles
    /// with `c_buffers > 0` (TMA stores skip out-of-range columns).
    pub tmap_c: [u64; 16],
    pub base: SpmmParams,
}

/// Calls `$m!(entry_name, InputType, tile_index, OutputType)` for every Hopper kernel.
#[macro_export]
macro_rules! for_each_wgmma_kernel {
    ($m:ident) => {
        $m!(spmm_wgmma_f16_b64_f16, F16, 0, F16);
        $m!(spmm_wgmma_f16_b64_bf16, F16, 0, Bf16);
        $m!(spmm_wgmma_f16_b64_f32, F16, 0, F32);
        $m!(spmm_wgmma_f16_b128_f16, F16, 1, F16);
        $m!(spmm_wgmma_f16_b128_bf16, F16, 1, Bf16);
        $m!(spmm_wgmma_f16_b128_f32, F16, 1, F32);
        $m!(spmm_wgmma_bf16_b64_f16, Bf16, 0, F16);
        $m!(spmm_wgmma_bf16_b64_bf16, Bf16, 0, Bf16);
        $m!(spmm_wgmma_bf16_b64_f32, Bf16, 0, F32);
        $m!(spmm_wgmma_bf16_b128_f16, Bf16, 1, F16);
        $m!(spmm_wgmma_bf16_b128_bf16, Bf16, 1, Bf16);
        $m!(spmm_wgmma_bf16_b128_f32, Bf16, 1, F32);
    };
}

/// Calls `$m!(entry_name, OutputType)` for every fix-up kernel.
#[macro_export]
macro_rules! for_each_fixup_kernel {
    ($m:ident) => {
        $m!(spmm_fixup_f16, F16);
        $m!(spmm_fixup_bf16, Bf16);
        $m!(spmm_fixup_f32, F32);
    };
}
