"""``gpukit bench llm-inference-profiles``: Nsight Compute on the matrix-vector kernels.

The bf16, int8 and int4 kernels (:data:`gpukit.profiling.targets.LLM_TILES`) each multiply
the 8B shape's gate-and-up matrix by one vector, at one fixed tile, under ``ncu`` in a fresh
process (the launch after the compile and a warm-up), through the profiling chapter's
machinery: the bytes the product needs, the share of the DRAM bandwidth reached, how busy the
schedulers were at issuing instructions, the stall reasons and the instruction mix.
"""

from __future__ import annotations

import tempfile

from .. import device

KERNELS = ("llm-bf16-matvec", "llm-int8-matvec", "llm-int4-matvec")


def run(n: int | None = None, repeat: int = 1) -> dict:
    """Every kernel under ncu; part ``gpu`` (rows, and failures with their reason)."""
    from ..profiling import ncu
    from ..profiling.profiles import profile_one
    if not device.has_gpu() or device.simulator_enabled() or ncu.find_ncu() is None:
        return {}
    rows, failed = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name in KERNELS:
            row = profile_one(name, tmp)
            (failed if "error" in row else rows).append(row)
            print(f"  {name:<18} " + (f"{row['duration_s'] * 1e6:8.1f} us, DRAM "
                  f"{row['dram_pct'] or 0:.1f} %, issue {row['issue_active_pct'] or 0:.1f} %"
                  if "error" not in row else f"FAILED: {row['error']}"), flush=True)
    exe = ncu.find_ncu()
    return {"gpu": {"n": len(rows), "rows": rows, "failed": failed,
                    "ncu_version": ncu.version(exe)}}
