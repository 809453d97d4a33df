//! `cargo xtask build-ptx [--check]`: builds the device crate (`kernels-gpu`) to PTX with the
//! pinned nightly, one module per op and family (`blocksparse::kernels::Module`) for each
//! architecture (`Arch`), assembles each PTX to a cubin with the pinned `ptxas`
//! (`tools/install-cuda-tools.sh`), and writes both, with the include table the library
//! embeds them from (`modules.rs`), to `host/kernels/` (committed). `--check` builds into a
//! scratch folder and fails, with a summary, where anything differs from the committed files.
//!
//! No CUDA toolkit and no bitcode linker are involved: `core` is rebuilt for the target from
//! rust-src (`-Zbuild-std=core`), the crate is a fat-LTO `cdylib`, and `--emit=asm -Zno-link`
//! writes one self-contained PTX file. The child cargo runs with the caller's build settings
//! cleared (flags, wrappers, `CARGO_*` configuration), so the bytes depend on the sources, the
//! pinned toolchain and the pinned ptxas only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use blocksparse::kernels::{Arch, Module};

/// Where the committed kernels live, relative to the workspace root.
const KERNELS_DIR: &str = "host/kernels";
/// The include table the library reads (`host/src/kernels.rs`).
const TABLE: &str = "modules.rs";

#[derive(clap::Args)]
pub struct Args {
    /// Rebuild into a scratch folder and compare with the committed files instead of writing them.
    #[arg(long)]
    check: bool,
    /// Build only the modules whose file name (e.g. `spmm_hopper.sm_90a`) contains this, into
    /// target/build-ptx/only/ (for reading their SASS), leaving host/kernels as it is.
    #[arg(long, conflicts_with = "check")]
    only: Option<String>,
}

type Res<T> = Result<T, String>;

fn root() -> PathBuf {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask).to_path_buf()
}

pub fn run(args: Args) -> Res<bool> {
    let root = root();
    let channel = pinned_channel(&root)?;
    let ptxas = ptxas(&root)?;
    let scratch = root.join("target/build-ptx");
    let out = scratch.join(if args.check {
        "check"
    } else if args.only.is_some() {
        "only"
    } else {
        "out"
    });
    if out.exists() {
        std::fs::remove_dir_all(&out).map_err(|e| format!("remove {}: {e}", out.display()))?;
    }
    std::fs::create_dir_all(&out).map_err(|e| format!("create {}: {e}", out.display()))?;

    // One thread per architecture (separate target dirs), the modules of each in turn.
    let files: Vec<(String, Vec<u8>)> = std::thread::scope(|s| {
        let jobs: Vec<_> = Arch::ALL
            .iter()
            .map(|&arch| {
                let (root, channel, ptxas, scratch, only) = (&root, &channel, &ptxas, &scratch, args.only.as_deref());
                s.spawn(move || build_arch(root, channel, ptxas, &scratch.join(arch.target()), arch, only))
            })
            .collect();
        let mut files = Vec::new();
        for job in jobs {
            files.extend(job.join().map_err(|_| "a build thread panicked".to_string())??);
        }
        Ok::<_, String>(files)
    })?;
    let mut files: BTreeMap<String, Vec<u8>> = files.into_iter().collect();
    if args.only.is_none() {
        files.insert(TABLE.into(), include_table().into_bytes());
    }
    for (name, bytes) in &files {
        let path = out.join(name);
        std::fs::write(&path, bytes).map_err(|e| format!("write {}: {e}", path.display()))?;
    }
    if args.only.is_some() {
        for name in files.keys() {
            println!("{}", out.join(name).display());
        }
        return Ok(true);
    }

    let committed = root.join(KERNELS_DIR);
    if args.check {
        let differences = compare(&committed, &files)?;
        if differences.is_empty() {
            println!("build-ptx --check: the {} files in {KERNELS_DIR} match a fresh build", files.len());
            return Ok(true);
        }
        eprintln!("build-ptx --check: {KERNELS_DIR} differs from a fresh build (run `cargo xtask build-ptx` and commit):");
        for d in differences {
            eprintln!("  {d}");
        }
        eprintln!("fresh build: {}", out.display());
        return Ok(false);
    }
    write_committed(&committed, &files)?;
    for (name, bytes) in &files {
        println!("{KERNELS_DIR}/{name}: {} bytes", bytes.len());
    }
    Ok(true)
}

/// The toolchain channel pinned in rust-toolchain.toml.
fn pinned_channel(root: &Path) -> Res<String> {
    let file = root.join("rust-toolchain.toml");
    let text = std::fs::read_to_string(&file).map_err(|e| format!("read {}: {e}", file.display()))?;
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("channel"))
        .filter_map(|rest| rest.trim().strip_prefix('='))
        .map(|v| v.trim().trim_matches('"').to_string())
        .next()
        .ok_or_else(|| format!("no channel in {}", file.display()))
}

