"""``gpukit bench llm-inference-profiles``: Nsight Compute on the matrix-vector kernels.

The bf16, int8 and int4 kernels (:data:`gpukit.profiling.targets.LLM_TILES`) each multiply
the 8B shape's gate-and-up matrix by one vector, at one fixed tile, under ``ncu`` in a fresh
process (the launch after the compile and a warm-up), through the profiling chapter's
machinery: the bytes the product needs, the share of the DRAM bandwidth reached, how busy the
schedulers were at issuing instructions, the stall reasons and the instruction mix.
"""

from __future__ import annotations

from .. import device

KERNELS = ("llm-bf16-matvec", "llm-int8-matvec", "llm-int4-matvec")


def run(n: int | None = None, repeat: int = 1) -> dict:
    """Every kernel under ncu; part ``gpu`` (rows, and failures with their reason)."""
    from ..profiling import ncu
    from ..profiling.profiles import profile_many
    if not device.has_gpu() or device.simulator_enabled() or ncu.find_ncu() is None:
        return {}
    rows, failed = profile_many(KERNELS)
    exe = ncu.find_ncu()
    return {"gpu": {"n": len(rows), "rows": rows, "failed": failed,
                    "ncu_version": ncu.version(exe)}}
