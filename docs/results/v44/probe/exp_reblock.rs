//! v44 probe (run as `host/examples/exp_reblock.rs`: `cargo build --release -p blocksparse --example exp_reblock`; args filter the cases, `spmm` adds SpMM with B dense): SpGEMM time with A re-blocked to taller blocks, and SpMM of A against a dense B. Logs: reblock.log (no args), spmm.log (`base spmm`).
use blocksparse::{BlockShape, Bsr, Context, PlanOptions, SpgemmOutput};
use blocksparse_testkit::testgen::{exact_mask, random_values, seeded_rng};
use half::f16;
use std::time::Instant;

fn main() {
    let ctx = Context::new(0).unwrap();
    let mut rng = seeded_rng(777);
    let n = 8192usize;
    let filt: Vec<String> = std::env::args().skip(1).collect();
    // (label, bm, bk, da, bn, db)
    let cases: &[(&str, usize, usize, f64, usize, f64)] = &[
        ("16x16 50 base", 16, 16, 0.5, 16, 0.5),
        ("16x16 25 base", 16, 16, 0.25, 16, 0.25),
        ("32x32 25 base", 32, 32, 0.25, 32, 0.25),
        ("64x16 A'94 x 16 50", 64, 16, 0.9375, 16, 0.5),
        ("128x16 A'99.6 x 16 50", 128, 16, 0.996, 16, 0.5),
        ("32x16 A'75 x 16 50", 32, 16, 0.75, 16, 0.5),
        ("32x32 50 base", 32, 32, 0.5, 32, 0.5),
        ("64x32 A'75 x 32 50", 64, 32, 0.75, 32, 0.5),
        ("128x32 A'94 x 32 50", 128, 32, 0.9375, 32, 0.5),
        ("16x16 12.5 base", 16, 16, 0.125, 16, 0.125),
        ("32x16 A'23 x 16 12.5", 32, 16, 0.234, 16, 0.125),
        ("64x16 A'41 x 16 12.5", 64, 16, 0.414, 16, 0.125),
        ("32x32 12.5 base", 32, 32, 0.125, 32, 0.125),
        ("64x32 A'23 x 32 12.5", 64, 32, 0.234, 32, 0.125),
    ];
    let mut c = ctx.zeros_matrix::<f16>(n, n).unwrap();
    for &(label, bm, bk, da, bn, db) in cases {
        if !filt.is_empty() && !filt.iter().any(|f| label.contains(f.as_str())) {
            continue;
        }
        let _ = 0;
        let ma = exact_mask(n / bm, n / bk, da, &mut rng);
        let mb = exact_mask(n / bk, n / bn, db, &mut rng);
        let na = ma.iter().filter(|&&x| x).count();
        let nb = mb.iter().filter(|&&x| x).count();
        let a = Bsr::from_block_mask(n, n, BlockShape { bm, bk }, &ma, random_values::<f16>(na * bm * bk, &mut rng)).unwrap();
        let b = Bsr::from_block_mask(n, n, BlockShape { bm: bk, bk: bn }, &mb, random_values::<f16>(nb * bk * bn, &mut rng)).unwrap();
        let ad = ctx.upload_bsr(&a).unwrap();
        let bd = ctx.upload_bsr(&b).unwrap();
        if filt.iter().any(|f| f == "spmm") {
            let bdense = ctx.upload_matrix::<f16>(n, n, &random_values::<f16>(n * n, &mut rng)).unwrap();
            let plan = ctx.plan_spmm(&ad, blocksparse::Transpose::No, n).unwrap();
            let t0 = Instant::now();
            while t0.elapsed().as_secs_f64() < 1.5 {
                for _ in 0..10 {
                    ctx.spmm(&plan, 1.0, &ad, &bdense, 0.0, &mut c).unwrap();
                }
                ctx.synchronize().unwrap();
            }
            let mut v = Vec::new();
            for _ in 0..7 {
                let t = Instant::now();
                for _ in 0..20 {
                    ctx.spmm(&plan, 1.0, &ad, &bdense, 0.0, &mut c).unwrap();
                }
                ctx.synchronize().unwrap();
                v.push(t.elapsed().as_secs_f64() * 1e3 / 20.0);
            }
            v.sort_by(f64::total_cmp);
            println!("SPMM A of {label:24} ms {:.3}", v[3]);
        }
        for wr in [None] {
            let opts = PlanOptions { warp_rings: wr, ..Default::default() };
            let plan = ctx.plan_spgemm_with(&ad, &bd, SpgemmOutput::Dense, &opts).unwrap();
            // warm-up ~1.5 s
            let t0 = Instant::now();
            while t0.elapsed().as_secs_f64() < 1.5 {
                for _ in 0..10 {
                    ctx.spgemm(&plan, 1.0, &ad, &bd, 0.0, &mut c).unwrap();
                }
                ctx.synchronize().unwrap();
            }
            let mut v = Vec::new();
            for _ in 0..7 {
                let t = Instant::now();
                for _ in 0..20 {
                    ctx.spgemm(&plan, 1.0, &ad, &bd, 0.0, &mut c).unwrap();
                }
                ctx.synchronize().unwrap();
                v.push(t.elapsed().as_secs_f64() * 1e3 / 20.0);
            }
            v.sort_by(f64::total_cmp);
            println!(
                "{label:28} tile {:?} warp_rings {} pairs {} records {} ms {:.3}",
                plan.tile(),
                plan.warp_rings(),
                plan.pairs(),
                plan.size().records,
                v[3]
            );
        }
    }
}
