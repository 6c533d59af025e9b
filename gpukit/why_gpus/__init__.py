"""Why CPUs alone are not enough: the same work on one core, all cores and the GPU, and where the GPU starts to win.

The public API is listed in ``__all__``; importing this package imports numba only when one
of its names is first used.
"""

from gpukit import lazy_api

#: public name -> the module of this package that defines it (imported on first use)
__all__, __getattr__ = lazy_api(__name__, {
    "compute": "kernels", "reference": "kernels", "RTOL": "kernels", "DEGREE": "kernels",
    "COEFFS": "kernels", "SAXPY_A": "kernels"})
