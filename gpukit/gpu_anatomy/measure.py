"""``gpukit bench gpu-anatomy``: what a GPU is made of, measured.

The chapter "CPU vs GPU: what a GPU is made of" shows the device query next to the same facts
for the host CPU, and five small experiments, each a plot or table made from a results file:

* ``latency``: how long one load from memory takes (a dependent chain of loads, pointer chasing);
* ``occupancy``: read bandwidth against the number of warps resident on each multiprocessor,
  from a sweep of block size and grid size, with one or four independent loads in flight per thread;
* ``strided``: thread *i* reads element *i* x stride, stride 1..32 (coalescing);
* ``divergence``: the 32 threads of a warp taking *k* different paths, against the same work
  branched per warp and without a branch;
* ``launch``: the cost of launching a kernel, and what a CUDA graph saves on many small launches.

The kernels (:mod:`.kernels`) are written with ``numba.cuda`` (so the tests run them on numba's
CUDA simulator); the launch experiment also uses CuPy ``RawKernel`` and CUDA graphs. Every
experiment verifies its outputs before its timings are kept. On a machine without a GPU,
:func:`run` records the host facts, the host's read bandwidth and its strided-access curve
(:mod:`.host`), and checks the kernels on the simulator in a fresh process (:func:`selfcheck`;
correctness only, no timings).
"""

from __future__ import annotations

import math
import time

import numpy as np
from numba import cuda

from gpukit import proc

from .host import host_experiments, host_facts
from .meta import NAME
from .kernels import (BLOCK_SIZES, BLOCKS_PER_SM, CUDA_SOURCE, DIVERGENCE_MODES, PATHS, READ_KERNELS,
                      STRIDES, chase, empty_kernel, fill_random, occupancy, paths_kernel,
                      paths_reference, random_cycle, read_sum, read_sum_dependent, read_sum_ilp4,
                      step_kernel, strided_copy, walk, window_elements)

#: Elements of the array each kernel is checked on by :func:`selfcheck`.
SELFCHECK_N = 1000


# ------------------------------------------------------------------------ GPU experiments

def _overload(kernel):
    """The last compiled variant of a numba kernel (each of ours is compiled for one signature)."""
    return list(kernel.overloads.values())[-1]


def _kernel_attrs(kernel) -> dict:
    ov = _overload(kernel)
    out = {}
    for key, attr in (("registers", "regs_per_thread"), ("shared_bytes", "shared_mem_per_block"),
                      ("local_bytes", "local_mem_per_thread")):
        try:
            out[key] = int(getattr(ov, attr))
        except Exception:  # noqa: BLE001 - an attribute the driver binding lacks
            out[key] = None
    return out


def _driver_blocks_per_sm(kernel, threads: int, sms: int) -> int | None:
    try:
        return int(_overload(kernel).max_cooperative_grid_blocks(threads)) // sms
    except Exception:  # noqa: BLE001
        return None


def _sync():
    cuda.synchronize()


def _event_ms(fn) -> float:
    """One call of fn timed with CUDA events (after the queue is drained)."""
    _sync()
    a, b = cuda.event(), cuda.event()
    a.record()
    fn()
    b.record()
    b.synchronize()
    return cuda.event_elapsed_time(a, b)


