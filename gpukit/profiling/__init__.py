"""Profile before you guess: Nsight Compute on kernels of earlier chapters, the PyTorch profiler
on a training step, and copies overlapped with kernels on CUDA streams.

The public API is listed in ``__all__``; importing this package imports numba, CuPy or torch
only when one of its names is first used.
"""

from gpukit import lazy_api

#: public name -> the module of this package that defines it (imported on first use)
__all__, __getattr__ = lazy_api(__name__, {
    "chunks": "pipeline", "run_chunks": "pipeline", "run": "pipeline", "HostOps": "pipeline",
    "CupyOps": "pipeline", "reference": "pipeline", "rtol": "pipeline", "poly_kernel": "pipeline",
    "timeline": "pipeline", "model_timeline": "pipeline", "makespan": "pipeline",
    "TARGETS": "targets", "find_ncu": "ncu", "parse_raw_csv": "ncu", "key_metrics": "ncu",
    "NcuError": "ncu", "profile_steps": "torchprof", "busy_fraction": "torchprof"})
