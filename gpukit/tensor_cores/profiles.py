"""``gpukit bench tensor-cores-profiles``: Nsight Compute on every rung of the ladder.

Each rung (:data:`gpukit.profiling.targets.TENSOR_CORES`, M = N = K = 4096) is profiled
by ``ncu`` in a fresh process, the launch after the compile and a warm-up, through the
profiling chapter's machinery. Recorded per rung: the profiling chapter's key metrics
(achieved occupancy, shared-memory bank conflicts, the stall reasons with the most
cycles per issued instruction) and every metric of the report that names the tensor
pipes (utilisation of the pipe that runs HMMA or GMMA instructions).
"""

from __future__ import annotations

import os
import re
import tempfile

from .. import device

#: a metric of the report that speaks of the tensor pipes
TENSOR = re.compile(r"tensor", re.I)


def profile_rung(kernel: str, folder: str) -> dict:
    from ..profiling import ncu
    from ..profiling.targets import TARGETS, WARMUP
    name = f"tensor-cores-{kernel}"
    t = TARGETS[name]
    try:
        res = ncu.run([name, WARMUP], t.regex, WARMUP, os.path.join(folder, name))
    except Exception as exc:  # noqa: BLE001 - one rung's failure is recorded, the rest go on
        return {"kernel": kernel, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    k = res["kernels"][0]
    key = ncu.key_metrics(k["metrics"])
    tensor = {m: v for m, v in k["metrics"].items() if TENSOR.search(m) and v is not None}
    nbytes, flops = t.work()
    dur = key["duration_s"]
    return {"kernel": kernel, "name": kernel, "n": t.n, "ncu_kernel": k["name"][:200],
            "block": k["block"], "grid": k["grid"], **key, "tensor_metrics": tensor,
            "median_s": dur, "tflops": flops / dur / 1e12 if dur else None,
            "counted_bytes": nbytes, "command": res["command"], "ncu_s": res["seconds"],
            "sass": res.get("sass")}


def run(n: int | None = None, repeat: int = 1) -> dict:
    """Every rung under ncu; part ``gpu`` (rows, and failures with their reason)."""
    from ..profiling import ncu
    from ..profiling.targets import TENSOR_CORES
    if not device.has_gpu() or ncu.find_ncu() is None:
        return {}
    rows, failed = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for kernel in TENSOR_CORES:
            row = profile_rung(kernel, tmp)
            (failed if "error" in row else rows).append(row)
            print(f"  {kernel:<16} " + (f"{row['duration_s'] * 1e3:8.3f} ms"
                  if "error" not in row else f"FAILED: {row['error']}"), flush=True)
    exe = ncu.find_ncu()
    return {"gpu": {"n": len(rows), "rows": rows, "failed": failed,
                    "ncu_version": ncu.version(exe)}}
