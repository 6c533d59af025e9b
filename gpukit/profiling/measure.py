"""``gpukit bench profiling``: copies and kernels overlapped on streams, and the PyTorch profiler.

On a GPU (part ``gpu``), for a float32 array of ``n`` elements (default 2**28, 1 GiB):

1. each stage alone on the whole array: copy in and copy out (pinned and pageable), and the
   polynomial kernel, whose degree is chosen so that it takes about as long as the copy in;
2. the whole job serially (one stream, pageable then pinned memory), pipelined over several
   streams (pinned; pageable too, to show that it does not overlap), and a sweep over the
   number of chunks; each checked (NaN-poisoned output, a float64 sample, pipelined equal to
   serial to the bit) and timed end to end with the host clock, median of several runs;
3. the events of one pipelined and one serial run, for the timeline picture;
4. managed (unified) memory with and without prefetching, on as much of the array as fits in
   a quarter of the free GPU memory;
5. the polynomial on all CPU cores (numba, the fair baseline) and the PyTorch profiler on a
   small CNN's training step.

Without a GPU (part ``cpu``): the CPU baseline and the scheduler on the host stand-in.
"""

from __future__ import annotations

import ctypes
import statistics
import time

import numpy as np

from gpukit import bench, device

from . import pipeline

STREAMS = 4
CHUNKS = 16
SWEEP = (1, 2, 4, 8, 16, 32, 64)
#: streams tried at the sweep's largest chunk count
STREAM_SWEEP = (2, 3, 4, 8)
TIMELINE_CHUNKS = 8


