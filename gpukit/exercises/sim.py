"""Instrumenting numba's CUDA simulator: per-thread access counts, races, access patterns,
barriers and shuffles.

The simulator runs each CUDA thread of a block as a Python thread (``threading.current_thread()``
is a ``BlockThread`` with ``blockIdx`` and ``threadIdx``). The checker hands a kernel
:class:`Counted` arrays instead of NumPy arrays: every element access is counted for the thread
that made it, checked against the array's bounds (a negative index is out of bounds, as on a GPU),
and checked for races. Shared arrays are made :class:`Counted` too, per block and poisoned with
NaN (or a sentinel), by patching the simulator's ``cuda.shared.array``. ``cuda.shfl_*_sync``,
which the simulator lacks, is added here, with its mask checked.

Race rule: two accesses to one element by different threads race when neither is ordered
before the other and they do not both only read or both only use atomics: a plain write races
with any other access, an atomic with a plain read or write. Accesses are ordered only by a
``cuda.syncthreads()`` of their block that lies between them (threads of different blocks are
never ordered within one launch). Each thread counts the barriers it has passed (its epoch),
and every barrier records the code path that reached it (its source line and the lines of the
calls around it): the threads of a block must pass the same barriers in the same order, so
"same block, same epoch" is exactly "no barrier between", and a barrier inside code that only
some threads run is reported.

Access patterns are grouped by what the hardware would issue together, not by source line:
the k-th access to an array, between two barriers, by the threads of one row of a warp.

Faults found where raising would leave other threads waiting (barriers, shuffles) are kept in
:attr:`Stats.faults` and fail the trial after the launch.

Import this module only in a process where ``NUMBA_ENABLE_CUDASIM=1`` was set before numba.
"""

from __future__ import annotations

import operator
import sys
import threading
import types

import numpy as np

#: the sentinel that poisons integer shared arrays and outputs
INT_POISON = -123456789
#: the file whose frames make a barrier's code path (the submission), and whether shared
#: arrays record their access patterns (only the bank check reads them)
SOURCE = {"path": None, "track_shared": True}


class KernelFault(Exception):
    """A kernel did something a GPU would not allow (out of bounds, a race): fails the check."""


def _thread():
    t = threading.current_thread()
    if not hasattr(t, "threadIdx"):
        raise KernelFault("an instrumented array was touched outside a kernel")
    return t


def _key(t) -> tuple:
    return (tuple(t.blockIdx), tuple(t.threadIdx))


def _epoch(t) -> int:
    return getattr(t, "gk_epoch", 0)


def _site(depth: int = 2) -> tuple:
    """The submission's lines on the current call stack, innermost first."""
    f = sys._getframe(depth)
    lines = []
    while f is not None:
        if f.f_code.co_filename == SOURCE["path"]:
            lines.append(f.f_lineno)
        f = f.f_back
    return tuple(lines)


def _where(site: tuple) -> str:
    if not site:
        return "an unknown line"
    text = f"line {site[0]}"
    return text + (f" (called from line {', '.join(map(str, site[1:]))})" if len(site) > 1 else "")


