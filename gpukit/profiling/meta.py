"""The chapter's plain arithmetic, importable without CuPy or numba: the schedule of an
idealised GPU for the copy-kernel-copy job (the page's model, and the bound its views compare
the measured runs with)."""

from __future__ import annotations


def model_timeline(count: int, t_in: float, t_kernel: float, t_out: float,
                   pipelined: bool = True, streams: int = 3) -> list[dict]:
    """The schedule of an idealised GPU for ``count`` equal chunks whose whole-array stage times
    are ``t_in``, ``t_kernel`` and ``t_out``: one engine copies in, one copies out, one kernel runs
    at a time, each in issue order. ``pipelined=False`` runs every step after the previous one."""
    a, k, b = t_in / count, t_kernel / count, t_out / count
    bars, free = [], {"copy in": 0.0, "kernel": 0.0, "copy out": 0.0}
    clock = 0.0
    for i in range(count):
        ready = 0.0 if pipelined else clock
        for kind, dur in (("copy in", a), ("kernel", k), ("copy out", b)):
            start = max(ready, free[kind])
            bars.append({"chunk": i, "stream": i % streams if pipelined else 0, "kind": kind,
                         "start": start, "stop": start + dur})
            free[kind] = ready = start + dur
        clock = ready
    return bars


def makespan(bars: list[dict]) -> float:
    """When the last step of a schedule ends."""
    return max((b["stop"] for b in bars), default=0.0)
