"""Command-line tools of the CUDA toolkit that several chapters run, found in one way."""

from __future__ import annotations

import glob
import os
import shutil

#: where ncu usually lives when it is not on PATH
NCU_SEARCH = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu",
              "/usr/local/cuda-*/bin/ncu")


def find_ncu() -> str | None:
    """The Nsight Compute (``ncu``) to run: ``$GPUKIT_NCU`` if set (and only it), else PATH,
    else the usual places (newest first); None when there is none."""
    env = os.environ.get("GPUKIT_NCU")
    if env is not None:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    exe = shutil.which("ncu")
    if exe:
        return exe
    for pattern in NCU_SEARCH:
        for cand in sorted(glob.glob(pattern), reverse=True):
            if os.access(cand, os.X_OK):
                return cand
    return None
