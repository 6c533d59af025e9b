"""The process a submission runs in: it gets inputs, returns outputs and counts, nothing else.

``python -m gpukit.exercises.child MODE FD`` reads its job as JSON lines on stdin and writes
one JSON line per job to the file descriptor ``FD``, a pipe that only the checker's process
holds the other end of. Its own output, its exit status and anything the submission prints are
ignored. It never sees the seed or the expected outputs: the checker makes the inputs, keeps
the answers and decides.

Modes: ``sim`` runs trials on numba's simulator with every access counted; ``ptx`` compiles
the kernel for a GPU target (no GPU needed); ``gpu`` runs the kernel at full size on the GPU
and writes its outputs to files the checker reads.
"""

from __future__ import annotations

import ast
import base64
import json
import os
import sys
import time
import types

import numpy as np

from .policy import without_main


class BadSubmission(Exception):
    """The file cannot be imported or has no kernel of the right name."""


# ---------------------------------------------------------------- arrays on the channel

def encode(value):
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        return {"dtype": data.dtype.str, "shape": list(data.shape),
                "b64": base64.b64encode(data.tobytes()).decode("ascii")}
    if isinstance(value, np.generic):
        return {"dtype": value.dtype.str, "scalar": value.item()}
    return value


def decode(value, dtype=None, shape=None):
    """An array (or scalar) from :func:`encode`; ValueError when it is not the expected one."""
    if not isinstance(value, dict):
        return value
    dt = np.dtype(value["dtype"])
    if dtype is not None and dt != np.dtype(dtype):
        raise ValueError(f"dtype {dt}, expected {np.dtype(dtype)}")
    if "scalar" in value:
        return dt.type(value["scalar"])
    arr = np.frombuffer(base64.b64decode(value["b64"]), dtype=dt).copy()
    arr = arr.reshape([int(k) for k in value["shape"]])
    if shape is not None and tuple(arr.shape) != tuple(shape):
        raise ValueError(f"shape {arr.shape}, expected {tuple(shape)}")
    return arr


def fill(spec) -> np.ndarray:
    shape, dtype, init = spec
    if init is None:
        init = np.nan if np.dtype(dtype).kind == "f" else -123456789
    return np.full(tuple(shape), init, dtype=np.dtype(dtype))


# ---------------------------------------------------------------- the submission

def _with_constants(source: str, path: str, consts: dict):
    """``source`` compiled with each top-level ``NAME = <number>`` of ``consts`` set to the
    checker's value (so constants computed from it follow), without its main block."""
    tree = without_main(ast.parse(source, filename=path))
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id in consts):
            node.value = ast.copy_location(ast.Constant(consts[node.targets[0].id]), node.value)
    return compile(tree, path, "exec")


def load(puzzle, path: str, consts: dict | None = None, source: str | None = None):
    """The submitted module with the checker's constants; :class:`BadSubmission` when it
    cannot be used at all. ``source``: the text the checker read (and judged) from ``path``;
    the file is read only when it is not given."""
    consts = consts or {}
    name = f"gpukit_submission_p{puzzle.num:02d}"
    module = types.ModuleType(name)
    module.__file__ = path
    try:
        if source is None:
            with open(path, encoding="utf-8") as fh:
                source = fh.read()
        code = _with_constants(source, path, consts)
        exec(code, module.__dict__)
    except SyntaxError as exc:
        raise BadSubmission(f"{path}, line {exc.lineno}: syntax error: {exc.msg}") from None
    except SystemExit as exc:
        raise BadSubmission(f"{path} called exit ({exc.code!r}) while being imported: a "
                            "submission only defines its kernel") from None
    except BaseException as exc:  # noqa: BLE001 - the reader's code
        raise BadSubmission(f"{path} failed on import: {type(exc).__name__}: {exc}") from None
    for k, v in consts.items():
        setattr(module, k, v)
    kernel = getattr(module, puzzle.kernel, None)
    if kernel is None:
        raise BadSubmission(f"{path} defines no `{puzzle.kernel}`: puzzle {puzzle.num}'s "
                            "kernel must have that name")
    if not _is_cuda_kernel(kernel):
        raise BadSubmission(f"{path}: `{puzzle.kernel}` is not a @cuda.jit kernel (a host "
                            "function cannot be checked: the puzzle is to write the kernel)")
    return module


def _is_cuda_kernel(obj) -> bool:
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") in ("", "0"):
        from numba.cuda.dispatcher import CUDADispatcher
        return isinstance(obj, CUDADispatcher)
    from numba.cuda.simulator.kernel import FakeCUDAKernel
    return isinstance(obj, FakeCUDAKernel) and not obj._device


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:400] if text else type(exc).__name__


# ---------------------------------------------------------------- simulator trials

