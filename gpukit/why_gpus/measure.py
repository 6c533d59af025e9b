"""Where does the GPU start to win? CPU and GPU timed on the same machine, size by size.

:func:`run` (``gpukit bench why-gpus``) times both workloads of :mod:`.kernels` on every
backend at half-decade sizes from 1e3 up to ``n``: pure Python (small sizes only), NumPy,
numba on one core and on all cores, and the numba CUDA kernel timed alone (CUDA events)
and end to end, including the copies to and from the GPU from pageable and from pinned
host memory. Every result is checked against a float64 reference; outputs are poisoned
with NaN first. :func:`crossover` finds the size from which on the GPU beats the best CPU.
"""

from __future__ import annotations

import math
import os
import time
import warnings

import numpy as np

from gpukit import device

from .meta import BACKENDS, CPU_NAMES, GPU_BACKENDS, LABELS, NAME  # noqa: F401
from .kernels import (BYTES_PER_ELEMENT, COEFFS, CUDA_C_ELEMS, DEGREE, FLOPS_PER_ELEMENT, RTOL,
                      SAXPY_A, cpu_kernel, horner_cuda_c, horner_numpy, horner_python, launch,
                      numba_cpu, reference, saxpy_numpy, saxpy_python)

#: Largest size for each slow backend (the fast ones go to n). Pure Python on lists only.
CAPS = {
    ("saxpy", "python"): 10**6, ("poly", "python"): 10**5,
    ("saxpy", "numpy"): 10**8, ("poly", "numpy"): 10**6,
    ("saxpy", "numba-1core"): 10**8, ("poly", "numba-1core-naive"): 10**7,
    ("poly", "numba-1core"): 10**8,
}


def sizes(n_max: int, start: int = 1000) -> list[int]:
    """Half-decade sizes 1e3, 3.2e3, 1e4, ... up to and including ``n_max``."""
    if n_max < 1:
        raise ValueError("n_max must be >= 1")
    out, k = [], round(2 * math.log10(start))
    while round(10 ** (k / 2)) <= n_max:
        out.append(round(10 ** (k / 2)))
        k += 1
    if not out or out[-1] != n_max:
        out.append(n_max)
    return out


# ------------------------------------------------------------------ the crossover

def best_cpu(rows: list[dict]) -> dict[int, float]:
    """Fastest CPU median time at each size among rows of CPU backends."""
    best: dict[int, float] = {}
    for r in rows:
        if r.get("backend") in CPU_NAMES and r.get("median_s") is not None:
            best[r["size"]] = min(best.get(r["size"], math.inf), r["median_s"])
    return best


def crossover(rows: list[dict], gpu_backend: str) -> int | None:
    """Smallest measured size from which on ``gpu_backend`` beats the best CPU row.

    The GPU must be faster at that size and at every larger size where both were
    measured; None when it never is (or the last size is not a win).
    """
    cpu = best_cpu(rows)
    gpu = {r["size"]: r["median_s"] for r in rows
           if r.get("backend") == gpu_backend and r.get("median_s") is not None}
    common = sorted(set(cpu) & set(gpu))
    found = None
    for s in reversed(common):
        if gpu[s] < cpu[s]:
            found = s
        else:
            break
    return found


# ------------------------------------------------------------------ measuring

def _repeats(t_est: float, repeat: int, floor: int = 3) -> tuple[int, int]:
    """(warmup, repeat) so that one (backend, size) costs about 0.3 s at most."""
    if t_est > 0.2:
        return 0, floor
    return (1 if t_est > 0.02 else 3), max(floor, min(repeat, int(0.3 / max(t_est, 1e-7))))


def _cpu_rss_limit() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def default_n(gpu: bool) -> int:
    """1e9 with a GPU; otherwise the largest half-decade that fits comfortably (<= 1e8)."""
    if gpu:
        return 10**9
    fits = _cpu_rss_limit() // (4 * 12)   # x, y, out in float32, a quarter of the RAM
    return max(s for s in sizes(10**8) if s <= max(fits, 1000))


