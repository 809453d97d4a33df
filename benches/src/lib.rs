//! Shared setup for the criterion benchmarks in `benches/` (`cargo bench -p blocksparse-benches`).
//!
//! Everything here is plain library code (no criterion types), so the CPU helpers are unit-tested
//! by `cargo test` and the GPU helpers compile on machines without CUDA: they only run after the
//! bench has opened a [`Context`], which fails cleanly without a driver or device.

use std::time::Duration;

use blocksparse::cudarc::driver::CudaEvent;
use blocksparse::cudarc::driver::sys::CUevent_flags;
use blocksparse::{BlockShape, Bsr, Context, DeviceBsr, DeviceMatrix, Error, Result, SpmmPlan, Transpose};
use blocksparse_testkit::dense::DenseGemm;
use blocksparse_testkit::testgen::{TestRng, random_mask, random_values, seeded_rng};
use half::f16;

/// Seed of every generated pattern and value set, so runs compare like with like.
pub const SEED: u64 = 0x5EED_B10C;

/// Thread blocks resident at once assumed by the host-only planner benchmark: an H100 SXM
/// (132 SMs) running two thread blocks of the 64-row tile per SM.
pub const PLAN_RESIDENT: u32 = 132 * 2;

/// Whether the bench binary was started by `cargo bench` (which passes `--bench`) rather than
/// by `cargo test --benches` / `--all-targets` (no `--bench`: criterion then runs each benchmark
/// once as a smoke test, and the GPU shapes are shrunk to keep that quick in debug builds).
/// `cargo bench -- --test` counts as test mode too, as criterion treats it.
pub fn bench_mode() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test")
}

/// The BSR `row_ptr` (length `block_rows + 1`) of a row-major block mask with `block_cols`
/// columns: all the host-only planner needs.
pub fn row_ptr_from_mask(mask: &[bool], block_cols: usize) -> Vec<u32> {
    let mut row_ptr = Vec::with_capacity(mask.len() / block_cols.max(1) + 1);
    row_ptr.push(0u32);
    let mut total = 0u32;
    for row in mask.chunks(block_cols.max(1)) {
        total += row.iter().filter(|&&x| x).count() as u32;
        row_ptr.push(total);
    }
    row_ptr
}

/// Number of `true` entries (stored blocks) of a mask.
pub fn count(mask: &[bool]) -> usize {
    mask.iter().filter(|&&x| x).count()
}

/// The `m x k` BSR matrix of `bs x bs` blocks with the block pattern `mask`
/// (`(m / bs) x (k / bs)`, row-major), values uniform in `[-1, 1]` and non-zero.
pub fn bsr_from_mask<T: blocksparse::Element>(m: usize, k: usize, bs: usize, mask: &[bool], rng: &mut TestRng) -> Result<Bsr<T>> {
    let values = random_values::<T>(count(mask) * bs * bs, rng);
    Bsr::from_block_mask(m, k, BlockShape::square(bs), mask, values)
}

/// A random `m x k` BSR matrix of `bs x bs` blocks at the given block density.
pub fn random_bsr<T: blocksparse::Element>(m: usize, k: usize, bs: usize, density: f64, rng: &mut TestRng) -> Result<Bsr<T>> {
    let mask = random_mask(m / bs, k / bs, density, rng);
    bsr_from_mask(m, k, bs, &mask, rng)
}

/// Useful floating-point operations of a BSR product: `2 · nnzb · bm · bk · n`.
pub fn spmm_flops(nnzb: usize, block: BlockShape, n: usize) -> u64 {
    2 * nnzb as u64 * block.bm as u64 * block.bk as u64 * n as u64
}

/// Floating-point operations of a dense `(m, k) · (k, n)` product: `2 · m · n · k`.
pub fn dense_flops(m: usize, n: usize, k: usize) -> u64 {
    2 * m as u64 * n as u64 * k as u64
}

/// Two CUDA events with timing enabled (`new_event(None)` would disable it), to time work
/// queued on the context's stream.
pub struct EventTimer {
    start: CudaEvent,
    stop: CudaEvent,
}

impl EventTimer {
    pub fn new(ctx: &Context) -> Result<Self> {
        let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
        Ok(EventTimer { start: ctx.cuda().new_event(flags)?, stop: ctx.cuda().new_event(flags)? })
    }

    /// Device time of `iters` calls of `launch(i)` (i = 0, 1, ...), queued back to back between
    /// a start and a stop event on the context's stream.
    pub fn time(
        &self,
        ctx: &Context,
        iters: u64,
        mut launch: impl FnMut(u64) -> std::result::Result<(), String>,
    ) -> std::result::Result<Duration, String> {
        let e = |e: blocksparse::cudarc::driver::DriverError| e.to_string();
        self.start.record(ctx.stream()).map_err(e)?;
        for i in 0..iters {
            launch(i)?;
        }
        self.stop.record(ctx.stream()).map_err(e)?;
        self.stop.synchronize().map_err(e)?;
        let ms = self.start.elapsed_ms(&self.stop).map_err(e)?;
        Ok(Duration::from_secs_f64(f64::from(ms) * 1e-3))
    }
}

