//! Criterion benchmarks of blocksparse (`cargo bench -p blocksparse-benches`).
//!
//! Groups:
//! - `plan`: the host-only planner for an 8192 x 8192 pattern of 64 x 64 blocks at 12.5 % block
//!   density, N = 8192 and N = 64 (CPU; always runs).
//! - `reference`: the f64 CPU reference at 512 x 512 x 64, 64 x 64 blocks, 25 % density (CPU;
//!   always runs). Throughput in elements/s is useful FLOP/s.
//! - `gpu_spmm`: the f16 BSR product at M = N = K = 8192, 12.5 % block density, blocks 32, 64
//!   and 128, and dense cuBLAS (`GemmEx`, f32 accumulation) at the same shape, timed with CUDA
//!   events around `iters` back-to-back launches. Throughput: `Elements(flops)`, so criterion's
//!   `Gelem/s` reads as GFLOP/s — useful FLOP/s (`2 · nnzb · bs² · N`) for BSR, `2 · M · N · K`
//!   for dense. Registered only where a GPU can be opened; otherwise a notice on stderr.
//!
//! Run without `--bench` (`cargo test --benches` / `--all-targets`), criterion runs each
//! benchmark once as a smoke test; the GPU shape is then shrunk to 1024 so that debug builds
//! stay quick. Inputs are generated from fixed seeds; the large GPU inputs only when a GPU
//! benchmark is selected by the filter (`cargo bench -p blocksparse-benches -- plan` touches
//! only the CPU benchmarks, apart from opening the device).

use std::cell::RefCell;
use std::hint::black_box;
use std::time::Duration;

use blocksparse::plan::{RowsSpec, plan_rows};
use blocksparse::{BlockShape, Transpose};
use blocksparse_benches::{
    DenseCase, EventTimer, Operands, PLAN_RESIDENT, SpmmCase, bench_mode, count, dense_flops, open_gpu, random_bsr, rng, row_ptr_from_mask,
    spmm_flops,
};
use blocksparse_testkit::dense::DenseGemm;
use blocksparse_testkit::reference::{HostMat, spmm_reference};
use blocksparse_testkit::testgen::{random_mask, random_values};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use half::f16;

/// Independent random streams of the inputs (see [`blocksparse_benches::rng`]).
mod streams {
    pub const PLAN: u64 = 1;
    pub const REFERENCE: u64 = 2;
    pub const GPU_OPERANDS: u64 = 3;
    pub const GPU_DENSE_A: u64 = 4;
    /// Plus the block size: one pattern and one value stream per block size.
    pub const GPU_MASK: u64 = 1000;
    pub const GPU_VALUES: u64 = 2000;
}

fn bench_plan(c: &mut Criterion) {
    let (dim, bs, density) = (8192usize, 64usize, 0.125);
    let blocks = dim / bs;
    let row_ptr = row_ptr_from_mask(&random_mask(blocks, blocks, density, &mut rng(streams::PLAN)), blocks);

    let mut g = c.benchmark_group("plan");
    for n in [8192usize, 64] {
        g.bench_with_input(BenchmarkId::new(format!("{dim}x{dim}_b{bs}_d{density}"), format!("N={n}")), &n, |b, &n| {
            // The portable 64-row tile: 256 columns, stages of 32.
            let spec = RowsSpec {
                row_ptr: &row_ptr,
                n_tiles: n.div_ceil(256) as u32,
                batch: 1,
                kb: bs as u32,
                ks: 32,
                resident: PLAN_RESIDENT,
                tile_group: 2,
                max_item_blocks: blocksparse::abi::MAX_ITEM_BLOCKS,
            };
            b.iter(|| plan_rows(black_box(spec)).expect("plan"))
        });
    }
    g.finish();
}