def hardware_facts(gpu: bool) -> dict:
    """Cores, SIMD lanes, clocks and peak rates of the CPU (and GPU), from the machine."""
    cpu = device.cpu_info()
    lanes = 16 if "avx512f" in cpu["simd"] else 8 if "avx2" in cpu["simd"] else 4
    mhz = None
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", encoding="utf-8") as fh:
            mhz = int(fh.read()) / 1000
    except (OSError, ValueError):
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith("cpu MHz"):
                        mhz = float(line.split(":")[1])
                        break
        except (OSError, ValueError):
            pass
    threads = numba_cpu()["threads"]
    facts = {"n": 0, "rows": [], "cpu": {
        "model": cpu["model"], "cores_used": threads, "usable_cpus": cpu["usable_cpus"],
        "NUMBA_NUM_THREADS": os.environ.get("NUMBA_NUM_THREADS"), "simd": cpu["simd"],
        "fp32_lanes": lanes, "clock_mhz": mhz,
        # one FMA unit per core assumed (2 FLOPs per lane per cycle); many server cores have two
        "peak_gflops_1fma": threads * lanes * 2 * mhz / 1e3 if mhz else None}}
    if gpu:
        g = device.gpu_properties() or {}
        cc = g.get("compute_capability", "0.0")
        peak = device.fp32_peak(g)
        facts["gpu"] = {"name": g.get("name"), "compute_capability": cc, "sms": g.get("multiprocessors"),
                        "fp32_lanes_per_sm": device.fp32_lanes_per_sm(cc) or 0,
                        "clock_mhz": g.get("sm_clock_mhz"),
                        "peak_tflops": peak["tflops"] if peak else None,
                        "theoretical_bandwidth_gbs": g.get("theoretical_bandwidth_gbs")}
    return facts


def _check(work, out, x, y, size, what, k) -> float:
    """All elements finite (poisoned with NaN before), values close to float64 on a sample."""
    bad = k["count_nonfinite"](out[:size]) if size else 0
    if bad:
        raise AssertionError(f"{what}: {bad} of {size} elements are NaN or inf (never written?)")
    idx = np.arange(size) if size <= 200_000 else np.unique(
        np.r_[0, size - 1, np.random.default_rng(size).integers(0, size, 200_000)])
    if size == 0:
        return 0.0
    ref = reference(work, x[idx], None if y is None else y[idx])
    err = float(np.max(np.abs(out[idx].astype(np.float64) - ref) / np.abs(ref)))
    if not err <= RTOL[work]:
        raise AssertionError(f"{what}: max relative error {err:.3g} exceeds {RTOL[work]:g}")
    return err


def _measure_work(work: str, n_max: int, repeat: int, gpu: bool, bufs: dict, log) -> dict:
    from gpukit import bench
    k = numba_cpu()
    x, y, out = bufs["x"], bufs["y"], bufs["out"]
    rows, errors = [], []
    nbytes, nflops = BYTES_PER_ELEMENT[work], FLOPS_PER_ELEMENT[work]
    backends = BACKENDS[work] + (GPU_BACKENDS if gpu else [])
    for backend in backends:
        cap = min(n_max, CAPS.get((work, backend), n_max))
        t_backend = time.perf_counter()
        for size in sizes(cap):
            try:
                xs, ys, os_ = x[:size], y[:size], out[:size]
                k["fill_nan"](os_)
                fn, timer, result, lists = _prepare(work, backend, size, xs, ys, os_, bufs)
                t0 = time.perf_counter()
                fn()
                if timer == "numba":
                    from numba import cuda
                    cuda.synchronize()
                t_est = time.perf_counter() - t0
                t_steady = t_est
                if size == sizes(cap)[0] and t_est > 0.02:
                    # The first call at the first size includes compiling: choose the number
                    # of repeats from a second call, or the smallest size gets 3 and no warm-up.
                    t0 = time.perf_counter()
                    fn()
                    if timer == "numba":
                        cuda.synchronize()
                    t_steady = time.perf_counter() - t0
                warm, rep = _repeats(t_steady, repeat, floor=1 if backend == "python" else 3)
                t = bench.bench(fn, timer=timer, name=backend, warmup=warm, repeat=rep,
                                bytes=nbytes * size, flops=nflops * size)
                result()                        # the output back into `out`, checked
                err = _check(work, out, x, y, size, f"{work} {backend} n={size}", k)
                row = bench.row(t, drop=("samples_s",), name=f"{LABELS[backend]} @ {size:,}",
                                backend=backend, size=size, max_rel_err=err, first_call_s=t_est)
                row["gflops"] = nflops * size / t.median_s / 1e9
                rows.append(row)
            except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
                errors.append({"backend": backend, "size": size, "error": f"{type(exc).__name__}: {exc}"})
                log(f"    {work} {backend} n={size:,}: FAILED {type(exc).__name__}: {exc}")
                break
        done = [r for r in rows if r["backend"] == backend]
        if done:
            last = done[-1]
            log(f"  {work:<5} {backend:<18} up to {last['size']:>13,}: {last['median_s'] * 1e3:10.3f} ms, "
                f"{last['gbs']:8.1f} GB/s, {last['gflops']:9.1f} GFLOP/s   ({time.perf_counter() - t_backend:.1f} s)")
    # The first call at the smallest size includes compilation (numba) or module load (CUDA).
    first = {}
    for backend in backends:
        done = [r for r in rows if r["backend"] == backend]
        if done:
            first[backend] = {"size": done[0]["size"], "first_call_s": done[0]["first_call_s"],
                              "median_s": done[0]["median_s"]}
    return {"n": n_max, "work": work, "degree": DEGREE if work == "poly" else None,
            "bytes_per_element": nbytes, "flops_per_element": nflops, "rows": rows,
            "errors": errors, "first_calls": first,
            "crossover": {b: crossover(rows, b) for b in GPU_BACKENDS if gpu}}


