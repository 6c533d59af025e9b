"""The checker: runs a submitted kernel on numba's CUDA simulator (and, on a GPU, at full size).

Each check, in a fresh process started by :func:`run_check`:

* loads the FILE and takes the puzzle's kernel from it, which must be a ``@cuda.jit`` kernel
  (a host function computing the answer with NumPy is refused);
* runs two trials with fresh random inputs from a printed seed, at sizes that differ from each
  other and are not multiples of the block, with outputs filled with NaN (or a sentinel) so an
  element never written fails, and inputs compared with copies afterwards;
* hands the kernel counting arrays (:mod:`gpukit.exercises.sim`): out-of-bounds accesses and
  races fail, and the most global reads, global writes and shared accesses of any one thread
  are the puzzle's score, compared with the minimum the puzzle allows;
* enforces the rules: limits on accesses per thread, shared memory required or forbidden,
  coalesced accesses, bank conflicts.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import time
import traceback

import numpy as np

from .spec import SCORES

#: a submitted FILE that cannot be checked at all (exit status 2)
BAD = "bad_input"
#: the most threads a simulator trial may start (they are Python threads)
MAX_SIM_THREADS = 4096


class BadSubmission(Exception):
    """The FILE cannot be imported or has no kernel of the right name."""


def new_seed() -> int:
    return int(time.time() * 1000) % 2**31


def _with_constants(source: str, path: str, consts: dict):
    """``source`` compiled with each top-level ``NAME = <number>`` of ``consts`` set to the
    checker's value, so that constants computed from it at module level follow."""
    import ast
    tree = ast.parse(source, filename=path)
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id in consts):
            node.value = ast.copy_location(ast.Constant(consts[node.targets[0].id]), node.value)
    return compile(tree, path, "exec")


def load(puzzle, path: str, consts: dict | None = None):
    """The submitted module with the checker's constants; :class:`BadSubmission` when it
    cannot be used at all."""
    if not os.path.isfile(path):
        raise BadSubmission(f"{path}: no such file")
    name = f"gpukit_submission_p{puzzle.num:02d}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BadSubmission(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        code = _with_constants(open(path, encoding="utf-8").read(), path, consts or {})
        exec(code, module.__dict__)
    except SyntaxError as exc:
        raise BadSubmission(f"{path}, line {exc.lineno}: syntax error: {exc.msg}") from None
    except Exception as exc:  # noqa: BLE001 - the reader's code
        raise BadSubmission(f"{path} failed on import: {type(exc).__name__}: {exc}") from None
    kernel = getattr(module, puzzle.kernel, None)
    if kernel is None:
        raise BadSubmission(f"{path} defines no `{puzzle.kernel}`: puzzle {puzzle.num}'s kernel must "
                            f"have that name")
    if not _is_cuda_kernel(kernel):
        raise BadSubmission(f"{path}: `{puzzle.kernel}` is not a @cuda.jit kernel (a host function "
                            "cannot be checked: the puzzle is to write the kernel)")
    return module


def _is_cuda_kernel(obj) -> bool:
    if not _simulator():
        from numba.cuda.dispatcher import CUDADispatcher
        return isinstance(obj, CUDADispatcher)
    from numba.cuda.simulator.kernel import FakeCUDAKernel
    return isinstance(obj, FakeCUDAKernel) and not obj._device


def _simulator() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def _alloc(spec) -> np.ndarray:
    shape, dtype, init = spec
    if init is None:
        init = np.nan if np.dtype(dtype).kind == "f" else -123456789
    return np.full(shape, init, dtype=dtype)


def _params(puzzle, rng, consts, full, before=None) -> dict:
    for _ in range(20):
        p = {k.lower(): v for k, v in consts.items()}
        p.update(puzzle.sizes(rng, consts, full))
        if p != before:
            break
    if puzzle.num == 19:
        p["gpu"] = (2, 32, 32)
    return p


def first_wrong(name: str, got: np.ndarray, want: np.ndarray, rtol: float) -> str | None:
    """None when ``got`` matches ``want``; else where the first wrong element is."""
    want = np.asarray(want)
    if got.shape != want.shape:
        return f"`{name}` has shape {got.shape}, expected {want.shape}"
    if got.dtype.kind in "iu":
        ok = got == want
    else:
        scale = float(np.max(np.abs(want))) if want.size else 1.0
        ok = np.isfinite(got) & (np.abs(got.astype(np.float64) - want) <= rtol * max(scale, 1e-30) + 1e-30)
    if ok.all():
        return None
    k = int(np.flatnonzero(~ok.reshape(-1))[0])
    idx = np.unravel_index(k, got.shape)
    where = f"{name}[{', '.join(str(int(i)) for i in idx)}]"
    g = got[idx]
    unwritten = (np.isnan(g) if got.dtype.kind == "f" else g == -123456789)
    shown = "never written (still the poison value)" if unwritten else f"{g.item():.7g}"
    return f"first wrong element: {where} = {shown}, expected {float(want[idx]):.7g}"


