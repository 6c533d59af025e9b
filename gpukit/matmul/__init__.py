"""Matrix multiplication: a numbered progression of kernels (numba and CUDA C), each checked against the vendor library.

The public API is listed in ``__all__``; importing this package imports numba, CuPy or torch
only when one of its names is first used.
"""

from gpukit import lazy_api

#: public name -> the module of this package that defines it (imported on first use)
__all__, __getattr__ = lazy_api(__name__, {
    "matmul": "kernels", "NUMBA_KERNELS": "kernels", "CUDA_C_KERNELS": "kernels", "KERNELS": "kernels",
    "check_matmul": "check", "error_bound": "check"})
