//! Project tasks that need a GPU:
//! - `cargo xtask validate`: randomized correctness sweep against the f64 CPU reference.
//! - `cargo xtask bench`: CUDA-event timings of the BSR product and of dense cuBLAS, same run,
//!   and the cold start (`coldstart.rs`).
//!
//! And those that need no GPU:
//! - `cargo xtask build-ptx [--check]`: the kernel modules committed in `host/kernels/`;
//! - `cargo xtask plot <json>...`: the charts of bench results (`plot.rs`), beside each JSON.

use std::process::ExitCode;

use blocksparse::{Context, DType, KernelPath};
use clap::{Parser, Subcommand, ValueEnum};

mod bench;
mod build_ptx;
mod coldstart;
mod peers;
mod plot;
mod streams;
mod validate;

#[derive(Parser)]
#[command(about = "blocksparse tasks (GPU)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
// Parsed once per run: the size of the largest variant (the bench's options) costs nothing.
#[allow(clippy::large_enum_variant)]
enum Cmd {
    /// Randomized correctness sweep against the f64 CPU reference.
    Validate(validate::Args),
    /// Time the BSR product against dense cuBLAS on the same shapes.
    Bench(bench::Args),
    /// Build the kernel modules (PTX and cubins) into host/kernels/ (no GPU needed).
    BuildPtx(build_ptx::Args),
    /// Draw the charts (SVG) of bench JSON files, beside each file (no GPU needed).
    Plot(plot::Args),
    /// The timed child process of bench's cold-start measurement.
    #[command(hide = true)]
    ColdStartChild(coldstart::ChildArgs),
}

/// `--path`: which kernels a context runs (clap's side of [`KernelPath`], which knows no clap).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PathArg {
    /// The best module for the device: sm_90a on compute capability 9.0, sm_80 elsewhere.
    Auto,
    /// The portable sm_80 module (mma.sync), any device of compute capability 8.0 or newer.
    Portable,
    /// The Hopper sm_90a module (compute capability 9.0 only).
    Hopper,
}

impl From<PathArg> for KernelPath {
    fn from(p: PathArg) -> Self {
        match p {
            PathArg::Auto => KernelPath::Auto,
            PathArg::Portable => KernelPath::Portable,
            PathArg::Hopper => KernelPath::Hopper,
        }
    }
}

/// `--dtypes`: the input element types bench times (clap's side of [`DType`]; f32 inputs are
/// not supported, so not offered).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DTypeArg {
    /// IEEE half precision.
    F16,
    /// bfloat16.
    Bf16,
}

impl From<DTypeArg> for DType {
    fn from(d: DTypeArg) -> Self {
        match d {
            DTypeArg::F16 => DType::F16,
            DTypeArg::Bf16 => DType::Bf16,
        }
    }
}

/// How bench and validate name an SpMM plan's kernel: its tile (e.g. `Hopper128k32`), then
/// `/c` when it streams A re-blocked into 128×128 blocks, `/m` when it merges `m` block rows
/// per tile, `r` when reordered, `s` when its consumers skip the stages their rows lack; then
/// ` gG`, its N-tile group; a split plan then `+tile:R`, its unmerged part's tile and stream
/// rows.
pub fn plan_label(plan: &blocksparse::SpmmPlan) -> String {
    let merged = plan.merged_rows();
    format!(
        "{}{}{}{}{} g{}{}",
        plan.tile(),
        if plan.coarse_a() { "/c" } else { "" },
        if merged > 1 { format!("/{merged}") } else { String::new() },
        if plan.reordered() { "r" } else { "" },
        if plan.skips_absent() { "s" } else { "" },
        plan.n_tile_group(),
        plan.split().map_or(String::new(), |(tile, rows)| format!("+{tile}:{rows}"))
    )
}

/// Opens the GPU or explains why not. The message "no CUDA device" is what scripts look for.
pub fn open_context(path: KernelPath) -> Result<Context, String> {
    if !blocksparse::driver_present() {
        return Err("no CUDA device: the NVIDIA driver library (libcuda) could not be loaded".into());
    }
    Context::with_path(0, path).map_err(|e| match e {
        blocksparse::Error::NoDevice(why) => format!("no CUDA device: {why}"),
        other => format!("cannot open the GPU: {other}"),
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Validate(a) => validate::run(a),
        Cmd::Bench(a) => bench::run(a),
        Cmd::BuildPtx(a) => build_ptx::run(a),
        Cmd::Plot(a) => plot::run(a),
        Cmd::ColdStartChild(a) => coldstart::child(a),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