/// The dense operands shared by every GPU case of one shape: two B `(k, n)` and two C `(m, n)`
/// sets (f16), alternated between launches so that back-to-back runs do not just re-read L2.
pub struct Operands {
    pub k: usize,
    pub n: usize,
    pub b: [DeviceMatrix<f16>; 2],
    pub c: [DeviceMatrix<f16>; 2],
}

impl Operands {
    pub fn new(ctx: &Context, m: usize, k: usize, n: usize, rng: &mut TestRng) -> Result<Self> {
        let mut b = || ctx.upload_matrix(k, n, &random_values::<f16>(k * n, rng));
        let b = [b()?, b()?];
        let c = [ctx.zeros_matrix(m, n)?, ctx.zeros_matrix(m, n)?];
        Ok(Operands { k, n, b, c })
    }
}

/// One BSR product `C = A · B` on the device: A, its plan for `n` columns.
pub struct SpmmCase {
    pub a: DeviceBsr<f16>,
    pub plan: SpmmPlan,
    pub nnzb: usize,
    pub block: BlockShape,
}

impl SpmmCase {
    /// The `m x k` f16 BSR matrix of `bs x bs` blocks with pattern `mask` and random values,
    /// uploaded and planned for `n` columns.
    pub fn new(ctx: &Context, m: usize, k: usize, n: usize, bs: usize, mask: &[bool], rng: &mut TestRng) -> Result<Self> {
        let a = bsr_from_mask::<f16>(m, k, bs, mask, rng)?;
        let a_dev = ctx.upload_bsr(&a)?;
        let plan = ctx.plan_spmm(&a_dev, Transpose::No, n)?;
        Ok(SpmmCase { nnzb: a.nnzb(), block: a.block(), a: a_dev, plan })
    }

    pub fn flops(&self) -> u64 {
        spmm_flops(self.nnzb, self.block, self.plan.dense_dim())
    }

    /// Queues launch `i` (operand set `i % 2`).
    pub fn launch(&self, ctx: &Context, ops: &mut Operands, i: u64) -> std::result::Result<(), String> {
        let s = (i % 2) as usize;
        ctx.spmm(&self.plan, 1.0, &self.a, &ops.b[s], 0.0, &mut ops.c[s]).map_err(|e| e.to_string())
    }
}

/// The dense cuBLAS baseline at the same shape: a random dense f16 A.
pub struct DenseCase {
    pub gemm: DenseGemm,
    pub a: DeviceMatrix<f16>,
}

impl DenseCase {
    pub fn new(ctx: &Context, gemm: DenseGemm, m: usize, k: usize, rng: &mut TestRng) -> Result<Self> {
        let a = ctx.upload_matrix(m, k, &random_values::<f16>(m * k, rng))?;
        Ok(DenseCase { gemm, a })
    }

    pub fn flops(&self, n: usize) -> u64 {
        dense_flops(self.a.rows(), n, self.a.cols())
    }

    /// Queues launch `i` (operand set `i % 2`).
    pub fn launch(&self, ctx: &Context, ops: &mut Operands, i: u64) -> std::result::Result<(), String> {
        let s = (i % 2) as usize;
        self.gemm.gemm(ctx, &self.a, &ops.b[s], &mut ops.c[s])
    }
}

/// Opens device 0 if there is one: `Err(reason)` when the driver library is missing
/// or no usable device is present. Never touches cudarc before checking for the driver.
pub fn open_gpu() -> std::result::Result<Context, String> {
    if !blocksparse::driver_present() {
        return Err("the NVIDIA driver library (libcuda) could not be loaded".into());
    }
    Context::new(0).map_err(|e: Error| e.to_string())
}

/// The deterministic generator of stream `stream` (one per independent input, so that the
/// inputs of one benchmark do not change when another is added or skipped).
pub fn rng(stream: u64) -> TestRng {
    seeded_rng(SEED ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_ptr_counts_blocks_per_row() {
        let m = [true, false, true, false, false, false, true, true, true];
        assert_eq!(row_ptr_from_mask(&m, 3), vec![0, 2, 2, 5]);
    }

    #[test]
    fn bench_pattern_matches_bsr() {
        let mut r1 = rng(7);
        let a = random_bsr::<f16>(512, 512, 64, 0.25, &mut r1).unwrap();
        let mut r2 = rng(7);
        let rp = row_ptr_from_mask(&random_mask(8, 8, 0.25, &mut r2), 8);
        assert_eq!(a.row_ptr(), &rp[..]);
        assert_eq!(spmm_flops(a.nnzb(), a.block(), 64), 2 * a.nnzb() as u64 * 64 * 64 * 64);
        assert_eq!(dense_flops(8192, 8192, 8192), 2 << 39);
    }
}
