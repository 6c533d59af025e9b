"""GPU kernels used by the chapters, each with a NumPy or CPU reference backend."""

from __future__ import annotations

import functools

__all__ = ["vector_add", "mandelbrot", "matmul"]


def __getattr__(name):
    # Lazy: importing gpukit.kernels must not import numba (see gpukit.device).
    if name == "vector_add":
        from .vecadd import vector_add
        return vector_add
    if name == "mandelbrot":
        from .mandel import mandelbrot
        return mandelbrot
    if name == "matmul":
        from .gemm import matmul
        return matmul
    raise AttributeError(f"module 'gpukit.kernels' has no attribute {name!r}")


@functools.cache
def _sm_count() -> int:
    """Multiprocessors of the current GPU (1 on the numba simulator)."""
    from .. import device
    if device.simulator_enabled():
        return 1
    from numba import cuda
    return cuda.get_current_device().MULTIPROCESSOR_COUNT
