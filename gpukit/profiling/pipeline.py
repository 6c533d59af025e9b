"""Moving data in and out while the GPU computes: chunks, streams, pinned and managed memory.

The workload: a large float32 array ``x`` on the host goes to the GPU, each element becomes
``p(x)``, a polynomial of tunable ``degree`` (``degree`` fused multiply-adds per element, so the
kernel's time per byte can be set to match the copies'), and the result comes back to the host.

* :func:`chunks` splits ``n`` elements into ``count`` nearly equal pieces (pure Python);
* :func:`run_chunks` issues copy in, kernel and copy out of each chunk on ``streams`` streams in
  turn, and records an event before and after each step. The same function drives the GPU
  (:class:`CupyOps`: CuPy streams, ``cudaMemcpyAsync``, CUDA events) and a host stand-in that
  runs each step at once (:class:`HostOps`, NumPy), which the tests use without a GPU;
* :func:`model_timeline` is the schedule of an idealised GPU (one copy engine per direction,
  one kernel at a time) for given stage times: the page's conceptual picture;
* :func:`timeline` turns measured events into bars per stream.
"""

from __future__ import annotations

import time

import numpy as np

from .meta import makespan, model_timeline  # noqa: F401  (the model's schedule)

#: the kernel: p = 1; then ``degree`` times p = p * x + 1 (one FMA each)
# --8<-- [start:kernel]
POLY_SOURCE = """
float p = 1.0f;
for (int k = 0; k < degree; ++k) p = fmaf(p, x, 1.0f);   // degree multiply-adds
y = p;
"""
# --8<-- [end:kernel]


def chunks(n: int, count: int) -> list[tuple[int, int]]:
    """``count`` contiguous ``(start, stop)`` pieces covering ``range(n)``, sizes differing by at
    most one; fewer pieces when ``n < count``, none when ``n == 0``."""
    if n < 0 or count < 1:
        raise ValueError(f"need n >= 0 and count >= 1, got n={n}, count={count}")
    count = min(count, n)
    if count == 0:
        return []
    base, extra = divmod(n, count)
    out, start = [], 0
    for i in range(count):
        stop = start + base + (1 if i < extra else 0)
        out.append((start, stop))
        start = stop
    return out


def reference(x: np.ndarray, degree: int) -> np.ndarray:
    """The polynomial in float64 (the check's reference)."""
    x64 = np.asarray(x, dtype=np.float64)
    p = np.ones_like(x64)
    for _ in range(degree):
        p = p * x64 + 1.0
    return p


def rtol(degree: int) -> float:
    """Error allowed against float64: a few float32 roundings per step of the chain."""
    return max(1e-6, 4 * max(degree, 1) * 2.0**-24)


def poly_host(x: np.ndarray, degree: int, out: np.ndarray) -> None:
    """The kernel's arithmetic in float32 with NumPy (the host stand-in's 'kernel')."""
    p = np.ones_like(x, dtype=np.float32)
    for _ in range(degree):
        p = p * x + np.float32(1.0)
    out[...] = p


# --8<-- [start:issue]
def run_chunks(ops, n: int, count: int, streams: int) -> list[dict]:
    """Copy in, compute and copy out each of ``count`` chunks, chunk i on stream
    i % streams.

    Work on one stream runs in order; work on different streams may overlap. An event is
    recorded before each chunk's copy in and after each of its three steps. Returns one
    record per chunk with its events (read them after ``ops.synchronize()``).
    """
    records = []
    for i, (lo, hi) in enumerate(chunks(n, count)):
        s = i % streams
        before = ops.record(s)
        ops.copy_in(lo, hi, s)             # host -> device
        copied = ops.record(s)
        # the kernel, on the same stream: it waits for the copy
        ops.compute(lo, hi, s)
        computed = ops.record(s)
        ops.copy_out(lo, hi, s)            # device -> host, after the kernel
        done = ops.record(s)
        records.append({"chunk": i, "stream": s, "lo": lo, "hi": hi,
                        "events": (before, copied, computed, done)})
    return records
# --8<-- [end:issue]


class HostOps:
    """The GPU steps done at once on the host with NumPy: the scheduler's logic without a GPU.
    "Events" are host clock readings."""

    def __init__(self, x: np.ndarray, out: np.ndarray, degree: int):
        self.x, self.out, self.degree = x, out, degree
        self.dev_in = np.full_like(x, np.nan)
        self.dev_out = np.full_like(x, np.nan)
        self.t0 = time.perf_counter()

    def record(self, stream: int):
        return time.perf_counter()

    def copy_in(self, lo, hi, s):
        self.dev_in[lo:hi] = self.x[lo:hi]

    def compute(self, lo, hi, s):
        poly_host(self.dev_in[lo:hi], self.degree, self.dev_out[lo:hi])

    def copy_out(self, lo, hi, s):
        self.out[lo:hi] = self.dev_out[lo:hi]

    def synchronize(self):
        pass

    def start(self):
        self.t0 = time.perf_counter()
        return self.t0

    def elapsed_s(self, a, b) -> float:
        return b - a


