"""Ways to time a call on the GPU, wrong and right.

A host clock around an asynchronous launch (:func:`time_without_sync`, wrong) and with a
synchronisation on each side (:func:`time_with_sync`); single runs timed one by one
(:func:`single_runs`); a CUDA graph of back-to-back launches (:func:`graph_time`); runs with the
L2 cache flushed before each (:func:`flushed_runs`); CUDA events by hand with CuPy and torch
(:func:`events_cupy`, :func:`events_torch`); and torch.profiler's kernel table
(:func:`torch_profile`). CuPy and torch are imported by the functions that use them.
"""

from __future__ import annotations

import statistics
import time


# --8<-- [start:nosync]
def time_without_sync(fn) -> float:
    """WRONG: a host clock around an asynchronous launch times the launch only."""
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


def graph_time(fn, launches: int, replays: int = 5) -> float:
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
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3 / launches)
    del g
    return statistics.median(times)


# --8<-- [start:flush]
def flushed_runs(fn, flush_buffer, count: int = 50) -> list[float]:
    """Time each call with CUDA events after overwriting a buffer larger than the L2
    cache, so the data comes from memory, as it would in a real program."""
    import torch
    pairs = []
    for _ in range(count):
        flush_buffer.zero_()  # evicts fn's data from L2; not inside the events
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        pairs.append((a, b))
    torch.cuda.synchronize()
    return [a.elapsed_time(b) / 1e3 for a, b in pairs]
# --8<-- [end:flush]


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


# --8<-- [start:profiler]
def torch_profile(fn, steps: int = 10) -> dict:
    """torch.profiler around a few calls: which kernels ran, how often, how long."""
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
