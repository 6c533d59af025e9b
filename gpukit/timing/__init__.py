"""Timing GPU code honestly: the classic timing mistakes, each measured, and the right way.

The public API is listed in ``__all__``: the SAXPY workload, its inputs and the check of every
element (``kernels``), and the ways to time a call, wrong and right (``timers``). Importing
this package imports numba, CuPy or torch only when one of its names is first used.
"""

from gpukit import lazy_api

#: public name -> the module of this package that defines it (imported on first use)
__all__, __getattr__ = lazy_api(__name__, {
    "A": "kernels", "saxpy_bytes": "kernels", "implied_gbs": "kernels",
    "is_impossible": "kernels", "spread": "kernels", "make_inputs": "kernels",
    "check_saxpy": "kernels", "launch_saxpy": "kernels", "launch_saxpy_buggy": "kernels",
    "torch_saxpy": "kernels", "poison_demo": "kernels",
    "time_without_sync": "timers", "time_with_sync": "timers", "single_runs": "timers",
    "graph_time": "timers",
    "flushed_runs": "timers", "events_cupy": "timers", "events_torch": "timers",
    "torch_profile": "timers",
    "nsight_compute": "profile", "ncu_metric": "profile",
})
