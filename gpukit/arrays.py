"""What kind of array is this, and how to view it from numba or copy it to the host.

One place for the questions every backend asks of its arguments: NumPy, CuPy, torch (CPU
or CUDA) and numba device arrays are told apart by :func:`kind`; :func:`as_numba` wraps a
CUDA array for a numba kernel without copying; :func:`to_host` copies any of them to NumPy.
Nothing here imports numba, CuPy or torch at module level.
"""

from __future__ import annotations

import numpy as np

#: what :func:`kind` answers
KINDS = ("numpy", "cupy", "torch-cpu", "torch-cuda", "cuda", "other")


def kind(a) -> str:
    """Where an array lives: 'numpy', 'cupy', 'torch-cpu', 'torch-cuda', 'cuda' (any other
    object with ``__cuda_array_interface__``, numba's device arrays included) or 'other'."""
    mod = type(a).__module__.split(".")[0]
    if isinstance(a, np.ndarray):
        return "numpy"
    if mod == "cupy":
        return "cupy"
    if mod == "torch":
        return "torch-cuda" if a.is_cuda else "torch-cpu"
    if hasattr(a, "__cuda_array_interface__") or mod.startswith("numba"):
        return "cuda"
    return "other"


def as_numba(a, *, sync: bool = True):
    """A numba view of a CUDA array (CuPy and torch arrays are wrapped, not copied).

    numba's own device arrays (and the simulator's) are returned as they are. Wrapping a CuPy
    or torch array synchronises the stream it names on every call unless ``sync=False``
    (numba's ``NUMBA_CUDA_ARRAY_INTERFACE_SYNC``): pass ``sync=False`` only when the kernel
    runs on the stream that produced the array, and wrap outside any timed region.
    """
    if hasattr(a, "copy_to_host"):
        return a
    from numba import cuda
    return cuda.as_cuda_array(a, sync=sync)


def to_host(a) -> np.ndarray:
    """A NumPy copy of a NumPy, CuPy, torch or numba array."""
    if hasattr(a, "copy_to_host"):
        return a.copy_to_host()
    if type(a).__module__.startswith("cupy"):
        return a.get()
    if type(a).__module__.startswith("torch"):
        return a.detach().cpu().numpy()
    return np.asarray(a)