def _kernel_error(exc: BaseException) -> str:
    from .sim import KernelFault
    kind = "" if isinstance(exc, KernelFault) else f"{type(exc).__name__}: "
    text = _first_line(exc)
    if text.startswith("tid=") and ": " in text:      # the simulator's thread prefix
        text = text.split(": ", 1)[1]
    return f"the kernel failed: {kind}{text}"


def sim_trial(puzzle, path: str, job: dict, source: str | None = None) -> dict:
    from . import sim
    consts = job["consts"]
    module = load(puzzle, path, consts, source)
    inputs = {k: decode(v) for k, v in job["inputs"].items()}
    outs = {k: fill(v) for k, v in job["outs"].items()}
    copies = {k: v.copy() for k, v in inputs.items() if isinstance(v, np.ndarray)}
    grid, block = job.get("grid"), job.get("block")
    out = {}
    if grid is None:
        try:
            grid, block = (int(v) for v in module.launch(job["p"]["n"], *job["p"]["gpu"]))
        except Exception as exc:  # noqa: BLE001 - the reader's launch
            return {"error": f"your launch() failed: {type(exc).__name__}: {_first_line(exc)}"}
        out["grid"], out["block"] = grid, block
        if grid * block > job["max_threads"] or grid < 1 or block < 1:
            return {**out, "error": f"launch() gave {grid} blocks of {block} threads, which the "
                                    "simulator cannot run"}
    grid = tuple(grid) if isinstance(grid, list) else grid
    block = tuple(block) if isinstance(block, list) else block
    stats = sim.Stats()
    track = set(job.get("track", ()))
    args = []
    for name in puzzle.args:
        value = outs.get(name, inputs.get(name))
        if isinstance(value, np.ndarray):
            value = sim.Counted(value, name, stats, track=name in track)
        args.append(value)
    t0 = time.perf_counter()
    try:
        sim.launch(getattr(module, puzzle.kernel), grid, block, args, stats)
    except BaseException as exc:  # noqa: BLE001 - what the reader's kernel raised
        return {**out, "error": _kernel_error(exc)}
    out["seconds"] = time.perf_counter() - t0
    out["changed"] = [k for k, v in copies.items()
                      if not np.array_equal(v, inputs[k], equal_nan=True)]
    out["score"] = stats.max()
    out["strides"] = {name: stats.worst_stride(name) for name in sorted(track)}
    banks = job.get("banks")
    out["banks"] = []
    if banks:
        for name in sorted({g[0] for g in stats.patterns if g[0].startswith("shared@")}):
            worst = stats.bank_conflict(name, banks)
            if worst:
                out["banks"].append([name, *worst])
    out["outputs"] = {k: encode(v) for k, v in outs.items()}
    return out


def run_sim(job: dict) -> dict:
    from .puzzles import find
    from .sim import SOURCE, install
    puzzle = find(job["num"])
    path = job["path"]
    SOURCE["path"] = path
    SOURCE["track_shared"] = bool(puzzle.banks)
    install()
    out = {"trials": []}
    try:
        module = load(puzzle, path, job["trials"][0]["consts"], job.get("source"))
    except BadSubmission as exc:
        return {"import_error": str(exc)}
    if job.get("probe"):
        out["probe"] = probe(module, job["probe"])
    for trial in job["trials"]:
        try:
            result = sim_trial(puzzle, path, trial, job.get("source"))
        except BadSubmission as exc:
            return {"import_error": str(exc)}
        out["trials"].append(result)
        if result.get("error"):
            break
    return out


def probe(module, calls: list) -> list:
    """``module.launch(*args)`` for each of ``calls``: ``[blocks, threads]`` or an error."""
    fn = getattr(module, "launch", None)
    if not callable(fn):
        return ["no function launch(n, sms, max_threads_per_sm, max_threads_per_block)"]
    answers = []
    for args in calls:
        try:
            answers.append([int(v) for v in fn(*args)][:2])
        except Exception as exc:  # noqa: BLE001 - the reader's code
            answers.append(f"failed: {type(exc).__name__}: {_first_line(exc)}")
    return answers


# ---------------------------------------------------------------- the entry point

def _serve(mode: str, fd: int) -> None:
    from . import compile as ptx
    channel = os.fdopen(fd, "w", encoding="utf-8")
    state = {}
    for line in sys.stdin:
        job = json.loads(line)
        try:
            if mode == "sim":
                result = run_sim(job)
            elif mode == "ptx":
                result = ptx.compile_job(job)
            else:
                from . import gpu
                result = gpu.run_job(job, state)
        except BaseException as exc:  # noqa: BLE001 - reported, not raised: the checker decides
            result = {"error": f"{type(exc).__name__}: {_first_line(exc)}"}
        channel.write(json.dumps(result) + "\n")
        channel.flush()
    channel.close()


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]))
