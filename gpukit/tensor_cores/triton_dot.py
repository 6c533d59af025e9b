"""Rung 04: the product written with Triton's ``tl.dot``, autotuned over a few tiles.

Triton chooses the tensor-core instructions (wgmma on Hopper), the shared-memory
layout and the software pipeline from ``num_stages``; the kernel says only which tile
of C a program computes and walks along K. Under ``TRITON_INTERPRET=1`` the same
kernel runs on the CPU (NumPy), which is how the CPU tests check it.
"""

from __future__ import annotations

import triton
import triton.language as tl

#: the configurations autotuning tries (kept few: each costs a compilation)
CONFIGS = [
    triton.Config({"BM": 128, "BN": 256, "BK": 64, "GROUP": 8}, num_warps=8, num_stages=3),
    triton.Config({"BM": 128, "BN": 256, "BK": 64, "GROUP": 8}, num_warps=8, num_stages=4),
    triton.Config({"BM": 128, "BN": 128, "BK": 64, "GROUP": 8}, num_warps=4, num_stages=4),
    triton.Config({"BM": 64, "BN": 128, "BK": 64, "GROUP": 8}, num_warps=4, num_stages=4),
]
#: fp8 operands are half the bytes: twice the K per tile
FP8_CONFIGS = [
    triton.Config({"BM": 128, "BN": 256, "BK": 128, "GROUP": 8}, num_warps=8, num_stages=3),
    triton.Config({"BM": 128, "BN": 256, "BK": 128, "GROUP": 8}, num_warps=8, num_stages=4),
    triton.Config({"BM": 128, "BN": 128, "BK": 128, "GROUP": 8}, num_warps=4, num_stages=4),
]
#: one small configuration for the CPU interpreter (no autotuning there)
INTERPRETER_CONFIG = {"BM": 16, "BN": 16, "BK": 16, "GROUP": 2}


# --8<-- [start:kernel]
@triton.jit
def dot_kernel(a, w, c, scales, M, N, K, SCALED: tl.constexpr, UPCAST: tl.constexpr,
               EVEN_K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
               BK: tl.constexpr, GROUP: tl.constexpr):
    # Programs are numbered along groups of GROUP tile-rows, so that programs
    # running at the same time share tiles of W in L2.
    pid = tl.program_id(0)
    tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    first = (pid // (GROUP * tiles_n)) * GROUP
    rows = tiles_m - first
    if rows > GROUP:
        rows = GROUP
    tm = first + (pid % (GROUP * tiles_n)) % rows
    tn = (pid % (GROUP * tiles_n)) // rows
    # Rows past the edge wrap around (% M): they load real data, and their results
    # are never stored, so the loads need no mask along M or N.
    rm = (tm * BM + tl.arange(0, BM)) % M
    rn = (tn * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    pa = a + rm[:, None] * K + rk[None, :]          # BM x BK tile of A
    pw = w + rn[:, None] * K + rk[None, :]          # BN x BK tile of W
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        if EVEN_K:
            ta, tw = tl.load(pa), tl.load(pw)
        else:
            ta = tl.load(pa, mask=rk[None, :] < K - k0, other=0.0)
            tw = tl.load(pw, mask=rk[None, :] < K - k0, other=0.0)
        if UPCAST:                                  # the CPU interpreter only
            ta, tw = ta.to(tl.float32), tw.to(tl.float32)
        acc = tl.dot(ta, tw.T, acc)                 # tensor cores, fp32 accumulate
        pa += BK
        pw += BK
    if SCALED:                                      # fp8: C = scale_a scale_w A W^T
        acc = acc * (tl.load(scales) * tl.load(scales + 1))
    if UPCAST:                                      # round to nearest bf16 by hand
        bits = acc.to(tl.int32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & -65536
        acc = bits.to(tl.float32, bitcast=True)
    out = acc.to(c.dtype.element_ty)
    om = tm * BM + tl.arange(0, BM)
    on = tn * BN + tl.arange(0, BN)
    inside = (om[:, None] < M) & (on[None, :] < N)
    tl.store(c + om[:, None] * N + on[None, :], out, mask=inside)
# --8<-- [end:kernel]


_even_k = triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BK"] == 0})
plain = _even_k(dot_kernel)
tuned = triton.autotune(configs=CONFIGS, key=["M", "N", "K"])(plain)
tuned_fp8 = triton.autotune(configs=FP8_CONFIGS, key=["M", "N", "K"])(plain)


def _grid(meta, m, n):
    return (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)


def dot(a, w, c, scales=None, *, interpret: bool = False):
    """c = a @ w.T with the autotuned kernel (or the interpreter's one config); with
    ``scales`` (a tensor of two floats) c = scales[0] scales[1] a @ w.T."""
    m, k = a.shape
    n = w.shape[0]
    scaled = scales is not None
    sp = scales if scaled else c
    if interpret:
        cfg = INTERPRETER_CONFIG
        plain[_grid(cfg, m, n)](a, w, c, sp, m, n, k, scaled, True, **cfg)
        return c
    kern = tuned_fp8 if a.element_size() == 1 else tuned
    kern[lambda meta: _grid(meta, m, n)](a, w, c, sp, m, n, k, scaled, False)
    return c


def best_config(fp8: bool = False) -> str | None:
    """The configuration autotuning kept for the last shape it tuned, as text."""
    kern = tuned_fp8 if fp8 else tuned
    cfg = getattr(kern, "best_config", None)
    return str(cfg) if cfg is not None else None
