"""Names and argument checks of the Mandelbrot kernels, importable without numba."""

from __future__ import annotations

import math

import numpy as np

BACKENDS = ("numpy", "numba-cpu", "numba-cpu-1core", "numba-cpu-simd", "numba-cuda", "cupy", "torch")
DTYPES = ("float64", "float32")
DEFAULT_BOUNDS = (-2.0, 1.0, -1.5, 1.5)
#: numba-cuda: the iteration counter's width in the kernel ("int64": the earlier kernels)
COUNTERS = ("int32", "int64")
#: numba-cuda: how a call finds the compiled kernel ("numba": its dispatcher types each call)
DISPATCHES = ("resolved", "numba")

#: the two pictures at the top of the page, drawn when the chapter is recorded and saved as
#: PNG files beside its record: (file, caption, bounds, iterations, colormap)
GALLERY = (
    ("mandelbrot-whole.png", "The whole set, (-2, 1) x (-1.5, 1.5), 256 iterations",
     DEFAULT_BOUNDS, 256, "magma"),
    ("mandelbrot-seahorse.png",
     "Seahorse valley, (-0.7463, -0.7413) x (0.1102, 0.1152), 1000 iterations",
     (-0.7463, -0.7413, 0.1102, 0.1152), 1000, "twilight_shifted"),
)
#: the pictures' side, pixels
GALLERY_SIZE = 480


def validate(width, height, max_iter, bounds, dtype) -> tuple:
    """Check the arguments; return them normalised. Raises ValueError/TypeError."""
    for name, value in (("width", width), ("height", height), ("max_iter", max_iter)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be a whole number, got {value!r}")
        if value <= 0:
            raise ValueError(f"{name} must be > 0, got {value}")
    if max_iter > 2**31 - 1:
        raise ValueError("max_iter must fit in int32")
    try:
        xmin, xmax, ymin, ymax = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be four numbers (xmin, xmax, ymin, ymax), got {bounds!r}") from None
    if not all(math.isfinite(b) for b in (xmin, xmax, ymin, ymax)):
        raise ValueError("bounds must be finite numbers")
    if xmin >= xmax or ymin >= ymax:
        raise ValueError(f"bounds need xmin < xmax and ymin < ymax, got {bounds!r}")
    dtype = np.dtype(dtype).name
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be float64 or float32, got {dtype}")
    return int(width), int(height), int(max_iter), (xmin, xmax, ymin, ymax), dtype
