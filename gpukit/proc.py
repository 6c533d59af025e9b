"""Running one function in a fresh Python process.

A first call measured in a fresh process includes what a reader's first call includes:
importing, creating the GPU context, compiling (with on-disk kernel caches that start empty
unless the caller shares a folder). It also keeps process-wide state (the numba simulator,
Triton's interpreter, environment variables) out of the caller.

:func:`run_fresh` calls ``module.function(*args)`` in a child interpreter started with
``python -m gpukit.proc``; the arguments and what the function returns travel as JSON. A child that fails, prints no result or runs past ``timeout`` gives
``{"error": last line, "process_s": seconds}`` instead of raising.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time

#: a child that sees no GPU: numba on its simulator, CUDA devices hidden from every library
NO_GPU = {"CUDA_VISIBLE_DEVICES": "", "NUMBA_ENABLE_CUDASIM": "1"}

#: environment variables pointing each library's on-disk kernel cache at a folder
CACHE_VARS = {"NUMBA_CACHE_DIR": "numba", "CUPY_CACHE_DIR": "cupy", "TRITON_CACHE_DIR": "triton",
              "TORCHINDUCTOR_CACHE_DIR": "inductor"}

_RESULT = "gpukit-proc-result:"


def cache_env(cache_dir: str, *, shared: bool = False) -> dict:
    """Environment that puts every kernel cache under ``cache_dir`` (one folder when ``shared``)."""
    return {var: cache_dir if shared else os.path.join(cache_dir, sub) for var, sub in CACHE_VARS.items()}


def run_fresh(target: str, *args, env: dict | None = None, timeout: float = 600,
              cwd: str | None = None) -> dict:
    """``"package.module:function"`` called with ``args`` in a fresh interpreter.

    Returns the function's JSON result (a dict gets ``process_s``, the child's wall time,
    added) or ``{"error": ..., "process_s": ...}``.
    """
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "gpukit.proc", target, json.dumps(list(args))],
                              capture_output=True, text=True, env=full_env, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s", "process_s": time.perf_counter() - t0}
    wall = time.perf_counter() - t0
    found = [ln for ln in proc.stdout.splitlines() if ln.startswith(_RESULT)]
    if proc.returncode != 0 or not found:
        lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        return {"error": (lines or ["no output"])[-1][:500], "process_s": wall}
    result = json.loads(found[-1][len(_RESULT):])
    if isinstance(result, dict):
        result.setdefault("process_s", wall)
    return result


def _main(argv: list[str]) -> int:
    if len(argv) != 2 or ":" not in argv[0]:
        print("usage: python -m gpukit.proc package.module:function ARGS_JSON_LIST", file=sys.stderr)
        return 2
    module, func = argv[0].split(":")
    fn = getattr(importlib.import_module(module), func)
    result = fn(*json.loads(argv[1]))
    from .results import _json_default
    print(_RESULT + json.dumps(result, default=_json_default), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
