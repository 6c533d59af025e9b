"""The "Timing GPU code honestly" chapter: each timing mistake, reproduced and measured.

One workload throughout: SAXPY in float32, ``out = a * x + y`` with ``a = 2``, on arrays
far larger than the GPU's L2 cache (2**28 elements, 1 GiB per array, by default). It moves
12 bytes per element (read x, read y, write out) and does almost no arithmetic, so its
honest speed is a bandwidth, and a bandwidth has a ceiling: a number above the memory's
peak is not fast, it is wrong.

:func:`run` measures, on a GPU machine (about 60-90 s on an H200):

* ``nosync``: a host clock around an asynchronous launch, with and without synchronising;
* ``first_call``: fresh processes with empty kernel caches (numba-cuda, CuPy, torch,
  numba on the CPU): import, GPU context, first call, steady state, process start to first
  result;
* ``transfers``: the kernel alone vs copy in + kernel + copy out (pageable, pinned), and the
  same SAXPY on every CPU core;
* ``one_run``: 200 single runs, each timed alone, at a large and a small size;
* ``cache``: apparent GB/s against the working-set size (1 MB to 4 GB) and an L2-resident
  array timed hot and with the cache flushed before each run;
* ``zeros``: a bf16 matmul of zeros vs random data, with power and clock samples;
* ``poison``: a kernel that skips the tail, checked against zero-filled, stale and
  NaN-poisoned outputs;
* ``right_way``: gpukit.bench, CUDA events by hand (CuPy, torch), cupyx.profiler.benchmark,
  triton.testing.do_bench, torch.profiler's kernel table, and Nsight Compute if present.

Without a GPU it records what means something on a CPU: numba's JIT first call in a fresh
process, the spread of single runs, cache-resident vs DRAM-sized arrays, and the poisoned
output check on numba's CUDA simulator. Each part that fails is recorded as
``{"error": ...}`` and the rest continues.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

NAME = "timing"
#: SAXPY's constant. 2 is a power of two, so ``a * x`` is exact in float32 and the
#: result is one correctly rounded addition: within 2**-24 of the float64 reference.
A = 2.0
CHILD_TIMEOUT_S = 300


# ----------------------------------------------------------------- numbers and checks

def saxpy_bytes(n: int, itemsize: int = 4) -> int:
    """Bytes SAXPY moves through memory: read x, read y, write out."""
    if n < 0 or itemsize < 1:
        raise ValueError("n must be >= 0 and itemsize >= 1")
    return 3 * n * itemsize


def implied_gbs(nbytes: float, seconds: float) -> float:
    """The bandwidth (1e9 bytes/s) a time implies for ``nbytes`` of traffic."""
    if nbytes < 0:
        raise ValueError("nbytes must be >= 0")
    if not seconds > 0:  # also catches NaN
        raise ValueError(f"a measured time must be > 0 s, got {seconds!r}")
    return nbytes / seconds / 1e9


def is_impossible(gbs: float, ceiling_gbs: float, tolerance: float = 0.05) -> bool:
    """True when ``gbs`` is above what the memory can deliver (ceiling plus a tolerance).

    Use the vendor's peak or a copy measured in the same run as the ceiling. A number
    above it means the clock missed the work (no synchronisation, a kernel never
    launched) or the data never came from that memory (it sat in a cache).
    """
    if not ceiling_gbs > 0:
        raise ValueError("the ceiling must be > 0")
    return gbs > ceiling_gbs * (1 + tolerance)


def spread(samples: list[float]) -> dict:
    """Statistics of single-run times: what one run could have told you."""
    if not samples:
        raise ValueError("no samples")
    s = sorted(samples)
    med = statistics.median(s)
    return {"count": len(s), "first_s": samples[0], "first5_s": list(samples[:5]),
            "min_s": s[0], "median_s": med, "max_s": s[-1],
            "p95_s": s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))],
            "max_over_min": s[-1] / s[0] if s[0] > 0 else float("inf"),
            "worst_error_pct": 100 * max(abs(v - med) for v in s) / med if med > 0 else 0.0}


def make_inputs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random float32 x and y (never zeros). Large arrays repeat a 2**20-element block:
    caches work by address, not by value, so the repetition changes no timing.
    The arrays are shared between calls with the same arguments: do not write to them."""
    if n < 0:
        raise ValueError("n must be >= 0")
    return _inputs(int(n), int(seed))


@functools.lru_cache(maxsize=2)
def _inputs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    block = min(n, 2**20)
    x = rng.standard_normal(block, dtype=np.float32)
    y = rng.standard_normal(block, dtype=np.float32)
    if block < n:
        x, y = np.resize(x, n), np.resize(y, n)
    return x, y


