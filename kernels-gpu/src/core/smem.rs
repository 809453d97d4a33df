//! Shared-memory tile layouts of the portable kernels. Rows are stored as 16-byte chunks whose
//! positions are XOR-swizzled so that the 8 row addresses of one `ldmatrix` phase fall in 8
//! different bank groups, and the `cp.async` writes of a warp spread over all 32 banks.

/// Physical position of logical 16-byte chunk `c` in row `row` of a tile whose rows hold
/// `row_chunks` chunks (2, 4, or a multiple of 8).
#[inline(always)]
pub const fn swizzle(row: u32, c: u32, row_chunks: u32) -> u32 {
    if row_chunks >= 8 {
        // 128-byte (or longer) rows: permute within each group of 8 chunks.
        c ^ (row & 7)
    } else if row_chunks == 4 {
        // 64-byte rows: two rows share a 128-byte line; rows 2j and 2j+1 use opposite halves.
        c ^ ((row >> 1) & 3)
    } else {
        // 32-byte rows: four rows share a line; the next four use the other chunk first.
        c ^ ((row >> 2) & 1)
    }
}

/// A row-major tile of 16-bit elements in shared memory, `(rows, row_chunks * 8)`.
#[derive(Clone, Copy)]
pub struct SmemTile {
    /// Shared-window address of row 0.
    pub base: u32,
    /// 16-byte chunks per row.
    pub row_chunks: u32,
}

impl SmemTile {
    /// Address of logical chunk `c` of row `row`.
    #[inline(always)]
    pub fn chunk_addr(self, row: u32, c: u32) -> u32 {
        self.base + row * self.row_chunks * 16 + swizzle(row, c, self.row_chunks) * 16
    }

    /// The same layout `offset` bytes further on (the next ring slot).
    #[inline(always)]
    pub fn offset(self, offset: u32) -> SmemTile {
        SmemTile { base: self.base + offset, row_chunks: self.row_chunks }
    }
}
