"""A three-point average on the GPU: each output element reads its two neighbours too.

The public API is listed in ``__all__``; importing this package imports numba only when one of
its names is first used.
"""

from gpukit import lazy_api

#: public name -> the module of this package that defines it (imported on first use)
__all__, __getattr__ = lazy_api(__name__, {
    "average3": "kernels", "average3_cpu": "kernels", "average3_kernel": "kernels"})
