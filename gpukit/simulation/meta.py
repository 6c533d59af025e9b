"""Names, limits and argument checks of the simulations, and the colours of their pictures,
importable without numba."""

from __future__ import annotations

import base64

import numpy as np

#: where each simulation can run: numba on the GPU (the simulator without one), numba on all CPU cores
BACKENDS = ("numba-cuda", "cpu")
MODELS = ("lbm", "nbody", "heat")

#: D2Q9 float32: 9 populations read + 9 written, 4 B each, + the 1 B cell type read
LBM_BYTES_PER_CELL = 9 * 2 * 4 + 1
#: a cell of the inflow column reads its type and writes its 9 populations
LBM_BYTES_PER_INLET_CELL = 9 * 4 + 1
#: a solid cell reads its type (1 B) and returns
LBM_BYTES_PER_SOLID_CELL = 1


def lbm_bytes(fluid: int, inlet: int, solid: int) -> int:
    """Bytes one LBM step moves: ``fluid`` cells that stream and collide, ``inlet`` cells of
    the inflow column, ``solid`` cells (neighbours' cell types are taken to come from caches)."""
    return (fluid * LBM_BYTES_PER_CELL + inlet * LBM_BYTES_PER_INLET_CELL
            + solid * LBM_BYTES_PER_SOLID_CELL)
#: the stencil reads each cell once and writes it once (neighbours come from caches)
HEAT_BYTES_PER_CELL = {"float32": 8, "float64": 16}
#: floating-point operations of one heat-stencil cell update as the kernel writes it: 3 adds of
#: the neighbours, 2 for 4u ((u + u) + (u + u)), 1 subtraction, 1 multiply and 1 add
HEAT_FLOPS_PER_CELL = 8
#: the convention of NVIDIA's CUDA sample `nbody` (GPU Gems 3, ch. 31) for one body-body interaction
NBODY_FLOPS_PER_INTERACTION = 20
#: n-body: threads per block (per row of a block), and so bodies per shared-memory tile
TILE = 128
#: the GPU kernel variants: (bodies per thread, fast math, rsqrt instruction, rows of
#: threads per block that split the sum over bodies j, bodies taken per inner-loop pass)
VARIANTS = {
    "straightforward": (1, False, False, 1, 1),
    "fastmath": (1, True, False, 1, 1),
    "fastmath + rsqrt": (1, True, True, 1, 1),
    "2 bodies per thread": (2, True, True, 1, 1),
    "4 bodies per thread": (4, True, True, 1, 1),
    "4 per thread, sum split 4 ways": (4, True, True, 4, 1),
    "split sum, unrolled by 4": (4, True, True, 4, 4),
}
#: the n-body kernel the simulations run unless told otherwise
NBODY_TUNED = "split sum, unrolled by 4"
#: the explicit 2-D heat step u += r * (sum of 4 neighbours - 4u) is stable for r <= 1/4
HEAT_R_MAX = 0.25


def whole(name: str, value, low: int = 1) -> int:
    """``value`` as an int >= ``low``; TypeError/ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be a whole number, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def backend_ok(backend: str) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    return backend


def check_tau(tau: float) -> float:
    """The BGK relaxation time: viscosity (tau - 1/2)/3 must be positive."""
    tau = float(tau)
    if not np.isfinite(tau) or tau <= 0.5:
        raise ValueError(f"tau must be > 0.5 (viscosity (tau - 0.5)/3 must be positive), got {tau}")
    return tau


def check_speed(u: float) -> float:
    """Lattice speeds well below the lattice speed of sound (1/sqrt 3 ~ 0.577)."""
    u = float(u)
    if not np.isfinite(u) or not 0 <= u <= 0.3:
        raise ValueError(f"inflow speed must be in [0, 0.3] lattice units (Mach < 0.52), got {u}")
    return u


def check_r(r: float) -> float:
    """The diffusion number alpha*dt/dx^2 of the explicit heat step."""
    r = float(r)
    if not np.isfinite(r) or not 0 < r <= HEAT_R_MAX:
        raise ValueError(f"diffusion number r must be in (0, {HEAT_R_MAX}] for a stable step, got {r}")
    return r

#: the published anchor: FluidX3D's single-GPU benchmark table (D3Q19 SRT, no extensions),
#: H200 SXM5 141GB row, README of github.com/ProjectPhysX/FluidX3D (commit 8986874, 2026-07-14)
FLUIDX3D = {
    "source": "https://github.com/ProjectPhysX/FluidX3D#single-gpucpu-benchmarks",
    "gpu": "H200 SXM5 141GB", "spec_bandwidth_gbs": 4800,
    "rows": [  # storage precision, MLUPs/s, % of the data-sheet bandwidth, bytes per cell update
        {"storage": "FP32/FP32", "mlups": 23056, "pct_spec": 73, "bytes_per_cell": 153},
        {"storage": "FP32/FP16S", "mlups": 36610, "pct_spec": 59, "bytes_per_cell": 77},
    ],
}


# ----------------------------------------------------------------- pictures of the fields

def unpack(packed: dict) -> np.ndarray:
    """A field that a results file carries (float16, base64) as an array."""
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
