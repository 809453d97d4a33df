"""PyTorch's block-sparse Triton kernels (and its CSR x CSR product), timed as peers for
`cargo xtask bench --peers`.

Protocol
--------
Run as ``python3 -c <this script> [CACHE_PATH]``.

stdin:  one JSON list of cases (a single object is taken as a list of one). Fields:
          op        "spmm" | "sddmm" | "spgemm" (see below)           (default "spmm")
          m, n, k   problem sizes; each must be a multiple of `block`
          block     square block size b (Triton wants a power of two >= 16)
          density   fraction of b x b blocks kept: mask = rand(grid) < density
          dtype     "f16" | "bf16"
          batch     >= 1                                               (default 1)
          trans_a   bool                                               (default false)
          mask      row-major '0'/'1' string over the (m/b, k/b) block grid: use this pattern
                    (spmm without trans_a) instead of a random one at `density`; `pattern`
                    names it (default: none)
          trans_b   bool                                               (default false)
          tune      bool: also time with meta-parameters tuned here    (default false)
stdout: one JSON object per case, one line each, flushed as soon as the case is done:
        the case's fields (defaults filled in) plus
          ok            bool
          ms, tflops    default (untuned) kernel: median ms of triton.testing.do_bench
                        (warmup=PEERS_WARMUP_MS, at least 25, rep=100, return_mode="median"),
                        and effective TFLOP/s
          tuned_ms, tuned_tflops, meta
                        the same with the tuned meta dict; null when not tuned
          graph_ms, graph_tflops, tuned_graph_ms, tuned_graph_tflops
                        the same calls timed by triton.testing.do_bench_cudagraph (rep=100,
                        median): many calls captured in one CUDA graph, so Python's per-call
                        cost drops out and what is left is GPU time. Extra to the brief, and
                        worth reading: on H100 one bsr_dense_mm call costs 0.35-0.6 ms of CPU
                        time (argument checks, prepare_inputs, tiling views, launch), about
                        as much as the kernel at 8192^3 b64 density 0.1 and far more below,
                        so `ms` is mostly host overhead on small and medium shapes (4096^3,
                        b64, density 0.1: do_bench 0.30-0.84 ms across runs, graph 0.063 ms).
                        null (with a note) where capture fails.
          nnzb          stored blocks per batch
          note          optional string (how the peer was run, why something is null)
          error         when ok is false (at most 300 characters)
        Nothing else is written to stdout: the JSON descriptor is kept aside and fd 1 is
        pointed at stderr before torch is imported, so stray prints (Python or C) land on
        stderr, where progress messages go too.
        spgemm cases (`bench --spgemm --peers`, one case per process): also
          mask_a, mask_b  row-major '0'/'1' strings over the (m/b, k/b) and (k/b, n/b) block
                    grids of A and B (required; `density` is A's, for the record only)
          reps      timed calls at most                                (default 50)
          id        the caller's key, echoed
        and their results: ms (median of CUDA-event-timed calls), reps, warmup, first_call_ms,
        torch_dtype ("f16" | "bf16" | "f32": the dtype the product ran in), layout ("csr"),
        index_dtype, call, nnz_a, nnz_b, nnz_c (non-zeros of PyTorch's result), torch, cuda;
        the masks are not echoed (mask_a_sha1, mask_b_sha1 instead).
CACHE_PATH (optional): a JSON file of tuned meta dicts reused across runs, read if present and
        rewritten (atomically) after every new tuning. Keys: GPU name, op, shapes, block, dtype,
        density, trans flags and batch.

What is timed
-------------
spmm:  C = op(A) @ op(B) with torch.sparse._triton_ops.bsr_dense_mm(A_bsr, B, out=C).
       A_bsr is a BSR of op(A), shape (m, k). With trans_a the stored A is (k, m); bsr_dense_mm
       needs a BSR operand, so the transposed matrix is formed densely and converted with
       to_sparse_bsr before timing (the peer gets its own copy; said in "note"). With trans_b,
       B is stored (n, k) contiguous and passed as the view B.mT. batch > 1: a batched BSR,
       values (batch, nnzb, b, b), every batch sharing one block pattern, times (batch, k, n).
       flops = 2 * nnzb * b * b * n * batch.
       Tuned: torch.sparse._triton_ops_meta.tune_bsr_dense_addmm(input, bsr, dense, *, beta,
       alpha, out, store, verbose, force, ...) -> meta dict with keys GROUP_SIZE_ROW, SPLIT_N,
       num_stages, num_warps. bsr_dense_mm takes a `meta=` keyword but does NOT forward it (its
       body is `return bsr_dense_addmm(out, bsr, dense, alpha=1, beta=0, out=out)`), so the
       tuned time calls what bsr_dense_mm calls, with the meta:
       bsr_dense_addmm(C, A_bsr, B, beta=0, alpha=1, out=C, meta=meta).
sddmm: C = (X @ Y) sampled at a BSR pattern of shape (m, n), with X (m, k), Y (k, n) (trans_a:
       X is a transposed view of a (k, m) tensor; trans_b: Y a view of an (n, k) tensor).
       torch.sparse.sampled_addmm does not reach the Triton kernel for BSR on CUDA: it is the
       ATen op sparse_sampled_addmm, whose SparseCsrCUDA kernel (cuSPARSE) checks that the result
       has sparse CSR layout. The Triton kernel is torch.sparse._triton_ops.sampled_addmm(input,
       mat1, mat2, *, beta, alpha, out, skip_checks, max_grid), so that is what is timed, with
       beta=0.0, alpha=1.0; batched operands are supported (batch dims broadcast). It has no
       meta-parameters (num_stages=1, num_warps=4 and TILE_K=block are hard-coded) and
       _triton_ops_meta has no tune function for it, so tuned fields are null with a note.
       flops = 2 * nnzb * b * b * k * batch.

spgemm: C = A @ B with A and B sparse CSR tensors of exactly the caller's block patterns (each
       kept block b x b non-zeros, never zero; int32 indices where they fit), C sparse CSR:
       torch.sparse.mm(A_csr, B_csr), which runs cuSPARSE SpGEMM (cusparseSpGEMM, uniform
       precision) on CUDA. PyTorch has no CSR x CSR -> dense, so both of the bench's C kinds
       are compared with this one call. The dtype is probed once per process on a small product
       (checked against dense): the case's dtype where CSR @ CSR works in it on this GPU, else
       float32 (torch_dtype says which, note says why). Timing: one call (wall clock, it
       includes cuSPARSE's set-up; gives first_call_ms and nnz_c), then, when it took under
       1 s, 2 warm-up calls; then min(reps, PEERS_SPGEMM_BUDGET_S / first call) calls (at
       least 1), each between CUDA events on the current stream, the median. The call
       synchronizes with the host inside (cuSPARSE returns C's size), so the events measure
       the whole call as a caller sees it. A first call longer than PEERS_SPGEMM_BUDGET_S is
       not repeated: ms is that call's wall time (reps 1, warmup 0, said in the note).
       Failures (unsupported dtype, out of memory, cuSPARSE errors) are reported with ok false
       and the reason, never a time.

Data: made on the GPU with a torch.Generator seeded with SEED per case (a case gives the same
data whatever runs before it), values uniform in [-1, 1] with exact zeros replaced by 1 (a zero
block would be dropped by to_sparse_bsr), mask = torch.rand(block grid) < density.

Tuning: tune_bsr_dense_addmm has no option that shortens its search. It runs a local search
(_triton_ops_meta.minimize, max_step=2 over 4 parameters: up to 40 neighbours per sweep, a new
sweep after each improvement), every point timed with triton.testing.do_bench(warmup=500,
rep=100) plus a Triton compile for each new configuration; the module's docstring says "running
tune_bsr_dense_addmm can take several minutes". Measured on H100 with the settings below:
30 s for 2048x1024x512 b64 bf16 batch 3, 140 s for 4096^3 b64 f16 density 0.1. The tuner looks triton.testing.do_bench up at call time, so while it runs that name is
bound to a wrapper that
  (1) times each point with do_bench_cudagraph(rep=TUNE_GRAPH_REP_MS) (PEERS_TUNE_TIMER=graph,
      the default), i.e. on GPU time: with plain do_bench the tuner would rank configurations by
      host-overhead noise on all but large shapes; PEERS_TUNE_TIMER=do_bench keeps PyTorch's own
      timer, with warmup capped at TUNE_WARMUP_MS instead of 500 ms;
  (2) raises once TUNE_BUDGET_S seconds have passed; minimize() records that point as failed,
      so the search ends with the best point so far, and the note and cache say it was cut. The
      budget is checked before each point, so one point in flight (a slow compile of a large
      tile can take ~20 s) may overrun it.
Environment: PEERS_WARMUP_MS (do_bench's warm-up; `bench` passes its --warmup-ms), PEERS_TUNE_TIMER, PEERS_TUNE_BUDGET_S, PEERS_TUNE_GRAPH_REP_MS, PEERS_TUNE_WARMUP_MS,
PEERS_SPGEMM_BUDGET_S (seconds of timed spgemm calls per case, default 15).
Triton is needed only by spmm and sddmm: without it those cases fail with the reason, spgemm runs.
"""

