"""One operation at every level: a row softmax from PyTorch down to CUDA C.

The public API is listed in ``__all__``; importing this package imports torch, CuPy, numba or
Triton only when a level that needs them runs.
"""

from gpukit import lazy_api

#: public name -> the module of this package that defines it (imported on first use)
__all__, __getattr__ = lazy_api(__name__, {
    "LEVELS": "levels", "RTOL": "levels", "Skip": "levels", "make_inputs": "levels",
    "reference": "levels", "check": "levels", "cuda_c_config": "levels", "level_loc": "levels",
    "measure_level": "levels"})
