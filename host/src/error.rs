//! The library's one error type. Every invalid input is reported before anything is launched.

/// What went wrong. Each variant names the offending value. New variants may come with new
/// features: match with a wildcard arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No NVIDIA driver could be loaded, or it reports no device.
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    /// A CUDA driver call failed.
    #[error("CUDA driver error: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
    /// The device lacks a capability a kernel needs.
    #[error("unsupported device: {0}")]
    UnsupportedDevice(String),
    /// A block size other than 16, 32, 64 or 128.
    #[error("unsupported block size {bm}x{bk}: block height and width must each be 16, 32, 64 or 128")]
    UnsupportedBlockSize {
        /// Block height.
        bm: usize,
        /// Block width.
        bk: usize,
    },
    /// A dimension is zero where it must not be.
    #[error("{what} must be at least 1")]
    ZeroDimension {
        /// What the value is.
        what: &'static str,
    },
    /// A matrix dimension is not a multiple of the block size.
    #[error("{what} = {size} is not a multiple of the block size {block}")]
    NotBlockMultiple {
        /// What the value is.
        what: &'static str,
        /// The dimension.
        size: usize,
        /// The block size it must be a multiple of.
        block: usize,
    },
    /// Operand shapes do not fit together.
    #[error("shape mismatch: {what}: expected {expected}, got {got}")]
    ShapeMismatch {
        /// What the value is.
        what: &'static str,
        /// The value required.
        expected: usize,
        /// The value given.
        got: usize,
    },
    /// `row_ptr` has the wrong length (must be block rows + 1).
    #[error("row_ptr has length {got}, expected {expected} (block rows + 1)")]
    RowPtrLength {
        /// The value required.
        expected: usize,
        /// The value given.
        got: usize,
    },
    /// `row_ptr[0]` is not 0.
    #[error("row_ptr[0] = {got}, expected 0")]
    RowPtrStart {
        /// The value given.
        got: usize,
    },
    /// `row_ptr` decreases.
    #[error("row_ptr is not monotone: row_ptr[{row}] = {start} > row_ptr[{next}] = {end}", next = row + 1)]
    RowPtrNotMonotone {
        /// Block row.
        row: usize,
        /// `row_ptr[row]`.
        start: usize,
        /// `row_ptr[row + 1]`.
        end: usize,
    },
    /// The last `row_ptr` entry disagrees with the number of column indices.
    #[error("row_ptr ends at {got}, but col_idx has {expected} entries")]
    RowPtrEnd {
        /// The value required.
        expected: usize,
        /// The value given.
        got: usize,
    },
    /// A column index points past the last block column.
    #[error("column index {col} in block row {row} is out of range (block columns: {block_cols})")]
    ColumnOutOfRange {
        /// Block row.
        row: usize,
        /// The column index.
        col: usize,
        /// Block columns of the matrix.
        block_cols: usize,
    },
    /// Column indices within a block row are not strictly increasing.
    #[error("column indices of block row {row} are not sorted: {prev} before {col}")]
    ColumnsUnsorted {
        /// Block row.
        row: usize,
        /// The column index before it.
        prev: usize,
        /// The column index.
        col: usize,
    },
    /// A column index repeats within a block row.
    #[error("column index {col} appears twice in block row {row}")]
    DuplicateColumn {
        /// Block row.
        row: usize,
        /// The column index.
        col: usize,
    },
    /// The values array has the wrong length.
    #[error("values has length {got}, expected {expected} (blocks x bm x bk)")]
    ValuesLength {
        /// The value required.
        expected: usize,
        /// The value given.
        got: usize,
    },
    /// A buffer is smaller than its shape and leading dimension require.
    #[error("buffer {what} too small: needs {needed} elements, has {got}")]
    BufferTooSmall {
        /// What the value is.
        what: &'static str,
        /// Elements the shape needs.
        needed: usize,
        /// The value given.
        got: usize,
    },
    /// A leading dimension is invalid.
    #[error("leading dimension of {what} is {ld}: must be at least {min} and a multiple of {align}")]
    LeadingDimension {
        /// What the value is.
        what: &'static str,
        /// The leading dimension given.
        ld: usize,
        /// The least valid value.
        min: usize,
        /// The multiple it must be of.
        align: usize,
    },
    /// An index or size does not fit the 32-bit indices the kernels use.
    #[error("{what} = {value} exceeds the 32-bit limit of the kernels")]
    TooLarge {
        /// What the value is.
        what: &'static str,
        /// The value given.
        value: usize,
    },
    /// A plan was used with a matrix of another sparsity pattern, or another N.
    #[error("plan mismatch: {0}")]
    PlanMismatch(String),
    /// A scalar argument is not finite.
    #[error("{what} = {value} is not finite")]
    NotFinite {
        /// What the value is.
        what: &'static str,
        /// The value given.
        value: f32,
    },
    /// Operands of one product hold different numbers of matrices.
    #[error("batch mismatch: {what}: expected {expected} matrices, got {got}")]
    BatchMismatch {
        /// What the value is.
        what: &'static str,
        /// The value required.
        expected: usize,
        /// The value given.
        got: usize,
    },
    /// A batch stride is invalid.
    #[error("batch stride of {what} is {stride}: must be a multiple of {align} and at least {min} (one matrix)")]
    BatchStride {
        /// What the value is.
        what: &'static str,
        /// The batch stride given.
        stride: usize,
        /// The least valid value.
        min: usize,
        /// The multiple it must be of.
        align: usize,
    },
    /// A device buffer's address is not aligned as the kernels need (16 bytes: a view that
    /// starts inside an allocation must start at a multiple of 8 elements of 2 bytes).
    #[error("{what} starts at device address {address:#x}, which is not a multiple of {align} bytes")]
    Misaligned {
        /// What the value is.
        what: &'static str,
        /// The buffer's device address.
        address: u64,
        /// The alignment required, in bytes.
        align: usize,
    },
    /// An index array holds a negative entry (PyTorch and scipy index arrays are signed).
    #[error("{what}[{position}] = {value} is negative")]
    NegativeIndex {
        /// Which array.
        what: &'static str,
        /// Position of the entry.
        position: usize,
        /// The entry.
        value: i64,
    },
    /// A size computation overflows the host's `usize` (the arguments describe more elements
    /// than any machine holds).
    #[error("{what} overflows the host's address range")]
    Overflow {
        /// What was being computed.
        what: &'static str,
    },
    /// A host allocation failed.
    #[error("cannot allocate {what}: {elements} elements")]
    Allocation {
        /// What was being allocated.
        what: &'static str,
        /// How many elements were asked for.
        elements: usize,
    },
    /// An object made on one device was passed to a context of another.
    #[error("device mismatch: {what} lives on device {got}, the context on device {expected}")]
    DeviceMismatch {
        /// Which argument.
        what: &'static str,
        /// The context's device ordinal.
        expected: usize,
        /// The argument's device ordinal.
        got: usize,
    },
    /// A kernel module was built against another version of the shared ABI (the parameter
    /// layouts in `blocksparse-abi`) than this library, or carries no ABI hash: launching it
    /// would pass mismatched parameter blocks, so it is refused.
    #[error(
        "kernel module {module} was built against ABI {}, this library has {expected:#018x}; rebuild the kernels with `cargo xtask build-ptx`",
        .found.map_or_else(|| "(no ABI hash)".to_string(), |h| format!("{h:#018x}"))
    )]
    AbiMismatch {
        /// The module (`op_family.arch`).
        module: String,
        /// This library's `blocksparse_abi::ABI_HASH`.
        expected: u64,
        /// The hash the module carries, if any.
        found: Option<u64>,
    },
    /// [`PlanOptions::merge_rows`](crate::PlanOptions::merge_rows) asks for a merge that the
    /// product's kernel cannot run.
    #[error("cannot merge {rows} block rows per tile: {why}")]
    UnsupportedMerge {
        /// The rows asked for.
        rows: u32,
        /// Why not, and what can be merged.
        why: String,
    },
    /// The kernel a product needs is not loaded on this device (e.g. it needs more shared
    /// memory per block than the device allows).
    #[error("no kernel available: {0}")]
    KernelUnavailable(String),
    /// A check of the library's own work failed (a planner thread that did not finish, two
    /// passes of a planner that disagree): a bug in the library, with what was found.
    #[error("internal error (a bug in blocksparse): {0}")]
    Internal(String),
}

/// `Result` with the library's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;
