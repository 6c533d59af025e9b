"""Your first kernel: adding two arrays, on every backend.

The public API is listed in ``__all__``; importing this package imports numba, CuPy or torch
only when one of its names is first used.
"""

from gpukit import lazy_api

#: public name -> the module of this package that defines it (imported on first use)
__all__, __getattr__ = lazy_api(__name__, {
    "vector_add": "kernels", "BACKENDS": "kernels", "CUPY_IMPLS": "kernels", "NUMBA_IMPLS": "kernels",
    "add_kernel": "kernels", "add_kernel_x4": "kernels"})
