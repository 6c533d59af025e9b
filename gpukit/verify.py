"""Checking results the way the examples and benchmarks do.

* compare against a reference computed in float64;
* fail on NaN or inf: outputs are poisoned with NaN before a run, so an
  element the kernel never wrote is caught;
* report the worst relative error, and fail above a bound suited to the dtype.
"""

from __future__ import annotations

import numpy as np

#: relative error bounds for elementwise work in each dtype (a few ulps)
RTOL = {"float16": 1e-3, "bfloat16": 1e-2, "float32": 1e-6, "float64": 1e-14}


class Mismatch(AssertionError):
    """A result that does not match its reference."""


def to_host(a) -> np.ndarray:
    """A NumPy copy of a NumPy, CuPy, torch or numba array."""
    if hasattr(a, "copy_to_host"):
        return a.copy_to_host()
    if type(a).__module__.startswith("cupy"):
        return a.get()
    if type(a).__module__.startswith("torch"):
        return a.detach().cpu().numpy()
    return np.asarray(a)


def max_rel_err(got, ref) -> float:
    """max |got - ref| / max(|ref|, tiny), computed in float64 on the host."""
    got = to_host(got).astype(np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if got.shape != ref.shape:
        raise Mismatch(f"shape {got.shape} != reference shape {ref.shape}")
    if got.size == 0:
        return 0.0
    return float(np.max(np.abs(got - ref) / np.maximum(np.abs(ref), np.finfo(np.float64).tiny)))


def check_close(got, ref, *, rtol: float | None = None, dtype: str = "float32",
                what: str = "result") -> float:
    """Raise :class:`Mismatch` unless ``got`` is finite and within ``rtol`` of ``ref``."""
    host = to_host(got)
    if host.dtype.kind == "f" and not np.all(np.isfinite(host)):
        bad = int(np.count_nonzero(~np.isfinite(host)))
        raise Mismatch(f"{what}: {bad} of {host.size} elements are NaN or inf "
                       "(never written, or computed wrongly)")
    err = max_rel_err(host, ref)
    bound = RTOL[dtype] if rtol is None else rtol
    if err > bound:
        raise Mismatch(f"{what}: max relative error {err:.3g} exceeds {bound:g}")
    return err
