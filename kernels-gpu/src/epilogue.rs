//! C = alpha·acc + beta·C, rounded to the output type; or the raw f32 tile into a split-K slot.
//! With beta == 0, C is not read (BLAS semantics: whatever C held, NaN included, is overwritten).

use crate::dtype::Output;
use crate::ptx::{shfl_xor, st_global_f32x2, st_global_u16, st_global_v4_u32};

/// Where a thread's accumulator pair lands.
#[derive(Clone, Copy)]
pub struct Dest {
    /// C, `(M, ldc)` row-major, as an element pointer.
    pub c: u64,
    pub ldc: u32,
    /// Columns of C: elements at or past `n` are not written.
    pub n: u32,
    pub alpha: f32,
    pub beta: f32,
}

impl Dest {
    /// Address of C(row, col).
    #[inline(always)]
    pub fn at<O: Output>(&self, row: u32, col: u32) -> *mut O::Elem {
        (self.c as *mut O::Elem).wrapping_add(row as usize * self.ldc as usize + col as usize)
    }

    /// Writes the pair at (row, col) and (row, col + 1); `col` is even.
    #[inline(always)]
    pub unsafe fn store_pair<O: Output>(&self, row: u32, col: u32, v0: f32, v1: f32) {
        if col >= self.n {
            return;
        }
        let p = self.at::<O>(row, col);
        unsafe {
            let (r0, r1) = self.scaled_pair::<O>(row, col, v0, v1);
            if col + 1 < self.n { O::store2(p, r0, r1) } else { O::store1(p, r0) }
        }
    }

    /// `alpha·(v0, v1) + beta·C(row, col .. col + 2)`, reading C only when beta != 0 and only the
    /// columns below `n`.
    #[inline(always)]
    pub unsafe fn scaled_pair<O: Output>(&self, row: u32, col: u32, v0: f32, v1: f32) -> (f32, f32) {
        let (mut r0, mut r1) = (self.alpha * v0, self.alpha * v1);
        if self.beta != 0.0 && col < self.n {
            let p = self.at::<O>(row, col);
            if col + 1 < self.n {
                let (c0, c1) = unsafe { O::load2(p) };
                r0 += self.beta * c0;
                r1 += self.beta * c1;
            } else {
                r0 += self.beta * unsafe { O::load1(p) };
            }
        }
        (r0, r1)
    }

    /// Writes one element (fix-up kernel).
    #[inline(always)]
    pub unsafe fn store_one<O: Output>(&self, row: u32, col: u32, v: f32) {
        let p = self.at::<O>(row, col);
        let mut r = self.alpha * v;
        unsafe {
            if self.beta != 0.0 {
                r += self.beta * O::load1(p);
            }
            O::store1(p, r);
        }
    }
}

/// Writes an unscaled f32 pair into a `(bm, bn)` partial tile.
#[inline(always)]
pub unsafe fn store_partial_pair(tile: *mut f32, bn: u32, row: u32, col: u32, v0: f32, v1: f32) {
    unsafe { st_global_f32x2(tile.wrapping_add((row * bn + col) as usize), v0, v1) }
}

/// Offsets from a thread's first row and column of its wgmma accumulator pair `i` (`i` even):
/// row `8·((i>>1)&1)`, column `8·(i>>2)` (the pair's two columns are adjacent).
#[inline(always)]
fn wg_pair_offset(i: usize) -> (u32, u32) {
    (8 * ((i as u32 >> 1) & 1), 8 * (i as u32 >> 2))
}

/// Writes one warpgroup's wgmma accumulator fragment (layout as in [`store_wg_fragment`]),
/// unscaled, into a `(bm, bn)` split-K partial tile; `row0` / `col0` as there, in the tile.
#[inline(always)]
pub unsafe fn store_wg_partial<const N_REGS: usize>(tile: *mut f32, bn: u32, acc: &[f32; N_REGS], row0: u32, col0: u32) {
    let mut i = 0;
    while i < N_REGS {
        let (dr, dc) = wg_pair_offset(i);
        unsafe { store_partial_pair(tile, bn, row0 + dr, col0 + dc, acc[i], acc[i + 1]) };
        i += 2;
    }
}

