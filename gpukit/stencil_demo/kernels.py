"""The 3-point average ``out[i] = (x[i-1] + x[i] + x[i+1]) / 3``; the two ends are copied."""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..arrays import as_numba, kind

THREADS = 256


@cuda.jit
def average3_kernel(x, out):
    i = cuda.grid(1)
    n = x.shape[0]
    if i >= n:
        return
    if i == 0 or i == n - 1:
        out[i] = x[i]
    else:
        out[i] = (x[i - 1] + x[i] + x[i + 1]) / np.float32(3.0)


def _check(x) -> None:
    if getattr(x, "ndim", None) != 1:
        raise ValueError("average3 takes a 1-D array")
    if x.dtype != np.float32:
        raise TypeError(f"average3 takes float32, got {x.dtype}")


def average3(x, out=None):
    """The 3-point average of the 1-D float32 array ``x`` on the GPU (host or device array).

    Returns a device array (``out`` if given).
    """
    _check(x)
    dx = cuda.to_device(np.ascontiguousarray(x)) if kind(x) == "numpy" else as_numba(x)
    if out is None:
        out = cuda.device_array_like(dx)
    elif out.shape != dx.shape:
        raise ValueError(f"out has shape {out.shape}, x has {dx.shape}")
    if dx.shape[0]:
        blocks = (dx.shape[0] + THREADS - 1) // THREADS
        average3_kernel[blocks, THREADS](dx, out)
    return out


def average3_cpu(x: np.ndarray) -> np.ndarray:
    """The same average with NumPy, the reference the GPU result is checked against."""
    _check(x)
    out = x.copy()
    if x.shape[0] > 2:
        out[1:-1] = (x[:-2] + x[1:-1] + x[2:]) / np.float32(3.0)
    return out
