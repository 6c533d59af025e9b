"""The three kernels most chapters use, under one name: ``from gpukit.kernels import vector_add,
mandelbrot, matmul``. Each lives in its chapter's folder (:mod:`gpukit.vector_add`,
:mod:`gpukit.mandelbrot`, :mod:`gpukit.matmul`); importing this package imports none of them
(nor numba) until a name is used.
"""

from __future__ import annotations

__all__ = ["vector_add", "mandelbrot", "matmul"]

_HOMES = {"vector_add": "gpukit.vector_add.kernels", "mandelbrot": "gpukit.mandelbrot.kernels",
          "matmul": "gpukit.matmul.kernels"}


def __getattr__(name):
    if name in _HOMES:
        import importlib
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'gpukit.kernels' has no attribute {name!r}")
