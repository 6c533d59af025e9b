"""Nsight Compute on one SAXPY launch: finding ``ncu``, running it, reading its report.

:func:`nsight_compute` runs ``ncu`` (SpeedOfLight section) on a fresh process that launches
CuPy's SAXPY kernel once (:func:`ncu_target`, started as ``python -m gpukit.proc``), and
records its text report, or why it could not run. :func:`ncu_metric` reads one value from
that report.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np

from gpukit import proc
from gpukit.tools import find_ncu

from .kernels import A, check_saxpy, cupy_kernel, make_inputs
from .meta import ncu_elements, ncu_metric  # noqa: F401  (public here)

NCU_ARGS = ["--section", "SpeedOfLight", "--kernel-name", "regex:gpukit_saxpy",
            "--launch-count", "1"]
#: the process ``ncu`` starts: one call of this module's :func:`ncu_target`
TARGET = "gpukit.timing.profile:ncu_target"


def nsight_compute(n: int, timeout: float = 60) -> dict:
    """Nsight Compute on one SAXPY launch (SpeedOfLight section), or why it could not run."""
    args = json.dumps([n])
    cmd_shown = f"ncu {' '.join(NCU_ARGS)} python -m gpukit.proc {TARGET} '{args}'"
    exe = find_ncu()
    if exe is None:
        return {"available": False, "command": cmd_shown,
                "output": "ncu was not found on PATH, in /usr/local/cuda/bin or /opt/nvidia."}
    cmd = [exe, *NCU_ARGS, sys.executable, "-m", "gpukit.proc", TARGET, args]
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        text, rc = (done.stdout + done.stderr), done.returncode
    except subprocess.TimeoutExpired:
        text, rc = f"ncu did not finish within {timeout:.0f} s", None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    keep = [ln for ln in lines if not ln.startswith(proc._RESULT)]  # the target's own result line
    return {"available": True, "command": cmd_shown, "returncode": rc,
            "seconds": time.perf_counter() - t0, "output": "\n".join(keep[-45:]),
            "permission_error": "ERR_NVGPUCTRPERM" in text}


def ncu_target(n: int) -> None:
    """One CuPy SAXPY launch on ``n`` elements, checked: what ``ncu`` profiles."""
    import cupy
    x, y = make_inputs(n)
    cx, cy = cupy.asarray(x), cupy.asarray(y)
    out = cupy.full_like(cx, cupy.nan)
    cupy_kernel()(np.float32(A), cx, cy, out)
    cupy.cuda.Device().synchronize()
    check_saxpy(out, x, y, what="ncu target")


