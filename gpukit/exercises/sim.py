"""Instrumenting numba's CUDA simulator: per-thread access counts, races, coalescing, shuffles.

The simulator runs each CUDA thread of a block as a Python thread (``threading.current_thread()``
is a ``BlockThread`` with ``blockIdx`` and ``threadIdx``). The checker hands a kernel
:class:`Counted` arrays instead of NumPy arrays: every element access is counted for the thread
that made it, checked against the array's bounds (a negative index is out of bounds, as on a GPU),
and checked for races. Shared arrays are made :class:`Counted` too, per block and poisoned with
NaN (or a sentinel), by patching the simulator's ``cuda.shared.array``. Atomics count one access
and take part in no race. ``cuda.shfl_*_sync``, which the simulator lacks, is added here.

Race rule: two accesses to one element by different threads, at least one a plain write, race
unless a ``cuda.syncthreads()`` of their block lies between them (threads of different blocks are
never ordered within one launch). Each thread counts the barriers it has passed (its epoch);
two threads of one block that run code are never more than one barrier apart, so "same block,
same epoch" is exactly "no barrier between".

Import this module only in a process where ``NUMBA_ENABLE_CUDASIM=1`` was set before numba.
"""

from __future__ import annotations

import operator
import sys
import threading

import numpy as np

#: the sentinel that poisons integer shared arrays and outputs
INT_POISON = -123456789


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


