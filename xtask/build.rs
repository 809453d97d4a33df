//! Embeds the commit the xtask binary is built from as `BLOCKSPARSE_BUILD_COMMIT`: the short
//! hash of `git rev-parse --short HEAD`, with "-dirty" when `git status --porcelain` lists
//! changes; without git (a copy of the tree with no `.git`) the value of `$BLOCKSPARSE_COMMIT`,
//! else "unknown". Never fails the build.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs git in `dir` and returns its trimmed stdout when it succeeds.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=BLOCKSPARSE_COMMIT");
    let commit = match git(&manifest, &["rev-parse", "--short", "HEAD"]).filter(|h| !h.is_empty()) {
        Some(head) => {
            // Run again when HEAD moves, the index changes, or a source file of the workspace
            // changes (the dirty flag), and only for paths that exist (a missing one would make
            // the script run on every build).
            let mut watch: Vec<PathBuf> = Vec::new();
            if let Some(dir) = git(&manifest, &["rev-parse", "--absolute-git-dir"]) {
                let dir = PathBuf::from(dir);
                watch.extend(["HEAD", "index", "packed-refs"].iter().map(|f| dir.join(f)));
                if let Some(r) = git(&manifest, &["symbolic-ref", "-q", "HEAD"]) {
                    watch.push(dir.join(r));
                }
            }
            if let Some(root) = manifest.parent() {
                watch.extend(
                    ["host", "abi", "testkit", "benches", "kernels-gpu/src", "xtask/src", "Cargo.toml"].iter().map(|d| root.join(d)),
                );
            }
            for p in watch.iter().filter(|p| p.exists()) {
                println!("cargo:rerun-if-changed={}", p.display());
            }
            let dirty = git(&manifest, &["status", "--porcelain"]).is_some_and(|s| !s.is_empty());
            if dirty { format!("{head}-dirty") } else { head }
        }
        None => std::env::var("BLOCKSPARSE_COMMIT").ok().filter(|c| !c.is_empty()).unwrap_or_else(|| "unknown".into()),
    };
    println!("cargo:rustc-env=BLOCKSPARSE_BUILD_COMMIT={commit}");
}