def latency_experiment(props: dict, repeat: int) -> dict:
    """Pointer chasing in an array that fits in L2 and in one four times larger than L2."""
    import cupy
    from gpukit import bench
    rows = []
    l2 = props["l2_cache_bytes"]
    for label, nbytes, steps in (("L2 cache (array of 1/8 of L2)", l2 // 8, 20000),
                                 ("device memory (array of 4 x L2)", max(4 * l2, 2**28), 20000)):
        n = nbytes // 4
        nxt_c = random_cycle(n, xp=cupy)
        nxt = cuda.as_cuda_array(nxt_c)
        pos = cuda.to_device(np.zeros(1, dtype=np.int32))
        chase[1, 1](nxt, steps, pos)                     # compile, and start somewhere
        _sync()
        if "L2" in label:
            float(nxt_c.sum(dtype=cupy.float64))         # stream the array into L2
        # keep walking along the cycle: every call meets elements it has not loaded before
        t = bench.bench(lambda: chase[1, 1](nxt, steps, pos), timer="numba", name=label,
                        warmup=1, repeat=max(3, min(repeat, 8)))
        start = int(pos.copy_to_host()[0])
        chase[1, 1](nxt, 1000, pos)
        host = cupy.asnumpy(nxt_c)
        if int(pos.copy_to_host()[0]) != walk(host, start, 1000):
            raise AssertionError(f"pointer chase ({label}) ended at the wrong element")
        rows.append(bench.row(t, name=f"load latency, {label}", array_bytes=n * 4, steps=steps,
                              latency_ns=t.median_s / steps * 1e9,
                              latency_cycles=t.median_s / steps
                              * (props.get("sm_clock_mhz") or 0) * 1e6))
    return {"n": rows[-1]["array_bytes"] // 4, "rows": rows}


def occupancy_experiment(x, props: dict, repeat: int) -> dict:
    """GB/s of a streaming read against the warps resident on each multiprocessor."""
    import cupy
    from gpukit import bench
    sms = props["multiprocessors"]
    n = x.shape[0]
    cx = cupy.asarray(x)
    ref_sums: dict = {}

    def ref_sum(w):
        if w not in ref_sums:
            ref_sums[w] = float(cx[:w].sum(dtype=cupy.float64))
        return ref_sums[w]

    rows = []
    for variant, kernel in READ_KERNELS:
        for threads in BLOCK_SIZES:
            for k in BLOCKS_PER_SM:
                grid = sms * k
                partial_c = cupy.empty(grid * threads, dtype=cupy.float32)
                partial = cuda.as_cuda_array(partial_c)
                probe = min(n, 2**24)
                kernel[grid, threads](x[:probe], partial)          # compiles on the first call
                attrs = _kernel_attrs(kernel)
                calc = occupancy(threads, attrs["registers"] or 0, attrs["shared_bytes"] or 0, props)
                api = _driver_blocks_per_sm(kernel, threads, sms)
                resident = api if api is not None else calc["blocks_per_sm"]
                if k > resident:
                    continue                      # would run in more than one wave
                probe_ms = _event_ms(lambda: kernel[grid, threads](x[:probe], partial))
                # at least two windows, so consecutive calls never read the same bytes
                w = max(1, min(window_elements(probe * 4 / probe_ms / 1e6), n // 2))
                state = {"off": 0}

                def call():
                    off = state["off"]
                    if off + w > n:
                        off = 0
                    state["off"] = off + w          # the next call reads the next window
                    kernel[grid, threads](x[off:off + w], partial)

                t = bench.bench(call, timer="numba", name=f"{variant}, {threads}x{k}", warmup=1,
                                repeat=max(3, min(repeat, 10)), bytes=4 * w)
                partial_c.fill(cupy.nan)
                kernel[grid, threads](x[:w], partial)
                got = float(partial_c.sum(dtype=cupy.float64))
                err = abs(got - ref_sum(w)) / ref_sum(w)
                if not err < 1e-4:                   # NaN fails too
                    raise AssertionError(f"read sum ({variant}) {threads}x{k}: relative error {err}")
                rows.append(bench.row(
                    t, name=f"read, {variant}, {threads} threads x {k} blocks/SM",
                    variant=variant, threads=threads, blocks_per_sm=k,
                    warps_per_sm=k * math.ceil(threads / 32), elements=w, max_rel_err=err,
                    registers=attrs["registers"], resident_blocks_calc=calc["blocks_per_sm"],
                    resident_blocks_driver=api))
                print(f"    occupancy {variant[:12]} {threads:5d} x {k:2d}: {rows[-1]['warps_per_sm']:3d} warps/SM "
                      f"{t.gbs:8.1f} GB/s", flush=True)
    ceiling = bench.copy_ceiling("cupy", nbytes=min(n * 4, 2 * 2**30))
    return {"n": n, "rows": rows, "copy_ceiling_gbs": ceiling.gbs,
            "theoretical_gbs": props.get("theoretical_bandwidth_gbs")}


def strided_experiment(x, repeat: int) -> dict:
    import cupy
    from gpukit import bench
    n = x.shape[0]
    cx = cupy.asarray(x)
    out_c = cupy.empty(n, dtype=cupy.float32)
    out = cuda.as_cuda_array(out_c)
    rows = []
    for s in STRIDES:
        m = n // s
        view = out[:m]
        blocks = (m + 255) // 256
        out_c[:m].fill(cupy.nan)
        strided_copy[blocks, 256](x, view, s)
        if not bool(cupy.array_equal(out_c[:m], cx[: m * s: s])):
            raise AssertionError(f"strided copy, stride {s}: wrong or unwritten elements")
        t = bench.bench(lambda: strided_copy[blocks, 256](x, view, s), timer="numba",
                        name=f"stride {s}", warmup=2, repeat=max(5, min(repeat, 30)), bytes=8 * m)
        rows.append(bench.row(t, name=f"strided copy, stride {s}", stride=s, elements=m))
    stride1 = {"fraction_of_stride1": bench.Roof("gbs", rows[0]["gbs"], percent=False)}
    for r in rows:
        r.update(bench.shares(r, stride1))
    return {"n": n, "rows": rows}


def divergence_experiment(props: dict, repeat: int, iters: int = 4096) -> dict:
    import cupy
    from gpukit import bench
    from gpukit.verify import check_close
    n = props["multiprocessors"] * props["max_threads_per_multiprocessor"] * 4
    n = n // 1024 * 1024
    x_c = cupy.empty(n, dtype=cupy.float32)
    x = cuda.as_cuda_array(x_c)
    fill_random[(n + 255) // 256, 256](x, 7)
    out_c = cupy.empty_like(x_c)
    out = cuda.as_cuda_array(out_c)
    blocks = n // 256
    host_x = cupy.asnumpy(x_c)
    sample = np.random.default_rng(3).choice(n, 4096, replace=False)
    rows = []
    for k in PATHS:
        first = None
        for mode, label in enumerate(DIVERGENCE_MODES):
            out_c.fill(cupy.nan)
            paths_kernel[blocks, 256](x, out, k, iters, mode)
            if first is None:
                ref = paths_reference(host_x[sample], k, iters, elements=sample)
                check_close(cupy.asnumpy(out_c)[sample], ref, rtol=1e-3, what=f"paths k={k}")
                first = out_c.copy()
            elif not bool(cupy.array_equal(out_c, first)):
                raise AssertionError(f"paths k={k}, mode {mode}: differs from the divergent kernel")
            t = bench.bench(lambda: paths_kernel[blocks, 256](x, out, k, iters, mode), timer="numba",
                            name=f"k={k} mode={mode}", warmup=2, repeat=max(3, min(repeat, 10)),
                            flops=2.0 * n * iters)
            rows.append(bench.row(t, name=f"{k} path(s), {label}", k=k, mode=mode, iters=iters))
    return {"n": n, "rows": rows, "iters": iters}


def launch_experiment(props: dict, repeat: int, launches: int = 1000, chain: int = 1000) -> dict:
    """Per-launch cost on the host and on the GPU; a chain of small kernels with and without a graph."""
    import cupy
    from gpukit import bench
    mod = cupy.RawModule(code=CUDA_SOURCE)
    k_empty, k_spin, k_step = (mod.get_function(f) for f in ("empty_kernel", "spin", "step"))
    clock_hz = (props.get("sm_clock_mhz") or 1500) * 1e6

    launchers = [("CuPy RawKernel", lambda: k_empty((1,), (32,), ())),
                 ("numba.cuda kernel", lambda: empty_kernel[1, 32]())]
    try:
        import torch
        if torch.cuda.is_available():
            tt = torch.zeros(1, device="cuda")
            launchers.append(("torch: tensor.add_(1) on 1 element", lambda: tt.add_(1)))
    except ImportError:
        pass

    rows = []
    for label, fn in launchers:
        for _ in range(20):
            fn()
        _sync()
        # host side: how long the Python call takes to queue a launch
        t0 = time.perf_counter()
        for _ in range(launches):
            fn()
        host_s = (time.perf_counter() - t0) / launches
        _sync()
        # round trip: launch and wait for it, one at a time
        t0 = time.perf_counter()
        for _ in range(200):
            fn()
            _sync()
        round_trip_s = (time.perf_counter() - t0) / 200
        # GPU side: queue the launches behind a kernel that spins, time them on the GPU
        spin_s = max(0.05, 3 * host_s * launches)
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        k_spin((1,), (1,), (np.int64(spin_s * clock_hz),))
        a.record()
        t0 = time.perf_counter()
        for _ in range(launches):
            fn()
        queued_s = time.perf_counter() - t0
        b.record()
        b.synchronize()
        gpu_s = cupy.cuda.get_elapsed_time(a, b) / 1e3 / launches
        rows.append({"name": label, "host_submit_s": host_s, "round_trip_s": round_trip_s,
                     "gpu_per_kernel_s": gpu_s, "median_s": gpu_s,
                     "queue_stayed_ahead": queued_s < spin_s, "launches": launches})
        print(f"    launch {label:<36} host {host_s * 1e6:6.2f} us, GPU {gpu_s * 1e6:6.2f} us, "
              f"round trip {round_trip_s * 1e6:6.2f} us", flush=True)

    # A chain of small dependent kernels: launched one by one, and as one CUDA graph.
    m = 4096
    a_, b_ = np.float32(0.999), np.float32(0.001)
    x0 = cupy.asarray(np.random.default_rng(5).random(m, dtype=np.float32) + np.float32(0.5))
    ref = cupy.asnumpy(x0).astype(np.float64)
    for _ in range(chain):
        ref = ref * float(a_) + float(b_)
    x = cupy.empty_like(x0)
    xn = cuda.as_cuda_array(x)
    blocks = (m + 255) // 256
    s = cupy.cuda.Stream(non_blocking=True)

    def cupy_chain():
        with s:
            for _ in range(chain):
                k_step((blocks,), (256,), (x, np.int32(m), a_, b_))
        s.synchronize()

    def numba_chain():
        for _ in range(chain):
            step_kernel[blocks, 256](xn, a_, b_)
        _sync()

    from gpukit.verify import check_close
    chains = []
    results = {}
    for label, fn in (("CuPy RawKernel, launched one by one", cupy_chain),
                      ("numba.cuda kernel, launched one by one", numba_chain)):
        x[...] = x0
        _sync()
        fn()
        results[label] = x.copy()
        check_close(x, ref, rtol=1e-3, what=label)
        t = bench.bench(fn, timer="cpu", name=label, warmup=1, repeat=max(3, min(repeat, 10)))
        chains.append(bench.row(t, per_kernel_s=t.median_s / chain))

    x[...] = x0
    _sync()
    t0 = time.perf_counter()
    with s:
        s.begin_capture()
        for _ in range(chain):
            k_step((blocks,), (256,), (x, np.int32(m), a_, b_))
        graph = s.end_capture()
    capture_s = time.perf_counter() - t0

    def replay():
        graph.launch(stream=s)
        s.synchronize()

    x[...] = x0
    _sync()
    replay()                                          # the captured launches ran nothing: run them now
    identical = bool(cupy.array_equal(x, results["CuPy RawKernel, launched one by one"]))
    if not identical:
        raise AssertionError("the CUDA graph's result differs from the same kernels launched one by one")
    check_close(x, ref, rtol=1e-3, what="graph replay")
    t = bench.bench(replay, timer="cpu", name="CUDA graph replay", warmup=1, repeat=max(3, min(repeat, 20)))
    chains.append(bench.row(t, name="CuPy RawKernel, captured once in a CUDA graph, replayed",
                            per_kernel_s=t.median_s / chain, capture_s=capture_s,
                            identical_to_one_by_one=identical))
    return {"n": launches, "rows": rows, "chain": {"kernels": chain, "elements": m, "rows": chains}}


def gpu_experiments(n: int, repeat: int, parts: dict) -> None:
    """Every GPU part, each one recorded as an error if it fails, so the rest still runs."""
    import cupy

    from gpukit import device
    props = device.gpu_properties()

    def attempt(name, fn):
        t0 = time.perf_counter()
        print(f"  {name} ...", flush=True)
        try:
            parts[name] = fn()
            print(f"  {name}: {time.perf_counter() - t0:.1f} s", flush=True)
        except Exception as exc:  # noqa: BLE001 - recorded, and the other parts continue
            msg = f"{type(exc).__name__}: {str(exc)[:300]}"
            parts[name] = {"n": 0, "rows": [], "error": msg}
            print(f"  {name} FAILED: {msg}", flush=True)

    attempt("latency", lambda: latency_experiment(props, repeat))
    x_c = cupy.empty(n, dtype=cupy.float32)
    x = cuda.as_cuda_array(x_c)
    fill_random[(n + 255) // 256, 256](x, 1)
    _sync()
    attempt("occupancy", lambda: occupancy_experiment(x, props, repeat))
    attempt("strided", lambda: strided_experiment(x, repeat))
    x = x_c = None                               # free the 2 GiB before the next parts
    cupy.get_default_memory_pool().free_all_blocks()
    attempt("divergence", lambda: divergence_experiment(props, repeat))
    attempt("launch", lambda: launch_experiment(props, repeat))


# ------------------------------------------------------------------- simulator self-check

def selfcheck() -> list[dict]:
    """Each kernel at a tiny, awkward size, checked against NumPy (meant for numba's simulator)."""
    checks = []

    def record(name, ok, detail=""):
        checks.append({"kernel": name, "ok": bool(ok), "detail": detail})

    n = SELFCHECK_N
    x = cuda.device_array(n, dtype=np.float32)
    fill_random[(n + 63) // 64, 64](x, 1)
    hx = x.copy_to_host()
    record("fill_random", np.all((hx >= 0.5) & (hx < 1.5)) and len(np.unique(hx)) > n // 2)
    for kern in (read_sum_dependent, read_sum, read_sum_ilp4):
        partial = cuda.to_device(np.full(3 * 32, np.nan, dtype=np.float32))
        kern[3, 32](x, partial)
        got = partial.copy_to_host().astype(np.float64).sum()
        record(kern.__name__ if hasattr(kern, "__name__") else "read", abs(got - hx.sum(dtype=np.float64)) < 1e-3)
    out = cuda.to_device(np.full(n // 3, np.nan, dtype=np.float32))
    strided_copy[(n // 3 + 31) // 32, 32](x, out, 3)
    record("strided_copy", np.array_equal(out.copy_to_host(), hx[: (n // 3) * 3: 3]))
    xs = x[:256]
    outs = []
    for mode in range(3):
        o = cuda.to_device(np.full(256, np.nan, dtype=np.float32))
        paths_kernel[2, 128](xs, o, 4, 3, mode)
        outs.append(o.copy_to_host())
    ref = paths_reference(hx[:256], 4, 3)
    record("paths_kernel", all(np.array_equal(outs[0], o) for o in outs)
           and np.allclose(outs[0], ref, rtol=1e-5))
    nxt = random_cycle(37, seed=2)
    pos = cuda.to_device(np.zeros(1, dtype=np.int32))
    chase[1, 1](cuda.to_device(nxt), 50, pos)
    record("chase", int(pos.copy_to_host()[0]) == walk(nxt, 0, 50))
    return checks


def simulator_part() -> dict:
    """:func:`selfcheck` in a fresh process on numba's CUDA simulator (CUDA devices hidden)."""
    checks = proc.run_fresh("gpukit.gpu_anatomy.measure:selfcheck", env=proc.NO_GPU, timeout=600)
    if isinstance(checks, dict):                 # the child failed: {"error": ..., "process_s": ...}
        return {"n": 0, "rows": [], "error": checks["error"]}
    return {"n": SELFCHECK_N, "rows": [], "checks": checks}


# ------------------------------------------------------------------------------- run

def run(n: int | None, repeat: int = 30) -> dict:
    """All measurements for the chapter; GPU parts only where a GPU is present."""
    from gpukit import device
    t_start = time.perf_counter()
    gpu = device.has_gpu() and not device.simulator_enabled()
    n_gpu = n or 2**29                          # 2 GiB of float32, 34 x the H200's L2
    n_host = min(n or 2**27, 2**27)
    parts: dict = {}
    print("  host ...", flush=True)
    try:
        parts["host"] = host_experiments(n_host, max(3, min(repeat, 10)))
    except Exception as exc:  # noqa: BLE001
        parts["host"] = {"n": n_host, "rows": [], "facts": host_facts(),
                         "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        print(f"  host FAILED: {parts['host']['error']}", flush=True)
    if gpu:
        gpu_experiments(n_gpu, repeat, parts)
    else:
        parts["simulator"] = simulator_part()
    total = time.perf_counter() - t_start
    print(f"  gpu-anatomy total: {total:.1f} s", flush=True)
    parts["host"]["total_s"] = total
    return parts