import hashlib
import json
import os
import sys
import time

# Keep the real stdout for JSON lines only; everything else written to fd 1 goes to stderr.
_json_out = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

import torch  # noqa: E402

try:  # spmm and sddmm only; spgemm runs without Triton
    import triton  # noqa: E402
    import triton.testing  # noqa: E402
    from torch.sparse import _triton_ops as tops  # noqa: E402
    from torch.sparse import _triton_ops_meta as tmeta  # noqa: E402

    # Our own timing keeps references to the genuine timers, whatever the tuning wrapper does.
    _do_bench = triton.testing.do_bench
    _do_bench_graph = triton.testing.do_bench_cudagraph
    TRITON_ERROR = None
except Exception as _e:  # noqa: BLE001
    triton = tops = tmeta = _do_bench = _do_bench_graph = None
    TRITON_ERROR = " ".join(f"{type(_e).__name__}: {_e}".split())[:200]

SEED = 1
# do_bench's warm-up: PyTorch's 25 ms, raised to the bench's --warmup-ms (PEERS_WARMUP_MS) so
# that the peer is timed at the clocks ours is (after the host's pause between cases the board
# runs above its capped clocks for about a second, perf notes v32).
WARMUP_MS = max(25.0, float(os.environ.get("PEERS_WARMUP_MS", "25")))
REP_MS = 100
GRAPH_REP_MS = 100
TUNE_TIMER = os.environ.get("PEERS_TUNE_TIMER", "graph")  # "graph" | "do_bench"
TUNE_GRAPH_REP_MS = float(os.environ.get("PEERS_TUNE_GRAPH_REP_MS", "20"))
TUNE_WARMUP_MS = float(os.environ.get("PEERS_TUNE_WARMUP_MS", "100"))  # tuner asks for 500
TUNE_BUDGET_S = float(os.environ.get("PEERS_TUNE_BUDGET_S", "180"))  # per tuning
SPGEMM_BUDGET_S = float(os.environ.get("PEERS_SPGEMM_BUDGET_S", "15"))
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
DTYPE_NAMES = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}
DEFAULTS = {"op": "spmm", "batch": 1, "trans_a": False, "trans_b": False, "tune": False}
REQUIRED = ("m", "n", "k", "block", "density", "dtype")
RESULT_FIELDS = (
    "ms", "tflops", "graph_ms", "graph_tflops",
    "tuned_ms", "tuned_tflops", "tuned_graph_ms", "tuned_graph_tflops",
    "meta", "nnzb",
)


