"""What low precision costs: unit roundoffs, the error bound, and the error measured
against a float64 reference. NumPy and torch on the CPU only; no GPU needed.

Every error here is measured per element of C = A @ W^T and divided by the element of
|A| @ |W|^T, the size of the terms summed: that ratio does not depend on how large
the data are, and a bound on it holds for any summation order.
"""

from __future__ import annotations

import math

import numpy as np

from ..verify import Mismatch
from .meta import PRECISIONS

#: unit roundoff of fp32 accumulation
U32 = 2.0**-24


def unit_roundoff(precision: str) -> float:
    """Half the gap between 1 and the next number: 2**-p for p significand bits."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of "
                         f"{', '.join(PRECISIONS)}")
    return 2.0 ** -PRECISIONS[precision][1]


def gamma(k: int, u: float = U32) -> float:
    """gamma_k = k u / (1 - k u): the classic worst-case bound of a k-term sum."""
    if k * u >= 1:
        return math.inf
    return k * u / (1 - k * u)


# --8<-- [start:bound]
def input_rounding_bound(precision: str, k: int) -> float:
    """Worst case of |C_low - C| / (|A| @ |W|^T) when A and W are rounded to
    ``precision`` (relative error at most u each, so a product is off by at most
    (1 + u)^2 - 1), then multiplied exactly and summed in fp32 (gamma_k more)."""
    u = unit_roundoff(precision)
    return (1 + u) ** 2 * (1 + gamma(k)) - 1
# --8<-- [end:bound]


#: accumulation precision assumed for fp8 tensor-core sums: DeepSeek-V3's report
#: (arXiv:2412.19437, section 3.3.2) finds about 14 bits kept on H800; the check of
#: the fp8 kernels takes 2**-13 for margin
U_FP8_ACC = 2.0**-13


def accumulation_bound(k: int, u: float = U32) -> float:
    """Accepted error of a kernel's fp32 sum, relative to |A| @ |W|^T (the check).

    For random data rounding errors grow like sqrt(K) unit roundoffs; 16 sqrt(K) u
    leaves a wide margin yet, in fp32, catches one missing term (about 1/K of the scale)
    for every K up to 8192, the largest size the chapter measures.
    """
    return 16 * u * math.sqrt(max(k, 1))


def round_to(x: np.ndarray, precision: str) -> tuple[np.ndarray, float]:
    """``x`` (float32 or float64) rounded to ``precision``, back in float64, and the
    per-tensor scale used (fp8 only: the largest |x| is mapped to the format's largest
    value before rounding, and the scale undone after)."""
    import torch
    t = torch.from_numpy(np.asarray(x, dtype=np.float32))
    scale = 1.0
    if precision == "fp32":
        out = t
    elif precision == "tf32":
        # keep 10 explicit significand bits, rounding to nearest even on the bits cut
        bits = t.view(torch.int32)
        lsb = (bits >> 13) & 1
        out = ((bits + 0xFFF + lsb) & ~0x1FFF).view(torch.float32)
    elif precision in ("bf16", "fp16"):
        out = t.to(torch.bfloat16 if precision == "bf16" else torch.float16).float()
    elif precision in ("e4m3", "e5m2"):
        fmt = torch.float8_e4m3fn if precision == "e4m3" else torch.float8_e5m2
        amax = float(t.abs().max()) or 1.0
        scale = amax / PRECISIONS[precision][2]
        out = (t / scale).to(fmt).float() * scale
    else:
        raise ValueError(f"unknown precision {precision!r}; choose one of "
                         f"{', '.join(PRECISIONS)}")
    return out.double().numpy(), scale


def rounding_error(precision: str, k: int, *, m: int = 64, n: int = 64,
                   seed: int = 0) -> dict:
    """Measure what rounding A and W to ``precision`` costs at inner dimension ``k``.

    A (m x k) and W (n x k) are standard normal; the low-precision product is the
    rounded inputs multiplied exactly and summed in fp32 (what a tensor core does);
    the reference is float64 of the unrounded inputs. Returns the largest and the
    median error relative to |A| @ |W|^T, and the worst-case bound beside them.
    """
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    ra, _ = round_to(a, precision)
    rw, _ = round_to(w, precision)
    a64, w64 = a.astype(np.float64), w.astype(np.float64)
    ref, scale = a64 @ w64.T, np.abs(a64) @ np.abs(w64).T
    # products are exact in fp32 for every input precision here except fp32 itself
    got = (ra.astype(np.float32) @ rw.astype(np.float32).T).astype(np.float64)
    rel = np.abs(got - ref) / scale
    return {"precision": precision, "k": k, "max": float(rel.max()),
            "median": float(np.median(rel)), "bound": input_rounding_bound(precision, k),
            "unit_roundoff": unit_roundoff(precision)}


def accuracy_table(ks, precisions=("tf32", "bf16", "fp16", "e4m3", "e5m2")) -> list[dict]:
    """:func:`rounding_error` for every precision and inner dimension."""
    return [rounding_error(p, k) for p in precisions for k in ks]


# --8<-- [start:check]
def check_product(got, a, w, *, what: str = "product", out_precision: str = "bf16",
                  acc_u: float = U32) -> float:
    """Check ``got`` against a @ w.T computed in float64 from the same inputs.

    The part of each element's error that rounding the output to ``out_precision``
    cannot explain (u_out |C|) must stay within :func:`accumulation_bound` of
    (|A| @ |W|^T). NaN or inf anywhere fails (outputs are poisoned with NaN first, so
    an element never written fails too). Returns the largest such error.
    """
    xp, (a64, w64, got64) = _float64(a, w, got)
    ref = a64 @ w64.T
    if tuple(got64.shape) != tuple(ref.shape):
        raise Mismatch(f"{what}: shape {tuple(got64.shape)} != {tuple(ref.shape)}")
    bad = int((~xp.isfinite(got64)).sum())
    if bad:
        size = got64.numel() if xp is not np else got64.size
        raise Mismatch(f"{what}: {bad} of {size} elements are NaN or inf")
    if min(got64.shape) == 0:
        return 0.0
    scale = xp.abs(a64) @ xp.abs(w64).T
    excess = xp.abs(got64 - ref) - unit_roundoff(out_precision) * xp.abs(ref)
    err = float((excess / scale.clamp(min=1e-300) if xp is not np
                 else excess / np.maximum(scale, 1e-300)).max())
    bound = accumulation_bound(a64.shape[1], acc_u)
    if err > bound:
        raise Mismatch(f"{what}: error {err:.3g} beyond the output's rounding, "
                       f"relative to |A| @ |W|^T, exceeds {bound:.3g}")
    return max(err, 0.0)
# --8<-- [end:check]


def _float64(*xs):
    """(module, arrays in float64): torch on the GPU when the arrays are there (a
    reference of 8192^3 in float64 takes milliseconds there), NumPy otherwise."""
    if all(hasattr(x, "detach") and x.device.type == "cuda" for x in xs):
        import torch
        return torch, [x.detach().double() for x in xs]
    return np, [_host64(x) for x in xs]


def _host64(x) -> np.ndarray:
    if hasattr(x, "detach"):                       # torch, any device, any dtype
        return x.detach().to("cpu").double().numpy()
    from ..arrays import to_host
    return np.asarray(to_host(x), dtype=np.float64)
