"""Mandelbrot images: one escape-time kernel on NumPy, numba (CPU and CUDA), CuPy and torch.

The public API is listed in ``__all__``; importing this package imports numba, CuPy or torch
only when one of its names is first used.
"""

from gpukit import lazy_api

#: public name -> the module of this package that defines it (imported on first use)
__all__, __getattr__ = lazy_api(__name__, {
    "mandelbrot": "kernels", "colorize": "image", "write_png": "image",
    "BACKENDS": "meta", "DTYPES": "meta", "DEFAULT_BOUNDS": "meta", "validate": "meta",
    "COUNTERS": "meta", "DISPATCHES": "meta"})