def check_saxpy(out, x: np.ndarray, y: np.ndarray, a: float = A, *, chunk: int = 2**24,
                what: str = "saxpy") -> float:
    """Check every element of ``out`` against ``a * x + y``; raise on NaN, inf or a miss.

    Fast and still exact for ``a = 2``: ``2 * x`` is exact in float32, so the correctly
    rounded float32 result, computed here with NumPy, is within half an ulp of the float64
    value. Every element is compared with it; the ones that differ, and one in 64 of the
    rest, are then measured against the float64 reference with ``check_close``.
    """
    from gpukit.verify import Mismatch, check_close, to_host
    host = to_host(out)
    if host.shape != x.shape:
        raise Mismatch(f"{what}: shape {host.shape} != {x.shape}")
    worst = 0.0
    a32 = np.float32(a)
    for s in range(0, x.size, chunk):
        h, xs, ys = host[s:s + chunk], x[s:s + chunk], y[s:s + chunk]
        if not np.isfinite(h).all():
            bad = int(np.count_nonzero(~np.isfinite(h)))
            raise Mismatch(f"{what}: {bad} elements from index {s} on are NaN or inf "
                           "(never written, or computed wrongly)")
        idx = np.flatnonzero(h != a32 * xs + ys)
        for sel in (idx, slice(None, None, 64)):
            ref = a * xs[sel].astype(np.float64) + ys[sel]
            worst = max(worst, check_close(h[sel], ref, what=what))
    return worst


# ----------------------------------------------------------------- the kernels

@functools.cache
def numba_cuda_kernel():
    """The SAXPY kernel for numba.cuda: one element per thread, with a bounds check."""
    # numba's simulator swaps a *global* named cuda inside kernels, so bind it as one,
    # lazily: importing this module must not import numba (the simulator is chosen at import).
    global cuda
    from numba import cuda

    @cuda.jit
    def saxpy_kernel(a, x, y, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            out[i] = a * x[i] + y[i]
    return saxpy_kernel


def launch_saxpy(a, x, y, out, threads: int = 256) -> None:
    """Launch numba's SAXPY with enough blocks to cover every element."""
    blocks = (x.shape[0] + threads - 1) // threads  # round up
    if blocks:
        numba_cuda_kernel()[blocks, threads](np.float32(a), x, y, out)


# --8<-- [start:buggy]
def launch_saxpy_buggy(a, x, y, out, threads: int = 256) -> None:
    """The classic bug: the block count rounds down, so the last n % threads
    elements are never written. Nothing fails; the tail keeps whatever was there."""
    blocks = x.shape[0] // threads  # should round up
    if blocks:
        numba_cuda_kernel()[blocks, threads](np.float32(a), x, y, out)
# --8<-- [end:buggy]


@functools.cache
def numba_cpu_kernel():
    """The fair CPU baseline: SAXPY on every core, vectorised by LLVM."""
    import numba

    @numba.njit(parallel=True)
    def saxpy_cpu(a, x, y, out):
        for i in numba.prange(x.shape[0]):
            out[i] = a * x[i] + y[i]
    return saxpy_cpu


@functools.cache
def numba_cpu_kernel_1core():
    """SAXPY on one CPU core (for the cache sweep: no waiting on the slowest thread)."""
    import numba

    @numba.njit
    def saxpy_1core(a, x, y, out):
        for i in range(x.shape[0]):
            out[i] = a * x[i] + y[i]
    return saxpy_1core


@functools.cache
def cupy_kernel():
    """SAXPY as a CuPy ElementwiseKernel (compiled by NVRTC on first call)."""
    import cupy
    return cupy.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 out",
                                  "out = a * x + y", "gpukit_saxpy")


def torch_saxpy(x, y, out):
    """SAXPY in torch: y + 2 * x in one kernel."""
    import torch
    return torch.add(y, x, alpha=A, out=out)


# ----------------------------------------------------------------- 1. no synchronisation

