//! `bench --peers`: PyTorch's Triton BSR kernels on the same cases, and its CSR × CSR on the
//! SpGEMM cases, through python3 (`peers.py`). A missing python3 or torch is reported, not
//! fatal.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::bench::{Row, SpgemmRow};

/// Fills the peer columns of the rows that carry a peer case. `warmup_ms`: the least warm-up
/// of each timing (the bench's `--warmup-ms`, so that the peer runs at the clocks ours ran at).
pub fn run(rows: &mut [Row], cache: &str, warmup_ms: u64) {
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
        .env("PEERS_WARMUP_MS", warmup_ms.to_string())
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

/// Fills the PyTorch columns of the SpGEMM rows: CSR × CSR (`torch.sparse.mm`) on each case's
/// patterns, one python3 per case (so that a case that runs too long, runs out of memory or
/// breaks the CUDA context is killed or fails alone), killed after `timeout_s`. A case without
/// a time says why in `peer_error`; nothing is ever filled in by estimate.
pub fn run_spgemm(rows: &mut [SpgemmRow], timeout_s: u64, warmup_ms: u64) {
    let mut cases: Vec<serde_json::Value> = Vec::new();
    for c in rows.iter().filter_map(|r| r.peer_case.as_ref()) {
        if !cases.iter().any(|o| o.get("id") == c.get("id")) {
            cases.push(c.clone());
        }
    }
    for case in cases {
        let id = case.get("id").and_then(|v| v.as_str()).unwrap_or("?").to_string();
        eprintln!("peers: spgemm {id} (at most {timeout_s} s)");
        let result = run_one(&case, timeout_s, warmup_ms);
        let expect_nnz = case.get("expect_nnz_c").and_then(|v| v.as_u64());
        for r in rows.iter_mut().filter(|r| r.peer_case.as_ref().and_then(|c| c.get("id")) == case.get("id")) {
            match &result {
                Err(e) => r.peer_error = Some(e.clone()),
                Ok(v) => fill(r, v, expect_nnz),
            }
        }
    }
}

/// Copies one result line of the script into `r`.
fn fill(r: &mut SpgemmRow, v: &serde_json::Value, expect_nnz: Option<u64>) {
    let s = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    let u = |k: &str| v.get(k).and_then(|x| x.as_u64()).map(|x| x as usize);
    r.peer_note = s("note");
    r.peer_dtype = s("torch_dtype");
    r.peer_layout = s("layout");
    r.peer_reps = u("reps");
    r.peer_nnz_c = u("nnz_c");
    if v.get("ok").and_then(|x| x.as_bool()) != Some(true) {
        r.peer_error = Some(s("error").unwrap_or_else(|| "failed (no reason given)".into()));
        return;
    }
    let Some(ms) = v.get("ms").and_then(|x| x.as_f64()).filter(|ms| *ms > 0.0) else {
        r.peer_error = Some("the script reported no time".into());
        return;
    };
    // The same patterns on both sides: PyTorch's result has the product's non-zeros (cuSPARSE
    // keeps structural zeros, and the values are never zero).
    if let (Some(got), Some(want)) = (r.peer_nnz_c, expect_nnz)
        && got as u64 != want
    {
        r.peer_error = Some(format!(
            "PyTorch's result has {got} non-zeros, the product pattern {want}: not the same patterns, time {ms:.3} ms not used"
        ));
        return;
    }
    r.peer_ms = Some(ms);
    r.ours_over_peer = Some(ms / r.ms);
}

/// Runs the script on one case in its own python3, killed after `timeout_s`; its result line.
fn run_one(case: &serde_json::Value, timeout_s: u64, warmup_ms: u64) -> Result<serde_json::Value, String> {
    let mut child = Command::new("python3")
        .args(["-c", include_str!("peers.py"), ""])
        .env("PYTHONUNBUFFERED", "1")
        .env("PEERS_WARMUP_MS", warmup_ms.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("python3 not found ({e})"))?;
    // Write stdin and read stdout beside the wait: neither pipe may block it past the deadline.
    let input = serde_json::Value::Array(vec![case.clone()]).to_string();
    if let Some(mut stdin) = child.stdin.take() {
        std::thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
    }
    let mut stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(out) = stdout.as_mut() {
            let _ = std::io::Read::read_to_string(out, &mut s);
        }
        s
    });
    let deadline = Instant::now() + Duration::from_secs(timeout_s);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            Ok(None) => {
                // Our own child, by its handle.
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Err(e) => return Err(format!("waiting for python3: {e}")),
        }
    };
    let out = reader.join().unwrap_or_default();
    let line = out.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).next_back();
    match (status, line) {
        (_, Some(v)) => Ok(v),
        (None, None) => Err(format!("timed out after {timeout_s} s (killed; --peer-timeout)")),
        (Some(st), None) => Err(format!("the PyTorch script ended without a result (exit {:?}; torch missing?)", st.code())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> SpgemmRow {
        SpgemmRow { ms: 2.0, dtype: "f16".into(), ..SpgemmRow::default() }
    }

    #[test]
    fn fill_takes_a_time_only_from_a_good_result() {
        let mut r = row();
        let ok = serde_json::json!({"ok": true, "ms": 10.0, "reps": 5, "torch_dtype": "f16", "layout": "csr", "nnz_c": 4096});
        fill(&mut r, &ok, Some(4096));
        assert_eq!((r.peer_ms, r.ours_over_peer, r.peer_reps), (Some(10.0), Some(5.0), Some(5)));
        assert!(r.peer_error.is_none());

        let mut r = row();
        fill(&mut r, &ok, Some(8192));
        assert!(r.peer_ms.is_none() && r.peer_error.as_deref().is_some_and(|e| e.contains("not the same patterns")));

        let mut r = row();
        fill(&mut r, &serde_json::json!({"ok": false, "error": "OutOfMemoryError: CUDA out of memory", "ms": null}), Some(1));
        assert!(r.peer_ms.is_none() && r.ours_over_peer.is_none());
        assert_eq!(r.peer_error.as_deref(), Some("OutOfMemoryError: CUDA out of memory"));
    }

    #[test]
    fn a_missing_torch_is_a_reason_not_a_time() {
        // Here (no GPU, usually no torch) the script cannot run: an error either way, never a time.
        let case = serde_json::json!({"op": "spgemm", "id": "t", "m": 4, "n": 4, "k": 4, "block": 2, "dtype": "f16",
            "density": 0.5, "mask_a": "1001", "mask_b": "0110", "expect_nnz_c": 16});
        let mut rows = vec![SpgemmRow { peer_case: Some(case), ..row() }];
        if std::process::Command::new("python3")
            .args(["-c", "import torch; assert torch.cuda.is_available()"])
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return; // a GPU with torch: this is not the place to time it
        }
        run_spgemm(&mut rows, 60, 25);
        assert!(rows[0].peer_ms.is_none());
        assert!(rows[0].peer_error.is_some(), "{:?}", rows[0]);
    }
}