fn bench_reference(c: &mut Criterion) {
    let (m, k, n, bs, density) = (512usize, 512usize, 64usize, 64usize, 0.25);
    let mut r = rng(streams::REFERENCE);
    let a = random_bsr::<f16>(m, k, bs, density, &mut r).expect("reference input");
    let b = random_values::<f16>(k * n, &mut r);
    let c_in = vec![0.0f32; m * n];
    let (bm, cm) = (HostMat::row_major(&b, k, n), HostMat::row_major(&c_in, m, n));

    let mut g = c.benchmark_group("reference");
    g.throughput(Throughput::Elements(spmm_flops(a.nnzb(), a.block(), n)));
    g.bench_function(format!("{m}x{k}x{n}_b{bs}_d{density}"), |bench| {
        bench.iter(|| spmm_reference(1.0, &a, Transpose::No, black_box(bm), 0.0, cm))
    });
    g.finish();
}

fn bench_gpu(c: &mut Criterion) {
    let ctx = match open_gpu() {
        Ok(ctx) => ctx,
        Err(why) => {
            eprintln!("gpu_spmm: skipped, no usable GPU ({why})");
            return;
        }
    };
    // Full size under `cargo bench`; small when run once as a test (debug build).
    let dim = if bench_mode() { 8192usize } else { 1024 };
    let (m, k, n) = (dim, dim, dim);
    let density = 0.125;
    let (cc_major, cc_minor) = ctx.compute_capability();
    eprintln!(
        "gpu_spmm: {} (compute capability {cc_major}.{cc_minor}, {} SMs, {:?} module), M = N = K = {dim}, f16",
        ctx.device_name(),
        ctx.sm_count(),
        ctx.arch()
    );
    let timer = EventTimer::new(&ctx).expect("creating CUDA events");
    // B and C, shared by every case; made on first use.
    let operands: RefCell<Option<Operands>> = RefCell::new(None);
    let with_operands = |f: &mut dyn FnMut(&mut Operands)| {
        let mut slot = operands.borrow_mut();
        let ops = slot.get_or_insert_with(|| Operands::new(&ctx, m, k, n, &mut rng(streams::GPU_OPERANDS)).expect("uploading B and C"));
        f(ops)
    };

    let mut g = c.benchmark_group("gpu_spmm");
    g.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));

    for bs in [32usize, 64, 128] {
        let pattern = random_mask(m / bs, k / bs, density, &mut rng(streams::GPU_MASK + bs as u64));
        g.throughput(Throughput::Elements(spmm_flops(count(&pattern), BlockShape::square(bs), n)));
        // Values, upload and plan on first use (dropped after this benchmark).
        let mut case: Option<SpmmCase> = None;
        g.bench_function(BenchmarkId::new(format!("bsr_{dim}_d{density}"), format!("b{bs}")), |b| {
            let case = case.get_or_insert_with(|| {
                SpmmCase::new(&ctx, m, k, n, bs, &pattern, &mut rng(streams::GPU_VALUES + bs as u64)).expect("BSR setup")
            });
            with_operands(&mut |ops| b.iter_custom(|iters| timer.time(&ctx, iters, |i| case.launch(&ctx, ops, i)).expect("BSR launch")));
        });
    }

    match DenseGemm::new(&ctx) {
        Err(why) => eprintln!("gpu_spmm: dense cuBLAS baseline skipped ({why})"),
        Ok(gemm) => {
            g.throughput(Throughput::Elements(dense_flops(m, n, k)));
            let mut gemm = Some(gemm);
            let mut case: Option<DenseCase> = None;
            g.bench_function(format!("dense_cublas_{dim}"), |b| {
                let case = case.get_or_insert_with(|| {
                    let gemm = gemm.take().expect("cuBLAS handle");
                    DenseCase::new(&ctx, gemm, m, k, &mut rng(streams::GPU_DENSE_A)).expect("dense setup")
                });
                with_operands(&mut |ops| {
                    b.iter_custom(|iters| timer.time(&ctx, iters, |i| case.launch(&ctx, ops, i)).expect("cuBLAS launch"))
                });
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench_plan, bench_reference, bench_gpu);
criterion_main!(benches);