# --8<-- [start:nosync]
def time_without_sync(fn) -> float:
    """WRONG: a host clock around an asynchronous launch times the launch, not the work."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def time_with_sync(fn, sync) -> float:
    """Right, for one call: wait for the device before starting and before stopping."""
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t0
# --8<-- [end:nosync]


def nosync_rows(fn, sync, timer: str, nbytes: int, label: str, repeat: int) -> list[dict]:
    """The same call timed without sync (once, and a loop of 20), with sync, and with events."""
    from gpukit import bench
    fn()
    sync()
    wrong = []
    for _ in range(5):
        wrong.append(time_without_sync(fn))
        sync()
    t0 = time.perf_counter()
    for _ in range(20):
        fn()
    loop = (time.perf_counter() - t0) / 20  # WRONG: 20 launches queued, none waited for
    sync()
    synced = [time_with_sync(fn, sync) for _ in range(5)]
    right = bench.bench(fn, timer=timer, name=label, repeat=repeat, bytes=nbytes)
    rows = [
        {"name": f"{label}: host clock, no sync (1 call)", "kind": "wrong",
         "median_s": statistics.median(wrong), "samples_s": wrong},
        {"name": f"{label}: host clock, no sync (20 calls in a loop)", "kind": "wrong",
         "median_s": loop},
        {"name": f"{label}: host clock with synchronize", "kind": "right",
         "median_s": statistics.median(synced), "samples_s": synced},
        {"name": f"{label}: CUDA events (gpukit.bench)", "kind": "right",
         "median_s": right.median_s},
    ]
    for r in rows:
        r["gbs"] = implied_gbs(nbytes, r["median_s"])
        r["ratio_to_events"] = right.median_s / r["median_s"]
    return rows


def part_nosync(n: int, repeat: int, peak_gbs: float | None) -> dict:
    import cupy
    import torch
    nbytes = saxpy_bytes(n)
    x, y = make_inputs(n)
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    tout = torch.full_like(tx, float("nan"))
    rows = nosync_rows(lambda: torch_saxpy(tx, ty, tout), torch.cuda.synchronize, "torch",
                       nbytes, "torch", repeat)
    err = check_saxpy(tout, x, y, what="torch saxpy")
    tx = ty = tout = None      # free the memory (the closure above holds the names)
    torch.cuda.empty_cache()
    cx, cy = cupy.asarray(x), cupy.asarray(y)
    cout = cupy.full_like(cx, cupy.nan)
    k = cupy_kernel()
    rows += nosync_rows(lambda: k(np.float32(A), cx, cy, cout), cupy.cuda.Device().synchronize,
                        "cupy", nbytes, "CuPy", repeat)
    err = max(err, check_saxpy(cout, x, y, what="CuPy saxpy"))
    cx = cy = cout = None
    cupy.get_default_memory_pool().free_all_blocks()
    if peak_gbs:
        for r in rows:
            r["impossible"] = is_impossible(r["gbs"], peak_gbs)
    return {"n": n, "bytes": nbytes, "peak_gbs": peak_gbs, "max_rel_err": err, "rows": rows}


# ----------------------------------------------------------------- 2 and 3. first call, context

# --8<-- [start:child]
def _child(spec: dict) -> dict:
    """Runs in a fresh process with empty kernel caches: what a user's first run costs."""
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

    first = time_with_sync(fn, sync)  # compiles (numba, CuPy) or loads (torch) the kernel
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


def _spawn(args: list[str], env_extra: dict | None = None, timeout: float = CHILD_TIMEOUT_S):
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "gpukit.timing.measure", *args],
                          capture_output=True, text=True, env=env, timeout=timeout)


def spawn_child(spec: dict) -> dict:
    """Run :func:`_child` in a fresh interpreter whose numba and CuPy caches start empty."""
    with tempfile.TemporaryDirectory(prefix="gpukit-pitfalls-cache-") as cache:
        env = {"NUMBA_CACHE_DIR": cache, "CUPY_CACHE_DIR": cache,
               "TRITON_CACHE_DIR": cache}
        spec = {**spec, "spawn_time": time.time()}
        t0 = time.perf_counter()
        proc = _spawn(["child", json.dumps(spec)], env)
        wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"name": spec["backend"], "error": tail[0][:300], "process_s": wall}
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    data.update(name=spec["backend"], process_s=wall, n=spec["n"])
    data["first_over_steady"] = data["first_call_s"] / data["median_s"]
    data["start_to_first_over_steady"] = data["to_first_result_s"] / data["median_s"]
    return data


def part_first_call(n: int, repeat: int, gpu: bool) -> dict:
    backends = ["numba-cuda", "cupy", "torch", "numba-cpu"] if gpu else ["numba-cpu"]
    rows, errors = [], []
    for b in backends:
        r = spawn_child({"backend": b, "n": n, "repeat": repeat})
        print(f"    {b:<11} " + (f"first call {r['first_call_s']:.3f} s, steady {r['median_s'] * 1e3:.3f} ms, "
                                  f"process start to first result {r['to_first_result_s']:.2f} s"
                                  if "median_s" in r else f"failed: {r['error']}"), flush=True)
        (rows if "median_s" in r else errors).append(r)
    return {"n": n, "rows": rows, "errors": errors}


# ----------------------------------------------------------------- 4. transfers

