"""GPUs beyond machine learning: fluid (lattice Boltzmann), gravity (n-body) and heat (stencil).

Each simulation runs on ``backend="numba-cuda"`` (numba's simulator without a GPU) or
``backend="cpu"`` (numba on all cores), with the same arithmetic. Importing this package
imports numba only when one of its names is first used.
"""

from gpukit import lazy_api

#: public name -> the module of this package that defines it (imported on first use)
__all__, __getattr__ = lazy_api(__name__, {
    "lbm": "lbm", "Lattice": "lbm", "cylinder": "lbm", "channel": "lbm",
    "nbody": "nbody", "NBody": "nbody", "plummer": "nbody", "accel_reference": "nbody",
    "heat": "heat", "Heat": "heat", "sine_mode": "heat", "sine_decay": "heat",
    "vorticity_rgb": "picture", "heat_rgb": "picture", "write_png": "picture",
    "BACKENDS": "meta", "MODELS": "meta"})
