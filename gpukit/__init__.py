"""gpukit: the library behind the GPU Survival Kit.

Importing ``gpukit`` is cheap: numba, CuPy and torch are imported only by the
functions that need them, so the package works (and says plainly what is
missing) on a machine without a GPU.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
