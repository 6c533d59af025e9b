"""Honest timing: first call apart from steady state, CUDA events, ceilings, results files.

The rules this module enforces:

* the **first call** (JIT compilation, module load, context creation) is timed
  on its own and never mixed into the steady state;
* device work is timed with **CUDA events** of the library that launched it
  (numba, CuPy or torch), after a warm-up, many times; the median is reported
  with min and max;
* next to each event time, the **host time** of the call is recorded, and whether the call
  **waits for the GPU** is measured directly: a kernel that spins is queued first and the call
  made behind it; a call that returns while the spin still runs did not wait. The spin takes
  every multiprocessor (where CuPy is installed), so work and a wait on another stream are
  caught too; a call that returns after the spin ended waited if nothing queued before it
  is left (else the queue was full). A call that waits
  is flagged ``blocks`` (its events time a round trip, not the device work alone). Behind the
  spin the queue has room, so the host time there is the cost of launching alone: where it
  reaches half the event time the row is flagged ``launch_bound`` (the GPU waits for the host).
  For kernels of a few microseconds, ``batch=K`` times K launches back to back between one pair
  of events;
* a time becomes GB/s or FLOP/s and a **percentage of a ceiling measured in the
  same run** (a device-to-device copy for bandwidth, the vendor matmul for FLOP/s):
  :func:`row` builds every results row, with the share of each :class:`Roof` it names;
* every saved number carries a **machine record** (GPU, driver, versions, CPU, date):
  :mod:`gpukit.results` writes it.
"""

from __future__ import annotations

import functools
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Mapping

from . import device

#: Libraries whose CUDA events :func:`bench` can use.
TIMERS = ("cupy", "torch", "numba", "cpu")

#: the host-side fields of a results row (see :class:`Timing`)
FLAGS = ("host_median_s", "blocks", "launch_s", "launch_bound")
#: a call whose host time behind a spinning kernel (launching alone) reaches this fraction of its
#: event time is ``launch_bound``: the GPU then waits for the host between calls
LAUNCH_BOUND_FRACTION = 0.5
#: calls made behind the spinning kernel (a call that synchronises every few calls is caught)
PROBE_CALLS = 4


@dataclass
class Timing:
    """Result of :func:`bench`: the first call and the steady-state samples, in seconds."""

    name: str
    timer: str
    first_call_s: float
    samples_s: list[float] = field(repr=False)
    bytes: int | None = None
    flops: float | None = None
    #: host time of each timed call (None for wall-clock timing, where the two are one)
    host_samples_s: list[float] | None = field(default=None, repr=False)
    #: launches between one pair of events (each sample is their time divided by ``batch``)
    batch: int = 1
    #: True when a call returned only after earlier GPU work finished (measured behind a
    #: spinning kernel); None where not measured (wall clock, simulator, no spin available)
    blocks: bool | None = None
    #: host time of each call made behind the spinning kernel: the cost of launching alone
    launch_samples_s: list[float] | None = field(default=None, repr=False)

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples_s)

    @property
    def host_median_s(self) -> float | None:
        """Median host time per call: how long the call kept Python busy."""
        return statistics.median(self.host_samples_s) if self.host_samples_s else None

    @property
    def launch_s(self) -> float | None:
        """Median host time per call with room in the GPU's queue (behind the spin)."""
        return statistics.median(self.launch_samples_s) if self.launch_samples_s else None

    @property
    def launch_bound(self) -> bool | None:
        """True when launching alone costs at least :data:`LAUNCH_BOUND_FRACTION` of the event
        time and the call does not wait: back to back, the GPU idles between calls, so the
        events time the host's launches. None where not measured."""
        if self.blocks is None or self.launch_s is None:
            return None
        return not self.blocks and self.launch_s >= LAUNCH_BOUND_FRACTION * self.median_s

    @property
    def min_s(self) -> float:
        return min(self.samples_s)

    @property
    def max_s(self) -> float:
        return max(self.samples_s)

    @property
    def gbs(self) -> float | None:
        """Achieved bandwidth in GB/s (1e9 bytes/s) at the median time."""
        return self.bytes / self.median_s / 1e9 if self.bytes else None

    @property
    def tflops(self) -> float | None:
        """Achieved TFLOP/s at the median time."""
        return self.flops / self.median_s / 1e12 if self.flops else None

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("host_samples_s")
        d.pop("launch_samples_s")
        d.update(median_s=self.median_s, min_s=self.min_s, max_s=self.max_s,
                 repeats=len(self.samples_s), gbs=self.gbs, tflops=self.tflops,
                 host_median_s=self.host_median_s, launch_s=self.launch_s,
                 launch_bound=self.launch_bound)
        return d

    def flags(self) -> dict:
        """The host-side fields a results row carries (:data:`FLAGS`)."""
        return {k: getattr(self, k) for k in FLAGS}

    def __str__(self) -> str:
        rate = f", {self.gbs:,.0f} GB/s" if self.gbs else ""
        rate += f", {self.tflops:,.2f} TFLOP/s" if self.tflops else ""
        flag = ""
        if self.blocks:
            flag = " [BLOCKS: the call waited for the GPU; the events time a round trip]"
        elif self.launch_bound:
            flag = (f" [LAUNCH-BOUND: launching alone took {self.launch_s * 1e3:.4f} ms per "
                    f"call; the GPU waits for the host]")
        return (f"{self.name}: first call {self.first_call_s * 1e3:.3f} ms, median "
                f"{self.median_s * 1e3:.4f} ms (min {self.min_s * 1e3:.4f}, max "
                f"{self.max_s * 1e3:.4f}, n={len(self.samples_s)}, {self.timer}){rate}{flag}")