class Stats:
    """Per-thread counts of global reads (``gr``), global writes (``gw``) and shared accesses
    (``sh``), the access patterns the coalescing and bank checks read, each thread's barriers,
    and faults found during the launch."""

    def __init__(self):
        self.counts: dict[tuple, list[int]] = {}
        #: (array, kind, block, epoch, ordinal, ty, tz, warp) -> {threadIdx.x: flat index}
        self.patterns: dict[tuple, dict[int, int]] = {}
        self.lines: dict[tuple, int] = {}
        self.ordinals: dict[tuple, int] = {}
        self.barriers: dict[tuple, list] = {}
        self.faults: list[str] = []
        self.lock = threading.Lock()

    def add(self, t, slot: int) -> None:
        c = self.counts.get(_key(t))
        if c is None:
            c = self.counts.setdefault(_key(t), [0, 0, 0])
        c[slot] += 1

    def fault(self, message: str) -> None:
        with self.lock:
            if message not in self.faults:
                self.faults.append(message)

    def max(self) -> dict:
        out = {"gr": 0, "gw": 0, "sh": 0}
        for c in self.counts.values():
            for i, k in enumerate(("gr", "gw", "sh")):
                out[k] = max(out[k], c[i])
        return out

    def record(self, t, name: str, write: bool, line: int, flat: int) -> None:
        k = _key(t)
        ep = _epoch(t)
        okey = (k, name, write, ep)
        n = self.ordinals.get(okey, 0)
        self.ordinals[okey] = n + 1
        tx, ty, tz = t.threadIdx
        group = (name, write, k[0], ep, n, ty, tz, tx // 32)
        self.patterns.setdefault(group, {})[tx] = flat
        self.lines.setdefault(group, line)

    def worst_stride(self, name: str) -> tuple[int, int] | None:
        """(largest jump, a source line) between threads with neighbouring ``threadIdx.x`` in
        one access of ``name``; None when every such pair is 0 or 1 element apart."""
        worst = None
        for group, xs in self.patterns.items():
            if group[0] != name:
                continue
            for x, flat in xs.items():
                if x + 1 in xs:
                    d = abs(xs[x + 1] - flat)
                    if d > 1 and (worst is None or d > worst[0]):
                        worst = (d, self.lines[group])
        return worst

    def bank_conflict(self, name: str, banks: int) -> tuple[int, int] | None:
        """(ways, a source line) of the worst bank conflict in accesses of ``name`` with
        ``banks`` banks of one element each; None without a conflict."""
        worst = None
        for group, xs in self.patterns.items():
            if group[0] != name:
                continue
            per_bank: dict[int, set] = {}
            for flat in xs.values():
                per_bank.setdefault(flat % banks, set()).add(flat)
            ways = max(len(s) for s in per_bank.values())
            if ways > 1 and (worst is None or ways > worst[0]):
                worst = (ways, self.lines[group])
        return worst

    def barrier_fault(self) -> str | None:
        """A message when the threads of a block did not pass the same barriers in order."""
        blocks: dict[tuple, list] = {}
        for (block, thread), sites in sorted(self.barriers.items()):
            blocks.setdefault(block, []).append((thread, sites))
        for block, threads in blocks.items():
            first_thread, first = threads[0]
            for thread, sites in threads[1:]:
                if sites == first:
                    continue
                k = next((i for i, (a, b) in enumerate(zip(first, sites)) if a != b),
                         min(len(first), len(sites)))
                head = (f"cuda.syncthreads() reached by different code paths in block "
                        f"{list(block)}: ")
                if k < len(first) and k < len(sites):
                    return head + (f"thread {list(first_thread)} waited at {_where(first[k])} "
                                   f"while thread {list(thread)} waited at {_where(sites[k])} "
                                   "(a barrier must be reached by every thread of the block, "
                                   "at the same call)")
                a, b = (thread, first_thread) if k < len(first) else (first_thread, thread)
                missed = first[k] if k < len(first) else sites[k]
                return head + (f"thread {list(a)} returned before the barrier at "
                               f"{_where(missed)} that thread {list(b)} reached")
        return None


class Counted:
    """An array a kernel sees in the checker: counted, bounds-checked and race-checked."""

    __slots__ = ("_a", "name", "shared", "stats", "track", "_seen", "_lock")

    def __init__(self, array: np.ndarray, name: str, stats: Stats, *, shared: bool = False,
                 track: bool = False):
        self._a, self.name, self.stats, self.shared, self.track = array, name, stats, shared, track
        #: flat -> {(block, epoch): {"r"|"w"|"a": set of thread indices}}
        self._seen: dict[int, dict] = {}
        self._lock = threading.Lock()

    shape = property(lambda self: self._a.shape)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    dtype = property(lambda self: self._a.dtype)

    def __len__(self):
        return len(self._a)

    def _flat(self, idx) -> tuple[tuple, int]:
        idx = idx if isinstance(idx, tuple) else (idx,)
        if len(idx) != self._a.ndim:
            raise KernelFault(f"{self.name}{list(idx)}: {self.name} has {self._a.ndim} "
                              "dimension(s); index every one with a whole number (no slices)")
        try:
            idx = tuple(operator.index(i) for i in idx)
        except TypeError:
            raise KernelFault(f"{self.name}[{idx}]: index with whole numbers, one element at a "
                              "time (no slices, no floats)") from None
        for i, n in zip(idx, self._a.shape):
            if not 0 <= i < n:
                shape = "x".join(map(str, self._a.shape))
                t = _thread()
                raise KernelFault(f"thread {list(t.threadIdx)} of block {list(t.blockIdx)}: "
                                  f"{self.name}{list(idx)} is outside the array ({shape}): "
                                  "a thread needs a guard")
        return idx, int(np.ravel_multi_index(idx, self._a.shape))

    #: which earlier kinds of access a new access of a kind races with
    CLASH = {"r": ("w", "a"), "w": ("r", "w", "a"), "a": ("r", "w")}
    WORDS = {"r": "read", "w": "wrote", "a": "added to (atomically)"}
    DOES = {"r": "reads", "w": "writes", "a": "uses an atomic on"}

    def _check(self, t, flat: int, kind: str) -> None:
        block, me = _key(t)
        ep = _epoch(t)
        with self._lock:
            seen = self._seen.setdefault(flat, {})
            for (other_block, other_ep), kinds in seen.items():
                if other_block == block and other_ep != ep:
                    continue
                for other_kind in self.CLASH[kind]:
                    for other in kinds.get(other_kind, ()):
                        if other_block != block or other != me:
                            raise KernelFault(self._race(flat, (other_block, other),
                                                         self.WORDS[other_kind], self.DOES[kind]))
            seen.setdefault((block, ep), {}).setdefault(kind, set()).add(me)

    def _race(self, flat, other, did, does) -> str:
        me = _key(_thread())
        idx = list(np.unravel_index(flat, self._a.shape)) if self._a.ndim > 1 else [flat]
        where = ("with no cuda.syncthreads() between" if other[0] == me[0]
                 else "from another block, and blocks are not ordered")
        return (f"race on {self.name}{[int(i) for i in idx]}: thread {list(other[1])} of block "
                f"{list(other[0])} {did} it and thread {list(me[1])} of block {list(me[0])} "
                f"{does} it {where}")

    def _touch(self, idx, write: bool):
        t = _thread()
        idx, flat = self._flat(idx)
        self.stats.add(t, 2 if self.shared else (1 if write else 0))
        if self.track:
            self.stats.record(t, self.name, write, sys._getframe(2).f_lineno, flat)
        self._check(t, flat, "w" if write else "r")
        return idx

    def __getitem__(self, idx):
        return self._a[self._touch(idx, False)]

    def __setitem__(self, idx, value):
        self._a[self._touch(idx, True)] = value

    def atomic(self, idx):
        """One atomic access: counted (as a write to global memory), bounds-checked, and
        race-checked against plain accesses."""
        t = _thread()
        idx, flat = self._flat(idx)
        self.stats.add(t, 2 if self.shared else 1)
        self._check(t, flat, "a")
        return idx


def _patch_atomics() -> None:
    from numba.cuda.simulator.kernelapi import FakeCUDAAtomic
    for name in ("add", "sub", "max", "min", "exch", "inc", "dec", "and_", "or_", "xor",
                 "nanmax", "nanmin", "compare_and_swap", "cas"):
        original = getattr(FakeCUDAAtomic, name, None)
        if original is None:
            continue

        def atomic(self, array, index, *vals, _original=original):
            if isinstance(array, Counted):
                index = array.atomic(index)
                array = array._a
            return _original(self, array, index, *vals)
        setattr(FakeCUDAAtomic, name, atomic)


class _Warp:
    """One warp's meeting point for shuffles: every lane must arrive at the same call."""

    def __init__(self, size: int):
        self.size = size
        self.cond = threading.Condition()
        self.gen = 0
        self.arrived: dict[int, tuple] = {}      # lane -> (value, site, mask)
        self.results: dict[int, dict] = {}
        self.exited: set[int] = set()


_warps: dict[tuple, _Warp] = {}
_warps_lock = threading.Lock()


def _warp_of(t) -> tuple[_Warp, int]:
    bx, by, bz = t.manager_block_dim
    lane, warp = t.thread_id % 32, t.thread_id // 32
    key = (tuple(t.blockIdx), warp, id(t._manager))
    with _warps_lock:
        w = _warps.get(key)
        if w is None:
            w = _warps[key] = _Warp(min(32, bx * by * bz - 32 * warp))
    return w, lane


def _exchange(value, mask, source, name):
    """Every lane of the calling thread's warp offers ``value``; returns the value offered by
    lane ``source(lane)`` (or the caller's own value when that lane does not exist)."""
    t = _thread()
    stats = _current[-1]
    w, lane = _warp_of(t)
    site = _site(3)
    try:
        mask = int(mask)
    except (TypeError, ValueError):
        stats.fault(f"cuda.{name} at {_where(site)}: the mask must be a whole number")
        return value
    full = (1 << w.size) - 1
    if mask & full != full:
        left = next(k for k in range(w.size) if not mask >> k & 1)
        stats.fault(f"cuda.{name} at {_where(site)} with mask {mask:#x} leaves out lane {left}, "
                    f"which takes part: the mask must name every lane that calls it "
                    f"({full:#x} here)")
    with w.cond:
        gen = w.gen
        w.arrived[lane] = (value, site)
        if len(w.arrived) == w.size:
            _meet(w, stats, name)
        else:
            while w.gen == gen:
                if w.exited:
                    gone = min(w.exited)
                    stats.fault(f"lane {gone} of a warp returned before the cuda.{name} at "
                                f"{_where(site)} that the other lanes called: every lane of a "
                                "warp must take part in each shuffle")
                    w.arrived.pop(lane, None)
                    return value
                if getattr(t, "abort", False):
                    return value
                w.cond.wait(0.05)
        offered = w.results[gen]
    src = source(lane)
    return offered[src][0] if 0 <= src < w.size else value


def _meet(w: _Warp, stats: Stats, name: str) -> None:
    sites = {lane: s for lane, (_, s) in w.arrived.items()}
    if len(set(sites.values())) > 1:
        (a, sa), (b, sb) = sorted(sites.items())[0], next(
            (k, s) for k, s in sorted(sites.items()) if s != sites[min(sites)])
        stats.fault(f"lanes of one warp met in different shuffles: lane {a} at {_where(sa)}, "
                    f"lane {b} at {_where(sb)}")
    w.results[w.gen] = dict(w.arrived)
    w.arrived = {}
    w.gen += 1
    w.cond.notify_all()


def _numba_proxy(fake):
    """``numba`` as a kernel sees it: ``numba.cuda`` is the simulator's per-launch module."""
    import numba
    proxy = types.ModuleType("numba")
    proxy.__dict__.update(numba.__dict__)
    proxy.cuda = fake
    return proxy


def _patch_module(stats_of) -> None:
    import contextlib

    import numba
    from numba.cuda.simulator import kernel as simkernel
    from numba.cuda.simulator import kernelapi
    from numba.cuda.simulator.kernelapi import FakeCUDAModule, FakeCUDAShared

    def shfl_down_sync(self, mask, value, delta):
        return _exchange(value, mask, lambda lane: lane + delta, "shfl_down_sync")

    def shfl_up_sync(self, mask, value, delta):
        return _exchange(value, mask, lambda lane: lane - delta if lane >= delta else lane,
                         "shfl_up_sync")

    def shfl_xor_sync(self, mask, value, lane_mask):
        return _exchange(value, mask, lambda lane: lane ^ lane_mask, "shfl_xor_sync")

    def shfl_sync(self, mask, value, src_lane):
        return _exchange(value, mask, lambda lane: src_lane, "shfl_sync")

    for f in (shfl_down_sync, shfl_up_sync, shfl_xor_sync, shfl_sync):
        setattr(FakeCUDAModule, f.__name__, f)

    original_array = FakeCUDAShared.array

    def shared_array(self, shape, dtype, alignment=None):
        t = _thread()
        frame = sys._getframe(1)
        line = frame.f_lineno
        key = (id(frame.f_code), frame.f_lasti, tuple(t.blockIdx))
        with _warps_lock:
            found = getattr(self, "gk_allocations", None)
            if found is None:
                found = self.gk_allocations = {}
            arr = found.get(key)
            if arr is None:
                raw = np.array(original_array(self, shape, dtype, alignment), copy=True)
                raw.fill(np.nan if raw.dtype.kind == "f" else INT_POISON)
                arr = found[key] = Counted(raw, f"shared@{line}", stats_of(), shared=True,
                                           track=SOURCE["track_shared"])
        return arr

    FakeCUDAShared.array = shared_array

    original_sync = simkernel.BlockThread.syncthreads

    def syncthreads(self):
        if not getattr(self, "gk_in_sync", False):
            self.gk_sites.append(_site(2))
        original_sync(self)
        self.gk_epoch = getattr(self, "gk_epoch", 0) + 1

    simkernel.BlockThread.syncthreads = syncthreads

    for name in ("syncthreads_count", "syncthreads_and", "syncthreads_or"):
        original = getattr(simkernel.BlockThread, name)

        def variant(self, value, _original=original):
            self.gk_sites.append(_site(2))
            self.gk_in_sync = True
            try:
                return _original(self, value)
            finally:
                self.gk_in_sync = False
        setattr(simkernel.BlockThread, name, variant)

    original_init = simkernel.BlockThread.__init__

    def init(self, f, manager, blockIdx, threadIdx, debug):
        original_init(self, f, manager, blockIdx, threadIdx, debug)
        self.manager_block_dim = tuple(manager._block_dim) + (1,) * (3 - len(manager._block_dim))
        self.gk_sites = []
        self.gk_stats = stats_of()

    simkernel.BlockThread.__init__ = init

    original_run = simkernel.BlockThread.run

    def run(self):
        try:
            original_run(self)
        finally:
            self.gk_stats.barriers[_key(self)] = self.gk_sites
            w, lane = _warp_of(self)
            with w.cond:
                if lane not in w.arrived:
                    w.exited.add(lane)
                w.cond.notify_all()

    simkernel.BlockThread.run = run

    @contextlib.contextmanager
    def swapped(fn, fake):
        globs = fn.__globals__
        saved = {k: v for k, v in globs.items() if v is numba}
        globs.update({k: _numba_proxy(fake) for k in saved})
        try:
            with original_swapped(fn, fake):
                yield
        finally:
            globs.update(saved)

    original_swapped = kernelapi.swapped_cuda_module
    kernelapi.swapped_cuda_module = swapped
    simkernel.swapped_cuda_module = swapped
    simkernel.BlockManager.run = _run_block


def _run_block(self, grid_point, *args):
    """One block of the simulator: its threads run until every live one waits at a barrier
    (then all go on) or has ended; the first exception stops the block. The loop gives up
    the interpreter between looks, so the block's threads, not the loop, get the time."""
    import time

    from numba.cuda.simulator.kernel import BlockThread

    def body():
        self._f(*args)

    threads = [BlockThread(body, self, grid_point, point, self._debug)
               for point in np.ndindex(*self._block_dim)]
    for t in threads:
        t.start()
    live = list(threads)
    pause = 0.0
    while live:
        failed = next((t for t in threads if t.exception), None)
        if failed is not None:
            for t in threads:
                t.abort = True
                t.syncthreads_blocked = False
                t.syncthreads_event.set()
            raise failed.exception[0].with_traceback(failed.exception[1])
        live = [t for t in live if t.is_alive()]
        if live and all(t.syncthreads_blocked for t in live):
            for t in live:
                t.syncthreads_blocked = False
                t.syncthreads_event.set()
            pause = 0.0
        else:
            time.sleep(pause)
            pause = min(0.002, pause + 0.0001)
    failed = next((t for t in threads if t.exception), None)
    if failed is not None:
        raise failed.exception[0].with_traceback(failed.exception[1])


_current: list[Stats] = []
_installed = False


def install() -> None:
    """Patch the simulator once per process (it must be on)."""
    global _installed
    from numba import config
    if not getattr(config, "ENABLE_CUDASIM", 0):
        raise RuntimeError("the exercise checker needs NUMBA_ENABLE_CUDASIM=1 set before numba "
                           "is imported")
    if _installed:
        return
    _patch_atomics()
    _patch_module(lambda: _current[-1])
    _installed = True


def launch(kernel, grid, block, args: list, stats: Stats) -> None:
    """Run ``kernel[grid, block](*args)`` on the simulator, counting into ``stats``; a fault
    kept during the launch (barriers, shuffles) is raised as :class:`KernelFault` after it."""
    install()
    _current.append(stats)
    try:
        kernel[grid, block](*args)
    finally:
        _current.pop()
        _warps.clear()
    if stats.faults:
        raise KernelFault(stats.faults[0])
    message = stats.barrier_fault()
    if message:
        raise KernelFault(message)
