//! The walk that densify and sparsify share: thread `t` of the grid takes chunk `t` of a
//! row-major `(rows, cols)` matrix (`len` elements of one row) and reads the block pattern's
//! cell map at the block cell the chunk lies in.

use crate::ptx::{block_idx, ld_global_nc_u32, thread_idx};

/// One thread's chunk and its block cell.
pub struct CellChunk {
    /// The block at the chunk's cell, or `NO_BLOCK`.
    pub block: u32,
    row: u32,
    col: u32,
    rows: u32,
    cols: u32,
    bm_log2: u32,
    bn_log2: u32,
}

impl CellChunk {
    /// The chunk's row and first column inside its block.
    #[inline(always)]
    pub fn inner(&self) -> (u32, u32) {
        (self.row & ((1 << self.bm_log2) - 1), self.col & ((1 << self.bn_log2) - 1))
    }

    /// The chunk's first element in one dense matrix.
    #[inline(always)]
    pub fn dense(&self) -> usize {
        self.row as usize * self.cols as usize + self.col as usize
    }

    /// Elements of one dense matrix.
    #[inline(always)]
    pub fn matrix(&self) -> usize {
        self.rows as usize * self.cols as usize
    }
}

/// Runs `body` on this thread's chunk of `len` elements of a `(rows, cols)` row-major matrix in
/// `(1 << bm_log2, 1 << bn_log2)` block cells, with its block from `cells` (per block cell,
/// row-major); nothing past the last chunk (the grid's tail: the host launches at least one
/// thread per chunk, `threads` per block).
///
/// # Safety
/// `cells` holds `(rows >> bm_log2) · (cols >> bn_log2)` words; `len` divides `cols` and the
/// blocks' width.
#[inline(always)]
pub unsafe fn with_chunk_cell(
    threads: u32,
    len: u32,
    (rows, cols): (u32, u32),
    (bm_log2, bn_log2): (u32, u32),
    cells: u64,
    body: impl FnOnce(CellChunk),
) {
    let chunk = block_idx() * threads + thread_idx();
    let row_chunks = cols / len;
    if chunk >= rows * row_chunks {
        return;
    }
    let (row, col) = (chunk / row_chunks, chunk % row_chunks * len);
    let cell = (row >> bm_log2) * (cols >> bn_log2) + (col >> bn_log2);
    // SAFETY: `cell` is inside the cell map (the caller's contract).
    let block = unsafe { ld_global_nc_u32((cells as *const u32).wrapping_add(cell as usize)) };
    body(CellChunk { block, row, col, rows, cols, bm_log2, bn_log2 })
}
