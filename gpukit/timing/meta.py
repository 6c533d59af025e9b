"""The timing chapter's name and the small facts its views need (no heavy imports)."""

from __future__ import annotations

NAME = "timing"


def peak_gbs(machine: dict) -> float | None:
    """The GPU's theoretical memory bandwidth from a machine record, or None."""
    gpu = machine.get("gpu") or {}
    return gpu.get("theoretical_bandwidth_gbs")


def saxpy_bytes(n: int, itemsize: int = 4) -> int:
    """Bytes SAXPY moves through memory: read x, read y, write out."""
    if n < 0 or itemsize < 1:
        raise ValueError("n must be >= 0 and itemsize >= 1")
    return 3 * n * itemsize


def implied_gbs(nbytes: float, seconds: float) -> float:
    """The bandwidth (1e9 bytes/s) a time implies for ``nbytes`` of traffic."""
    if nbytes < 0:
        raise ValueError("nbytes must be >= 0")
    if not seconds > 0:  # also catches NaN
        raise ValueError(f"a measured time must be > 0 s, got {seconds!r}")
    return nbytes / seconds / 1e9


def is_impossible(gbs: float, ceiling_gbs: float, tolerance: float = 0.05) -> bool:
    """True when ``gbs`` is above what the memory can deliver (ceiling plus a tolerance).

    Use the vendor's peak or a copy measured in the same run as the ceiling. A number
    above it means the clock missed the work (no synchronisation, a kernel never
    launched) or the data never came from that memory (it sat in a cache).
    """
    if not ceiling_gbs > 0:
        raise ValueError("the ceiling must be > 0")
    return gbs > ceiling_gbs * (1 + tolerance)


def ncu_metric(output: str, name: str) -> float | None:
    """A value from Nsight Compute's text report, e.g. ``ncu_metric(out, "Duration")``."""
    for line in output.splitlines():
        parts = line.split()
        words = len(name.split())
        if parts[:words] == name.split() and len(parts) >= words + 2:
            try:
                return float(parts[-1].replace(",", ""))
            except ValueError:
                return None
    return None


def ncu_elements(command: str) -> int | None:
    """The element count at the end of a recorded ``ncu`` command line (``N`` or ``'[N]'``)."""
    try:
        return int(command.split()[-1].strip("'[]"))
    except (ValueError, IndexError):
        return None
