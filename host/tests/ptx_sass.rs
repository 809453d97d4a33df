//! Static checks of the embedded kernel modules with NVIDIA's offline tools; no GPU involved.
//!
//! - `ptxas -v` assembles each module's PTX for its target: no errors, no unresolved externs,
//!   every generated entry point present, and no hot kernel (`spmm_mma_*`, and `spmm_wgmma_*`
//!   in sm_90a) with spills or a stack frame.
//! - `cuobjdump -sass` on the embedded sm_80 cubins (what devices of compute capability 8.x
//!   run): every portable kernel uses the tensor cores (`HMMA`), `ldmatrix` (`LDSM`) and
//!   `cp.async` (`LDGSTS`); on the embedded sm_90a cubins every Hopper kernel uses wgmma
//!   (`HGMMA`), TMA (`UTMALDG`) and mbarriers (`SYNCS`); none touches local memory (`LDL`/`STL`).
//!   (`cargo xtask build-ptx --check` checks that the cubins are ptxas's output for the PTX.)
//!
//! The tools come from `tools/install-cuda-tools.sh` (`<workspace>/.tools/cuda`) or from the
//! folder named by `BLOCKSPARSE_CUDA_TOOLS` (one holding the wheels' `nvidia/` tree). Without
//! them the tests print a notice and pass, unless `CI` is set, where they fail.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use blocksparse::abi::KernelFamily;
use blocksparse::kernels::{self, Arch, Module};

const TOOLS_ENV: &str = "BLOCKSPARSE_CUDA_TOOLS";

// ---------------------------------------------------------------------------------------------
// Locating the tools
// ---------------------------------------------------------------------------------------------

struct Tools {
    ptxas: PathBuf,
    cuobjdump: PathBuf,
}

impl Tools {
    /// The tools inside `root`, laid out as `pip install --target root` leaves them.
    fn find_in(root: &Path) -> Option<Tools> {
        let ptxas = root.join("nvidia/cuda_nvcc/bin/ptxas");
        let cuobjdump =
            ["nvidia/cu13/bin/cuobjdump", "nvidia/cuda_cuobjdump/bin/cuobjdump"].iter().map(|p| root.join(p)).find(|p| p.is_file())?;
        ptxas.is_file().then_some(Tools { ptxas, cuobjdump })
    }

    /// cuobjdump runs nvdisasm, which sits beside it: put that folder first on PATH.
    fn cuobjdump_command(&self) -> Command {
        let mut cmd = Command::new(&self.cuobjdump);
        if let Some(dir) = self.cuobjdump.parent() {
            let mut paths = vec![dir.to_path_buf()];
            if let Some(old) = std::env::var_os("PATH") {
                paths.extend(std::env::split_paths(&old));
            }
            if let Ok(joined) = std::env::join_paths(paths) {
                cmd.env("PATH", joined);
            }
        }
        cmd
    }
}

fn in_ci() -> bool {
    match std::env::var("CI") {
        Ok(v) => !(v.is_empty() || v == "0" || v.eq_ignore_ascii_case("false")),
        Err(_) => false,
    }
}

/// The tools, or `None` (after a notice) when they are not installed and this is not CI.
fn tools(test: &str) -> Option<&'static Tools> {
    static TOOLS: OnceLock<Option<Tools>> = OnceLock::new();
    let found = TOOLS.get_or_init(|| {
        if let Some(dir) = std::env::var_os(TOOLS_ENV).filter(|d| !d.is_empty()) {
            let dir = PathBuf::from(dir);
            // Named explicitly: a wrong folder is an error, never a silent skip.
            return Some(Tools::find_in(&dir).unwrap_or_else(|| {
                panic!(
                    "{TOOLS_ENV}={} holds no nvidia/cuda_nvcc/bin/ptxas and nvidia/cu13/bin/cuobjdump; \
                     run tools/install-cuda-tools.sh and point {TOOLS_ENV} at <repo>/.tools/cuda",
                    dir.display()
                )
            }));
        }
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let default = manifest.parent().unwrap_or(manifest).join(".tools/cuda");
        if let Some(t) = Tools::find_in(&default) {
            return Some(t);
        }
        if in_ci() {
            panic!(
                "CUDA tools (ptxas, cuobjdump) not found in {} and {TOOLS_ENV} is not set; \
                 run tools/install-cuda-tools.sh first",
                default.display()
            );
        }
        None
    });
    if found.is_none() {
        eprintln!(
            "SKIPPED {test}: ptxas/cuobjdump not installed; run tools/install-cuda-tools.sh \
             (or set {TOOLS_ENV}) to check the PTX and SASS"
        );
    }
    found.as_ref()
}

