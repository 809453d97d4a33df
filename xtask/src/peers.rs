//! `bench --peers`: PyTorch's Triton BSR kernels on the same cases, through python3
//! (`peers.py`). A missing python3 or torch is reported, not fatal.

use std::io::Write as _;
use std::process::{Command, Stdio};

use crate::bench::Row;

/// Fills the peer columns of the rows that carry a peer case.
pub fn run(rows: &mut [Row], cache: &str) {
    let cases: Vec<serde_json::Value> = rows.iter().filter_map(|r| r.peer_case.clone()).collect();
    if cases.is_empty() {
        return;
    }
    if let Some(dir) = std::path::Path::new(cache).parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let child = Command::new("python3")
        .args(["-c", include_str!("peers.py"), cache])
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!("peers: python3 not found, skipped");
        return;
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(serde_json::Value::Array(cases).to_string().as_bytes());
    }
    let Ok(out) = child.wait_with_output() else {
        eprintln!("peers: python3 failed to run, skipped");
        return;
    };
    if !out.status.success() {
        eprintln!("peers: the PyTorch script failed (torch/triton missing?), exit {:?}", out.status.code());
    }
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if v.get("ok").and_then(|x| x.as_bool()) != Some(true) {
            eprintln!(
                "peers: {}: {}",
                v.get("op").and_then(|e| e.as_str()).unwrap_or("?"),
                v.get("error").and_then(|e| e.as_str()).unwrap_or("failed")
            );
            continue;
        }
        // GPU time (CUDA graph) where the script could capture one, else its event timing.
        let num = |k: &str| v.get(k).and_then(|x| x.as_f64());
        let default = num("graph_tflops").or_else(|| num("tflops"));
        let tuned = num("tuned_graph_tflops").or_else(|| num("tuned_tflops"));
        let same = |r: &Row| {
            let Some(c) = &r.peer_case else { return false };
            ["op", "m", "n", "k", "block", "density", "dtype", "batch", "trans_a", "trans_b", "pattern"]
                .iter()
                .all(|f| c.get(*f) == v.get(*f))
        };
        for r in rows.iter_mut().filter(|r| same(r)) {
            r.peer_tflops = default;
            r.peer_tuned_tflops = tuned;
            r.ours_over_tuned = tuned.map(|t| r.tflops / t);
        }
    }
}
