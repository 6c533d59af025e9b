"""``render``: a path-traced image of a scene on the CPU or the GPU, and PNG output."""

from __future__ import annotations

import numpy as np

#: numba on all CPU cores, on one core, and numba CUDA (the simulator where there is no GPU), each
#: testing every sphere; ``-bvh``: walking a bounding volume hierarchy instead
BACKENDS = ("numba-cpu", "numba-cpu-1core", "numba-cuda", "numba-cpu-bvh", "numba-cuda-bvh")
MAX_SIDE = 16384
MAX_SPP = 1 << 16
MAX_DEPTH = 64


def validate(width, height, spp, max_depth, seed, backend) -> None:
    """Raise ValueError/TypeError for arguments ``render`` cannot honour."""
    for name, value, top in (("width", width, MAX_SIDE), ("height", height, MAX_SIDE),
                             ("spp", spp, MAX_SPP), ("max_depth", max_depth, MAX_DEPTH)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be a whole number, got {value!r}")
        if not 1 <= value <= top:
            raise ValueError(f"{name} must be between 1 and {top}, got {value}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise ValueError(f"seed must be a whole number in [0, 2**32), got {seed!r}")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")


def tonemap(linear: np.ndarray) -> np.ndarray:
    """Linear radiance -> display values: gamma 2 (a square root), clipped to [0, 1]."""
    return np.sqrt(np.clip(linear, 0.0, 1.0)).astype(np.float32)


# --8<-- [start:render]
def render(scene, width: int, height: int, *, spp: int = 16, max_depth: int = 8,
           seed: int = 0, backend: str = "numba-cpu", linear: bool = False,
           stats: dict | None = None) -> np.ndarray:
    """Path-trace ``scene``: a float32 (height, width, 3) image in [0, 1] after gamma.

    ``linear=True`` returns the mean radiance per pixel before gamma and clipping.
    ``stats``, when given a dict, receives ``segments``: the ray segments traced.
    """
    validate(width, height, spp, max_depth, seed, backend)
    bvh = backend.endswith("-bvh")
    if bvh and scene.nodes is None:
        from .bvh import build_bvh
        scene = build_bvh(scene)
    if backend.startswith("numba-cuda"):
        from .gpu import DeviceScene
        dev = DeviceScene(scene, width, height)
        dev.launch(spp, max_depth, seed, "bvh" if bvh else "plain")
        out, segs = dev.out.copy_to_host(), dev.segs.copy_to_host()
    else:
        from . import trace
        from .scene import camera
        # NaN, so that unwritten pixels show
        out = np.full((height, width, 3), np.nan, dtype=np.float32)
        segs = np.zeros((height, width), dtype=np.int64)
        fn = {"numba-cpu": trace.render_cpu, "numba-cpu-1core": trace.render_cpu_1core,
              "numba-cpu-bvh": trace.render_cpu_bvh}[backend]
        cam = camera(scene, width, height)
        fn(out, segs, spp, seed, cam, *scene.arrays(), max_depth)
    if stats is not None:
        stats["segments"] = int(segs.sum())
    return out if linear else tonemap(out)
# --8<-- [end:render]


#: what "the same picture" means for two backends' images of one scene, size, samples and seed
#: (linear radiance): a pixel differs when a channel differs by more than AGREE_ATOL; at most
#: AGREE_SHARE of the pixels may differ, and the mean difference must stay within AGREE_ATOL.
#: A pixel differs when any of its samples took another path, so the share grows with the
#: samples per pixel: the criterion is meant for images of up to 8 samples per pixel. The share
#: was chosen after measuring it on the H200 at 4 and 8 samples per pixel (the ``agreement``
#: part of results/nvidia-h200/graphics.json): about twice the largest share seen there.
AGREE_ATOL = 1e-3
AGREE_SHARE = 0.03


def images_agree(a: np.ndarray, b: np.ndarray) -> dict:
    """Compare two linear images by the project's one criterion (see ``AGREE_SHARE``):
    ``{"ok", "max_abs", "mean_abs", "pixels_over_atol", "atol", "max_share"}``. NaN or an
    infinity in either image fails."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape or a.ndim != 3:
        raise ValueError(f"two images of one shape (height, width, 3) needed, got {a.shape} and {b.shape}")
    diff = np.abs(a - b)
    finite = bool(np.isfinite(diff).all())
    over = float(np.mean(diff.max(axis=2) > AGREE_ATOL)) if finite else 1.0
    mean = float(diff.mean()) if finite else float("inf")
    return {"ok": finite and over <= AGREE_SHARE and mean <= AGREE_ATOL,
            "max_abs": float(diff.max()) if finite else float("inf"), "mean_abs": mean,
            "pixels_over_atol": over, "atol": AGREE_ATOL, "max_share": AGREE_SHARE}


def to_png_bytes(image: np.ndarray) -> bytes:
    """An image in [0, 1] as PNG bytes (8 bits per channel)."""
    from ..files import png_bytes
    return png_bytes(to_uint8(image), optimize=True)


def to_jpeg_uri(image: np.ndarray, width: int | None = None) -> str:
    """A small JPEG of an image in [0, 1] as a data: address (for the page)."""
    from ..files import jpeg_data_uri
    return jpeg_data_uri(to_uint8(image), quality=88, width=width)


def to_uint8(image: np.ndarray) -> np.ndarray:
    return (np.clip(image, 0.0, 1.0) * 255 + 0.5).astype(np.uint8)


def write_png(image: np.ndarray, path) -> None:
    """An image in [0, 1] as a PNG file, written atomically."""
    from ..files import write_png as write
    write(to_uint8(image), path, optimize=True)