class CupyOps:
    """The steps on the GPU: ``cudaMemcpyAsync`` between host buffers and device arrays on CuPy
    streams (non-blocking: they do not wait for the legacy default stream), the polynomial as a
    CuPy ElementwiseKernel, CUDA events.

    ``host_in``/``host_out`` are NumPy arrays: pinned (``cupyx.empty_pinned``) or ordinary
    pageable memory. From pageable memory the driver stages the copy through a pinned buffer of
    its own, and the call returns only when that is done, so it cannot overlap.
    """

    def __init__(self, host_in, host_out, dev_in, dev_out, degree: int, streams: int):
        import cupy
        self.cupy = cupy
        self.host_in, self.host_out, self.dev_in, self.dev_out = host_in, host_out, dev_in, dev_out
        self.degree = np.int32(degree)
        self.streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(streams)]
        self.kernel = poly_kernel()
        self.item = host_in.itemsize

    def record(self, s):
        ev = self.cupy.cuda.Event()
        ev.record(self.streams[s])
        return ev

    def start(self):
        ev = self.cupy.cuda.Event()
        ev.record(self.streams[0])
        return ev

    def copy_in(self, lo, hi, s):
        rt = self.cupy.cuda.runtime
        rt.memcpyAsync(self.dev_in.data.ptr + lo * self.item, self.host_in.ctypes.data + lo * self.item,
                       (hi - lo) * self.item, rt.memcpyHostToDevice, self.streams[s].ptr)

    def compute(self, lo, hi, s):
        with self.streams[s]:
            self.kernel(self.dev_in[lo:hi], self.degree, self.dev_out[lo:hi])

    def copy_out(self, lo, hi, s):
        rt = self.cupy.cuda.runtime
        rt.memcpyAsync(self.host_out.ctypes.data + lo * self.item, self.dev_out.data.ptr + lo * self.item,
                       (hi - lo) * self.item, rt.memcpyDeviceToHost, self.streams[s].ptr)

    def synchronize(self):
        for st in self.streams:
            st.synchronize()

    def elapsed_s(self, a, b) -> float:
        return self.cupy.cuda.get_elapsed_time(a, b) / 1e3


def poly_kernel():
    """The polynomial as a CuPy ElementwiseKernel (compiled on first use, cached)."""
    global _KERNEL
    if _KERNEL is None:
        import cupy
        _KERNEL = cupy.ElementwiseKernel("float32 x, int32 degree", "float32 y", POLY_SOURCE,
                                         "gpukit_overlap_poly")
    return _KERNEL


_KERNEL = None


def run(ops, n: int, count: int, streams: int) -> dict:
    """One end-to-end run: issue every chunk, wait for all of it; host wall time and events."""
    ops.synchronize()
    t0 = time.perf_counter()
    start = ops.start()
    records = run_chunks(ops, n, count, streams)
    ops.synchronize()
    wall = time.perf_counter() - t0
    for r in records:
        r["t"] = [ops.elapsed_s(start, e) for e in r.pop("events")]
    return {"wall_s": wall, "chunks": records}


# ----------------------------------------------------------------- pictures of a schedule

def timeline(records: list[dict]) -> list[dict]:
    """Bars ``{"chunk", "stream", "kind", "start", "stop"}`` from measured events (seconds after
    the start event). A copy's bar starts at the later of its stream reaching it and the end of
    the previous copy in the same direction: one copy engine per direction takes copies in the
    order they were issued, so that is when it could start. A kernel's bar starts when its input
    had arrived."""
    bars, last = [], {"copy in": 0.0, "copy out": 0.0}
    for r in sorted(records, key=lambda r: r["chunk"]):
        before, copied, computed, done = r["t"]
        h_start = max(before, last["copy in"])
        last["copy in"] = copied
        o_start = max(computed, last["copy out"])
        last["copy out"] = done
        for kind, a, b in (("copy in", h_start, copied), ("kernel", copied, computed),
                           ("copy out", o_start, done)):
            bars.append({"chunk": r["chunk"], "stream": r["stream"], "kind": kind,
                         "start": a, "stop": max(a, b)})
    return bars