class Stats:
    """Per-thread counts of global reads (``gr``), global writes (``gw``) and shared accesses
    (``sh``), and the access patterns that the coalescing and bank checks read."""

    def __init__(self):
        self.counts: dict[tuple, list[int]] = {}
        self.patterns: dict[tuple, dict[int, int]] = {}   # (array, line, ordinal, warp row) -> x -> flat
        self.ordinals: dict[tuple, int] = {}

    def add(self, t, slot: int) -> None:
        c = self.counts.get(_key(t))
        if c is None:
            c = self.counts.setdefault(_key(t), [0, 0, 0])
        c[slot] += 1

    def max(self) -> dict:
        out = {"gr": 0, "gw": 0, "sh": 0}
        for c in self.counts.values():
            for i, k in enumerate(("gr", "gw", "sh")):
                out[k] = max(out[k], c[i])
        return out

    def record(self, t, name: str, line: int, flat: int) -> None:
        k = _key(t)
        okey = (k, name, line)
        n = self.ordinals.get(okey, 0)
        self.ordinals[okey] = n + 1
        tx, ty, tz = t.threadIdx
        group = (name, line, n, k[0], ty, tz, tx // 32)
        self.patterns.setdefault(group, {})[tx] = flat

    def worst_stride(self, name: str) -> tuple[int, int] | None:
        """(largest jump, source line) between threads with neighbouring ``threadIdx.x`` in one
        access of ``name``; None when every such pair is 0 or 1 element apart."""
        worst = None
        for (arr, line, *_), xs in self.patterns.items():
            if arr != name:
                continue
            for x, flat in xs.items():
                if x + 1 in xs:
                    d = abs(xs[x + 1] - flat)
                    if d > 1 and (worst is None or d > worst[0]):
                        worst = (d, line)
        return worst

    def bank_conflict(self, name: str, banks: int) -> tuple[int, int] | None:
        """(ways, source line) of the worst bank conflict in accesses of ``name`` with ``banks``
        banks of one element each; None without a conflict."""
        worst = None
        for (arr, line, *_), xs in self.patterns.items():
            if arr != name:
                continue
            per_bank: dict[int, set] = {}
            for flat in xs.values():
                per_bank.setdefault(flat % banks, set()).add(flat)
            ways = max(len(s) for s in per_bank.values())
            if ways > 1 and (worst is None or ways > worst[0]):
                worst = (ways, line)
        return worst


class Counted:
    """An array a kernel sees in the checker: counted, bounds-checked and race-checked."""

    __slots__ = ("_a", "name", "shared", "stats", "track", "_writes", "_reads", "_lock")

    def __init__(self, array: np.ndarray, name: str, stats: Stats, *, shared: bool = False,
                 track: bool = False):
        self._a, self.name, self.stats, self.shared, self.track = array, name, stats, shared, track
        self._writes: dict[int, tuple] = {}    # flat -> (thread key, epoch)
        self._reads: dict[int, tuple] = {}     # flat -> (epoch, set of (block, thread) keys)
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
            raise KernelFault(f"{self.name}{list(idx)}: {self.name} has {self._a.ndim} dimension(s); "
                              "index every one with a whole number (no slices)")
        try:
            idx = tuple(operator.index(i) for i in idx)
        except TypeError:
            raise KernelFault(f"{self.name}[{idx}]: index with whole numbers, one element at a time "
                              "(no slices, no floats)") from None
        for i, n in zip(idx, self._a.shape):
            if not 0 <= i < n:
                shape = "x".join(map(str, self._a.shape))
                raise KernelFault(f"{self.name}{list(idx)} is outside the array ({shape}): "
                                  "a thread needs a guard")
        return idx, int(np.ravel_multi_index(idx, self._a.shape))

    def _check(self, t, flat: int, write: bool) -> None:
        me, ep = _key(t), _epoch(t)

        def conflict(other, other_ep) -> bool:
            return other != me and (other[0] != me[0] or other_ep == ep)

        with self._lock:
            w = self._writes.get(flat)
            if w is not None and conflict(*w):
                raise KernelFault(self._race(flat, w[0], "wrote", "writes" if write else "reads"))
            if write:
                r = self._reads.get(flat)
                if r is not None:
                    for other in r[1]:
                        if conflict(other, r[0]):
                            raise KernelFault(self._race(flat, other, "read", "writes"))
                self._writes[flat] = (me, ep)
            else:
                r = self._reads.get(flat)
                if r is None or r[0] != ep:
                    self._reads[flat] = (ep, {me})
                else:
                    r[1].add(me)

    def _race(self, flat, other, did, does) -> str:
        me = _key(_thread())
        idx = list(np.unravel_index(flat, self._a.shape)) if self._a.ndim > 1 else [flat]
        where = ("with no cuda.syncthreads() between" if other[0] == me[0]
                 else "from another block, and blocks are not ordered")
        return (f"race on {self.name}{[int(i) for i in idx]}: thread {list(other[1])} of block "
                f"{list(other[0])} {did} it and thread {list(me[1])} of block {list(me[0])} {does} it "
                f"{where}")

    def _touch(self, idx, write: bool):
        t = _thread()
        idx, flat = self._flat(idx)
        self.stats.add(t, 2 if self.shared else (1 if write else 0))
        if self.track:
            self.stats.record(t, self.name, sys._getframe(2).f_lineno, flat)
        self._check(t, flat, write)
        return idx

    def __getitem__(self, idx):
        return self._a[self._touch(idx, False)]

    def __setitem__(self, idx, value):
        self._a[self._touch(idx, True)] = value

    def atomic(self, idx):
        """One atomic access: counted (as a write to global memory), bounds-checked, no race."""
        t = _thread()
        idx, _ = self._flat(idx)
        self.stats.add(t, 2 if self.shared else 1)
        return idx


def _patch_atomics() -> None:
    from numba.cuda.simulator.kernelapi import FakeCUDAAtomic
    for name in ("add", "sub", "max", "min", "exch", "inc", "dec", "and_", "or_", "xor"):
        original = getattr(FakeCUDAAtomic, name)

        def atomic(self, array, index, val, _original=original):
            if isinstance(array, Counted):
                index = array.atomic(index)
                array = array._a
            return _original(self, array, index, val)
        setattr(FakeCUDAAtomic, name, atomic)


class _Warp:
    def __init__(self, size: int):
        self.size, self.values = size, [None] * size
        self.barrier = threading.Barrier(size, timeout=5)


_warps: dict[tuple, _Warp] = {}
_warps_lock = threading.Lock()


def _exchange(value, source):
    """Every lane of the calling thread's warp offers ``value``; returns the value offered by
    lane ``source(lane)`` (or the caller's own value when that lane does not exist)."""
    t = _thread()
    bx, by, bz = t.manager_block_dim
    lane, warp = t.thread_id % 32, t.thread_id // 32
    with _warps_lock:
        key = (tuple(t.blockIdx), warp, id(t._manager))
        w = _warps.get(key)
        if w is None:
            w = _warps[key] = _Warp(min(32, bx * by * bz - 32 * warp))
    w.values[lane] = value
    w.barrier.wait()
    src = source(lane)
    out = w.values[src] if 0 <= src < w.size else value
    w.barrier.wait()
    return out


def _patch_module(stats_of) -> None:
    from numba.cuda.simulator import kernel as simkernel
    from numba.cuda.simulator.kernelapi import FakeCUDAModule, FakeCUDAShared

    def shfl_down_sync(self, mask, value, delta):
        return _exchange(value, lambda lane: lane + delta if (lane % 32) + delta < 32 else lane)

    def shfl_up_sync(self, mask, value, delta):
        return _exchange(value, lambda lane: lane - delta if lane >= delta else lane)

    def shfl_xor_sync(self, mask, value, lane_mask):
        return _exchange(value, lambda lane: lane ^ lane_mask)

    def shfl_sync(self, mask, value, src_lane):
        return _exchange(value, lambda lane: src_lane)

    for f in (shfl_down_sync, shfl_up_sync, shfl_xor_sync, shfl_sync):
        setattr(FakeCUDAModule, f.__name__, f)

    original_array = FakeCUDAShared.array

    def shared_array(self, shape, dtype, alignment=None):
        t = _thread()
        line = sys._getframe(1).f_lineno
        key = (line, tuple(t.blockIdx))
        with _warps_lock:
            found = getattr(self, "gk_allocations", None)
            if found is None:
                found = self.gk_allocations = {}
            arr = found.get(key)
            if arr is None:
                raw = np.array(original_array(self, shape, dtype, alignment), copy=True)
                raw.fill(np.nan if raw.dtype.kind == "f" else INT_POISON)
                arr = found[key] = Counted(raw, f"shared@{line}", stats_of(), shared=True, track=True)
        return arr

    FakeCUDAShared.array = shared_array

    original_sync = simkernel.BlockThread.syncthreads

    def syncthreads(self):
        original_sync(self)
        self.gk_epoch = getattr(self, "gk_epoch", 0) + 1

    simkernel.BlockThread.syncthreads = syncthreads

    original_init = simkernel.BlockThread.__init__

    def init(self, f, manager, blockIdx, threadIdx, debug):
        original_init(self, f, manager, blockIdx, threadIdx, debug)
        self.manager_block_dim = tuple(manager._block_dim) + (1,) * (3 - len(manager._block_dim))

    simkernel.BlockThread.__init__ = init


_current: list[Stats] = []
_installed = False


def install() -> None:
    """Patch the simulator once per process (it must be on)."""
    global _installed
    from numba import config
    if not getattr(config, "ENABLE_CUDASIM", 0):
        raise RuntimeError("the exercise checker needs NUMBA_ENABLE_CUDASIM=1 set before numba is imported")
    if _installed:
        return
    _patch_atomics()
    _patch_module(lambda: _current[-1])
    _installed = True


def launch(kernel, grid, block, args: list, stats: Stats) -> None:
    """Run ``kernel[grid, block](*args)`` on the simulator, counting into ``stats``."""
    install()
    _current.append(stats)
    try:
        kernel[grid, block](*args)
    finally:
        _current.pop()
        _warps.clear()
