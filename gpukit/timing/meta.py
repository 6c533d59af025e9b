"""The timing chapter's name and the small facts its views need (no heavy imports)."""

from __future__ import annotations

NAME = "timing"


def peak_gbs(machine: dict) -> float | None:
    """The GPU's theoretical memory bandwidth from a machine record, or None."""
    gpu = machine.get("gpu") or {}
    return gpu.get("theoretical_bandwidth_gbs")
