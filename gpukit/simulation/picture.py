"""Pictures of the simulations: vorticity and temperature as colours, PNG files, and small
copies of the fields that a results file can carry (float16, base64)."""

from __future__ import annotations

import base64

import numpy as np


def shrink(field: np.ndarray, width: int = 512) -> np.ndarray:
    """Every k-th cell in both directions, so that the result is at most ``width`` wide."""
    k = max(1, -(-field.shape[1] // width))
    return field[::k, ::k]


def pack(field: np.ndarray, width: int = 512) -> dict:
    """A field as a JSON-friendly dict: shrunk, float16, base64."""
    small = np.ascontiguousarray(shrink(field, width), dtype=np.float16)
    return {"shape": list(small.shape), "float16": base64.b64encode(small.tobytes()).decode()}


def unpack(packed: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(packed["float16"]), dtype=np.float16).reshape(packed["shape"])


def vorticity_rgb(w: np.ndarray, solid: np.ndarray | None = None, limit: float | None = None) -> np.ndarray:
    """RGB uint8: clockwise blue, anticlockwise red, still fluid white, obstacles grey."""
    from matplotlib import colormaps
    w = np.asarray(w, dtype=np.float64)
    limit = limit or float(np.percentile(np.abs(w), 99.5)) or 1.0
    rgb = (colormaps["RdBu_r"](np.clip(0.5 + 0.5 * w / limit, 0, 1))[..., :3] * 255).astype(np.uint8)
    if solid is not None:
        rgb[np.asarray(solid) != 0] = 110
    return rgb[::-1]                                    # y up


def heat_rgb(u: np.ndarray) -> np.ndarray:
    from matplotlib import colormaps
    u = np.asarray(u, dtype=np.float64)
    lo, hi = float(u.min()), float(u.max())
    return (colormaps["inferno"]((u - lo) / ((hi - lo) or 1.0))[..., :3] * 255).astype(np.uint8)[::-1]


def write_png(rgb: np.ndarray, path) -> None:
    """Write atomically: a temporary file beside ``path``, renamed over it."""
    from ..files import write_png as write
    write(rgb, path)


def png_data_uri(rgb: np.ndarray) -> str:
    """The image inlined in a page (an optimised PNG)."""
    from ..files import png_data_uri as uri
    return uri(rgb, optimize=True)
