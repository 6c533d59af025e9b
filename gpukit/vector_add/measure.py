"""``gpukit bench vector-add``: every vector add on the GPU and the CPU, copies, launch pitfalls.

Verifies what it times, times it with :mod:`gpukit.bench`, and returns a plain dict that
:func:`gpukit.results.save` writes under ``results/``.
"""

from __future__ import annotations

import os
import time

import numpy as np

from .. import bench, device
from ..arrays import as_numba
from ..verify import check_close
from .meta import NO_OUT, NO_POOL, VEC16, VEC16_TYPED


def vector_add_gpu(n: int = 2**28, repeat: int = 30) -> dict:
    """Every gpukit vector add on the GPU vs torch.add and the copy ceiling, plus transfers."""
    import cupy
    import cupyx
    import torch
    from numba import cuda

    from . import kernels as vecadd

    rows: list[dict] = []
    nbytes = n * 4
    traffic = 3 * nbytes  # read x, read y, write out

    x = cupy.random.random(n, dtype=cupy.float32)
    y = cupy.random.random(n, dtype=cupy.float32)
    ref = cupy.asnumpy(x).astype(np.float64) + cupy.asnumpy(y).astype(np.float64)
    out = cupy.empty_like(x)

    ceiling = bench.copy_ceiling("cupy", nbytes=nbytes)
    tx, ty = torch.as_tensor(x, device="cuda"), torch.as_tensor(y, device="cuda")
    tout = torch.empty_like(tx)
    t_torch = bench.bench(lambda: torch.add(tx, ty, out=tout), timer="torch", name="torch.add",
                          repeat=repeat, bytes=traffic)
    check_close(tout, ref, what="torch.add")
    roofs = {"pct_of_copy": bench.Roof("gbs", ceiling.gbs),
             "pct_of_torch_add": bench.Roof("gbs", t_torch.gbs)}
    rows.append(bench.row(ceiling, roofs=roofs))
    rows.append(bench.row(t_torch, roofs=roofs, backend="torch"))

    # numba gets its own views of the CuPy arrays, made once here: wrapping a CuPy array inside
    # the timed call synchronises CuPy's stream every time (numba's default
    # NUMBA_CUDA_ARRAY_INTERFACE_SYNC=1), and the host then blocks inside the timed region.
    nx, ny, nout = (as_numba(a) for a in (x, y, out))
    variants = [
        ("numba.cuda grid-stride", "numba-cuda", "grid-stride", "numba"),
        ("numba.cuda grid-stride, 4 loads per thread", "numba-cuda", "grid-stride-x4", "numba"),
        (VEC16, "numba-cuda", "vec16", "numba"),
        ("CuPy ElementwiseKernel", "cupy", "elementwise", "cupy"),
        ("CuPy RawKernel, 1 element/thread", "cupy", "raw", "cupy"),
        ("CuPy RawKernel, float4 loads", "cupy", "raw-vec4", "cupy"),
    ]
    for label, backend, impl, timer in variants:
        out.fill(cupy.nan)  # poison: an unwritten element fails the check
        args = (nx, ny, nout) if backend == "numba-cuda" else (x, y, out)
        fn = lambda: vecadd.vector_add(args[0], args[1], backend=backend, out=args[2], impl=impl)  # noqa: E731
        t = bench.bench(fn, timer=timer, name=label, repeat=repeat, bytes=traffic)
        out.fill(cupy.nan)
        fn()
        err = check_close(out, ref, what=label)
        rows.append(bench.row(t, roofs=roofs, backend=backend, impl=impl, max_rel_err=err))
    # The same kernel launched the ordinary way, kernel[blocks, threads](...): numba's
    # dispatcher types the three arrays on every call. Host time per call is the difference.
    threads = 256
    blocks = (n // 4 + threads - 1) // threads
    launch = vecadd.add_kernel_vec16[blocks, threads]
    out.fill(cupy.nan)
    t = bench.bench(lambda: launch(nx, ny, nout), timer="numba", name=VEC16_TYPED, repeat=repeat,
                    bytes=traffic)
    err = check_close(out, ref, what=VEC16_TYPED)
    rows.append(bench.row(t, roofs=roofs, backend="numba-cuda", impl="vec16", direct=True,
                          max_rel_err=err))
    # What a reader calls first: the public API on numba arrays without out=. The result comes
    # from gpukit's pool of device buffers (gpukit.arrays.DevicePool): a buffer is reused once
    # the array of an earlier call is dropped. For comparison, the same call with an output
    # from cuda.device_array on every call (a cuMemAlloc each time, as numba itself does).
    label = NO_OUT
    t = bench.bench(lambda: vecadd.vector_add(nx, ny, backend="numba-cuda"), timer="numba",
                    name=label, repeat=repeat, bytes=traffic)
    err = check_close(vecadd.vector_add(nx, ny, backend="numba-cuda"), ref, what=label)
    rows.append(bench.row(t, roofs=roofs, backend="numba-cuda", impl=vecadd.NUMBA_DEFAULT,
                          allocates=True, pooled=True, max_rel_err=err))
    fresh = lambda: vecadd.vector_add(nx, ny, backend="numba-cuda",  # noqa: E731
                                      out=cuda.device_array(nx.shape, nx.dtype))
    t = bench.bench(fresh, timer="numba", name=NO_POOL, repeat=repeat, bytes=traffic)
    err = check_close(fresh(), ref, what=NO_POOL)
    rows.append(bench.row(t, roofs=roofs, backend="numba-cuda", impl=vecadd.NUMBA_DEFAULT,
                          allocates=True, pooled=False, max_rel_err=err))

    # Host <-> device copies, pageable and pinned memory.
    host = np.random.default_rng(1).random(n, dtype=np.float32)
    pinned = cupyx.empty_pinned((n,), dtype=np.float32)
    pinned[...] = host
    dev = cupy.empty(n, dtype=cupy.float32)
    copies = []
    for label, fn in [
        ("host to device, pageable", lambda: dev.set(host)),
        ("host to device, pinned", lambda: dev.set(pinned)),
        ("device to host, pageable", lambda: dev.get(out=host)),
        ("device to host, pinned", lambda: dev.get(out=pinned)),
    ]:
        t = bench.bench(fn, timer="cupy", name=label, repeat=10, bytes=nbytes)
        copies.append(bench.row(t))

    # The article's bug: a kernel that is never launched, and a launch never waited for.
    blocks, threads = vecadd._launch_config(n)
    kernel = vecadd.add_kernel
    dx, dy, dout = cuda.as_cuda_array(x), cuda.as_cuda_array(y), cuda.as_cuda_array(out)
    kernel[blocks, threads](dx, dy, dout)
    cuda.synchronize()
    t0 = time.perf_counter()
    kernel[blocks, threads]  # configured, never called: nothing runs
    not_launched = time.perf_counter() - t0
    cuda.synchronize()
    t0 = time.perf_counter()
    kernel[blocks, threads](dx, dy, dout)  # launched, but the clock stops before the GPU is done
    no_sync = time.perf_counter() - t0
    cuda.synchronize()
    pitfalls = {
        "not_launched_s": not_launched, "not_launched_gbs": traffic / not_launched / 1e9,
        "no_sync_s": no_sync, "no_sync_gbs": traffic / no_sync / 1e9,
        "events_s": next(r for r in rows if r["name"].startswith("numba"))["median_s"],
    }

    # End to end for a reader whose data starts on the host: copy in, add, copy out.
    def end_to_end():
        a = cupy.asarray(host)
        b = cupy.asarray(host)
        return cupy.asnumpy(vecadd.vector_add(a, b, backend="cupy"))
    e2e = bench.bench(end_to_end, timer="cupy", name="copy in + add + copy out (pageable)",
                      repeat=5, bytes=traffic)
    return {"n": n, "dtype": "float32", "rows": rows, "copies": copies, "pitfalls": pitfalls,
            "end_to_end": bench.row(e2e), "ceiling_gbs": ceiling.gbs, "torch_add_gbs": t_torch.gbs}


def vector_add_cpu(n: int = 2**26, repeat: int = 10) -> dict:
    """NumPy (one core) and numba parallel (all cores) vector add, and the host copy ceiling."""
    from . import kernels as vecadd
    rng = np.random.default_rng(0)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    ref = x.astype(np.float64) + y
    out = np.empty_like(x)
    traffic = 3 * n * 4
    ceiling = bench.copy_ceiling("cpu", nbytes=n * 4)
    rows = [bench.row(ceiling)]
    roofs = {"pct_of_copy": bench.Roof("gbs", ceiling.gbs)}
    for label, backend in [("NumPy np.add (1 core)", "numpy"),
                           ("numba parallel (all cores)", "numba-cpu")]:
        out.fill(np.nan)
        t = bench.bench(lambda: vecadd.vector_add(x, y, backend=backend, out=out), timer="cpu",
                        name=label, repeat=repeat, bytes=traffic)
        err = check_close(out, ref, what=label)
        rows.append(bench.row(t, roofs=roofs, backend=backend, max_rel_err=err))
    return {"n": n, "dtype": "float32", "rows": rows, "ceiling_gbs": ceiling.gbs}


def fresh_kernel_caches() -> str:
    """Point CuPy's on-disk kernel cache at an empty folder, so first calls include compiling.

    Works only before CuPy compiles its first kernel in this process; says which happened.
    """
    import sys
    import tempfile
    if "cupy" in sys.modules:
        return "CuPy was imported before the benchmark: its kernel cache may be warm"
    os.environ["CUPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="gpukit-cupy-cache-")
    return "empty at start: first calls include compilation"


def run(n: int | None, repeat: int) -> dict:
    data = {}
    caches = fresh_kernel_caches()
    data["cpu"] = vector_add_cpu(min(n or 2**26, 2**28) if n else 2**26, repeat=max(3, repeat // 3))
    if device.has_gpu() and not device.simulator_enabled():
        data["gpu"] = vector_add_gpu(n or 2**28, repeat=repeat)
        data["gpu"]["kernel_caches"] = caches
    return data
