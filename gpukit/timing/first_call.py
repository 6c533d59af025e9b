"""Mistakes 2 and 3: the first call, and everything before it, in a fresh process.

:func:`child` runs in a fresh interpreter whose on-disk kernel caches (numba, CuPy, Triton,
TorchInductor) start empty, in a temporary folder: it times importing the library, creating
the GPU context, making the data, the first call (compiling or loading the kernel), the
second, and the steady state.
:func:`in_fresh_process` starts it with :func:`gpukit.proc.run_fresh`; :func:`part_first_call`
does that for each backend.
"""

from __future__ import annotations

import tempfile
import time

import numpy as np

from gpukit import proc

from .kernels import (A, check_saxpy, cupy_kernel, launch_saxpy, make_inputs, numba_cpu_kernel,
                      torch_saxpy)
from .timers import time_with_sync

#: seconds a child process may run before it counts as failed
CHILD_TIMEOUT_S = 300


# --8<-- [start:child]
def child(spec: dict) -> dict:
    """Runs in a fresh process with empty kernel caches: a user's first run."""
    t_main = time.time()
    backend, n = spec["backend"], spec["n"]
    t0 = time.perf_counter()
    if backend == "numba-cuda":
        from numba import cuda
        sync = cuda.synchronize
    elif backend == "cupy":
        import cupy
        sync = cupy.cuda.Device().synchronize
    elif backend == "torch":
        import torch
        sync = torch.cuda.synchronize
    else:  # numba on the CPU
        import numba  # noqa: F401
        sync = lambda: None  # noqa: E731
    t_import = time.perf_counter() - t0

    t0 = time.perf_counter()
    if backend == "numba-cuda":
        cuda.current_context()
    elif backend == "cupy":
        cupy.empty(1)  # the first allocation creates the context; no kernel is compiled
    elif backend == "torch":
        torch.empty(1, device="cuda")
    sync()
    t_context = time.perf_counter() - t0  # creating the GPU context

    t0 = time.perf_counter()
    x, y = make_inputs(n)
    if backend == "numba-cuda":
        dx, dy = cuda.to_device(x), cuda.to_device(y)
        out = cuda.to_device(np.full_like(x, np.nan))
        fn = lambda: launch_saxpy(A, dx, dy, out)  # noqa: E731
    elif backend == "cupy":
        dx, dy = cupy.asarray(x), cupy.asarray(y)
        out = cupy.full_like(dx, cupy.nan)
        k = cupy_kernel()
        fn = lambda: k(np.float32(A), dx, dy, out)  # noqa: E731
    elif backend == "torch":
        dx, dy = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
        out = torch.full_like(dx, float("nan"))
        fn = lambda: torch_saxpy(dx, dy, out)  # noqa: E731
    else:
        out = np.full_like(x, np.nan)
        k = numba_cpu_kernel()
        fn = lambda: k(np.float32(A), x, y, out)  # noqa: E731
    sync()
    t_data = time.perf_counter() - t0

    # compiles (numba, CuPy) or loads (torch) the kernel
    first = time_with_sync(fn, sync)
    to_first_result = time.time() - spec["spawn_time"]
    second = time_with_sync(fn, sync)
    # --8<-- [end:child]
    from gpukit import bench
    timer = {"numba-cuda": "numba", "cupy": "cupy", "torch": "torch"}.get(backend, "cpu")
    steady = bench.bench(fn, timer=timer, name=backend, warmup=2, repeat=spec["repeat"])
    err = check_saxpy(out, x, y, what=backend)
    return {"startup_s": t_main - spec["spawn_time"], "import_s": t_import, "context_s": t_context,
            "data_s": t_data, "first_call_s": first, "second_call_s": second,
            "to_first_result_s": to_first_result, "median_s": steady.median_s,
            "min_s": steady.min_s, "max_rel_err": err}


def in_fresh_process(backend: str, n: int, repeat: int) -> dict:
    """Run :func:`child` in a fresh interpreter whose kernel caches start empty.

    Returns its row, with the process's wall time and the ratios of first call and of process
    start to first result over the steady state; or ``{"name", "error", "process_s"}``.
    """
    with tempfile.TemporaryDirectory(prefix="gpukit-timing-cache-") as cache:
        spec = {"backend": backend, "n": n, "repeat": repeat, "spawn_time": time.time()}
        data = proc.run_fresh("gpukit.timing.first_call:child", spec,
                              env=proc.cache_env(cache, shared=True), timeout=CHILD_TIMEOUT_S)
    if "error" in data:
        return {"name": backend, "error": data["error"][:300], "process_s": data["process_s"]}
    data.update(name=backend, n=n)
    data["first_over_steady"] = data["first_call_s"] / data["median_s"]
    data["start_to_first_over_steady"] = data["to_first_result_s"] / data["median_s"]
    return data


def part_first_call(n: int, repeat: int, gpu: bool) -> dict:
    backends = ["numba-cuda", "cupy", "torch", "numba-cpu"] if gpu else ["numba-cpu"]
    rows, errors = [], []
    for b in backends:
        r = in_fresh_process(b, n, repeat)
        print(f"    {b:<11} " + (f"first call {r['first_call_s']:.3f} s, steady {r['median_s'] * 1e3:.3f} ms, "
                                  f"process start to first result {r['to_first_result_s']:.2f} s"
                                  if "median_s" in r else f"failed: {r['error']}"), flush=True)
        (rows if "median_s" in r else errors).append(r)
    return {"n": n, "rows": rows, "errors": errors}