// ---------------------------------------------------------------------------------------------
// Temporary files and tool runs
// ---------------------------------------------------------------------------------------------

/// A uniquely named file in the system temp folder, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(stem: &str, ext: &str) -> TempFile {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("blocksparse-{stem}-{}-{nanos}-{n}.{ext}", std::process::id());
        TempFile(std::env::temp_dir().join(name))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn run(mut cmd: Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("could not run {what}: {e}"));
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{what} failed ({}):\n{text}", out.status);
    text
}

/// `ptxas -v`'s log for `ptx`, assembled for `arch`.
fn assemble(tools: &Tools, arch: &str, ptx: &str) -> String {
    let src = TempFile::new(arch, "ptx");
    let dst = TempFile::new(arch, "cubin");
    std::fs::write(&src.0, ptx).unwrap_or_else(|e| panic!("write {}: {e}", src.0.display()));
    let mut cmd = Command::new(&tools.ptxas);
    cmd.arg(format!("-arch={arch}")).arg("-v").arg(&src.0).arg("-o").arg(&dst.0);
    let log = run(cmd, &format!("ptxas -arch={arch} -v"));
    let problems: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("Unresolved extern function") || l.contains("error   :") || l.starts_with("ptxas fatal"))
        .collect();
    assert!(problems.is_empty(), "ptxas -arch={arch} reported:\n{}", problems.join("\n"));
    for warning in log.lines().filter(|l| l.contains("warning")) {
        eprintln!("ptxas -arch={arch}: {warning}");
    }
    log
}

/// The embedded modules of `arch`.
fn modules(arch: Arch) -> Vec<&'static kernels::Embedded> {
    let v: Vec<_> =
        arch.modules().map(|m| kernels::embedded(arch, m).unwrap_or_else(|| panic!("{} not embedded", m.file_stem(arch)))).collect();
    assert!(!v.is_empty());
    v
}

// ---------------------------------------------------------------------------------------------
// Expected entry points (from the same lists that generate them)
// ---------------------------------------------------------------------------------------------

fn entries_where(f: impl Fn(&kernels::KernelKey) -> bool) -> Vec<&'static str> {
    kernels::entries().into_iter().filter(|e| f(&e.key)).map(|e| e.name).collect()
}

/// The portable main kernels (every op).
fn mma_entries() -> Vec<&'static str> {
    entries_where(|k| k.family == KernelFamily::Portable && k.op.tensor_core())
}

/// The Hopper main kernels (every op).
fn wgmma_entries() -> Vec<&'static str> {
    entries_where(|k| k.family == KernelFamily::Hopper)
}

/// The helper kernels (split-K fix-up, densify, sparsify).
fn helper_entries() -> Vec<&'static str> {
    entries_where(|k| !k.op.tensor_core())
}

// ---------------------------------------------------------------------------------------------
// ptxas -v
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Default)]
struct Resources {
    stack_frame: Option<u64>,
    spill_stores: Option<u64>,
    spill_loads: Option<u64>,
    registers: Option<u64>,
}

struct PtxasReport {
    /// Names from "Compiling entry function 'NAME'".
    entries: BTreeSet<String>,
    /// Entry and non-entry functions from "Function properties for NAME".
    functions: BTreeMap<String, Resources>,
}

/// Parses the per-function blocks of `ptxas -v`:
/// ```text
/// ptxas info    : Compiling entry function 'NAME' for 'sm_80'
/// ptxas info    : Function properties for NAME
///     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
/// ptxas info    : Used 126 registers, used 1 barriers, 424 bytes cmem[0]
/// ```
fn parse_ptxas(log: &str) -> PtxasReport {
    let mut entries = BTreeSet::new();
    let mut functions: BTreeMap<String, Resources> = BTreeMap::new();
    let mut current: Option<String> = None;
    let leading_number = |s: &str| s.split_whitespace().next().and_then(|n| n.parse::<u64>().ok());
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default().to_string();
            entries.insert(name.clone());
            functions.entry(name.clone()).or_default();
            current = Some(name);
        } else if let Some(rest) = line.split("Function properties for ").nth(1) {
            let name = rest.trim().to_string();
            functions.entry(name.clone()).or_default();
            current = Some(name);
        } else if line.contains("bytes stack frame") {
            let Some(res) = current.as_ref().and_then(|n| functions.get_mut(n)) else { continue };
            for part in line.split(',') {
                let part = part.trim();
                let value = leading_number(part);
                if part.ends_with("bytes stack frame") {
                    res.stack_frame = value;
                } else if part.ends_with("bytes spill stores") {
                    res.spill_stores = value;
                } else if part.ends_with("bytes spill loads") {
                    res.spill_loads = value;
                }
            }
        } else if let Some(rest) = line.split("Used ").nth(1)
            && let Some(res) = current.as_ref().and_then(|n| functions.get_mut(n))
            && rest.split_whitespace().nth(1).is_some_and(|w| w.starts_with("register"))
        {
            res.registers = leading_number(rest);
        }
    }
    PtxasReport { entries, functions }
}