@dataclass(frozen=True)
class Roof:
    """A ceiling that a row's rate is set against.

    ``rate`` names the row's field that is compared (``"gbs"``, ``"tflops"`` or a
    per-second rate of the row) and ``value`` is the ceiling in that field's unit, measured
    in the same run. The share is ``100 * rate / value`` (a percentage) or, with
    ``percent=False``, the fraction ``rate / value``. A ceiling that was not measured
    (``value`` None or 0) gives a share of None.
    """

    rate: str
    value: float | None
    percent: bool = True

    def share(self, rate: float) -> float | None:
        if not self.value:
            return None
        return 100 * rate / self.value if self.percent else rate / self.value


def shares(r: Mapping, roofs: Mapping[str, Roof]) -> dict:
    """The share of each roof in row ``r``, under the roof's key.

    A row without the roof's rate (absent or None: no bytes or FLOPs counted) gets no key
    for it. For rows whose ceiling is measured after them: ``r.update(shares(r, roofs))``.
    """
    return {key: roof.share(r[roof.rate]) for key, roof in roofs.items()
            if r.get(roof.rate) is not None}


def row(t: Timing, *, roofs: Mapping[str, Roof] | None = None,
        per_s: Mapping[str, float] | None = None, only: Iterable[str] | None = None,
        drop: Iterable[str] = (), **extra) -> dict:
    """The results row of ``t``: the one way a chapter turns a :class:`Timing` into a row.

    In order: the fields of :meth:`Timing.to_dict` (name, timer, first call, samples,
    median/min/max/repeats, ``bytes``/``flops``, ``gbs``/``tflops`` and the host fields
    :data:`FLAGS`), restricted to ``only`` and without ``drop``; then ``extra`` (which
    overrides a field of the same name); then each ``per_s`` rate, a count per call divided
    by the median time (``per_s={"tokens_per_s": batch}``); then the share of each of
    ``roofs`` (see :func:`shares`), read from the row as built so far. A name in ``only``
    or ``drop`` that is not a field of the timing raises ValueError.
    """
    d = t.to_dict()
    keep = set(d) if only is None else set(only)
    unknown = (keep | set(drop)) - set(d)
    if unknown:
        raise ValueError(f"not a field of a timing: {', '.join(sorted(unknown))}")
    keep.difference_update(drop)
    out = {k: v for k, v in d.items() if k in keep}
    out.update(extra)
    for key, count in (per_s or {}).items():
        out[key] = count / t.median_s
    if roofs:
        out.update(shares(out, roofs))
    return out


