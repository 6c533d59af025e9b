"""Exercises: twenty GPU puzzles in numba CUDA, with a checker that cannot be fooled.

The public API is listed in ``__all__``; importing this package imports numba only when one of
its names is first used (the checker itself runs in a fresh process on numba's simulator).
"""

from gpukit import lazy_api

#: public name -> the module of this package that defines it (imported on first use)
__all__, __getattr__ = lazy_api(__name__, {
    "PUZZLES": "puzzles", "find": "puzzles", "starter": "puzzles", "solution": "puzzles",
    "run_check": "grader", "run_full_size": "gpu", "new_seed": "grader", "SCORES": "spec"})
