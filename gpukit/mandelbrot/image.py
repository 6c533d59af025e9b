"""Iteration counts as a picture: a colormap over the counts, and a PNG written atomically."""

from __future__ import annotations

import numpy as np


def colorize(counts: np.ndarray, max_iter: int, cmap: str = "magma") -> np.ndarray:
    """RGB uint8 image: a perceptual colormap over log(count), the set itself black."""
    from matplotlib import colormaps
    inside = counts >= max_iter
    level = np.log1p(counts.astype(np.float64)) / np.log1p(max_iter)
    rgb = (colormaps[cmap](level)[..., :3] * 255).astype(np.uint8)
    rgb[inside] = 0
    return rgb


def write_png(rgb, path: str) -> None:
    """Write atomically: a temp file in the same folder, then rename over the target."""
    from ..files import write_png as write
    write(rgb, path)