class _EventTimer:
    """Uniform wrapper over the CUDA events of numba, CuPy and torch."""

    def __init__(self, library: str):
        self.library = library
        if library == "cupy":
            import cupy
            self._new = cupy.cuda.Event
            self._elapsed_ms = cupy.cuda.get_elapsed_time
            self.synchronize = cupy.cuda.Device().synchronize
        elif library == "torch":
            import torch
            self._new = lambda: torch.cuda.Event(enable_timing=True)
            self._elapsed_ms = lambda a, b: a.elapsed_time(b)
            self.synchronize = torch.cuda.synchronize
        elif library == "numba":
            from numba import cuda
            if device.simulator_enabled():
                raise RuntimeError("the numba CUDA simulator has no CUDA events")
            self._new = cuda.event
            self._elapsed_ms = cuda.event_elapsed_time
            self.synchronize = cuda.synchronize
        else:
            raise ValueError(f"unknown timer {library!r}; choose one of {TIMERS}")

    def event(self):
        return self._new()

    def done(self, event) -> bool:
        """True when the GPU has passed ``event`` (a query; never waits)."""
        if self.library == "cupy":
            return event.done
        return event.query()

    def elapsed_s(self, start, end) -> float:
        return self._elapsed_ms(start, end) / 1e3


_SPIN_CUDA = r"""
extern "C" __global__ void __launch_bounds__(1024, 2) gpukit_spin(unsigned long long ns) {
    // One thread of each block watches the GPU's own clock (nanoseconds, so a block that is
    // preempted by another process still ends on time); the others wait at the barrier, which
    // keeps their thread slots taken.
    if (threadIdx.x == 0) {
        unsigned long long start, now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
        do {
#if __CUDA_ARCH__ >= 700
            __nanosleep(1000);        // Volta and later: rest between looks
#endif
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        } while (now - start < ns);
    }
    __syncthreads();
}
"""


