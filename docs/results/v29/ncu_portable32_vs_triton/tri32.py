# ncu target: PyTorch's Triton BSR kernel on uniform 12.5 % 32x32, 8192^3, f16, with the tuned meta.
import torch
from torch.sparse import _triton_ops as tops
torch.manual_seed(0)
n, b = 8192, 32
mask = torch.rand(n // b, n // b, device="cuda") < 0.125
dense = torch.randn(n, n, device="cuda", dtype=torch.float16) * torch.repeat_interleave(torch.repeat_interleave(mask, b, 0), b, 1)
a = dense.to_sparse_bsr((b, b))
bm = torch.randn(n, n, device="cuda", dtype=torch.float16)
c = torch.empty(n, n, device="cuda", dtype=torch.float16)
meta = dict(GROUP_SIZE_ROW=1, SPLIT_N=32, num_stages=2, num_warps=2)
for _ in range(3):
    tops.bsr_dense_addmm(c, a, bm, beta=0, alpha=1, out=c, meta=meta)
torch.cuda.synchronize()
print("ok", a._nnz())
