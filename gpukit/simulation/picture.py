"""Pictures of the simulations: vorticity and temperature as colours, PNG files, and small
copies of the fields that a results file can carry (float16, base64)."""

from __future__ import annotations

import base64

import numpy as np

from .meta import heat_rgb, unpack, vorticity_rgb  # noqa: F401  (drawn by the views too)


def shrink(field: np.ndarray, width: int = 512) -> np.ndarray:
    """Every k-th cell in both directions, so that the result is at most ``width`` wide."""
    k = max(1, -(-field.shape[1] // width))
    return field[::k, ::k]


def pack(field: np.ndarray, width: int = 512) -> dict:
    """A field as a JSON-friendly dict: shrunk, float16, base64."""
    small = np.ascontiguousarray(shrink(field, width), dtype=np.float16)
    return {"shape": list(small.shape), "float16": base64.b64encode(small.tobytes()).decode()}


def write_png(rgb: np.ndarray, path) -> None:
    """Write atomically: a temporary file beside ``path``, renamed over it."""
    from ..files import write_png as write
    write(rgb, path)
