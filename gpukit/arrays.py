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


class DevicePool:
    """Reuse of numba device buffers: what :func:`device_empty` hands out.

    numba's ``cuda.device_array`` calls ``cuMemAlloc`` every time, and a ``cuMemAlloc`` costs
    far more host time than launching a kernel. Here a buffer whose array (and every view of
    it) has been garbage-collected goes back to a free list of its size and is handed out
    again, without another ``cuMemAlloc``. At most ``keep`` free buffers of each size are kept;
    the rest go back to numba, which frees them. Buffers are tied to the CUDA context that
    allocated them: a new context (after ``cuda.close()``) starts an empty pool.

    Reuse is ordered like numba's own frees: a buffer returns to the pool when Python drops the
    last reference, and the next call that gets it queues its work behind the earlier work on
    the same (default) stream. Work on other streams that still reads a dropped array is not
    tracked, as with CuPy's pool; keep such arrays alive until that work is done.
    """

    def __init__(self, keep: int = 4):
        self.keep = keep
        self.free: dict[int, list] = {}
        self.held: dict[int, object] = {}
        self.context = None
        self.hits = self.misses = 0

    def empty(self, shape, dtype):
        from numba import cuda
        from numba.cuda.cudadrv import devicearray, driver
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        dtype = np.dtype(dtype)
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        ctx = cuda.current_context()
        if self.context is not ctx:
            self.free, self.held, self.context = {}, {}, ctx
        bucket = self.free.setdefault(size, [])
        if bucket:
            base = bucket.pop()
            self.hits += 1
        else:
            base = cuda.device_array(max(size, 1), dtype=np.uint8)  # numba owns and frees it
            self.misses += 1
        key = id(base)

        def release(base=base, key=key, bucket=bucket):
            self.held.pop(key, None)
            if self.context is ctx and len(bucket) < self.keep:
                bucket.append(base)

        mem = driver.AutoFreePointer(ctx, base.gpu_data.device_pointer, size, finalizer=release)
        self.held[key] = mem  # the pointer lives until its last view is gone
        strides, step = [], dtype.itemsize
        for extent in reversed(shape):
            strides.insert(0, step)
            step *= max(extent, 1)
        return devicearray.DeviceNDArray(shape, strides, dtype, gpu_data=mem.own())


_POOL = DevicePool()


def device_empty(shape, dtype):
    """An uninitialised numba device array from :class:`DevicePool` (on numba's CUDA
    simulator, which has no driver to pool, a plain ``cuda.device_array``)."""
    from numba import cuda
    from .device import simulator_enabled
    if simulator_enabled():
        return cuda.device_array(shape, dtype=dtype)
    return _POOL.empty(shape, dtype)
