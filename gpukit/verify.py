"""Checking results the way the examples and benchmarks do.

* compare against a reference computed in float64;
* fail on NaN or inf: outputs are poisoned with NaN before a run, so an
  element the kernel never wrote is caught;
* report the worst relative error, and fail above a bound suited to the dtype.
"""

from __future__ import annotations

import numpy as np

from .arrays import to_host  # noqa: F401  (re-exported: verify.to_host)

#: relative error bounds for elementwise work in each dtype (a few ulps)
RTOL = {"float16": 1e-3, "bfloat16": 1e-2, "float32": 1e-6, "float64": 1e-14}


class Mismatch(AssertionError):
    """A result that does not match its reference."""




#: elements compared per step: float64 temporaries of a few MiB stay in the CPU caches, where a
#: whole-array expression on 2**28 elements allocates gigabytes and spends seconds in page faults
CHUNK = 1 << 20


def _scan(got: np.ndarray, ref: np.ndarray) -> tuple[float, int]:
    """(max relative error, number of NaN/inf elements in ``got``); the error is NaN if any."""
    if got.shape != ref.shape:
        raise Mismatch(f"shape {got.shape} != reference shape {ref.shape}")
    g_all, r_all = got.reshape(-1), ref.reshape(-1)
    tiny = np.finfo(np.float64).tiny
    worst, bad = 0.0, 0
    for i in range(0, g_all.size, CHUNK):
        g = g_all[i:i + CHUNK].astype(np.float64)
        finite = np.isfinite(g)
        if not finite.all():
            bad += int(g.size - np.count_nonzero(finite))
        if bad:
            continue                     # only counting from here on
        r = r_all[i:i + CHUNK].astype(np.float64, copy=False)
        d = np.abs(g - r)
        d /= np.maximum(np.abs(r), tiny)
        worst = max(worst, float(d.max()))
    return (float("nan") if bad else worst), bad


def max_rel_err(got, ref) -> float:
    """max |got - ref| / max(|ref|, tiny), computed in float64 on the host (NaN if got has NaN)."""
    return _scan(to_host(got), to_host(ref))[0]


def check_close(got, ref, *, rtol: float | None = None, dtype: str = "float32",
                what: str = "result") -> float:
    """Raise :class:`Mismatch` unless ``got`` is finite and within ``rtol`` of ``ref``."""
    host = to_host(got)
    err, bad = _scan(host, to_host(ref))
    if bad:
        raise Mismatch(f"{what}: {bad} of {host.size} elements are NaN or inf "
                       "(never written, or computed wrongly)")
    bound = RTOL[dtype] if rtol is None else rtol
    if err > bound:
        raise Mismatch(f"{what}: max relative error {err:.3g} exceeds {bound:g}")
    return err