/// Writes one warpgroup's `(64, 8·G)` wgmma accumulator fragment (`G` column groups of 8) to C.
/// Register `i` of thread (warp `w`, lane `l`) holds row `16w + l/4 + 8·((i>>1)&1)`, column
/// `8·(i>>2) + 2·(l%4) + (i&1)`; `row0` is this thread's first row in C and `col0` the C column
/// of the fragment's column 0.
///
/// 16-bit outputs: the four lanes of a quad hold 2 columns each of 4 consecutive 8-column
/// groups; a 4×4 transpose across the quad (4 shuffles per 4 words) gives each lane one whole
/// group, written with one 16-byte store, so a warp writes full 32-byte sectors (8 rows × 64
/// bytes) with 16 stores instead of half sectors with 64. Must be called by all 32 lanes.
#[inline(always)]
pub unsafe fn store_wg_fragment<O: Output, const N_REGS: usize>(d: &Dest, acc: &[f32; N_REGS], row0: u32, col0: u32, lane: u32) {
    let q = lane % 4;
    match O::PACK2 {
        None => {
            let col0 = col0 + 2 * q;
            let mut i = 0;
            while i < N_REGS {
                let (dr, dc) = wg_pair_offset(i);
                unsafe { d.store_pair::<O>(row0 + dr, col0 + dc, acc[i], acc[i + 1]) };
                i += 2;
            }
        }
        Some(pack) => {
            let mut h = 0;
            while h < 2 {
                let row = row0 + 8 * h as u32;
                let mut g = 0;
                while g < N_REGS / 16 {
                    // Words of groups 4g .. 4g + 4 at this thread's columns 2q, 2q + 1.
                    let mut v = [0u32; 4];
                    let mut t = 0;
                    while t < 4 {
                        let i = 4 * (4 * g + t) + 2 * h;
                        let col = col0 + 8 * (4 * g + t) as u32 + 2 * q;
                        let (r0, r1) = unsafe { d.scaled_pair::<O>(row, col, acc[i], acc[i + 1]) };
                        v[t] = pack(r0, r1);
                        t += 1;
                    }
                    let w = quad_transpose(v, q);
                    // This lane now holds columns 8·(4g + q) .. + 8.
                    let col = col0 + 8 * (4 * g as u32 + q);
                    let p = d.at::<O>(row, col);
                    if col + 8 <= d.n {
                        unsafe { st_global_v4_u32(p as *mut u32, w) };
                    } else {
                        let mut e = 0;
                        while e < 8 {
                            if col + e < d.n {
                                let bits = (w[(e / 2) as usize] >> (16 * (e % 2))) as u16;
                                unsafe { st_global_u16((p as *mut u16).wrapping_add(e as usize), bits) };
                            }
                            e += 1;
                        }
                    }
                    g += 1;
                }
                h += 1;
            }
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

/// Shared-memory staging of one consumer warpgroup's C: two `(WG_M, 128 bytes)` chunks in the
/// 128-byte swizzle of the C tensor map, and the warpgroup's named barrier.
#[cfg(target_feature = "sm_90a")]
#[derive(Clone, Copy)]
pub struct CStage {
    /// Shared address of chunk 0 (1024-byte aligned); chunk 1 follows.
    pub chunks: u32,
    pub barrier: u32,
    /// Generic address of C's tensor map.
    pub tmap: u64,
}

/// Writes one warpgroup's `(64, 8·G)` wgmma accumulator fragment (layout as in
/// [`store_wg_fragment`]) through shared memory: per 128-byte-wide column chunk, the threads
/// write their scaled, rounded values into a free staging chunk, and thread 0 of the warpgroup
/// issues one TMA store of it. The stores complete asynchronously while the warpgroup goes on
/// to the next item; a chunk is rewritten only after the store two chunks back has read it.
/// `row0` / `col0`: the C coordinates of the fragment's (0, 0). Must be called by all 128
/// threads of the warpgroup; thread 0 must call [`CStage::drain`] before the kernel exits.
#[cfg(target_feature = "sm_90a")]
#[inline(always)]
pub unsafe fn store_wg_fragment_tma<O: Output, const N_REGS: usize>(d: &Dest, st: &CStage, acc: &[f32; N_REGS], row0: u32, col0: u32, lt: u32) {
    use crate::ptx::{st_shared_u32, st_shared_v2_u32};
    use crate::ptx_sm90::{bulk_commit, bulk_wait_read, fence_proxy_async_smem, named_barrier, tma_store_2d};
    use blocksparse_abi::C_CHUNK_BYTES;

    let (w, l) = (lt / 32, lt % 32);
    let q = l % 4;
    let elem = core::mem::size_of::<O::Elem>() as u32;
    // (WG_M, 128 bytes) per chunk: 8-column groups per chunk, chunks per fragment.
    let chunk_cols = 128 / elem;
    let groups = chunk_cols / 8;
    let n_chunks = (N_REGS as u32 / 4) / groups;
    let mut k = 0;
    while k < n_chunks {
        let chunk_col = col0 + k * chunk_cols;
        if chunk_col >= d.n {
            break; // the same for the whole warpgroup
        }
        let buf = st.chunks + (k % 2) * C_CHUNK_BYTES;
        if lt == 0 {
            // Chunk k - 2 used this buffer (the previous item's last chunks, for k = 0).
            if k == 0 { bulk_wait_read::<0>() } else { bulk_wait_read::<1>() }
        }
        named_barrier(st.barrier, 128);
        let mut jj = 0;
        while jj < groups {
            let j = k * groups + jj;
            let mut h = 0;
            while h < 2 {
                let i = (4 * j + 2 * h) as usize;
                let r = 16 * w + l / 4 + 8 * h;
                let (v0, v1) = unsafe { d.scaled_pair::<O>(row0 + r, col0 + 8 * j + 2 * q, acc[i], acc[i + 1]) };
                // Byte column in the chunk row; 16-byte unit `u` sits at `u ^ (r % 8)`.
                let bc = (8 * jj + 2 * q) * elem;
                let addr = buf + r * 128 + (((bc / 16) ^ (r % 8)) * 16) + bc % 16;
                unsafe {
                    match O::PACK2 {
                        Some(pack) => st_shared_u32(addr, pack(v0, v1)),
                        None => st_shared_v2_u32(addr, v0.to_bits(), v1.to_bits()),
                    }
                }
                h += 1;
            }
            jj += 1;
        }
        fence_proxy_async_smem();
        named_barrier(st.barrier, 128);
        if lt == 0 {
            unsafe { tma_store_2d(st.tmap, chunk_col, row0, buf) };
            bulk_commit();
        }
        k += 1;
    }
}

#[cfg(target_feature = "sm_90a")]
impl CStage {
    /// Thread 0 of the warpgroup, before exit: waits for its TMA stores to finish.
    #[inline(always)]
    pub fn drain(&self) {
        crate::ptx_sm90::bulk_wait_all();
    }
}