def _prepare(work, backend, size, xs, ys, os_, bufs):
    """(fn, timer, result) for one backend at one size; result() leaves the output in os_."""
    noop = lambda: None  # noqa: E731
    if backend == "python":
        xl, yl, res = xs.tolist(), ys.tolist(), [math.nan] * size
        cl = COEFFS.tolist()
        if work == "saxpy":
            fn = lambda: saxpy_python(float(SAXPY_A), xl, yl, res)  # noqa: E731
        else:
            fn = lambda: horner_python(xl, cl, res)  # noqa: E731

        def result():
            os_[:] = res
        return fn, "cpu", result, True
    if backend == "numpy":
        if work == "saxpy":
            return (lambda: saxpy_numpy(SAXPY_A, xs, ys, os_)), "cpu", noop, False
        return (lambda: horner_numpy(xs, COEFFS, os_)), "cpu", noop, False
    if backend.startswith("numba"):
        f = cpu_kernel(work, backend)
        if work == "saxpy":
            return (lambda: f(SAXPY_A, xs, ys, os_)), "cpu", noop, False
        return (lambda: f(xs, COEFFS, os_)), "cpu", noop, False
    # GPU: device buffers were allocated once at the largest size; slices are views.
    dx, dy, dout = bufs["dx"][:size], bufs["dy"][:size], bufs["dout"][:size]
    if work == "saxpy":
        args = (SAXPY_A, dx, dy, dout)
    else:
        args = (dx, dout)
    if work == "poly":                           # the CUDA C kernel, tuned at the largest size
        def kernel():
            horner_cuda_c(size, dx, dout, bufs["poly_elems"])
    else:
        def kernel():
            launch(work, size, *args)
    if backend == "gpu-kernel":
        dx.copy_to_device(xs)
        if work == "saxpy":
            dy.copy_to_device(ys)
        dout.copy_to_device(os_)                 # the NaN poison, on the device too

        def result():
            dout.copy_to_host(os_)
        return kernel, "numba", result, False
    hx, hy, hout = (xs, ys, os_) if backend == "gpu-pageable" else (
        bufs["px"][:size], bufs["py"][:size], bufs["pout"][:size])
    if backend == "gpu-pinned":
        hx[:] = xs
        hy[:] = ys
        hout[:] = np.nan

    def end_to_end():                            # what a program whose data is on the host pays
        dx.copy_to_device(hx)
        if work == "saxpy":
            dy.copy_to_device(hy)
        kernel()
        dout.copy_to_host(hout)                  # synchronous: the result is on the host

    def result():
        if hout is not os_:
            os_[:] = hout
    return end_to_end, "cpu", result, False