/// The hot kernels of a module: the portable ones everywhere, the Hopper ones in sm_90a.
fn hot_entries(arch: &str) -> Vec<&'static str> {
    let mut v = mma_entries();
    if arch == "sm_90a" {
        v.extend(wgmma_entries());
    }
    v
}

fn check_arch(test: &str, arch: Arch) {
    let Some(tools) = tools(test) else { return };
    let target = arch.target();
    let mut report = PtxasReport { entries: BTreeSet::new(), functions: BTreeMap::new() };
    for e in modules(arch) {
        let stem = e.module.file_stem(arch);
        assert!(e.ptx.lines().any(|l| l.trim() == format!(".target {target}")), "{stem} does not say `.target {target}`");
        let r = parse_ptxas(&assemble(tools, target, e.ptx));
        // Each module holds its own entries only (the non-entry functions, core's panic paths,
        // repeat across modules).
        let wanted: BTreeSet<String> = entries_where(|k| Module::of(k) == e.module).into_iter().map(String::from).collect();
        assert_eq!(r.entries, wanted, "{stem}: entries");
        report.entries.extend(r.entries);
        report.functions.extend(r.functions);
    }

    let hot = hot_entries(target);
    let helpers = helper_entries();
    assert!(!hot.is_empty() && !helpers.is_empty(), "the kernel lists in blocksparse_abi are empty");
    let missing: Vec<&str> = hot.iter().chain(&helpers).copied().filter(|n| !report.entries.contains(*n)).collect();
    assert!(missing.is_empty(), "{target}: entry points missing from the ptxas output: {missing:?}\nfound: {:?}", report.entries);

    let mut problems = Vec::new();
    let mut table = Vec::new();
    for name in hot.iter().copied() {
        let r = &report.functions[name];
        let (Some(stack), Some(stores), Some(loads)) = (r.stack_frame, r.spill_stores, r.spill_loads) else {
            problems.push(format!("{name}: no stack/spill line in the ptxas output ({r:?})"));
            continue;
        };
        if stack != 0 || stores != 0 || loads != 0 {
            problems.push(format!("{name}: {stack} bytes stack frame, {stores} bytes spill stores, {loads} bytes spill loads"));
        }
        table.push(format!("  {name:28} {:>4} registers", r.registers.map_or("?".into(), |n| n.to_string())));
    }
    println!("ptxas -arch={target}:\n{}", table.join("\n"));
    assert!(problems.is_empty(), "{target}: main kernels must not spill or use a stack frame:\n{}", problems.join("\n"));
}

#[test]
fn ptxas_sm80_assembles_without_spills() {
    check_arch("ptxas_sm80_assembles_without_spills", Arch::Sm80);
}

#[test]
fn ptxas_sm90a_assembles_without_spills() {
    check_arch("ptxas_sm90a_assembles_without_spills", Arch::Sm90a);
}

// ---------------------------------------------------------------------------------------------
// cuobjdump -sass
// ---------------------------------------------------------------------------------------------

