"""``gpukit bench stencil-demo``: the 3-point average on the GPU (when there is one) and the CPU."""

from __future__ import annotations

import numpy as np

from .. import bench, device
from ..verify import check_close
from .meta import BYTES_PER_ELEMENT, CPU_ROW, GPU_ROW


def _cpu(n: int, repeat: int) -> dict:
    from .kernels import average3_cpu
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    t = bench.bench(lambda: average3_cpu(x), timer="cpu", name=CPU_ROW, repeat=repeat,
                    bytes=BYTES_PER_ELEMENT * n)
    return {"n": n, "rows": [bench.row(t, backend="numpy")]}


def _gpu(n: int, repeat: int) -> dict:
    from numba import cuda

    from .kernels import average3, average3_cpu
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    dx = cuda.to_device(x)
    out = cuda.device_array_like(dx)
    t = bench.bench(lambda: average3(dx, out=out), timer="numba", name=GPU_ROW, repeat=repeat,
                    bytes=BYTES_PER_ELEMENT * n)
    err = check_close(out, average3_cpu(x), what=GPU_ROW)
    return {"n": n, "rows": [bench.row(t, backend="numba-cuda", max_rel_err=err)]}


def run(n: int | None = None, repeat: int = 30) -> dict:
    """The CPU part everywhere, the GPU part only on a machine with a GPU."""
    gpu = device.has_gpu()
    n = n or (2**26 if gpu else 2**22)
    parts = {"cpu": _cpu(n, repeat)}
    if gpu:
        parts["gpu"] = _gpu(n, repeat)
    return parts
