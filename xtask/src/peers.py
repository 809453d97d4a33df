# PyTorch's BSR x dense product (torch.sparse, Triton kernel) on the shapes `cargo xtask bench`
# measures, for `--peers`. Reads a JSON list of cases on stdin, prints one JSON object per case.
import json
import sys

import torch
from torch.sparse._triton_ops import bsr_dense_mm
from triton.testing import do_bench

dtypes = {"f16": torch.float16, "bf16": torch.bfloat16}
for case in json.load(sys.stdin):
    m, n, k, bs, density = case["m"], case["n"], case["k"], case["block"], case["density"]
    dt = dtypes[case["dtype"]]
    g = torch.Generator(device="cuda").manual_seed(1)
    mask = torch.rand(m // bs, k // bs, device="cuda", generator=g) < density
    a = torch.rand(m, k, device="cuda", generator=g, dtype=dt) * 2 - 1
    a = a * mask.repeat_interleave(bs, 0).repeat_interleave(bs, 1).to(dt)
    a_bsr = a.to_sparse_bsr((bs, bs))
    b = torch.rand(k, n, device="cuda", generator=g, dtype=dt) * 2 - 1
    nnzb = a_bsr.values().shape[0]
    try:
        ms = do_bench(lambda: bsr_dense_mm(a_bsr, b), warmup=25, rep=200, return_mode="median")
        tflops = 2.0 * nnzb * bs * bs * n / (ms * 1e-3) / 1e12
        out = {"ok": True, "ms": ms, "tflops": tflops, "nnzb": nnzb}
    except Exception as e:  # a shape Triton rejects is reported, not fatal
        out = {"ok": False, "error": str(e)[:200]}
    out.update({"m": m, "n": n, "k": k, "block": bs, "density": density, "dtype": case["dtype"]})
    print(json.dumps(out), flush=True)
