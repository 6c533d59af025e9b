"""Tensor cores: bf16 and fp8 matrix products from a WMMA tile to a warp-specialised
wgmma kernel fed by TMA, each launched from Python and checked against float64.

The public API is listed in ``__all__``; importing this package imports torch, CuPy or
Triton only when one of its names is first used.
"""

from gpukit import lazy_api

__all__, __getattr__ = lazy_api(__name__, {
    "linear": "kernels", "linear_fp8": "kernels", "quantize": "kernels",
    "KERNELS": "kernels", "FP8_ALL": "kernels",
    "check_product": "numerics", "input_rounding_bound": "numerics",
    "accumulation_bound": "numerics", "rounding_error": "numerics",
    "unit_roundoff": "numerics"})
