//! Compiles the device crate (`../kernels-gpu`) to PTX with rustc's own NVPTX backend, once per
//! target architecture, and leaves the PTX in OUT_DIR for `include_str!`.
//!
//! No CUDA toolkit and no bitcode linker are involved: `core` is rebuilt for the target from
//! rust-src (`-Zbuild-std=core`), the crate is a fat-LTO `cdylib`, and `--emit=asm -Zno-link`
//! writes one self-contained PTX file.

use std::path::{Path, PathBuf};
use std::process::Command;

/// (architecture, output file stem, PTX ISA feature): sm_80 is raised to PTX 7.8 for
/// `movmatrix`; sm_90a's default (8.0) has it.
const ARCHES: [(&str, &str, Option<&str>); 2] = [("sm_80", "kernels_sm80", Some("+ptx78")), ("sm_90a", "kernels_sm90a", None)];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir.parent().expect("host/ lives in the workspace root").to_path_buf();
    let kernels = root.join("kernels-gpu");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    for dir in ["kernels-gpu/src", "kernels-gpu/Cargo.toml", "abi/src", "abi/Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    // A separate target dir: the outer build holds the lock on its own.
    let target_dir = out_dir.join("nvptx-target");
    for (arch, stem, ptx_isa) in ARCHES {
        let ptx = fix_hopper_entries(build_ptx(&kernels, &target_dir, arch, ptx_isa));
        std::fs::write(out_dir.join(format!("{stem}.ptx")), ptx).expect("write PTX to OUT_DIR");
    }
}

/// What rustc cannot express, written into the entry headers (rustc has no launch-bounds
/// attribute):
/// - Hopper kernels: the parameter block holds TMA tensor maps, which must be 64-byte aligned
///   (a Rust type of that alignment cannot be passed by value to an nvptx kernel); `.maxntid`,
///   the register cap `setmaxnreg` needs;
/// - portable kernels: `.maxntid` and `.minnctapersm` (`MmaTile::blocks_per_sm`), which hold
///   the registers to what that many resident blocks allow.
fn fix_hopper_entries(mut ptx: String) -> String {
    macro_rules! fix {
        ($name:ident, $op:ident, Hopper, $input:ident, $tile:literal, $output:ident) => {
            let name = stringify!($name);
            let threads = blocksparse_abi::WGMMA_TILES[$tile].threads();
            let param = format!(".param .align 8 .b8 {name}_param_0[");
            if let Some(at) = ptx.find(&param) {
                ptx.replace_range(at..at + param.len(), &format!(".param .align 64 .b8 {name}_param_0["));
                let close = at + ptx[at..].find(')').expect("entry parameter list closes");
                ptx.insert_str(close + 1, &format!("\n.maxntid {threads}, 1, 1\n.minnctapersm 1"));
            }
        };
        ($name:ident, Fixup, Portable, $input:ident, $tile:literal, $output:ident) => {};
        ($name:ident, $op:ident, Portable, $input:ident, $tile:literal, $output:ident) => {
            let name = stringify!($name);
            let t = blocksparse_abi::MMA_TILES[$tile];
            let param = format!(".param .align 8 .b8 {name}_param_0[");
            if let Some(at) = ptx.find(&param) {
                let close = at + ptx[at..].find(')').expect("entry parameter list closes");
                ptx.insert_str(close + 1, &format!("\n.maxntid {}, 1, 1\n.minnctapersm {}", t.threads(), t.blocks_per_sm));
            }
        };
    }
    blocksparse_abi::for_each_kernel!(fix);
    ptx
}

fn build_ptx(kernels: &Path, target_dir: &Path, arch: &str, ptx_isa: Option<&str>) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(kernels)
        // Flags meant for the host build must not leak into the device build.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_TARGET_DIR")
        .args(["rustc", "--release", "--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core"])
        .arg("--target-dir")
        .arg(target_dir)
        .args([
            "--",
            "--emit=asm",
            "-Zno-link",
            &format!("-Ctarget-cpu={arch}"),
            // Every K-loop body and fragment loop must unroll completely, or the register
            // arrays indexed by them move to local memory.
            "-Cllvm-args=-unroll-threshold=5000",
        ])
        .args(ptx_isa.map(|f| format!("-Ctarget-feature={f}")))
        .status()
        .expect("run cargo for the kernels-gpu crate");
    assert!(status.success(), "building kernels-gpu for {arch} failed");
    let s = target_dir.join("nvptx64-nvidia-cuda/release/deps/blocksparse_kernels.s");
    std::fs::read_to_string(&s).unwrap_or_else(|e| panic!("read {}: {e}", s.display()))
}
