//! Project tasks that need a GPU:
//! - `cargo xtask validate`: randomized correctness sweep against the f64 CPU reference.
//! - `cargo xtask bench`: CUDA-event timings of the BSR product and of dense cuBLAS, same run,
//!   and the cold start (`coldstart.rs`).
//!
//! And one that needs no GPU:
//! - `cargo xtask build-ptx [--check]`: the kernel modules committed in `host/kernels/`.

use std::process::ExitCode;

use blocksparse::{Context, KernelPath};
use clap::{Parser, Subcommand};

mod bench;
mod build_ptx;
mod coldstart;
mod peers;
mod streams;
mod validate;

#[derive(Parser)]
#[command(about = "blocksparse tasks (GPU)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Randomized correctness sweep against the f64 CPU reference.
    Validate(validate::Args),
    /// Time the BSR product against dense cuBLAS on the same shapes.
    Bench(bench::Args),
    /// Build the kernel modules (PTX and cubins) into host/kernels/ (no GPU needed).
    BuildPtx(build_ptx::Args),
    /// The timed child process of bench's cold-start measurement.
    #[command(hide = true)]
    ColdStartChild(coldstart::ChildArgs),
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
