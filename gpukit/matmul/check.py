"""Checking a matrix product against a float64 reference, the way the chapter does.

The error of each element is measured against ``a @ b`` computed in float64 and divided by
``(|A| @ |B|)``, the scale of the rounding error of any summation order; it must stay below
:func:`error_bound`. A NaN or inf anywhere (an output poisoned with NaN that a kernel never
wrote) fails. Needs only NumPy: the arrays may live on the GPU, they are copied to the host.
"""

from __future__ import annotations

import math

import numpy as np

from ..arrays import to_host
from ..verify import Mismatch


def error_bound(k: int) -> float:
    """Largest accepted error of an fp32 matmul element, relative to (|A| @ |B|).

    Rounding errors of a K-term fp32 sum grow like sqrt(K) unit roundoffs for random
    data; 16 sqrt(K) u leaves a wide margin yet still catches one missing term of the
    sum (an error near 1/K of the scale) at every K up to 2**16.
    """
    return 16 * 2.0**-24 * math.sqrt(max(k, 1))


def matmul_error(got, ref, scale, xp=np) -> float:
    """max |got - ref| / scale over all elements; raises Mismatch on NaN or inf."""
    got = got.astype(xp.float64)
    bad = int(xp.count_nonzero(~xp.isfinite(got)))
    if bad:
        raise Mismatch(f"{bad} of {got.size} elements are NaN or inf (never written, or "
                       "computed wrongly)")
    if got.size == 0:
        return 0.0
    tiny = np.finfo(np.float64).tiny
    return float(xp.max(xp.abs(got - ref) / xp.maximum(scale, tiny)))


def check_matmul(got, a, b, *, what: str = "matmul", factor: float = 1.0) -> float:
    """Check ``got`` against ``a @ b`` in float64 on the host; return the error.

    Raises :class:`gpukit.verify.Mismatch` on a wrong shape, a NaN or inf, or an error
    above ``factor * error_bound(K)``.
    """
    a64, b64 = to_host(a).astype(np.float64), to_host(b).astype(np.float64)
    ref, scale = a64 @ b64, np.abs(a64) @ np.abs(b64)
    host = to_host(got)
    if host.shape != ref.shape:
        raise Mismatch(f"{what}: shape {host.shape} != {ref.shape}")
    try:
        err = matmul_error(host, ref, scale)
    except Mismatch as exc:
        raise Mismatch(f"{what}: {exc}") from None
    bound = factor * error_bound(a64.shape[1])
    if err > bound:
        raise Mismatch(f"{what}: error {err:.3g} (relative to |A| @ |B|) exceeds {bound:.3g}")
    return err
