"""The "Timing GPU code honestly" chapter: each timing mistake, reproduced and measured.

One workload throughout (:mod:`gpukit.timing.kernels`): SAXPY in float32, ``out = a * x + y``
with ``a = 2``, on arrays far larger than the GPU's L2 cache (2**28 elements, 1 GiB per array,
by default). It moves 12 bytes per element (read x, read y, write out) and does almost no
arithmetic, so its honest speed is a bandwidth, and a bandwidth has a ceiling: a number above
the memory's peak is not fast, it is wrong.

:func:`run` measures, on a GPU machine (about 60-90 s on an H200):

* ``nosync``: a host clock around an asynchronous launch, with and without synchronising;
* ``first_call``: fresh processes with empty kernel caches (numba-cuda, CuPy, torch,
  numba on the CPU): import, GPU context, first call, steady state, process start to first
  result (:mod:`gpukit.timing.first_call`);
* ``transfers``: the kernel alone vs copy in + kernel + copy out (pageable, pinned), and the
  same SAXPY on every CPU core;
* ``one_run``: 200 single runs, each timed alone, at a large and a small size;
* ``cache``: apparent GB/s against the working-set size (1 MB to 4 GB) and an L2-resident
  array timed hot and with the cache flushed before each run;
* ``zeros``: a bf16 matmul of zeros vs random data, with power and clock samples;
* ``poison``: a kernel that skips the tail, checked against zero-filled, stale and
  NaN-poisoned outputs;
* ``right_way``: gpukit.bench, CUDA events by hand (CuPy, torch), cupyx.profiler.benchmark,
  triton.testing.do_bench, torch.profiler's kernel table, and Nsight Compute if present
  (:mod:`gpukit.timing.profile`).

Without a GPU it records what means something on a CPU: numba's JIT first call in a fresh
process, the spread of single runs, cache-resident vs DRAM-sized arrays, and the poisoned
output check on numba's CUDA simulator. Each part that fails is recorded as
``{"error": ...}`` and the rest continues.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time

import numpy as np

from gpukit import proc

from .meta import NAME, peak_gbs
from .first_call import CHILD_TIMEOUT_S, part_first_call
from .kernels import (A, check_saxpy, cupy_kernel, implied_gbs, is_impossible, make_inputs,
                      numba_cpu_kernel, numba_cpu_kernel_1core, saxpy_bytes, spread, torch_saxpy)
from .profile import nsight_compute
from .timers import (events_cupy, events_torch, flushed_runs, graph_time, single_runs,
                     time_with_sync, time_without_sync, torch_profile)

#: the results file: results/<machine>/timing.json


# ----------------------------------------------------------------- 1. no synchronisation

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
    # the question: how fast is the kernel?
    def kernel_only():
        torch_saxpy(dx, dy, dout)

    # the question: when does my NumPy array have the answer?
    def numpy_to_numpy():
        gx = torch.from_numpy(x).to("cuda")  # pageable host memory: staged copies
        gy = torch.from_numpy(y).to("cuda")
        return torch_saxpy(gx, gy, torch.empty_like(gx)).cpu().numpy()

    px, py = torch.from_numpy(x).pin_memory(), torch.from_numpy(y).pin_memory()
    pout = torch.empty(n, dtype=torch.float32, pin_memory=True)

    # inputs already in page-locked memory
    def pinned_to_pinned():
        dx.copy_(px, non_blocking=True)
        dy.copy_(py, non_blocking=True)
        torch_saxpy(dx, dy, dout)
        pout.copy_(dout, non_blocking=True)
    # --8<-- [end:transfers]

    t = bench.bench(kernel_only, timer="torch", name="kernel only (data already on the GPU)",
                    repeat=repeat, bytes=nbytes)
    err = check_saxpy(dout, x, y, what="kernel only")
    rows.append(bench.row(t, question="kernel"))
    box = {}
    t = bench.bench(lambda: box.__setitem__("r", numpy_to_numpy()), timer="torch",
                    name="NumPy in, NumPy out (pageable copies)", warmup=1, repeat=5, bytes=nbytes)
    err = max(err, check_saxpy(box["r"], x, y, what="pageable end to end"))
    rows.append(bench.row(t, question="answer"))
    pout.fill_(float("nan"))
    t = bench.bench(pinned_to_pinned, timer="torch", name="pinned in, pinned out",
                    warmup=1, repeat=5, bytes=nbytes)
    err = max(err, check_saxpy(pout, x, y, what="pinned end to end"))
    rows.append(bench.row(t, question="answer"))
    dx = dy = dout = px = py = pout = None  # free the memory before the CPU part
    torch.cuda.empty_cache()
    k = numba_cpu_kernel()
    cpu_out = np.full_like(x, np.nan)
    t = bench.bench(lambda: k(np.float32(A), x, y, cpu_out), timer="cpu",
                    name=f"CPU: numba parallel, {_usable_cpus()} cores", warmup=2,
                    repeat=max(5, repeat // 3), bytes=nbytes)
    err = max(err, check_saxpy(cpu_out, x, y, what="CPU saxpy"))
    rows.append(bench.row(t, question="answer"))
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

def working_sets(max_bytes: int) -> list[int]:
    """1 MB, 2 MB, 4 MB, ... up to ``max_bytes`` (working set = x + y + out)."""
    if max_bytes < 2**20:
        raise ValueError("max_bytes must be at least 1 MiB")
    out, b = [], 2**20
    while b <= max_bytes:
        out.append(b)
        b *= 2
    return out


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
            t, method = graph_time(fn, launches), f"CUDA graph of {launches} launches"
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
            hot, hot_method = graph_time(fn, launches), f"CUDA graph of {launches} launches"
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
        row = bench.row(t, **_power_while(fn, t.median_s))
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


# ----------------------------------------------------------------- the right way

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


# ----------------------------------------------------------------- the whole benchmark

def run(n: int | None, repeat: int = 30) -> dict:
    """Every measurement of the chapter; returns {part: {"n", "rows", ...}}."""
    from gpukit import device
    t_start = time.perf_counter()
    gpu = device.has_gpu() and not device.simulator_enabled()
    n = n or (2**28 if gpu else 2**24)
    repeat = max(5, min(repeat, 100))
    data: dict = {}
    machine = device.machine_record()
    peak = peak_gbs(machine) if gpu else None
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
    print(f"  timing total: {total:.1f} s", flush=True)
    for block in data.values():
        block["total_benchmark_s"] = total
    return data


def _poison_in_child(gpu: bool) -> dict:
    """The poison demo in a fresh process: numba's simulator there when this machine has no GPU."""
    n = 2**20 + 100 if gpu else 1000 + 100
    env = {} if gpu else {"NUMBA_ENABLE_CUDASIM": "1"}
    data = proc.run_fresh("gpukit.timing.kernels:poison_demo", n, env=env, timeout=CHILD_TIMEOUT_S)
    if "error" in data:
        raise RuntimeError(data["error"])
    del data["process_s"]  # the demo's record holds what the check said, not how long it took
    data["simulator"] = not gpu
    return data