def cpu_poly():
    """The polynomial on all CPU cores, blocked so that LLVM vectorises across elements."""
    import numba

    @numba.njit(parallel=True)
    def poly_parallel(x, degree, out):
        block = 64
        for b in numba.prange((x.size + block - 1) // block):
            lo, hi = b * block, min((b + 1) * block, x.size)
            p = np.ones(hi - lo, np.float32)
            xs = x[lo:hi]
            for _ in range(degree):
                for j in range(hi - lo):      # independent elements: SIMD lanes
                    p[j] = p[j] * xs[j] + np.float32(1.0)
            out[lo:hi] = p
    return poly_parallel


def cpu_baseline(n: int, degree: int, repeat: int) -> dict:
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    out = np.full_like(x, np.nan)
    fn = cpu_poly()
    t = bench.bench(lambda: fn(x, np.int32(degree), out), timer="cpu", warmup=1,
                    repeat=max(2, repeat), name="numba parallel (all cores)",
                    flops=2.0 * degree * n)
    err = _check(out, x, degree)
    return bench.row(t, per_s={"elements_per_s": n}, elements=n, degree=degree,
                     max_rel_err=err, threads=_threads())


def _threads() -> int:
    import numba
    return numba.get_num_threads()


def _check(out: np.ndarray, x: np.ndarray, degree: int, sample: int = 4096) -> float:
    from gpukit.verify import Mismatch, check_close
    if not np.isfinite(out).all():
        raise Mismatch(f"{int((~np.isfinite(out)).sum())} elements were never written")
    idx = np.unique(np.linspace(0, x.size - 1, min(sample, x.size)).astype(np.int64))
    return check_close(out[idx], pipeline.reference(x[idx], degree), rtol=pipeline.rtol(degree),
                       what=f"polynomial of degree {degree}")


def host_part(n: int, repeat: int) -> dict:
    """No GPU: the CPU baseline, and the chunk scheduler on the host stand-in (checked)."""
    degree = 64
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    serial, piped = np.full_like(x, np.nan), np.full_like(x, np.nan)
    pipeline.run(pipeline.HostOps(x, serial, degree), n, 1, 1)
    pipeline.run(pipeline.HostOps(x, piped, degree), n, CHUNKS, STREAMS)
    equal = bool(np.array_equal(serial, piped))
    base = cpu_baseline(n, degree, repeat)
    return {"n": n, "degree": degree, "rows": [base], "host_scheduler_equal": equal,
            "note": "no GPU: copies, streams and managed memory were not measured"}


# ----------------------------------------------------------------- the GPU part

def _median_run(ops, n, count, streams, repeat) -> tuple[float, dict]:
    runs = [pipeline.run(ops, n, count, streams) for _ in range(repeat)]
    walls = [r["wall_s"] for r in runs]
    return statistics.median(walls), runs[-1] | {"samples_s": walls}


def _stage(fn, repeat, name=None, nbytes=None) -> dict:
    """The row of one stage; a copy's GB/s from the ``nbytes`` it moves."""
    t = bench.bench(fn, timer="cupy", warmup=1, repeat=repeat)
    if name is None:
        return bench.row(t)
    return bench.row(t, name=name, gbs=nbytes / t.median_s / 1e9 if nbytes else None)


def gpu_part(n: int, repeat: int) -> dict:
    import cupy
    import cupyx
    t_start = time.perf_counter()
    props = cupy.cuda.runtime.getDeviceProperties(0)
    free, total = cupy.cuda.runtime.memGetInfo()
    item = 4
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    t0 = time.perf_counter()
    pin_in, pin_out = cupyx.empty_pinned(n, np.float32), cupyx.empty_pinned(n, np.float32)
    pinned_alloc_s = time.perf_counter() - t0
    np.copyto(pin_in, x)
    page_out = np.full(n, np.nan, dtype=np.float32)
    d_in, d_out = cupy.empty(n, cupy.float32), cupy.empty(n, cupy.float32)
    rt = cupy.cuda.runtime
    nbytes = n * item

    # 1. each stage alone, whole array, default stream
    copies = {
        "copy in, pinned": lambda: d_in.set(pin_in),
        "copy in, pageable": lambda: d_in.set(x),
        "copy out, pinned": lambda: rt.memcpy(pin_out.ctypes.data, d_out.data.ptr, nbytes,
                                              rt.memcpyDeviceToHost),
        "copy out, pageable": lambda: rt.memcpy(page_out.ctypes.data, d_out.data.ptr, nbytes,
                                                rt.memcpyDeviceToHost),
    }
    stages = {name: _stage(fn, repeat, name, nbytes) for name, fn in copies.items()}
    kernel = pipeline.poly_kernel()
    probe = 256
    t_probe = _stage(lambda: kernel(d_in, np.int32(probe), d_out), repeat)["median_s"]
    t_in = stages["copy in, pinned"]["median_s"]
    degree = int(min(8192, max(8, round(probe * t_in / t_probe))))
    stages["kernel"] = _stage(lambda: kernel(d_in, np.int32(degree), d_out), repeat, "kernel")
    engines = int(props.get("asyncEngineCount", 0))
    t_in, t_k, t_out = (stages[k]["median_s"] for k in ("copy in, pinned", "kernel", "copy out, pinned"))
    # two copy engines: copies in and out overlap each other too; one: they take turns
    ideal = max(t_in, t_k, t_out) if engines >= 2 else max(t_in + t_out, t_k)
    serial_sum = (stages["copy in, pinned"]["median_s"] + stages["kernel"]["median_s"]
                  + stages["copy out, pinned"]["median_s"])
    together = _together(pin_in, pin_out, d_in, d_out, kernel, degree, repeat)

    # 2. end to end: check first, then time
    def ops(host_out, host_in=pin_in, streams=STREAMS):
        return pipeline.CupyOps(host_in, host_out, d_in, d_out, degree, streams)

    pin_out.fill(np.nan)
    pipeline.run(ops(pin_out), n, CHUNKS, STREAMS)
    err = _check(pin_out, x, degree)
    piped_result = pin_out.copy()
    page_out.fill(np.nan)
    pipeline.run(ops(page_out, x, 1), n, 1, 1)
    bitwise = bool(np.array_equal(page_out, piped_result))
    del piped_result

    configs = [("serial, pageable", x, page_out, 1, 1), ("serial, pinned", pin_in, pin_out, 1, 1),
               (f"{CHUNKS} chunks, 1 stream, pinned", pin_in, pin_out, CHUNKS, 1),
               (f"pipelined, {CHUNKS} chunks on {STREAMS} streams, pageable", x, page_out, CHUNKS, STREAMS),
               (f"pipelined, {CHUNKS} chunks on {STREAMS} streams, pinned", pin_in, pin_out, CHUNKS, STREAMS)]
    rows = []
    for name, hin, hout, count, streams in configs:
        wall, last = _median_run(ops(hout, hin, streams), n, count, streams, repeat)
        rows.append({"name": name, "chunks": count, "streams": streams, "median_s": wall,
                     "samples_s": last["samples_s"], "vs_ideal": wall / ideal,
                     "pinned": hin is pin_in})
        print(f"  {name:<48} {wall * 1e3:9.2f} ms  ({wall / ideal:.2f}x the ideal bound)", flush=True)
    sweep = []
    for count in SWEEP:
        streams = min(count, STREAMS)
        wall, _ = _median_run(ops(pin_out, pin_in, streams), n, count, streams, max(3, repeat // 2))
        sweep.append({"chunks": count, "streams": streams, "median_s": wall, "vs_ideal": wall / ideal})

    most = SWEEP[-1]
    for streams in STREAM_SWEEP:
        if streams == min(most, STREAMS):
            continue
        wall, _ = _median_run(ops(pin_out, pin_in, streams), n, most, streams, max(3, repeat // 2))
        sweep.append({"chunks": most, "streams": streams, "median_s": wall, "vs_ideal": wall / ideal})

    # 3. the timeline of one pipelined and one serial run (chunked, so the bars can be told apart)
    runs = {}
    for label, streams in (("pipelined", STREAMS), ("serial", 1)):
        r = pipeline.run(ops(pin_out, pin_in, streams), n, TIMELINE_CHUNKS, streams)
        runs[label] = {"wall_s": r["wall_s"], "streams": streams,
                       "bars": pipeline.timeline(r["chunks"])}

    # 4. managed memory
    managed = managed_part(x, degree, free, repeat)

    # 5. the CPU baseline and the PyTorch profiler
    base = cpu_baseline(min(n, 2**24), degree, max(2, repeat // 2))
    try:
        from .torchprof import profile_steps
        torch_part = profile_steps()
    except Exception as exc:  # noqa: BLE001 - recorded, the rest stands
        torch_part = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    return {"n": n, "bytes": nbytes, "degree": degree, "flops_per_byte": 2 * degree / 8,
            "copy_engines": engines,
            "free_memory_bytes": int(free), "total_memory_bytes": int(total),
            "pinned_alloc_s": pinned_alloc_s, "max_rel_err": err, "pipelined_equals_serial": bitwise,
            "stages": list(stages.values()), "ideal_s": ideal, "serial_sum_s": serial_sum,
            "together": together,
            "rows": rows, "sweep": sweep, "timeline": runs, "managed": managed,
            "cpu_baseline": base, "torch": torch_part, "total_s": time.perf_counter() - t_start}


def _together(pin_in, pin_out, d_in, d_out, kernel, degree: int, repeat: int) -> dict:
    """The steps run at the same time on the whole array, each on its own stream: copy in and
    copy out at once (both directions of the bus busy), and both copies with the kernel (which
    reads and writes other device arrays). Host clock from issue to the end of all of them,
    median of ``repeat``; CUDA events give each copy's own time in the last run."""
    import cupy
    rt = cupy.cuda.runtime
    nbytes = pin_in.nbytes
    d_in2, d_out2 = cupy.full_like(d_in, 0.5), cupy.empty_like(d_out)
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(3)]

    def copy_in():
        rt.memcpyAsync(d_in.data.ptr, pin_in.ctypes.data, nbytes, rt.memcpyHostToDevice,
                       streams[0].ptr)

    def copy_out():
        rt.memcpyAsync(pin_out.ctypes.data, d_out.data.ptr, nbytes, rt.memcpyDeviceToHost,
                       streams[1].ptr)

    def compute():
        with streams[2]:
            kernel(d_in2, np.int32(degree), d_out2)

    def timed(*steps) -> float:
        walls = []
        for _ in range(max(3, repeat)):
            cupy.cuda.Device().synchronize()
            t0 = time.perf_counter()
            for step in steps:
                step()
            cupy.cuda.Device().synchronize()
            walls.append(time.perf_counter() - t0)
        return statistics.median(walls)

    both = timed(copy_in, copy_out)
    marks = [cupy.cuda.Event() for _ in range(4)]
    cupy.cuda.Device().synchronize()
    marks[0].record(streams[0])
    copy_in()
    marks[1].record(streams[0])
    marks[2].record(streams[1])
    copy_out()
    marks[3].record(streams[1])
    cupy.cuda.Device().synchronize()
    in_s = cupy.cuda.get_elapsed_time(marks[0], marks[1]) / 1e3
    out_s = cupy.cuda.get_elapsed_time(marks[2], marks[3]) / 1e3
    all_three = timed(copy_in, copy_out, compute)
    return {"copies_s": both, "copy_in_s": in_s, "copy_out_s": out_s,
            "copy_in_gbs": nbytes / in_s / 1e9, "copy_out_gbs": nbytes / out_s / 1e9,
            "all_three_s": all_three}


def _prefetch(ptr: int, nbytes: int, device: int, stream_ptr: int) -> None:
    """``cuMemPrefetchAsync`` of the driver API (device -1: to the host).

    Called through the driver library with its original signature, which the driver keeps
    exporting: CUDA 13 changed the runtime's ``cudaMemPrefetchAsync`` to take a location
    structure, and CuPy's wrapper of it failed here with "invalid device ordinal"."""
    lib = ctypes.CDLL("libcuda.so.1")
    fn = lib.cuMemPrefetchAsync
    fn.argtypes = [ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    status = fn(ptr, nbytes, device, stream_ptr)
    if status != 0:
        raise RuntimeError(f"cuMemPrefetchAsync failed with CUresult {status}")


def managed_part(x: np.ndarray, degree: int, free: int, repeat: int) -> dict:
    """The same job on managed memory: the host writes the input, the kernel reads it where it
    lies, the host reads the result. Without prefetching, pages move on first touch (page
    faults); with it, ``cuMemPrefetchAsync`` moves them in bulk first. Never more than a
    quarter of the free GPU memory."""
    import cupy
    n = int(min(x.size, free // 4 // 8))
    if n <= 0:
        return {"error": "not enough free GPU memory"}
    kernel = pipeline.poly_kernel()
    try:
        m_in, m_out = cupy.cuda.malloc_managed(n * 4), cupy.cuda.malloc_managed(n * 4)
    except Exception as exc:  # noqa: BLE001
        return {"n": n, "error": f"{type(exc).__name__}: {exc}"[:300]}
    c_in = cupy.ndarray((n,), cupy.float32, m_in)
    c_out = cupy.ndarray((n,), cupy.float32, m_out)
    h_in = np.ctypeslib.as_array((ctypes.c_float * n).from_address(m_in.ptr))
    h_out = np.ctypeslib.as_array((ctypes.c_float * n).from_address(m_out.ptr))
    stream = cupy.cuda.Stream(non_blocking=True)
    rows = []
    for prefetch in (False, True):
        kernel_s, back_s, errors = [], [], None
        for _ in range(2):                         # each run moves every page twice: few runs
            np.copyto(h_in, x[:n])                 # the input is on the host (written there)
            h_out.fill(np.nan)                     # the output too, poisoned
            t0 = time.perf_counter()
            try:
                with stream:
                    if prefetch:
                        _prefetch(m_in.ptr, n * 4, cupy.cuda.Device().id, stream.ptr)
                        _prefetch(m_out.ptr, n * 4, cupy.cuda.Device().id, stream.ptr)
                    kernel(c_in, np.int32(degree), c_out)
                    stream.synchronize()
                    t1 = time.perf_counter()
                    if prefetch:
                        _prefetch(m_out.ptr, n * 4, -1, stream.ptr)
                        stream.synchronize()
                    touched = float(h_out[::1024].sum())   # the host reads every 4 KiB page
            except Exception as exc:  # noqa: BLE001 - e.g. an API this CUDA version changed
                errors = f"{type(exc).__name__}: {exc}"[:300]
                break
            t2 = time.perf_counter()
            kernel_s.append(t1 - t0)
            back_s.append(t2 - t1)
        name = "managed, prefetched" if prefetch else "managed, page faults"
        if errors:
            rows.append({"name": name, "error": errors})
            continue
        err = _check(h_out.copy(), x[:n], degree) if np.isfinite(touched) else None
        k, b = statistics.median(kernel_s), statistics.median(back_s)
        rows.append({"name": name, "prefetch": prefetch, "in_and_kernel_s": k, "back_s": b,
                     "median_s": k + b, "max_rel_err": err})
    return {"n": n, "bytes": n * 4, "rows": rows}


def run(n: int | None, repeat: int) -> dict:
    """What ``gpukit bench profiling`` records: part ``gpu`` with a GPU, else part ``cpu``."""
    gpu = device.has_gpu() and not device.simulator_enabled()
    repeat = max(3, min(repeat, 7))
    if gpu:
        return {"gpu": gpu_part(n or 2**28, repeat)}
    return {"cpu": host_part(n or 2**20, repeat)}
