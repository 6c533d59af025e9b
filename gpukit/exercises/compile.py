"""Does a kernel that passes on the simulator compile for a real GPU?

The simulator runs a kernel as Python: lists, float64 literals or a shared array whose shape is
computed inside the kernel all pass there and fail (or slow down) on a GPU. numba can compile a
kernel to PTX without a GPU when the CUDA toolkit's NVVM is installed; :func:`compile_ptx` does
that with the argument types of the puzzle's full-size run (in a process without the simulator).
"""

from __future__ import annotations

import numpy as np


#: the GPU target the kernels are compiled for (Hopper)
CC = (9, 0)


class _Target:
    compute_capability = CC


def _compile_for(cc) -> None:
    """Device functions are compiled for the current device's target; with no GPU in this
    process (there need be none to compile), name the target instead of asking the driver."""
    from numba.cuda import dispatcher
    dispatcher.get_current_device = lambda: _Target()


def _types(puzzle, consts: dict) -> tuple:
    import numba
    from numba import typeof
    rng = np.random.default_rng(0)
    p = {k.lower(): v for k, v in consts.items()}
    p.update(puzzle.sizes(rng, consts, False))
    p.setdefault("gpu", (2, 32, 32))
    inputs = puzzle.make(rng, p)
    outs = {k: np.empty(s[0], s[1]) for k, s in puzzle.outs(p).items()}
    sig = []
    for name in puzzle.args:
        value = outs.get(name, inputs.get(name))
        sig.append(typeof(value) if isinstance(value, np.ndarray) else numba.typeof(value))
    return tuple(sig)


def compile_ptx(num: int, path: str, consts: dict | None = None,
                source: str | None = None) -> dict:
    """``{"ok": True, "ptx_lines": N}``, ``{"ok": False, "message": ...}``, or
    ``{"skipped": why}`` where this machine has no NVVM. ``consts``: the module constants
    (the full-size ones by default)."""
    from .child import BadSubmission, load
    from .puzzles import find
    puzzle = find(num)
    if consts is None:
        consts = {k: v[1] for k, v in puzzle.consts.items()}
    try:
        from numba import cuda
        cuda.compile_ptx                                  # noqa: B018 - present, not the simulator's
    except (ImportError, AttributeError) as exc:
        return {"skipped": f"numba cannot compile CUDA here: {exc}"}
    try:
        from numba.cuda.cudadrv import nvvm
        nvvm.NVVM()
    except Exception as exc:  # noqa: BLE001 - NvvmSupportError and the like: no compiler here
        return {"skipped": f"no NVVM on this machine: {str(exc).splitlines()[0][:200]}"}
    _compile_for(CC)
    try:
        module = load(puzzle, path, consts, source)
    except BadSubmission as exc:
        return {"ok": False, "message": str(exc)}
    kernel = getattr(module, puzzle.kernel)
    try:
        ptx, _ = cuda.compile_ptx(kernel.py_func, _types(puzzle, consts), cc=CC)
    except Exception as exc:  # noqa: BLE001 - numba's compile error is the message
        text = str(exc)
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__)
        return {"ok": False, "message": f"does not compile for a GPU: {type(exc).__name__}: {first[:300]}"}
    f64 = sum(1 for ln in ptx.splitlines() if ".f64" in ln and ("add" in ln or "mul" in ln or "fma" in ln))
    return {"ok": True, "ptx_lines": len(ptx.splitlines()), "f64_arith": f64}


def compile_job(job: dict) -> dict:
    """The kernel of ``job["path"]`` compiled with each set of constants in ``job["consts"]``
    (the full-size ones and each trial's, so that no value of a constant hides a branch that
    is not CUDA): the first failure, or ``{"ok": True}``, or ``{"skipped": why}``."""
    last, done = {"ok": True}, []
    for consts in job["consts"]:
        if consts in done:
            continue
        done.append(consts)
        last = compile_ptx(job["num"], job["path"], consts, job.get("source"))
        if not last.get("ok"):
            return last
    return last


def compile_many(items: list) -> list:
    """:func:`compile_ptx` for each ``[num, path]``, in this one process."""
    return [compile_ptx(*item) for item in items]