def filling_grid(sms: int, threads_per_sm: int) -> tuple[int, int]:
    """(blocks, threads per block) that take every thread slot of ``sms`` multiprocessors of
    ``threads_per_sm`` slots each: the largest block of at most 1,024 threads (a whole number
    of warps) that divides the slots, that many blocks per multiprocessor. 2,048 slots (H100,
    A100) give 2 x 1,024; 1,536 (most GeForce cards) give 2 x 768."""
    block = next(b for b in range(1024, 31, -32) if threads_per_sm % b == 0) \
        if threads_per_sm % 32 == 0 else min(1024, threads_per_sm)
    return sms * max(1, threads_per_sm // block), block


def _filling_spin(stream_handle: Callable[[], int]):
    """``spin(seconds)`` through CuPy: a kernel with every thread slot of every multiprocessor
    (:func:`filling_grid`), so no kernel of any stream of this process, non-blocking ones
    included, starts before it ends. It is queued on the stream whose handle
    ``stream_handle()`` gives. None without CuPy."""
    try:
        import cupy
    except ImportError:
        return None
    kernel = cupy.RawKernel(_SPIN_CUDA, "gpukit_spin")
    attrs = cupy.cuda.Device().attributes
    grid, block = filling_grid(attrs["MultiProcessorCount"], attrs["MaxThreadsPerMultiProcessor"])

    def spin(seconds: float) -> None:
        with cupy.cuda.ExternalStream(stream_handle()):
            kernel((grid,), (block,), (cupy.uint64(max(1, int(seconds * 1e9))),))
    return spin


@functools.cache
def _spinner(library: str):
    """``spin(seconds)``: queue one kernel that keeps the GPU busy about that long, on the
    library's current stream; None where the library cannot (the simulator, no GPU).

    With CuPy installed the kernel fills every multiprocessor (:func:`_filling_spin`), so work
    queued on a non-blocking stream waits behind it too. Without CuPy, a one-thread kernel of
    the library (calibrated once with events, since the SM clock varies): work on other
    streams then runs beside it, and a wait on such a stream goes unseen."""
    if library == "numba" and device.simulator_enabled():
        return None
    if library == "cupy":
        import cupy
        spin = _filling_spin(lambda: cupy.cuda.get_current_stream().ptr)
    elif library == "torch":
        import torch
        spin = _filling_spin(lambda: torch.cuda.current_stream().cuda_stream)
        launch = torch.cuda._sleep
    elif library == "numba":
        from numba import cuda
        spin = _filling_spin(lambda: int(cuda.default_stream().handle))

        @cuda.jit
        def nap(micros):
            for _ in range(micros):
                cuda.nanosleep(1000)
        launch = lambda micros: nap[1, 1](micros)  # noqa: E731
    else:
        return None
    if spin is not None:
        return spin
    ev = _EventTimer(library)
    unit = 10**6 if library != "numba" else 1000     # cycles, or microsecond naps
    launch(unit)                                       # compile and load
    a, b = ev.event(), ev.event()
    a.record()
    launch(unit)
    b.record()
    ev.synchronize()
    per_second = unit / ev.elapsed_s(a, b)
    return lambda seconds: launch(max(1, int(seconds * per_second)))


def _probe(fn, ev: "_EventTimer", timer: str, calls: int, host_s: float):
    """Call ``fn`` up to ``calls`` times behind a spinning kernel. Returns (blocks, host
    times of the calls), or (None, None) where no spin is available.

    The spin lasts twenty times the host time of the calls, so a call that does not wait
    returns long before it ends. When a call returns after the spin has ended, either it
    waited for the GPU or the GPU's queue was full (about a thousand launches queued behind
    the spin) and a launch waited for room. What is still queued at that moment tells them
    apart: after a wait, nothing queued before the call is left (the event recorded after the
    previous call has passed); a full queue still holds the earlier calls' work. The test is
    a state, not a time, so it holds when other processes share the GPU and stretch times."""
    spin = _spinner(timer)
    if spin is None:
        return None, None
    seconds = min(5.0, max(0.02, 20 * calls * host_s))
    ev.synchronize()
    end = ev.event()
    spin(seconds)
    end.record()
    last, launch = end, []
    clock = time.perf_counter
    blocked = False
    for _ in range(calls):
        t0 = clock()
        fn()
        launch.append(clock() - t0)
        if ev.done(end):                 # the spin ended during this call
            blocked = ev.done(last)      # and nothing from before the call is still queued
            break
        last = ev.event()
        last.record()
    ev.synchronize()
    return blocked, None if blocked else launch


def _sync_for(timer: str) -> Callable[[], None]:
    if timer == "cpu":
        return lambda: None
    if timer == "numba" and device.simulator_enabled():
        return lambda: None
    return _EventTimer(timer).synchronize


def bench(fn: Callable[[], object], *, timer: str = "cpu", name: str | None = None,
          warmup: int = 3, repeat: int = 20, min_time_s: float = 0.0,
          bytes: int | None = None, flops: float | None = None, batch: int = 1,
          probe: bool = True) -> Timing:
    """Time ``fn()``: its first call, then ``repeat`` steady-state calls after ``warmup``.

    ``timer`` names the library whose CUDA events time device work (``"cupy"``,
    ``"torch"`` or ``"numba"``) or ``"cpu"`` for a host wall clock. The first
    call is timed with the host clock followed by a device synchronisation, so
    it includes compilation and module loading; the steady state is timed with
    events recorded around each call on the default stream. ``min_time_s``
    adds repeats until the samples cover at least that much time.
    Give ``bytes`` (moved through memory) or ``flops`` to get GB/s or TFLOP/s.

    With events, the host time of each timed call is recorded too (``host_median_s``), and
    ``PROBE_CALLS`` more calls are made behind a kernel that spins (``probe=False`` skips
    this): ``blocks`` says whether one of them waited for the GPU, ``launch_s`` what a call
    costs the host with room in the queue, ``launch_bound`` whether that reaches half the
    event time. ``batch=K`` runs K calls back to back between one pair of events and reports
    their time divided by K: for kernels of a few microseconds, where a pair of events per
    call times the launch gaps.
    """
    if timer not in TIMERS:
        raise ValueError(f"unknown timer {timer!r}; choose one of {', '.join(TIMERS)}")
    if repeat < 1 or warmup < 0 or batch < 1:
        raise ValueError("repeat and batch must be >= 1 and warmup >= 0")
    name = name or getattr(fn, "__name__", "fn")
    sync = _sync_for(timer)

    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    first = time.perf_counter() - t0

    for _ in range(warmup):
        fn()
    sync()

    samples: list[float] = []
    host: list[float] = []
    use_events = timer != "cpu" and not (timer == "numba" and device.simulator_enabled())
    ev = _EventTimer(timer) if use_events else None
    clock = time.perf_counter
    while True:
        if ev is not None:
            pairs = []
            for _ in range(repeat):
                a, b = ev.event(), ev.event()
                a.record()
                t0 = clock()
                for _ in range(batch):
                    fn()
                host.append((clock() - t0) / batch)
                b.record()
                pairs.append((a, b))
            ev.synchronize()
            samples.extend(ev.elapsed_s(a, b) / batch for a, b in pairs)
        else:
            for _ in range(repeat):
                t0 = clock()
                for _ in range(batch):
                    fn()
                sync()
                samples.append((clock() - t0) / batch)
        if sum(samples) >= min_time_s or len(samples) >= 100 * repeat:
            break
    blocks = launch = None
    if ev is not None and probe:
        blocks, launch = _probe(fn, ev, timer, PROBE_CALLS * batch, statistics.median(host))
    return Timing(name=name, timer="cuda-events:" + timer if ev else "wall-clock",
                  first_call_s=first, samples_s=samples, bytes=bytes, flops=flops,
                  host_samples_s=host or None, batch=batch, blocks=blocks,
                  launch_samples_s=launch)


def copy_ceiling(timer: str = "cupy", nbytes: int = 2 * 2**30) -> Timing:
    """Device-to-device copy of ``nbytes``: the practical bandwidth ceiling.

    Counts bytes read plus bytes written (2 x nbytes), the same way the kernels
    it is compared with count their traffic. ``timer="cpu"`` measures a host
    memory copy with NumPy instead.
    """
    n = nbytes // 4
    if timer == "cupy":
        import cupy
        src = cupy.random.random(n, dtype=cupy.float32)
        dst = cupy.empty_like(src)
        fn = lambda: cupy.copyto(dst, src)  # noqa: E731
    elif timer == "torch":
        import torch
        src = torch.rand(n, device="cuda")
        dst = torch.empty_like(src)
        fn = lambda: dst.copy_(src)  # noqa: E731
    elif timer == "cpu":
        import numpy as np
        src = np.random.default_rng(0).random(n, dtype=np.float32)
        dst = np.empty_like(src)
        fn = lambda: np.copyto(dst, src)  # noqa: E731
    else:
        raise ValueError(f"copy ceiling needs timer 'cupy', 'torch' or 'cpu', not {timer!r}")
    return bench(fn, timer=timer, name="device copy" if timer != "cpu" else "host copy",
                 warmup=3, repeat=20, bytes=2 * n * 4)


def matmul_ceiling(n: int = 8192, dtype: str = "float32", timer: str = "torch") -> Timing:
    """The vendor library's n x n x n matmul in ``dtype`` (fp32 with TF32 off)."""
    import torch
    dt = {"float32": torch.float32, "tf32": torch.float32, "bfloat16": torch.bfloat16,
          "float16": torch.float16}[dtype]
    dev = "cuda" if timer == "torch" else "cpu"
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        a = torch.randn(n, n, device=dev, dtype=dt)
        b = torch.randn(n, n, device=dev, dtype=dt)
        return bench(lambda: a @ b, timer=timer if dev == "cuda" else "cpu",
                     name=f"library matmul {dtype}", warmup=3, repeat=10, flops=2.0 * n**3)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