/// Splits a `cuobjdump -sass` listing into functions ("Function : NAME") and the base opcode
/// of each instruction (`@!P0 LDGSTS.E.BYPASS.128 ...` gives `LDGSTS`).
fn sass_opcodes(listing: &str) -> BTreeMap<String, Vec<String>> {
    let mut functions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in listing.lines() {
        let trimmed = line.trim();
        if let Some(name) = trimmed.strip_prefix("Function :") {
            let name = name.trim().to_string();
            functions.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        let Some(ops) = current.as_ref().and_then(|n| functions.get_mut(n)) else { continue };
        // Instruction lines: `/*0050*/   OPCODE operands ;   /* encoding */`.
        if !trimmed.starts_with("/*") {
            continue;
        }
        let Some((_, rest)) = trimmed.split_once("*/") else { continue };
        let opcode = rest.split_whitespace().find(|t| !t.starts_with('@') && *t != "{" && *t != "}").filter(|t| !t.starts_with("/*"));
        if let Some(op) = opcode {
            ops.push(op.split('.').next().unwrap_or(op).trim_end_matches(';').to_string());
        }
    }
    functions
}

/// Disassembles `arch`'s embedded cubins and checks that every kernel in `entries` uses each
/// of `required` and never local memory.
fn check_sass(test: &str, arch: Arch, entries: &[&str], required: &[&str]) {
    let Some(tools) = tools(test) else { return };
    let mut listing = String::new();
    for e in modules(arch) {
        let cubin = TempFile::new(&format!("{}-sass", e.module.file_stem(arch)), "cubin");
        std::fs::write(&cubin.0, e.cubin).unwrap_or_else(|err| panic!("write {}: {err}", cubin.0.display()));
        let mut cmd = tools.cuobjdump_command();
        cmd.arg("-sass").arg(&cubin.0);
        listing.push_str(&run(cmd, "cuobjdump -sass"));
    }
    let functions = sass_opcodes(&listing);

    let mut problems = Vec::new();
    for &name in entries {
        let Some(ops) = functions.get(name) else {
            problems.push(format!("{name}: not in the SASS listing"));
            continue;
        };
        let count = |op: &str| ops.iter().filter(|o| *o == op).count();
        for &op in required {
            if count(op) == 0 {
                problems.push(format!("{name}: no {op}"));
            }
        }
        for forbidden in ["LDL", "STL"] {
            let n = count(forbidden);
            if n != 0 {
                problems.push(format!("{name}: {n} {forbidden} (local memory)"));
            }
        }
    }
    assert!(problems.is_empty(), "{} SASS of the hot kernels:\n{}", arch.target(), problems.join("\n"));
}

#[test]
fn sass_sm80_main_kernels_use_tensor_cores_and_no_local_memory() {
    check_sass("sass_sm80_main_kernels_use_tensor_cores_and_no_local_memory", Arch::Sm80, &mma_entries(), &["HMMA", "LDSM", "LDGSTS"]);
}

#[test]
fn sass_sm90a_hopper_kernels_use_wgmma_and_tma() {
    check_sass("sass_sm90a_hopper_kernels_use_wgmma_and_tma", Arch::Sm90a, &wgmma_entries(), &["HGMMA", "UTMALDG", "SYNCS"]);
}

// ---------------------------------------------------------------------------------------------
// The parsers themselves (run without the tools)
// ---------------------------------------------------------------------------------------------

#[test]
fn parsers_read_tool_output() {
    let log = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'spmm_mma_f16_b64_f32' for 'sm_80'
ptxas info    : Function properties for spmm_mma_f16_b64_f32
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 126 registers, used 1 barriers, 424 bytes cmem[0]
ptxas info    : Compile time = 130.496 ms
ptxas info    : Function properties for _RNvNtCs_4core9panicking9panic_fmt
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
";
    let r = parse_ptxas(log);
    assert_eq!(r.entries.iter().collect::<Vec<_>>(), ["spmm_mma_f16_b64_f32"]);
    let f = &r.functions["spmm_mma_f16_b64_f32"];
    assert_eq!((f.stack_frame, f.spill_stores, f.spill_loads, f.registers), (Some(8), Some(4), Some(12), Some(126)));
    assert_eq!(r.functions["_RNvNtCs_4core9panicking9panic_fmt"].spill_loads, Some(0));

    let sass = "\
\tcode for sm_80
\t\tFunction : spmm_mma_f16_b16_f16
        /*0000*/                   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;   /* 0x00000a00ff017624 */
                                                                             /* 0x000fe400078e00ff */
        /*0010*/              @!P0 LDGSTS.E.BYPASS.128 [R3], [R4.64] ;       /* 0x0000000004037fae */
        /*0020*/                   STL [R1], R2 ;                           /* 0x0000000201007387 */
\t\t..........
\t\tFunction : spmm_fixup_f16
        /*0000*/                   HMMA.16816.F32 R4, R8, R12, R4 ;          /* 0x0000000c0804723c */
";
    let f = sass_opcodes(sass);
    assert_eq!(f["spmm_mma_f16_b16_f16"], ["IMAD", "LDGSTS", "STL"]);
    assert_eq!(f["spmm_fixup_f16"], ["HMMA"]);
}
