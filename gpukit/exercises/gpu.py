"""A puzzle at full size on a real GPU: verify it, time it, and put it against its roof.

The checker's process plans the run (sizes, a seed for the inputs) and keeps the answer; a
child process (:mod:`gpukit.exercises.child`, mode ``gpu``) makes the inputs from that seed,
runs the kernel, writes its outputs to files the checker reads back, and times it. The first
call (which compiles) is timed apart; outputs start as NaN (or 0 where the puzzle adds with
atomics) and are compared after that first call, against NumPy in float64; then
:func:`gpukit.bench.bench` times the steady state with CUDA events. The roof is the device copy
bandwidth measured in the same child (:func:`gpukit.bench.copy_ceiling`) for memory-bound
puzzles and the FP32 peak of the machine record (:func:`gpukit.device.fp32_peak`) for the
compute-bound one. Puzzles 1 to 5 run one block by their rules: timed, with no roof.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from .. import bench, device

#: a puzzle's roof: the row's rate, the key of its ceiling in :func:`roofs`, the rate's unit
RATES = {"copy": ("gbs", "copy_gbs", 1e9), "fp32": ("tflops", "fp32_tflops", 1e12)}


def roofs() -> dict:
    """The copy bandwidth (GB/s, measured now) and the FP32 peak (TFLOP/s, from the record)."""
    out = {}
    for timer in ("cupy", "torch"):
        try:
            t = bench.copy_ceiling(timer=timer)
            out["copy_gbs"], out["copy_timer"] = t.gbs, timer
            break
        except Exception:  # noqa: BLE001 - that library is missing: try the next
            continue
    peak = device.fp32_peak(device.gpu_properties() or {})
    out["fp32_tflops"] = peak["tflops"] if peak else None
    return out


# ---------------------------------------------------------------- in the child

def run_job(job: dict, state: dict) -> dict:
    """One full-size run in the child: outputs to ``job["outdir"]``, timings back."""
    if "roof" not in state:
        state["roof"] = roofs()
    roof = state["roof"]
    if job.get("roofs"):
        return roof
    from numba import cuda

    from .child import fill, load
    from .puzzles import find
    puzzle = find(job["num"])
    consts = job["consts"]
    module = load(puzzle, job["path"], consts, job.get("source"))
    p = dict(job["p"])
    if puzzle.gpu is not None:
        props = device.gpu_properties() or {}
        p["gpu"] = (device.sm_count(), props.get("max_threads_per_multiprocessor", 2048),
                    props.get("max_threads_per_block", 1024))
    inputs = puzzle.make(np.random.default_rng(job["input_seed"]), p)
    outs = {k: cuda.to_device(fill(v)) for k, v in puzzle.outs(p).items()}
    dev = {k: cuda.to_device(v) if isinstance(v, np.ndarray) else v for k, v in inputs.items()}
    grid, block = puzzle.launch(p, consts, module)
    kernel = getattr(module, puzzle.kernel)
    args = [outs.get(n, dev.get(n)) for n in puzzle.args]

    def once():
        kernel[grid, block](*args)

    cuda.synchronize()
    t0 = time.perf_counter()
    once()
    cuda.synchronize()
    first = time.perf_counter() - t0
    for name, arr in outs.items():
        np.save(os.path.join(job["outdir"], f"{name}.npy"), arr.copy_to_host(),
                allow_pickle=False)
    t = bench.bench(once, timer="numba", name=puzzle.slug, warmup=3, repeat=job["repeat"])
    return bench.row(t, roof=roof, grid=grid, block=block, gpu=p.get("gpu"), first_call_s=first)


# ---------------------------------------------------------------- in the checker

def plan_full(puzzle, seed: int) -> tuple[dict, dict, int]:
    rng = np.random.default_rng(seed)
    consts = {k: v[1] for k, v in puzzle.consts.items()}
    p = {k.lower(): v for k, v in consts.items()}
    p.update(puzzle.sizes(rng, consts, True))
    return consts, p, int(rng.integers(2**31))


def full_size(child, puzzle, path: str, seed: int, repeat: int, source: str | None = None) -> dict:
    """One puzzle at full size through ``child``; the comparison is made here. ``source``:
    the text the checker judged (the file is read again when it is not given)."""
    from .grader import first_wrong, tolerance
    consts, p, input_seed = plan_full(puzzle, seed)
    with tempfile.TemporaryDirectory(prefix="gpukit-full-") as outdir:
        os.chmod(outdir, 0o700)
        answer = child.ask({"num": puzzle.num, "path": os.path.abspath(path), "consts": consts,
                            "p": p, "input_seed": input_seed, "outdir": outdir,
                            "repeat": repeat, "source": source}, timeout=600)
        if "lost" in answer or "error" in answer:
            return {"ok": False, "message": answer.get("lost") or answer["error"],
                    "sizes": _sizes(p)}
        inputs = puzzle.make(np.random.default_rng(input_seed), p)
        want = puzzle.ref(inputs, p)
        tol = tolerance(puzzle, inputs, p, want)
        specs = puzzle.outs(p)
        for name, expected in want.items():
            try:
                got = np.load(os.path.join(outdir, f"{name}.npy"), allow_pickle=False)
            except (OSError, ValueError) as exc:
                return {"ok": False, "message": f"full size: no output `{name}` ({exc})",
                        "sizes": _sizes(p)}
            if got.dtype != np.dtype(specs[name][1]) or got.shape != tuple(specs[name][0]):
                return {"ok": False, "message": f"full size: `{name}` came back as "
                                                f"{got.dtype} {got.shape}", "sizes": _sizes(p)}
            wrong = first_wrong(name, got, expected, tol[name])
            if wrong:
                return {"ok": False, "message": f"full size: {wrong}", "sizes": _sizes(p)}
            del got
    roof = answer.get("roof") or {}
    row = {"ok": True, "sizes": _sizes(p), "grid": answer.get("grid"),
           "block": answer.get("block"), "roof": puzzle.roof}
    row.update({k: v for k, v in answer.items() if k not in ("roof", "grid", "block", "gpu")})
    median = float(row.get("median_s") or 0) or float("nan")
    work = puzzle.work(p)
    if puzzle.roof in RATES:
        rate, ceiling, unit = RATES[puzzle.roof]
        row[rate] = work / median / unit
        if roof.get(ceiling):
            row["roof_value"] = roof[ceiling]
            row.update(bench.shares(row, {"percent_of_roof": bench.Roof(rate, roof[ceiling])}))
    return row


def _sizes(p: dict) -> dict:
    return {k: v for k, v in p.items() if k != "gpu" and not k.startswith("_")}


def run_full_size(items: list, repeat: int = 20) -> dict:
    """Every ``[num, path, seed]`` at full size on this machine's GPU: ``{"roofs", "rows"}``."""
    return run_many(items, repeat)