def poly_kernels(n: int, repeat: int, bufs: dict, log) -> dict:
    """The polynomial kernel written three ways, at ``n`` elements: numba's simple loop (one
    element per thread, coefficients from constant memory), and the CUDA C kernel with 1, 2
    or 4 elements per thread. Each is checked; the fastest CUDA C one is kept for the sweep."""
    from gpukit import bench
    k = numba_cpu()
    x, out = bufs["x"][:n], bufs["out"][:n]
    dx, dout = bufs["dx"][:n], bufs["dout"][:n]
    dx.copy_to_device(x)
    variants = [("numba, one element per thread", None)] + [
        (f"CUDA C, unrolled, {e} element{'s' if e > 1 else ''} per thread", e) for e in CUDA_C_ELEMS]
    peak = device.fp32_peak(device.gpu_properties() or {})
    roofs = {"pct_of_peak": bench.Roof("tflops", peak["tflops"] if peak else None)}
    rows = []
    for label, elems in variants:
        k["fill_nan"](out)
        dout.copy_to_device(out)
        fn = (lambda: launch("poly", n, dx, dout)) if elems is None else (
            lambda e=elems: horner_cuda_c(n, dx, dout, e))
        t = bench.bench(fn, timer="numba", name=label, warmup=2, repeat=repeat,
                        flops=FLOPS_PER_ELEMENT["poly"] * n)
        dout.copy_to_host(out)
        err = _check("poly", out, x, None, n, f"poly kernel {label}", k)
        row = bench.row(t, drop=("samples_s",), roofs=roofs, kernel=label, elems=elems, size=n,
                        max_rel_err=err)
        rows.append(row)
        log(f"  poly kernel {label:<40} {t.median_s * 1e3:8.3f} ms {row['tflops']:6.1f} TFLOP/s")
    best = min((r for r in rows if r["elems"]), key=lambda r: r["median_s"])
    try:   # what numba made of its loop: multiply-adds and constant-memory loads in the PTX
        import re

        from .kernels import _numba_cuda
        ptx = "\n".join(_numba_cuda()["poly"].inspect_asm().values())
        rows[0]["ptx"] = {"fma": len(re.findall(r"\bfma\.rn\.f32\b", ptx)),
                          "const_loads": len(re.findall(r"\bld\.const\.", ptx))}
    except Exception as exc:  # noqa: BLE001 - recorded, not fatal
        rows[0]["ptx"] = {"error": f"{type(exc).__name__}: {exc}"}
    return {"n": n, "rows": rows, "best_elems": best["elems"],
            "peak_tflops": peak["tflops"] if peak else None}


def run(n: int | None, repeat: int = 30) -> dict:
    """Both workloads on every backend, sizes 1e3 .. n; GPU rows only with a real GPU."""
    t_start = time.perf_counter()
    gpu = device.has_gpu() and not device.simulator_enabled()
    n_max = int(n or default_n(gpu))
    repeat = max(3, repeat)

    def log(msg):
        print(msg, flush=True)

    k = numba_cpu()
    log(f"crossover: sizes 1e3 .. {n_max:,}, numba threads {k['threads']}, GPU: {gpu}")
    bufs = {"x": np.empty(n_max, np.float32), "y": np.empty(n_max, np.float32),
            "out": np.empty(n_max, np.float32)}
    k["fill_uniform"](bufs["x"], 1)
    k["fill_uniform"](bufs["y"], 2)
    data: dict = {}
    try:
        data["hardware"] = hardware_facts(gpu)
    except Exception as exc:  # noqa: BLE001
        data["hardware"] = {"n": n_max, "rows": [], "error": f"{type(exc).__name__}: {exc}"}
    data["hardware"]["n"] = n_max
    if gpu:
        try:
            from numba import cuda
            from numba.core.errors import NumbaPerformanceWarning
            warnings.simplefilter("ignore", NumbaPerformanceWarning)  # tiny grids at 1e3 are the point
            bufs.update(dx=cuda.device_array(n_max, np.float32), dy=cuda.device_array(n_max, np.float32),
                        dout=cuda.device_array(n_max, np.float32))
            t0 = time.perf_counter()
            bufs.update(px=cuda.pinned_array(n_max, np.float32), py=cuda.pinned_array(n_max, np.float32),
                        pout=cuda.pinned_array(n_max, np.float32))
            data["hardware"]["pinned_alloc_s"] = time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001
            log(f"  GPU buffers: FAILED {type(exc).__name__}: {exc}")
            data["hardware"]["gpu_error"] = f"{type(exc).__name__}: {exc}"
            gpu = False
    if gpu:
        try:
            data["poly_kernels"] = poly_kernels(n_max, repeat, bufs, log)
            bufs["poly_elems"] = data["poly_kernels"]["best_elems"]
        except Exception as exc:  # noqa: BLE001
            log(f"  poly kernels: FAILED {type(exc).__name__}: {exc}")
            data["poly_kernels"] = {"n": n_max, "rows": [], "error": f"{type(exc).__name__}: {exc}"}
            bufs["poly_elems"] = 1
    for work in ("saxpy", "poly"):
        try:
            data[work] = _measure_work(work, n_max, repeat, gpu, bufs, log)
        except Exception as exc:  # noqa: BLE001
            log(f"  {work}: FAILED {type(exc).__name__}: {exc}")
            data[work] = {"n": n_max, "rows": [], "errors": [{"error": f"{type(exc).__name__}: {exc}"}]}
        c = data[work].get("crossover")
        if c:
            log(f"  {work} crossover (GPU faster than the best CPU from): "
                + ", ".join(f"{b}: {v if v is None else f'{v:,}'}" for b, v in c.items()))
    data["hardware"]["total_s"] = time.perf_counter() - t_start
    log(f"crossover: total {data['hardware']['total_s']:.1f} s")
    return data