def log(msg):
    print(f"peers: {msg}", file=sys.stderr, flush=True)


def emit(obj):
    _json_out.write(json.dumps(obj) + "\n")
    _json_out.flush()


def short(exc, limit=300):
    """One-line error text of at most `limit` characters."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def bench_ms(fn):
    return _do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, return_mode="median")


def graph_ms(fn, rep=GRAPH_REP_MS):
    """GPU time of one call: do_bench_cudagraph captures rep/estimate calls in one CUDA graph.

    Capture needs a side stream; inputs were made on the current stream, so order both ways.
    """
    main = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    side.wait_stream(main)
    try:
        with torch.cuda.stream(side):
            return _do_bench_graph(fn, rep=rep, return_mode="median")
    finally:
        main.wait_stream(side)
        torch.cuda.synchronize()


def time_both(r, prefix, fn, flops, notes):
    """Fill <prefix>ms/tflops (do_bench) and <prefix>graph_ms/tflops (CUDA graph) in r."""
    r[prefix + "ms"] = bench_ms(fn)
    r[prefix + "tflops"] = tflops(flops, r[prefix + "ms"])
    try:
        r[prefix + "graph_ms"] = graph_ms(fn)
        r[prefix + "graph_tflops"] = tflops(flops, r[prefix + "graph_ms"])
    except Exception as e:
        notes.append(f"{prefix}graph timing failed: {short(e, 150)}")


def tflops(flops, ms):
    return flops / (ms * 1e-3) / 1e12


# ---------------------------------------------------------------- data


def rand_nonzero(shape, dtype, gen):
    """Uniform values in [-1, 1] of `dtype`, never exactly zero."""
    t = torch.rand(shape, generator=gen, device="cuda", dtype=torch.float32)
    t = t.mul_(2).sub_(1).to(dtype)
    return t.masked_fill_(t == 0, 1.0)


def block_mask(rows, cols, density, gen):
    """Boolean mask over a rows x cols block grid: rand < density."""
    return torch.rand(rows, cols, generator=gen, device="cuda") < density


def masked_dense(mask, b, batch, dtype, gen):
    """Dense (batch?, rows*b, cols*b) tensor, random where `mask` keeps the block, else zero.

    One mask is applied to every batch, so all batches share the block pattern (and nnz),
    which to_sparse_bsr requires of a batched BSR tensor.
    """
    rows, cols = mask.shape
    shape = (rows * b, cols * b) if batch == 1 else (batch, rows * b, cols * b)
    full = mask.repeat_interleave(b, 0).repeat_interleave(b, 1)
    return rand_nonzero(shape, dtype, gen).mul_(full.to(dtype))


def to_bsr(dense, b, expect_nnzb):
    bsr = dense.to_sparse_bsr((b, b))
    nnzb = bsr.values().shape[-3]
    if nnzb != expect_nnzb:  # would mean a kept block was all zeros
        raise RuntimeError(f"BSR has {nnzb} blocks, mask has {expect_nnzb}")
    return bsr, nnzb


def dense_operand(rows, cols, trans, batch, dtype, gen):
    """A (batch?, rows, cols) operand; with `trans`, a transposed view of a (cols, rows) tensor."""
    lead = () if batch == 1 else (batch,)
    if trans:
        return rand_nonzero(lead + (cols, rows), dtype, gen).mT
    return rand_nonzero(lead + (rows, cols), dtype, gen)


# ---------------------------------------------------------------- tuning cache


def load_cache(path):
    if not path or not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            data = json.load(f)
        if isinstance(data, dict):
            return data
        log(f"cache {path} is not a JSON object, ignored")
    except Exception as e:  # a broken cache must not stop the run
        log(f"cache {path} unreadable, ignored: {short(e)}")
    return {}


def save_cache(path, cache):
    if not path:
        return
    try:
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(cache, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except Exception as e:
        log(f"could not write cache {path}: {short(e)}")


def cache_key(c, device):
    return (
        f"{device}|{c['op']}|m={c['m']},n={c['n']},k={c['k']}|b={c['block']}|{c['dtype']}"
        f"|density={c['density']!r}|trans_a={int(c['trans_a'])},trans_b={int(c['trans_b'])}"
        f"|batch={c['batch']}"
        + (f"|pattern={c.get('pattern')}|mask={hashlib.sha1(c['mask'].encode()).hexdigest()[:16]}" if c.get("mask") else "")
    )


class TuningBudgetExceeded(Exception):
    pass


def tune_spmm(a_bsr, b, out):
    """tune_bsr_dense_addmm for out = 0 * out + 1 * (a_bsr @ b), with a bounded search.

    Returns (meta, seconds, complete). force=True: tune even when PyTorch's database holds an
    entry for this exact key (else it is returned untouched); store=False: leave that
    database alone, our cache file keeps the result.
    """
    deadline = time.monotonic() + TUNE_BUDGET_S
    hit_deadline = []

    def bounded_do_bench(fn, warmup=25, rep=100, *args, **kwargs):
        if time.monotonic() > deadline:
            hit_deadline.append(True)
            raise TuningBudgetExceeded("tuning time budget exhausted")
        if TUNE_TIMER == "graph":
            fn()  # a configuration that cannot run fails here, before any capture
            return graph_ms(fn, rep=TUNE_GRAPH_REP_MS)
        return _do_bench(fn, min(warmup, TUNE_WARMUP_MS), rep, *args, **kwargs)

    t0 = time.monotonic()
    triton.testing.do_bench = bounded_do_bench
    try:
        meta = tmeta.tune_bsr_dense_addmm(
            out, a_bsr, b, beta=0, alpha=1, out=out, store=False, verbose=False, force=True
        )
    finally:
        triton.testing.do_bench = _do_bench
    seconds = time.monotonic() - t0
    if not meta:  # minimize() returns {} when even its starting points failed
        raise RuntimeError("tune_bsr_dense_addmm found no working configuration")
    return dict(meta), seconds, not hit_deadline


# ---------------------------------------------------------------- cases


_sampled_addmm_probe = None


def probe_public_sampled_addmm():
    """Whether torch.sparse.sampled_addmm accepts a BSR input on CUDA (checked once)."""
    global _sampled_addmm_probe
    if _sampled_addmm_probe is None:
        try:
            c = torch.ones(32, 32, device="cuda", dtype=torch.float16).to_sparse_bsr((16, 16))
            x = torch.ones(32, 16, device="cuda", dtype=torch.float16)
            torch.sparse.sampled_addmm(c, x, x.t().contiguous(), beta=0.0, alpha=1.0)
            _sampled_addmm_probe = "torch.sparse.sampled_addmm accepted BSR here, yet "
        except Exception as e:
            _sampled_addmm_probe = f"torch.sparse.sampled_addmm rejects BSR on CUDA ({short(e, 120)}); "
    return _sampled_addmm_probe


def run_spmm(c, r, notes, cache, cache_path, device):
    m, n, k, b, batch, dt = c["m"], c["n"], c["k"], c["block"], c["batch"], DTYPES[c["dtype"]]
    gen = torch.Generator(device="cuda").manual_seed(SEED)
    if c["trans_a"]:
        mask = block_mask(k // b, m // b, c["density"], gen)  # pattern of the stored (k, m) A
        stored = masked_dense(mask, b, batch, dt, gen)
        a_bsr, nnzb = to_bsr(stored.mT.contiguous(), b, int(mask.sum()))
        del stored
        notes.append("transposed A converted to BSR before timing")
    elif c.get("mask"):
        # The caller's pattern (a mask family): row-major '0'/'1' over the (m/b, k/b) grid.
        bits = c["mask"]
        if len(bits) != (m // b) * (k // b):
            raise RuntimeError(f"mask has {len(bits)} cells, the grid {(m // b) * (k // b)}")
        mask = torch.tensor([ch == "1" for ch in bits], device="cuda").reshape(m // b, k // b)
        dense_a = masked_dense(mask, b, batch, dt, gen)
        a_bsr, nnzb = to_bsr(dense_a, b, int(mask.sum()))
        del dense_a
    else:
        mask = block_mask(m // b, k // b, c["density"], gen)
        dense_a = masked_dense(mask, b, batch, dt, gen)
        a_bsr, nnzb = to_bsr(dense_a, b, int(mask.sum()))
        del dense_a
    r["nnzb"] = nnzb
    if nnzb == 0:
        raise RuntimeError("empty block pattern (no block kept at this density)")
    bmat = dense_operand(k, n, c["trans_b"], batch, dt, gen)
    out = torch.empty(((batch,) if batch > 1 else ()) + (m, n), device="cuda", dtype=dt)
    flops = 2.0 * nnzb * b * b * n * batch

    time_both(r, "", lambda: tops.bsr_dense_mm(a_bsr, bmat, out=out), flops, notes)
    r["ok"] = True
    emit_progress(c, f"default {fmt(r, '')}")

    if not c["tune"]:
        return
    key = cache_key(c, device)
    entry = cache.get(key)
    try:
        if isinstance(entry, dict) and isinstance(entry.get("meta"), dict) and entry["meta"]:
            meta = entry["meta"]
            notes.append("meta from cache" + ("" if entry.get("complete", True) else " (search was cut at the time budget)"))
        else:
            emit_progress(c, f"tuning ({TUNE_TIMER} timer, budget {TUNE_BUDGET_S:.0f} s) ...")
            meta, seconds, complete = tune_spmm(a_bsr, bmat, out)
            emit_progress(c, f"tuned in {seconds:.0f} s{'' if complete else ' (cut at budget)'}: {meta}")
            notes.append(f"tuned in {seconds:.0f} s" + ("" if complete else f", search cut at the {TUNE_BUDGET_S:.0f} s budget"))
            cache[key] = {
                "meta": meta,
                "complete": complete,
                "tune_s": round(seconds, 1),
                "timer": TUNE_TIMER,
                "torch": torch.__version__,
                "triton": triton.__version__,
            }
            save_cache(cache_path, cache)
        r["meta"] = meta
        time_both(
            r,
            "tuned_",
            lambda: tops.bsr_dense_addmm(out, a_bsr, bmat, beta=0, alpha=1, out=out, meta=meta),
            flops,
            notes,
        )
        emit_progress(c, f"tuned {fmt(r, 'tuned_')}")
    except Exception as e:  # keep the default timing; say why the tuned one is missing
        for f in ("meta", "tuned_ms", "tuned_tflops", "tuned_graph_ms", "tuned_graph_tflops"):
            r[f] = None
        notes.append(f"tuning failed: {short(e, 200)}")
        log(f"tuning failed: {short(e)}")


def run_sddmm(c, r, notes):
    m, n, k, b, batch, dt = c["m"], c["n"], c["k"], c["block"], c["batch"], DTYPES[c["dtype"]]
    gen = torch.Generator(device="cuda").manual_seed(SEED)
    mask = block_mask(m // b, n // b, c["density"], gen)
    c_bsr, nnzb = to_bsr(masked_dense(mask, b, batch, dt, gen), b, int(mask.sum()))
    r["nnzb"] = nnzb
    if nnzb == 0:
        raise RuntimeError("empty block pattern (no block kept at this density)")
    x = dense_operand(m, k, c["trans_a"], batch, dt, gen)
    y = dense_operand(k, n, c["trans_b"], batch, dt, gen)
    flops = 2.0 * nnzb * b * b * k * batch

    notes.append(probe_public_sampled_addmm() + "timed torch.sparse._triton_ops.sampled_addmm")
    time_both(r, "", lambda: tops.sampled_addmm(c_bsr, x, y, beta=0.0, alpha=1.0), flops, notes)
    r["ok"] = True
    emit_progress(c, f"default {fmt(r, '')}")
    if c["tune"]:
        notes.append(
            "not tuned: Triton sampled_addmm has no meta-parameters (num_stages=1, num_warps=4, "
            "TILE_K=block are fixed) and torch.sparse._triton_ops_meta has no tune function for it"
        )


# ---------------------------------------------------------------- spgemm (CSR x CSR)


_spgemm_dtypes = {}


def csr32(dense):
    """`dense` as a sparse CSR tensor, with int32 indices where they fit (what cuSPARSE takes)."""
    s = dense.to_sparse_csr()
    if s.values().numel() >= 2**31 - 1:
        return s
    return torch.sparse_csr_tensor(
        s.crow_indices().to(torch.int32), s.col_indices().to(torch.int32), s.values(), s.shape
    )


def spgemm_dtype(want):
    """(dtype, why) for CSR @ CSR on CUDA: `want` if a small product works and is right in it,
    else float32 (why: the failure), checked once per process."""
    if want not in _spgemm_dtypes:
        errors = []
        for dt in (want, torch.float32):
            try:
                gen = torch.Generator(device="cuda").manual_seed(SEED)
                x = rand_nonzero((64, 64), dt, gen)
                x = x.mul_((torch.rand(64, 64, generator=gen, device="cuda") < 0.25).to(dt))
                y = torch.sparse.mm(csr32(x), csr32(x))
                torch.cuda.synchronize()
                if y.layout != torch.sparse_csr:
                    raise RuntimeError(f"result layout {y.layout}")
                ref = x.float() @ x.float()
                bad = (y.to_dense().float() - ref).abs().max().item()
                if not bad <= 0.02 * max(1.0, ref.abs().max().item()):
                    raise RuntimeError(f"wrong result (max error {bad:.3g})")
                _spgemm_dtypes[want] = (dt, "; ".join(errors))
                break
            except Exception as e:
                errors.append(f"{DTYPE_NAMES[dt]}: {short(e, 150)}")
        else:
            raise RuntimeError("CSR @ CSR does not run on CUDA here: " + "; ".join(errors))
    return _spgemm_dtypes[want]


def grid_mask(bits, rows, cols, what):
    if not isinstance(bits, str) or len(bits) != rows * cols:
        raise RuntimeError(f"{what} must be a '0'/'1' string of {rows} x {cols} cells")
    return torch.tensor([ch == "1" for ch in bits], device="cuda").reshape(rows, cols)


def event_ms(fn, reps):
    """Median of `reps` calls, each between CUDA events on the current stream."""
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
        del out
    times.sort()
    return times[len(times) // 2]


def run_spgemm(c, r, notes):
    m, n, k, b = c["m"], c["n"], c["k"], c["block"]
    want = DTYPES[c["dtype"]]
    dt, why = spgemm_dtype(want)
    r.update(torch_dtype=DTYPE_NAMES[dt], layout="csr", call="torch.sparse.mm(A_csr, B_csr) -> CSR")
    r.update(torch=torch.__version__, cuda=torch.version.cuda)
    if dt != want:
        notes.append(f"{c['dtype']} CSR @ CSR failed here ({why}): timed in f32")
    gen = torch.Generator(device="cuda").manual_seed(SEED)
    mask_a = grid_mask(c["mask_a"], m // b, k // b, "mask_a")
    mask_b = grid_mask(c["mask_b"], k // b, n // b, "mask_b")
    a = csr32(masked_dense(mask_a, b, 1, dt, gen))
    bm = csr32(masked_dense(mask_b, b, 1, dt, gen))
    torch.cuda.empty_cache()  # the dense staging copies
    r["index_dtype"] = str(a.crow_indices().dtype).replace("torch.", "")
    r["nnz_a"], r["nnz_b"] = a._nnz(), bm._nnz()
    for name, t, mask in (("A", a, mask_a), ("B", bm, mask_b)):
        if t._nnz() != int(mask.sum()) * b * b:  # would mean a kept element was zero
            raise RuntimeError(f"CSR {name} has {t._nnz()} non-zeros, its mask {int(mask.sum()) * b * b}")

    def fn():
        return torch.sparse.mm(a, bm)

    t0 = time.monotonic()
    out = fn()
    torch.cuda.synchronize()
    first = time.monotonic() - t0
    r["first_call_ms"] = first * 1e3
    r["nnz_c"] = out._nnz()
    del out
    emit_progress(c, f"first call {first * 1e3:.1f} ms, {r['nnz_c']} non-zeros in C")
    if first > SPGEMM_BUDGET_S:
        r.update(ms=first * 1e3, reps=1, warmup=0)
        notes.append(
            f"one call only (the first, wall clock, {first:.1f} s): longer than PEERS_SPGEMM_BUDGET_S = {SPGEMM_BUDGET_S:.0f} s"
        )
    else:
        warmup = 2 if first < 1.0 else 0
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        reps = max(1, min(int(c.get("reps", 50)), int(SPGEMM_BUDGET_S / max(first, 1e-6))))
        r.update(ms=event_ms(fn, reps), reps=reps, warmup=warmup)
    r["ok"] = True
    emit_progress(c, f"{r['ms']:.3f} ms (median of {r['reps']}, {r['torch_dtype']} CSR)")


def describe(c):
    if c["op"] == "spgemm":
        return f"spgemm {c['m']}x{c['n']}x{c['k']} b{c['block']} {c['dtype']} {c.get('pattern', '')}"
    t = ("T" if c["trans_a"] else "N") + ("T" if c["trans_b"] else "N")
    return (
        f"{c['op']} {c['m']}x{c['n']}x{c['k']} b{c['block']} {c['dtype']} "
        f"d={c['density']} batch={c['batch']} {t}"
    )


def emit_progress(c, msg):
    log(f"{describe(c)}: {msg}")


def fmt(r, prefix):
    g = r.get(prefix + "graph_ms")
    graph = f"{g:.4f} ms, {r[prefix + 'graph_tflops']:.1f} TF/s" if g is not None else "-"
    return f"do_bench {r[prefix + 'ms']:.4f} ms, {r[prefix + 'tflops']:.1f} TF/s; graph {graph}"


def normalize(case):
    if not isinstance(case, dict):
        raise ValueError(f"a case must be a JSON object, got {type(case).__name__}")
    c = dict(DEFAULTS)
    c.update(case)
    missing = [f for f in REQUIRED if f not in c]
    if missing:
        raise ValueError(f"missing fields: {', '.join(missing)}")
    for f in ("m", "n", "k", "block", "batch"):
        if not isinstance(c[f], int) or isinstance(c[f], bool) or c[f] < 1:
            raise ValueError(f"{f} must be a positive integer, got {c[f]!r}")
    for f in ("trans_a", "trans_b", "tune"):
        c[f] = bool(c[f])
    if c["op"] not in ("spmm", "sddmm", "spgemm"):
        raise ValueError(f"unknown op {c['op']!r}")
    if c["op"] == "spgemm" and not (c.get("mask_a") and c.get("mask_b")):
        raise ValueError("spgemm needs mask_a and mask_b")
    if c["dtype"] not in DTYPES:
        raise ValueError(f"unknown dtype {c['dtype']!r}")
    b = c["block"]
    for f in ("m", "n", "k"):
        if c[f] % b:
            raise ValueError(f"{f}={c[f]} is not a multiple of block {b}")
    return c


def run_case(case, cache, cache_path, device):
    r = dict(case) if isinstance(case, dict) else {"case": case}
    for f in ("mask_a", "mask_b"):  # large, and the caller has them
        if isinstance(r.get(f), str):
            r[f + "_sha1"] = hashlib.sha1(r.pop(f).encode()).hexdigest()
    notes = []
    try:
        c = normalize(case)
        r.update({f: c[f] for f in list(REQUIRED) + list(DEFAULTS)})  # echo, defaults filled in
    except Exception as e:
        c, bad_case = None, e
    r.update({f: None for f in RESULT_FIELDS})
    r["ok"] = False
    try:
        if c is None:
            raise bad_case
        emit_progress(c, "start")
        if c["op"] != "spgemm" and TRITON_ERROR:
            raise RuntimeError(f"Triton is not available: {TRITON_ERROR}")
        if c["op"] == "spgemm":
            run_spgemm(c, r, notes)
        elif c["op"] == "spmm":
            run_spmm(c, r, notes, cache, cache_path, device)
        else:
            run_sddmm(c, r, notes)
    except Exception as e:
        r["ok"] = False
        r["error"] = short(e)
        log(f"case failed: {r['error']}")
    try:  # free this case's memory; an asynchronous CUDA error would surface here
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    except Exception as e:
        notes.append(f"after the case: {short(e, 200)}")
    if notes:
        r["note"] = "; ".join(notes)
    return r


def main():
    cache_path = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else None
    raw = sys.stdin.read()
    cases = json.loads(raw) if raw.strip() else []
    if not isinstance(cases, list):
        cases = [cases]
    device = torch.cuda.get_device_name()
    triton_version = triton.__version__ if triton is not None else f"missing ({TRITON_ERROR})"
    log(f"torch {torch.__version__}, triton {triton_version}, {device}, {len(cases)} case(s)")
    cache = load_cache(cache_path)
    for case in cases:
        try:
            result = run_case(case, cache, cache_path, device)
        except Exception as e:  # e.g. a sticky CUDA error in synchronize: report and go on
            result = dict(case) if isinstance(case, dict) else {"case": case}
            result.update(ok=False, error=short(e))
        emit(result)


if __name__ == "__main__":
    main()