def run_many(items: list, repeat: int, quiet: bool = False) -> dict:
    """Every ``[num, path, seed]`` at full size, one child process for all of them."""
    from .grader import GPU_ENV, Child, read_submission
    from .puzzles import find
    rows, roof = [], {}
    with tempfile.TemporaryDirectory(prefix="gpukit-gpu-") as work:
        child = Child("gpu", GPU_ENV, work)
        try:
            for num, path, seed in items:
                puzzle = find(num)
                t0 = time.perf_counter()
                try:
                    source, refused = read_submission(puzzle, path)
                except LookupError as exc:
                    source, refused = None, str(exc)
                row = ({"ok": False, "message": refused} if refused
                       else full_size(child, puzzle, path, seed, repeat, source))
                row.update(puzzle=num, process_s=time.perf_counter() - t0)
                rows.append(row)
                if not quiet:
                    print(f"  puzzle {num:2d}: " + (
                        f"median {row['median_s'] * 1e3:.3f} ms, "
                        f"{row.get('percent_of_roof', float('nan')):.1f} % of roof" if row["ok"]
                        else row["message"]), flush=True)
                if child.proc.poll() is not None:
                    child.close()
                    child = Child("gpu", GPU_ENV, work)
            roof = child.ask({"roofs": True}, timeout=120) if rows else {}
        finally:
            child.close()
    return {"roofs": roof if "lost" not in roof else {}, "rows": rows}