/// The pinned ptxas: `$BLOCKSPARSE_CUDA_TOOLS/nvidia/cuda_nvcc/bin/ptxas`, else the one
/// `tools/install-cuda-tools.sh` installs under `.tools/cuda`.
fn ptxas(root: &Path) -> Res<PathBuf> {
    let tools = std::env::var_os("BLOCKSPARSE_CUDA_TOOLS").filter(|d| !d.is_empty()).map(PathBuf::from);
    let path = tools.unwrap_or_else(|| root.join(".tools/cuda")).join("nvidia/cuda_nvcc/bin/ptxas");
    if path.is_file() { Ok(path) } else { Err(format!("{} not found: run tools/install-cuda-tools.sh first", path.display())) }
}

/// The PTX and cubin of every module of `arch`, named `<module>.<target>.{ptx,cubin}`.
fn build_arch(root: &Path, channel: &str, ptxas: &Path, target_dir: &Path, arch: Arch, only: Option<&str>) -> Res<Vec<(String, Vec<u8>)>> {
    let mut files = Vec::new();
    for module in arch.modules() {
        let stem = module.file_stem(arch);
        if only.is_some_and(|o| !stem.contains(o)) {
            continue;
        }
        let ptx = patch_entry_headers(build_module(root, channel, target_dir, arch, module)?)?;
        let ptx_path = target_dir.join(format!("{stem}.ptx"));
        let cubin_path = target_dir.join(format!("{stem}.cubin"));
        std::fs::write(&ptx_path, &ptx).map_err(|e| format!("write {}: {e}", ptx_path.display()))?;
        let out = Command::new(ptxas)
            .arg(format!("-arch={}", arch.target()))
            .arg("-v")
            .arg(&ptx_path)
            .arg("-o")
            .arg(&cubin_path)
            .output()
            .map_err(|e| format!("run {}: {e}", ptxas.display()))?;
        if !out.status.success() {
            return Err(format!(
                "ptxas -arch={} {} failed ({}):\n{}",
                arch.target(),
                ptx_path.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let report = String::from_utf8_lossy(&out.stderr);
        check_no_stack(&stem, &report)?;
        check_wgmma_pipelined(&stem, &report)?;
        let cubin = std::fs::read(&cubin_path).map_err(|e| format!("read {}: {e}", cubin_path.display()))?;
        println!("built {stem}: {} bytes of PTX, {} bytes of cubin", ptx.len(), cubin.len());
        files.push((format!("{stem}.ptx"), ptx.into_bytes()));
        files.push((format!("{stem}.cubin"), cubin));
    }
    Ok(files)
}

/// Every kernel must fit its registers: no stack frame, no spills (ptxas `-v` report). Besides
/// the cost, a spilling kernel that uses `setmaxnreg` was seen to lose its stack pointer: ptxas
/// reused R1 in the producer of an sm_90a kernel, whose spill stores then faulted (perf notes
/// v14).
fn check_no_stack(stem: &str, report: &str) -> Res<()> {
    let mut function = "?";
    let mut bad = Vec::new();
    let (mut entries, mut reported) = (0, 0);
    for line in report.lines() {
        if line.contains("Compiling entry function") {
            entries += 1;
        } else if let Some(rest) = line.split("Function properties for ").nth(1) {
            function = rest.trim();
        } else if line.contains("bytes stack frame") {
            reported += 1;
            if !line.trim_start().starts_with("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads") {
                bad.push(format!("{function}: {}", line.trim()));
            }
        }
    }
    // A report in another format must not pass for a clean one.
    if entries == 0 || reported < entries {
        return Err(format!("{stem}: ptxas -v reported {reported} stack frames for {entries} entry functions; cannot check for spills"));
    }
    if bad.is_empty() { Ok(()) } else { Err(format!("{stem}: kernels with a stack frame or spills:\n{}", bad.join("\n"))) }
}

/// No kernel may have its wgmma serialized: ptxas then waits for each one before the next
/// (its "Potential Performance Loss: wgmma.mma_async instructions are serialized" infos,
/// C7510–C7520), which it does for a whole kernel when one path writes or reads the
/// accumulators between two wgmma, or a wgmma sits behind a divergent branch (perf notes v14,
/// v24).
fn check_wgmma_pipelined(stem: &str, report: &str) -> Res<()> {
    let bad: Vec<&str> = report.lines().filter(|l| l.contains("wgmma.mma_async instructions are serialized")).map(str::trim).collect();
    if bad.is_empty() { Ok(()) } else { Err(format!("{stem}: kernels with serialized wgmma:\n{}", bad.join("\n"))) }
}

/// Whether an environment variable configures a cargo or rustc build (and so must not reach
/// the device build).
fn is_build_setting(name: &str) -> bool {
    (name.starts_with("CARGO_") && name != "CARGO_HOME")
        || name.starts_with("RUSTC")
        || name.starts_with("RUSTDOC")
        || name.starts_with("RUSTFLAGS")
        || name == "RUSTUP_TOOLCHAIN"
        || name == "CARGO"
}

/// `cargo rustc` on the device crate for one module: `--cfg kernels_split --cfg <Op> --cfg
/// <Family>` keeps its entries (kernels-gpu/src/lib.rs).
fn build_module(root: &Path, channel: &str, target_dir: &Path, arch: Arch, module: Module) -> Res<String> {
    let mut cmd = Command::new("rustup");
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_none_or(is_build_setting) {
            cmd.env_remove(&name);
        }
    }
    // Set and empty: these override what a config file (~/.cargo/config.toml) would add.
    cmd.env("RUSTFLAGS", "").env("RUSTC_WRAPPER", "").env("RUSTC_WORKSPACE_WRAPPER", "");
    cmd.current_dir(root.join("kernels-gpu"))
        .args(["run", channel, "cargo", "rustc", "--locked", "--release", "--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core"])
        .arg("--target-dir")
        .arg(target_dir)
        .args([
            "--",
            "--emit=asm",
            "-Zno-link",
            &format!("-Ctarget-cpu={}", arch.target()),
            // Every K-loop body and fragment loop must unroll completely, or the register
            // arrays indexed by them move to local memory.
            "-Cllvm-args=-unroll-threshold=5000",
            "--cfg",
            "kernels_split",
            "--cfg",
            &format!("{:?}", module.op),
            "--cfg",
            &format!("{:?}", module.family),
        ])
        // sm_80 is raised to PTX 7.8 for `movmatrix`; sm_90a's default (8.0) has it.
        .args(arch.ptx_isa().map(|isa| format!("-Ctarget-feature=+{isa}")));
    let status = cmd.status().map_err(|e| format!("run rustup (is it installed?): {e}"))?;
    if !status.success() {
        return Err(format!(
            "building kernels-gpu ({}) for {} failed ({status}); is the pinned toolchain installed (tools/install-toolchain.sh)?",
            module.name(),
            arch.target()
        ));
    }
    let s = target_dir.join("nvptx64-nvidia-cuda/release/deps/blocksparse_kernels.s");
    std::fs::read_to_string(&s).map_err(|e| format!("read {}: {e}", s.display()))
}

/// What rustc cannot express, written into the entry headers (rustc has no launch-bounds
/// attribute):
/// - Hopper kernels: the parameter block holds TMA tensor maps, which must be 64-byte aligned
///   (a Rust type of that alignment cannot be passed by value to an nvptx kernel); `.maxntid`,
///   the register cap `setmaxnreg` needs;
/// - portable kernels: `.maxntid` and `.minnctapersm` (`MmaTile::blocks_per_sm`), which hold
///   the registers to what that many resident blocks allow.
///
/// Entries that are not in `ptx` (other modules') are skipped.
fn patch_entry_headers(mut ptx: String) -> Res<String> {
    let close = |ptx: &str, at: usize, name: &str| {
        ptx[at..].find(')').map(|i| at + i + 1).ok_or_else(|| format!("the parameter list of {name} does not close"))
    };
    macro_rules! fix {
        ($name:ident, $op:ident, Hopper, $input:ident, $tile:literal, $output:ident) => {
            let name = stringify!($name);
            let threads = blocksparse::abi::WGMMA_TILES[$tile].threads();
            let param = format!(".param .align 8 .b8 {name}_param_0[");
            if let Some(at) = ptx.find(&param) {
                ptx.replace_range(at..at + param.len(), &format!(".param .align 64 .b8 {name}_param_0["));
                let end = close(&ptx, at, name)?;
                ptx.insert_str(end, &format!("\n.maxntid {threads}, 1, 1\n.minnctapersm 1"));
            }
        };
        ($name:ident, Fixup, Portable, $input:ident, $tile:literal, $output:ident) => {};
        ($name:ident, Densify, Portable, $input:ident, $tile:literal, $output:ident) => {};
        ($name:ident, Sparsify, Portable, $input:ident, $tile:literal, $output:ident) => {};
        ($name:ident, $op:ident, Portable, $input:ident, $tile:literal, $output:ident) => {
            let name = stringify!($name);
            let t = blocksparse::abi::MMA_TILES[$tile];
            let param = format!(".param .align 8 .b8 {name}_param_0[");
            if let Some(at) = ptx.find(&param) {
                let end = close(&ptx, at, name)?;
                ptx.insert_str(end, &format!("\n.maxntid {}, 1, 1\n.minnctapersm {}", t.threads(), t.blocks_per_sm));
            }
        };
    }
    blocksparse::abi::for_each_kernel!(fix);
    Ok(ptx)
}

/// `host/kernels/modules.rs`: one `Embedded` per module and architecture, in the order of
/// `Arch::ALL` and `Arch::modules`. `host/src/kernels.rs` includes it.
fn include_table() -> String {
    let mut s = String::from("// @generated by `cargo xtask build-ptx`: the modules host/src/kernels.rs embeds.\n[\n");
    for arch in Arch::ALL {
        for module in arch.modules() {
            let stem = module.file_stem(arch);
            s.push_str(&format!(
                "    Embedded {{\n        arch: Arch::{arch:?},\n        module: Module {{ op: OpKind::{:?}, family: KernelFamily::{:?} }},\n        \
                 ptx: include_str!(\"{stem}.ptx\"),\n        cubin: include_bytes!(\"{stem}.cubin\"),\n    }},\n",
                module.op, module.family
            ));
        }
    }
    s.push_str("]\n");
    s
}

/// The files of `dir` (names only; not recursive).
fn list(dir: &Path) -> Res<Vec<String>> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(Vec::new()) };
    let mut names = Vec::new();
    for e in entries {
        let e = e.map_err(|e| format!("list {}: {e}", dir.display()))?;
        names.push(e.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

/// One line per difference between `dir` and `files`.
fn compare(dir: &Path, files: &BTreeMap<String, Vec<u8>>) -> Res<Vec<String>> {
    let mut out = Vec::new();
    for (name, fresh) in files {
        let Ok(old) = std::fs::read(dir.join(name)) else {
            out.push(format!("{name}: missing from {KERNELS_DIR}"));
            continue;
        };
        if old == *fresh {
            continue;
        }
        let at = old.iter().zip(fresh).position(|(a, b)| a != b).unwrap_or(old.len().min(fresh.len()));
        let line = old[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        let place = if name.ends_with(".cubin") { format!("byte {at}") } else { format!("line {line}") };
        out.push(format!("{name}: differs (committed {} bytes, fresh {} bytes; first difference at {place})", old.len(), fresh.len()));
    }
    for name in list(dir)? {
        if !files.contains_key(&name) {
            out.push(format!("{name}: in {KERNELS_DIR} but not built (stale)"));
        }
    }
    Ok(out)
}

/// Replaces the contents of `dir` with `files`.
fn write_committed(dir: &Path, files: &BTreeMap<String, Vec<u8>>) -> Res<()> {
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    for name in list(dir)? {
        if !files.contains_key(&name) {
            let path = dir.join(&name);
            std::fs::remove_file(&path).map_err(|e| format!("remove {}: {e}", path.display()))?;
        }
    }
    for (name, bytes) in files {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| format!("write {}: {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{check_no_stack, check_wgmma_pipelined};

    const CLEAN: &str = "ptxas info    : Compiling entry function 'k' for 'sm_90a'
ptxas info    : Function properties for k
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 168 registers
";

    #[test]
    fn spills_and_unreadable_reports_fail() {
        assert!(check_no_stack("m", CLEAN).is_ok());
        let spill = CLEAN.replace("0 bytes stack frame, 0 bytes spill stores", "32 bytes stack frame, 28 bytes spill stores");
        assert!(check_no_stack("m", &spill).unwrap_err().contains("k: 32 bytes stack frame"));
        let frame_only = CLEAN.replace("0 bytes stack frame,", "48 bytes stack frame,");
        assert!(check_no_stack("m", &frame_only).is_err());
        assert!(check_no_stack("m", "").is_err(), "an empty report proves nothing");
        let unreported = CLEAN.lines().filter(|l| !l.contains("stack frame")).collect::<Vec<_>>().join("\n");
        assert!(check_no_stack("m", &unreported).is_err());
    }

    #[test]
    fn serialized_wgmma_fails() {
        assert!(check_wgmma_pipelined("m", CLEAN).is_ok());
        let serialized = format!(
            "{CLEAN}ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non wgmma \
             instructions defining accumulator registers of a wgmma between start and end of the pipeline stage in the function 'k'\n"
        );
        assert!(check_wgmma_pipelined("m", &serialized).unwrap_err().contains("C7515"));
    }
}
