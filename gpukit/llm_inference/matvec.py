"""One token's matrix products in bf16: a Triton matrix-vector kernel.

At batch 1 a decode step multiplies one row of activations by each weight matrix: every
weight is read once and used for one multiply-add, so the product is as fast as the matrix
can be read. This kernel gives each program ``BLOCK_N`` rows of the matrix and walks along
them ``BLOCK_K`` columns at a time. Each thread keeps its own running sums for the columns
it reads (a ``[BLOCK_N, BLOCK_K]`` block of float32 accumulators) and the block is summed
across threads once, at the end: no thread waits for another inside the loop. The
autotuner keeps the fastest tile for each matrix shape.

The decoder uses it for a single row of activations (batch 1, one new token); with more
rows it calls cuBLAS, which reads the matrix once for all of them.
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _kernel():
    import triton
    import triton.language as tl

    if _interpreting():
        configs = [triton.Config({"BLOCK_N": 4, "BLOCK_K": 64}, num_warps=4)]
    else:
        configs = [triton.Config({"BLOCK_N": n, "BLOCK_K": k}, num_warps=w, num_stages=s)
                   for n, k, w in ((1, 1024, 4), (2, 1024, 4), (2, 2048, 8), (4, 512, 4),
                                   (4, 1024, 8), (1, 2048, 4))
                   for s in (1, 3)]

    # --8<-- [start:matvec]
    @triton.autotune(configs=configs, key=["N", "K"])
    @triton.jit
    def bf16_matvec(x_ptr, w_ptr, y_ptr, N, K,
                    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        """y[n] = sum_k x[k] * w[n, k] for BLOCK_N rows n of w per program."""
        n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        cols = tl.arange(0, BLOCK_K)
        acc = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            k = k0 + cols
            x = tl.load(x_ptr + k, mask=k < K, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + n[:, None] * K + k[None, :],
                        mask=(n[:, None] < N) & (k[None, :] < K), other=0.0)
            acc += w.to(tl.float32) * x[None, :]
        y = tl.sum(acc, axis=1)
        tl.store(y_ptr + n, y.to(y_ptr.dtype.element_ty), mask=n < N)
    # --8<-- [end:matvec]

    return bf16_matvec


_KERNEL = None


def kernel():
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = _kernel()
    return _KERNEL


def matvec(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``x @ w.T`` for x holding one row (any leading shape of size 1); more rows go to
    cuBLAS."""
    if x.numel() != x.shape[-1] or w.dim() != 2 or not w.is_contiguous():
        return F.linear(x, w)
    n, k = w.shape
    y = torch.empty(*x.shape[:-1], n, device=x.device, dtype=x.dtype)
    grid = lambda meta: (-(-n // meta["BLOCK_N"]),)  # noqa: E731
    kernel()[grid](x.contiguous(), w, y, n, k)
    return y