def _trial(puzzle, module, consts, p) -> dict:
    from . import sim
    inputs = puzzle.make(np.random.default_rng(p.pop("_seed")), p)
    outs = {k: _alloc(v) for k, v in puzzle.outs(p).items()}
    copies = {k: v.copy() for k, v in inputs.items() if isinstance(v, np.ndarray)}
    want = puzzle.ref(inputs, p)
    try:
        grid, block = puzzle.launch(p, consts, module)
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "message": f"the launch failed: {type(exc).__name__}: {exc}"}
    threads = math.prod(grid if isinstance(grid, tuple) else (grid,)) * \
        math.prod(block if isinstance(block, tuple) else (block,))
    p["threads_total"] = threads
    if threads > MAX_SIM_THREADS:
        return {"ok": False, "message": f"{threads} threads is too many for the simulator (at most {MAX_SIM_THREADS})"}
    stats = sim.Stats()
    args = []
    for name in puzzle.args:
        value = outs.get(name, inputs.get(name))
        if isinstance(value, np.ndarray):
            value = sim.Counted(value, name, stats, track=name in puzzle.coalesced)
        args.append(value)
    t0 = time.perf_counter()
    try:
        sim.launch(getattr(module, puzzle.kernel), grid, block, args, stats)
    except Exception as exc:  # noqa: BLE001 - what the reader's kernel raised
        return {"ok": False, "message": _kernel_error(exc)}
    seconds = time.perf_counter() - t0
    for name, before in copies.items():
        if not np.array_equal(before, inputs[name], equal_nan=True):
            return {"ok": False, "message": f"the kernel changed its input `{name}`"}
    score = stats.max()
    result = {"ok": True, "score": score, "minimum": puzzle.minimum(p, consts), "seconds": seconds,
              "sizes": {k: v for k, v in p.items() if k not in ("gpu",)}}
    for name, expected in want.items():
        wrong = first_wrong(name, outs[name], expected, puzzle.rtol)
        if wrong:
            return {**result, "ok": False, "message": wrong}
    message = _rules(puzzle, consts, p, stats, score)
    if message:
        return {**result, "ok": False, "message": message}
    return result


def _kernel_error(exc: Exception) -> str:
    import threading
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, threading.BrokenBarrierError):
        text += (": a shuffle waited for lanes of its warp that never came (did some threads "
                 "return before cuda.shfl_down_sync?)")
    from .sim import KernelFault
    kind = "" if isinstance(exc, KernelFault) else f"{type(exc).__name__}: "
    return f"the kernel failed: {kind}{text}"


def _rules(puzzle, consts, p, stats, score) -> str | None:
    for key, cap in puzzle.caps(p, consts).items():
        if score[key] > cap:
            return f"a thread made {score[key]} {SCORES[key]}; the rules allow at most {cap}"
    if puzzle.shared == "required" and score["sh"] == 0:
        return "the rules say: use shared memory (no thread touched any)"
    if puzzle.shared == "forbidden" and score["sh"] > 0:
        return "the rules say: no shared memory"
    for name in puzzle.coalesced:
        worst = stats.worst_stride(name)
        if worst:
            return (f"`{name}` is not coalesced: at line {worst[1]}, threads with neighbouring "
                    f"threadIdx.x touch elements {worst[0]} apart (they should be 1 apart)")
    if puzzle.banks:
        banks = consts[puzzle.banks]
        for name in sorted({k[0] for k in stats.patterns if k[0].startswith("shared@")}):
            worst = stats.bank_conflict(name, banks)
            if worst:
                return (f"{worst[0]}-way bank conflict in the shared array of line "
                        f"{name.split('@')[1]} (at line {worst[1]}, modelling {banks} banks)")
    return None


def check_sim(num: int, path: str, seed: int) -> dict:
    """Check ``path`` for puzzle ``num`` on the simulator (run it in a fresh process with
    ``NUMBA_ENABLE_CUDASIM=1``). Returns a dict: ``ok``, ``message``, ``trials``, ``seed``..."""
    from .puzzles import find
    puzzle = find(num)
    t0 = time.perf_counter()
    consts = {k: v[0] for k, v in puzzle.consts.items()}
    try:
        module = load(puzzle, path, consts)
    except BadSubmission as exc:
        return {BAD: str(exc)}
    for k, v in consts.items():
        setattr(module, k, v)
    out = {"puzzle": puzzle.num, "seed": seed, "file": path, "trials": []}
    if puzzle.extra_rule:
        message = puzzle.extra_rule(module, consts)
        if message:
            return {**out, "ok": False, "message": message, "seconds": time.perf_counter() - t0}
    rng = np.random.default_rng(seed)
    before = None
    for trial in range(2):
        p = _params(puzzle, rng, consts, False, before)
        before = dict(p)
        p["_seed"] = int(rng.integers(2**31))
        try:
            result = _trial(puzzle, module, consts, p)
        except Exception:  # noqa: BLE001 - a bug of the checker, not the reader's: say where
            result = {"ok": False, "message": "checker error: " + traceback.format_exc(limit=3).splitlines()[-1]}
        out["trials"].append(result)
        if not result["ok"]:
            return {**out, "ok": False, "message": f"trial {trial + 1}: {result['message']}",
                    "seconds": time.perf_counter() - t0}
    at_min = all(all(t["score"][k] <= t["minimum"][k] for k in SCORES) for t in out["trials"])
    return {**out, "ok": True, "message": "passed", "at_minimum": at_min,
            "score": out["trials"][0]["score"], "minimum": out["trials"][0]["minimum"],
            "seconds": time.perf_counter() - t0}


def check_many(items: list) -> list:
    """:func:`check_sim` for each ``[num, path, seed]``, in this one process."""
    return [check_sim(*item) for item in items]


def run_check(num: int, path: str, seed: int, timeout: float = 60) -> dict:
    """:func:`check_sim` in a fresh process on the simulator, even where a GPU exists."""
    from .. import proc
    result = proc.run_fresh("gpukit.exercises.grader:check_sim", num, os.path.abspath(path), seed,
                            env=proc.NO_GPU, timeout=timeout)
    if set(result) == {"error", "process_s"}:
        return {"ok": False, "puzzle": num, "seed": seed, "trials": [],
                "message": f"the check did not finish: {result['error']}"}
    return result


if __name__ == "__main__":  # python -m gpukit.exercises.grader N FILE SEED
    print(check_sim(int(sys.argv[1]), sys.argv[2], int(sys.argv[3])))