def part_transfers(n: int, repeat: int) -> dict:
    import torch

    from gpukit import bench
    x, y = make_inputs(n)
    nbytes = saxpy_bytes(n)
    dx, dy = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    dout = torch.full_like(dx, float("nan"))
    rows = []

    # --8<-- [start:transfers]
    def kernel_only():                      # the question: how fast is the kernel?
        torch_saxpy(dx, dy, dout)

    def numpy_to_numpy():                   # the question: when does my NumPy array have it?
        gx = torch.from_numpy(x).to("cuda")  # pageable host memory: staged copies
        gy = torch.from_numpy(y).to("cuda")
        return torch_saxpy(gx, gy, torch.empty_like(gx)).cpu().numpy()

    px, py = torch.from_numpy(x).pin_memory(), torch.from_numpy(y).pin_memory()
    pout = torch.empty(n, dtype=torch.float32, pin_memory=True)

    def pinned_to_pinned():                 # inputs already in page-locked memory
        dx.copy_(px, non_blocking=True)
        dy.copy_(py, non_blocking=True)
        torch_saxpy(dx, dy, dout)
        pout.copy_(dout, non_blocking=True)
    # --8<-- [end:transfers]

    t = bench.bench(kernel_only, timer="torch", name="kernel only (data already on the GPU)",
                    repeat=repeat, bytes=nbytes)
    err = check_saxpy(dout, x, y, what="kernel only")
    rows.append({"question": "kernel", **t.to_dict()})
    box = {}
    t = bench.bench(lambda: box.__setitem__("r", numpy_to_numpy()), timer="torch",
                    name="NumPy in, NumPy out (pageable copies)", warmup=1, repeat=5, bytes=nbytes)
    err = max(err, check_saxpy(box["r"], x, y, what="pageable end to end"))
    rows.append({"question": "answer", **t.to_dict()})
    pout.fill_(float("nan"))
    t = bench.bench(pinned_to_pinned, timer="torch", name="pinned in, pinned out",
                    warmup=1, repeat=5, bytes=nbytes)
    err = max(err, check_saxpy(pout, x, y, what="pinned end to end"))
    rows.append({"question": "answer", **t.to_dict()})
    dx = dy = dout = px = py = pout = None  # free the memory before the CPU part
    torch.cuda.empty_cache()
    k = numba_cpu_kernel()
    cpu_out = np.full_like(x, np.nan)
    t = bench.bench(lambda: k(np.float32(A), x, y, cpu_out), timer="cpu",
                    name=f"CPU: numba parallel, {_usable_cpus()} cores", warmup=2,
                    repeat=max(5, repeat // 3), bytes=nbytes)
    err = max(err, check_saxpy(cpu_out, x, y, what="CPU saxpy"))
    rows.append({"question": "answer", **t.to_dict()})
    kernel = rows[0]["median_s"]
    for r in rows:
        r["ratio_to_kernel"] = r["median_s"] / kernel
    return {"n": n, "bytes": nbytes, "max_rel_err": err, "rows": rows}


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# ----------------------------------------------------------------- 5. one run

# --8<-- [start:one_run]
def single_runs(fn, sync, count: int = 200, events=None, idle_s: float = 1.0) -> dict:
    """Time ``count`` calls one by one (each synchronised), after ``idle_s`` of idling.

    ``events`` makes a CUDA event pair (torch or CuPy) to time the device side too.
    """
    time.sleep(idle_s)  # like a script that just started: clocks may be low
    host, pairs = [], []
    for _ in range(count):
        sync()
        t0 = time.perf_counter()
        if events:
            a, b = events(), events()
            a.record()
        fn()
        if events:
            b.record()
            pairs.append((a, b))
        sync()
        host.append(time.perf_counter() - t0)
    out = {"host_s": host}
    if events:
        out["events_s"] = [a.elapsed_time(b) / 1e3 for a, b in pairs]
    return out
# --8<-- [end:one_run]


def part_one_run(n: int, gpu: bool, count: int = 200) -> dict:
    sizes = [("large", n), ("small", 2**16)]
    rows, series = [], []
    for label, m in sizes:
        x, y = make_inputs(m, seed=1)
        if gpu:
            import torch
            dx, dy = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
            dout = torch.full_like(dx, float("nan"))
            fn = lambda: torch_saxpy(dx, dy, dout)  # noqa: E731
            res = single_runs(fn, torch.cuda.synchronize, count,
                              events=lambda: torch.cuda.Event(enable_timing=True))
            check_saxpy(dout, x, y, what=f"one run {label}")
            del dx, dy, dout
        else:
            out = np.full_like(x, np.nan)
            k = numba_cpu_kernel()
            k(np.float32(A), x[:8], y[:8], out[:8])  # compile first: this part is about spread
            out = np.empty_like(x)  # fresh memory: the first run also pays page faults
            res = single_runs(lambda: k(np.float32(A), x, y, out), lambda: None, count,
                              idle_s=0.2)
            check_saxpy(out, x, y, what=f"one run {label}")
        for timer, samples in res.items():
            name = f"{label} ({m:,} elements), " + ("host clock + sync" if timer == "host_s"
                                                    else "CUDA events")
            st = spread(samples)
            rows.append({"name": name, "size": label, "n_elements": m, "timer": timer[:-2],
                         **st, "gbs": implied_gbs(saxpy_bytes(m), st["median_s"])})
            series.append({"name": name, "samples_s": samples})
    return {"n": n, "count": count, "rows": rows, "series": series,
            "device": "gpu" if gpu else "cpu"}


# ----------------------------------------------------------------- 6a. cache-resident data

def _graph_time(fn, launches: int, replays: int = 5) -> float:
    """Seconds per call of ``fn``, from a CUDA graph of ``launches`` calls (no launch gaps)."""
    import torch
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(launches):
            fn()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3 / launches)
    del g
    return statistics.median(times)


def working_sets(max_bytes: int) -> list[int]:
    """1 MB, 2 MB, 4 MB, ... up to ``max_bytes`` (working set = x + y + out)."""
    if max_bytes < 2**20:
        raise ValueError("max_bytes must be at least 1 MiB")
    out, b = [], 2**20
    while b <= max_bytes:
        out.append(b)
        b *= 2
    return out


# --8<-- [start:flush]
def flushed_runs(fn, flush_buffer, count: int = 50) -> list[float]:
    """Time each call with CUDA events after overwriting a buffer larger than the L2
    cache, so the data comes from memory, as it would in a real program."""
    import torch
    pairs = []
    for _ in range(count):
        flush_buffer.zero_()  # evicts fn's data from L2; not inside the events
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        pairs.append((a, b))
    torch.cuda.synchronize()
    return [a.elapsed_time(b) / 1e3 for a, b in pairs]
# --8<-- [end:flush]


def part_cache_gpu(max_bytes: int, l2_bytes: int | None, peak_gbs: float | None) -> dict:
    import torch

    from gpukit import bench
    rows = []
    for ws in working_sets(max_bytes):
        m = ws // 12
        x, y = torch.randn(m, device="cuda"), torch.randn(m, device="cuda")
        out = torch.empty_like(x)
        fn = lambda: torch_saxpy(x, y, out)  # noqa: E731
        est = ws / 3e12  # about 3 TB/s: aim for >= 2 ms per graph replay
        launches = int(min(200, max(10, 2e-3 / est)))
        try:
            t, method = _graph_time(fn, launches), f"CUDA graph of {launches} launches"
        except Exception:  # noqa: BLE001 - fall back to a plain loop, and say so
            t, method = bench.bench(fn, timer="torch", repeat=50).median_s, "events per call"
        rows.append({"name": f"{ws / 2**20:g} MiB", "working_set_bytes": ws, "n_elements": m,
                     "median_s": t, "gbs": implied_gbs(12 * m, t), "method": method})
        x = y = out = None  # free the memory (the lambda above holds the names)
    torch.cuda.empty_cache()

    # An array that fits in L2, timed hot (back to back) and cold (L2 flushed before each run).
    hot_cold = []
    flush = torch.empty(256 * 2**20 // 4, device="cuda")
    for ws in (24 * 2**20, 3 * 2**30):
        m = ws // 12
        xh, yh = make_inputs(m, seed=2)
        x, y = torch.from_numpy(xh).cuda(), torch.from_numpy(yh).cuda()
        out = torch.full_like(x, float("nan"))
        fn = lambda: torch_saxpy(x, y, out)  # noqa: E731
        # Hot: back to back from a CUDA graph, like the sweep. (Events around single calls on
        # an idle GPU would add the host's launch gap to a kernel of a few microseconds.)
        launches = int(min(200, max(10, 2e-3 / (ws / 3e12))))
        try:
            hot, hot_method = _graph_time(fn, launches), f"CUDA graph of {launches} launches"
        except Exception:  # noqa: BLE001 - fall back to events per call, and say so
            hot, hot_method = bench.bench(fn, timer="torch", repeat=50).median_s, "events per call"
        cold = statistics.median(flushed_runs(fn, flush))
        check_saxpy(out, xh, yh, what="cache test")
        hot_cold.append({"working_set_bytes": ws, "n_elements": m, "hot_s": hot, "cold_s": cold,
                         "hot_method": hot_method,
                         "hot_gbs": implied_gbs(12 * m, hot), "cold_gbs": implied_gbs(12 * m, cold)})
        x = y = out = None  # free the memory (the lambda above holds the names)
    del flush
    torch.cuda.empty_cache()
    if peak_gbs:
        for r in rows:
            r["above_peak"] = is_impossible(r["gbs"], peak_gbs)
    return {"n": max_bytes // 12, "device": "gpu", "l2_bytes": l2_bytes, "peak_gbs": peak_gbs,
            "rows": rows, "hot_cold": hot_cold}


def part_cache_cpu(max_bytes: int) -> dict:
    from gpukit import bench
    k = numba_cpu_kernel_1core()
    rows = []
    for ws in working_sets(max_bytes):
        m = ws // 12
        x, y = make_inputs(m, seed=3)
        out = np.full_like(x, np.nan)
        fn = lambda: k(np.float32(A), x, y, out)  # noqa: E731
        est = ws / 10e9
        t = bench.bench(fn, timer="cpu", warmup=3, repeat=int(min(400, max(5, 0.05 / est))))
        check_saxpy(out, x, y, what="cpu cache sweep")
        rows.append({"name": f"{ws / 2**20:g} MiB", "working_set_bytes": ws, "n_elements": m,
                     "median_s": t.median_s, "gbs": implied_gbs(12 * m, t.median_s),
                     "method": "one core, host clock per call"})
    caches = _cpu_caches()
    return {"n": max_bytes // 12, "device": "cpu", "l2_bytes": caches.get("L2"),
            "l3_bytes": caches.get("L3"), "rows": rows}


def _cpu_caches() -> dict:
    """Total L2 and L3 sizes from lscpu (bytes), where it says."""
    try:
        out = subprocess.run(["lscpu", "-B"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    sizes = {}
    for line in out.splitlines():
        for level in ("L2", "L3"):
            if line.startswith(f"{level} cache:"):
                try:
                    sizes[level] = int(line.split(":", 1)[1].split()[0])
                except ValueError:
                    pass
    return sizes


# ----------------------------------------------------------------- 6b. zeros

def part_zeros(size: int = 8192, repeat: int = 30) -> dict:
    import torch

    from gpukit import bench
    flops = 2.0 * size**3
    rows = []
    for label, make in [("random (randn)", torch.randn), ("zeros", torch.zeros),
                        ("random again", torch.randn)]:
        a = make(size, size, device="cuda", dtype=torch.bfloat16)
        b = make(size, size, device="cuda", dtype=torch.bfloat16)
        c = torch.empty_like(a)
        fn = lambda: torch.matmul(a, b, out=c)  # noqa: E731
        t = bench.bench(fn, timer="torch", name=label, warmup=5, repeat=repeat, flops=flops)
        row = {"name": label, **t.to_dict(), **_power_while(fn, t.median_s)}
        rows.append(row)
        a = b = c = None
    torch.cuda.empty_cache()
    base = statistics.mean([rows[0]["median_s"], rows[2]["median_s"]])
    for r in rows:
        r["speed_vs_random"] = base / r["median_s"]
    return {"n": size, "dtype": "bfloat16", "rows": rows}


def _power_while(fn, seconds_per_call: float, duration_s: float = 1.5) -> dict:
    """Median board power (W) and SM clock (MHz) while ``fn`` runs back to back."""
    try:
        import pynvml
        import torch
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        calls = int(min(900, max(10, duration_s / seconds_per_call)))
        for _ in range(calls):
            fn()
        done = torch.cuda.Event()
        done.record()
        watts, mhz = [], []
        while not done.query():
            watts.append(pynvml.nvmlDeviceGetPowerUsage(h) / 1e3)
            mhz.append(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))
            time.sleep(0.02)
        torch.cuda.synchronize()
        limit = pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3
        pynvml.nvmlShutdown()
        if not watts:
            return {}
        return {"power_w": statistics.median(watts), "sm_clock_mhz": statistics.median(mhz),
                "power_limit_w": limit, "power_samples": len(watts)}
    except Exception as exc:  # noqa: BLE001 - power is a nice-to-have
        return {"power_error": f"{type(exc).__name__}: {exc}"[:200]}


# ----------------------------------------------------------------- 6c. poisoned outputs

def poison_demo(n: int, threads: int = 256) -> dict:
    """The tail-skipping kernel against three output buffers; what the check says each time."""
    from numba import cuda

    from gpukit.verify import Mismatch, check_close
    if n % threads == 0:
        raise ValueError("pick an n that is not a multiple of threads, or the bug has no effect")
    x, y = make_inputs(n, seed=4)
    ref = A * x.astype(np.float64) + y
    dx, dy = cuda.to_device(x), cuda.to_device(y)
    cases = []

    def check(label, out, reference):
        try:
            check_close(out, reference, what=label)
            return {"case": label, "caught": False, "message": "check passed: the bug is hidden"}
        except Mismatch as exc:
            return {"case": label, "caught": True, "message": str(exc)}

    # 1. zeros in, a zero-filled output: 2 * 0 + 0 = 0, the unwritten tail looks right
    zx, zy = cuda.to_device(np.zeros_like(x)), cuda.to_device(np.zeros_like(y))
    out = cuda.to_device(np.zeros_like(x))
    launch_saxpy_buggy(A, zx, zy, out, threads)
    cases.append(check("zeros in, zero-filled output", out, np.zeros(n)))
    # 2. random data, but the output still holds a previous, correct result
    out = cuda.to_device(np.full_like(x, np.nan))
    launch_saxpy(A, dx, dy, out, threads)
    launch_saxpy_buggy(A, dx, dy, out, threads)
    cases.append(check("random in, output left from a correct run", out, ref))
    # 3. random data, output poisoned with NaN before the run
    out = cuda.to_device(np.full_like(x, np.nan))
    launch_saxpy_buggy(A, dx, dy, out, threads)
    cases.append(check("random in, NaN-poisoned output", out, ref))
    cuda.synchronize()
    return {"n": n, "threads": threads, "unwritten": n % threads, "rows": [], "cases": cases}


# ----------------------------------------------------------------- the right way

# --8<-- [start:events]
def events_cupy(fn, repeat: int = 30) -> list[float]:
    """CUDA events by hand, with CuPy: record, run, record, wait, read."""
    import cupy
    times = []
    for _ in range(repeat):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)  # ms -> s
    return times


def events_torch(fn, repeat: int = 30) -> list[float]:
    """The same with torch's events (enable_timing=True is required)."""
    import torch
    times = []
    for _ in range(repeat):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return times
# --8<-- [end:events]


def part_right_way(n: int, repeat: int) -> dict:
    import cupy
    import torch

    from gpukit import bench
    x, y = make_inputs(n)
    nbytes = saxpy_bytes(n)
    cx, cy = cupy.asarray(x), cupy.asarray(y)
    cout = cupy.full_like(cx, cupy.nan)
    k = cupy_kernel()
    cfn = lambda: k(np.float32(A), cx, cy, cout)  # noqa: E731
    tx, ty = torch.as_tensor(cx, device="cuda"), torch.as_tensor(cy, device="cuda")
    tout = torch.full_like(tx, float("nan"))
    tfn = lambda: torch_saxpy(tx, ty, tout)  # noqa: E731
    cfn()
    tfn()
    err = check_saxpy(cout, x, y, what="CuPy")
    rows, errors = [], []

    def add(name, seconds, **extra):
        rows.append({"name": name, "median_s": seconds, "gbs": implied_gbs(nbytes, seconds), **extra})

    def attempt(label, f):
        try:
            f()
        except Exception as exc:  # noqa: BLE001 - a tool that fails is recorded, not fatal
            errors.append({"name": label, "error": f"{type(exc).__name__}: {exc}"[:300]})
            print(f"    {label} failed: {errors[-1]['error']}", flush=True)

    attempt("gpukit.bench", lambda: add("gpukit.bench.bench (torch events)",
                                        bench.bench(tfn, timer="torch", repeat=repeat).median_s))
    attempt("events torch", lambda: add("CUDA events by hand (torch)",
                                        statistics.median(events_torch(tfn, repeat))))
    attempt("events cupy", lambda: add("CUDA events by hand (CuPy)",
                                       statistics.median(events_cupy(cfn, repeat))))

    def cupyx_bench():
        from cupyx.profiler import benchmark
        r = benchmark(cfn, n_repeat=repeat, n_warmup=3)
        add("cupyx.profiler.benchmark: GPU time", float(np.median(r.gpu_times[0])))
        add("cupyx.profiler.benchmark: CPU time", float(np.median(r.cpu_times)),
            note="host time of the call alone: the launch, not the work")
    attempt("cupyx.profiler.benchmark", cupyx_bench)

    def triton_bench():
        import triton.testing
        ms = triton.testing.do_bench(tfn, warmup=25, rep=100, return_mode="median")
        add("triton.testing.do_bench (L2 flushed)", ms / 1e3)
    attempt("triton.testing.do_bench", triton_bench)

    profiler = None

    def torch_prof():
        nonlocal profiler
        profiler = torch_profile(tfn)
    attempt("torch.profiler", torch_prof)
    err = max(err, check_saxpy(tout, x, y, what="torch after tools"))
    cx = cy = cout = tx = ty = tout = None
    cupy.get_default_memory_pool().free_all_blocks()
    torch.cuda.empty_cache()
    return {"n": n, "bytes": nbytes, "max_rel_err": err, "rows": rows, "errors": errors,
            "torch_profiler": profiler, "ncu": nsight_compute(min(n, 2**26))}


# --8<-- [start:profiler]
def torch_profile(fn, steps: int = 10) -> dict:
    """torch.profiler around a few calls: which kernels ran, how often, how long on the GPU."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    events = prof.key_averages()
    table = events.table(sort_by="device_time_total", row_limit=6)
    # --8<-- [end:profiler]
    rows = []
    for e in events:
        dev = getattr(e, "device_time_total", None)
        if dev is None:
            dev = getattr(e, "cuda_time_total", 0)
        rows.append({"name": e.key, "calls": e.count, "device_us": float(dev),
                     "cpu_us": float(e.cpu_time_total)})
    rows.sort(key=lambda r: r["device_us"], reverse=True)
    return {"steps": steps, "rows": rows[:6], "table": table}


def find_ncu() -> str | None:
    """Nsight Compute's command line, on PATH or where the CUDA toolkit puts it."""
    exe = shutil.which("ncu")
    if exe:
        return exe
    for cand in ["/usr/local/cuda/bin/ncu", *sorted(
            __import__("glob").glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True)]:
        if os.path.exists(cand):
            return cand
    return None


NCU_ARGS = ["--section", "SpeedOfLight", "--kernel-name", "regex:gpukit_saxpy",
            "--launch-count", "1"]


def nsight_compute(n: int, timeout: float = 60) -> dict:
    """Nsight Compute on one SAXPY launch (SpeedOfLight section), or why it could not run."""
    cmd_shown = ("ncu " + " ".join(NCU_ARGS) + " python -m gpukit.timing.measure ncu-target "
                 + str(n))
    exe = find_ncu()
    if exe is None:
        return {"available": False, "command": cmd_shown,
                "output": "ncu was not found on PATH, in /usr/local/cuda/bin or /opt/nvidia."}
    cmd = [exe, *NCU_ARGS, sys.executable, "-m", "gpukit.timing.measure", "ncu-target", str(n)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        text, rc = (proc.stdout + proc.stderr), proc.returncode
    except subprocess.TimeoutExpired:
        text, rc = f"ncu did not finish within {timeout:.0f} s", None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    keep = [ln for ln in lines if not ln.startswith("target ok")]
    return {"available": True, "command": cmd_shown, "returncode": rc,
            "seconds": time.perf_counter() - t0, "output": "\n".join(keep[-45:]),
            "permission_error": "ERR_NVGPUCTRPERM" in text}


def _ncu_target(n: int) -> None:
    import cupy
    x, y = make_inputs(n)
    cx, cy = cupy.asarray(x), cupy.asarray(y)
    out = cupy.full_like(cx, cupy.nan)
    cupy_kernel()(np.float32(A), cx, cy, out)
    cupy.cuda.Device().synchronize()
    check_saxpy(out, x, y, what="ncu target")
    print("target ok")


# ----------------------------------------------------------------- the whole benchmark

def _peak_gbs(machine: dict) -> float | None:
    gpu = machine.get("gpu") or {}
    return gpu.get("theoretical_bandwidth_gbs")


def run(n: int | None, repeat: int = 30) -> dict:
    """Every measurement of the chapter; returns {part: {"n", "rows", ...}}."""
    from gpukit import device
    t_start = time.perf_counter()
    gpu = device.has_gpu() and not device.simulator_enabled()
    n = n or (2**28 if gpu else 2**24)
    repeat = max(5, min(repeat, 100))
    data: dict = {}
    machine = device.machine_record()
    peak = _peak_gbs(machine) if gpu else None
    l2 = (machine.get("gpu") or {}).get("l2_cache_bytes") if gpu else None

    def part(name, fn):
        t0 = time.perf_counter()
        print(f"  {name} ...", flush=True)
        try:
            data[name] = fn()
        except Exception as exc:  # noqa: BLE001 - record it, run the rest
            data[name] = {"n": n, "rows": [], "error": f"{type(exc).__name__}: {exc}"[:400]}
            print(f"  {name} FAILED: {data[name]['error']}", flush=True)
        print(f"  {name} done in {time.perf_counter() - t0:.1f} s", flush=True)

    if gpu:
        part("nosync", lambda: part_nosync(n, repeat, peak))
    part("first_call", lambda: part_first_call(n, repeat, gpu))
    if gpu:
        part("transfers", lambda: part_transfers(n, repeat))
    part("one_run", lambda: part_one_run(n, gpu))
    if gpu:
        part("cache", lambda: part_cache_gpu(4 * 2**30, l2, peak))
        part("zeros", lambda: part_zeros(8192, repeat))
    else:
        part("cache", lambda: part_cache_cpu(min(2**30, 64 * n)))
    part("poison", lambda: _poison_in_child(gpu))
    if gpu:
        part("right_way", lambda: part_right_way(n, repeat))
    total = time.perf_counter() - t_start
    print(f"  timing-pitfalls total: {total:.1f} s", flush=True)
    for block in data.values():
        block["total_benchmark_s"] = total
    return data


def _poison_in_child(gpu: bool) -> dict:
    """The poison demo in a fresh process: numba's simulator there when this machine has no GPU."""
    n = 2**20 + 100 if gpu else 1000 + 100
    env = {} if gpu else {"NUMBA_ENABLE_CUDASIM": "1"}
    proc = _spawn(["poison", str(n)], env)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(tail[0])
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    data["simulator"] = not gpu
    return data

if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "child":
        print(json.dumps(_child(json.loads(sys.argv[2]))))
    elif len(sys.argv) == 3 and sys.argv[1] == "poison":
        print(json.dumps(poison_demo(int(sys.argv[2]))))
    elif len(sys.argv) == 3 and sys.argv[1] == "ncu-target":
        _ncu_target(int(sys.argv[2]))
    else:
        print("usage: python -m gpukit.timing.measure child SPEC | poison N | ncu-target N",
              file=sys.stderr)
        sys.exit(2)
