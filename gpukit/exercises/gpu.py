"""A puzzle at full size on a real GPU: verify it, time it, and put it against its roof.

Runs in a process without the simulator. The first call (which compiles) is timed apart;
outputs start as NaN (or 0 where the puzzle adds with atomics) and are checked after that first
call, against NumPy in float64; then :func:`gpukit.bench.bench` times the steady state with CUDA
events. The roof is the device copy bandwidth measured in the same process
(:func:`gpukit.bench.copy_ceiling`) for memory-bound puzzles and the FP32 peak of the machine
record (:func:`gpukit.device.fp32_peak`) for the compute-bound one. Puzzles 1 to 5 run one block
by their rules: timed, with no roof.
"""

from __future__ import annotations

import time

import numpy as np

from .. import bench, device


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


def run_full(num: int, path: str, seed: int, repeat: int, roof: dict) -> dict:
    from numba import cuda

    from .grader import BadSubmission, first_wrong, load
    from .puzzles import find
    puzzle = find(num)
    consts = {k: v[1] for k, v in puzzle.consts.items()}
    try:
        module = load(puzzle, path, consts)
    except BadSubmission as exc:
        return {"ok": False, "message": str(exc)}
    rng = np.random.default_rng(seed)
    p = {k.lower(): v for k, v in consts.items()}
    p.update(puzzle.sizes(rng, consts, True))
    if puzzle.num == 19:
        props = device.gpu_properties() or {}
        p["gpu"] = (device.sm_count(), props.get("max_threads_per_multiprocessor", 2048),
                    props.get("max_threads_per_block", 1024))
    inputs = puzzle.make(rng, p)
    outs = {}
    for name, (shape, dtype, init) in puzzle.outs(p).items():
        fill = (np.nan if np.dtype(dtype).kind == "f" else -123456789) if init is None else init
        outs[name] = cuda.to_device(np.full(shape, fill, dtype=dtype))
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
    want = puzzle.ref(inputs, p)
    for name, expected in want.items():
        wrong = first_wrong(name, outs[name].copy_to_host(), expected, puzzle.full_rtol or puzzle.rtol)
        if wrong:
            return {"ok": False, "message": f"full size: {wrong}", "sizes": _sizes(p)}
    t = bench.bench(once, timer="numba", name=puzzle.slug, warmup=3, repeat=repeat)
    row = {"ok": True, "sizes": _sizes(p), "grid": grid, "block": block, "roof": puzzle.roof,
           **t.to_dict(), "first_call_s": first}
    work = puzzle.work(p)
    if puzzle.roof == "copy":
        row["gbs"] = work / t.median_s / 1e9
        if roof.get("copy_gbs"):
            row["roof_value"] = roof["copy_gbs"]
            row["percent_of_roof"] = 100 * row["gbs"] / roof["copy_gbs"]
    elif puzzle.roof == "fp32":
        row["tflops"] = work / t.median_s / 1e12
        if roof.get("fp32_tflops"):
            row["roof_value"] = roof["fp32_tflops"]
            row["percent_of_roof"] = 100 * row["tflops"] / roof["fp32_tflops"]
    return row


def _sizes(p: dict) -> dict:
    return {k: v for k, v in p.items() if k != "gpu" and not k.startswith("_")}


def run_full_size(items: list, repeat: int = 20) -> dict:
    """Every ``[num, path, seed]`` at full size on this machine's GPU: ``{"roofs", "rows"}``."""
    return run_many(items, repeat)


def run_many(items: list, repeat: int) -> dict:
    """Every ``[num, path, seed]`` at full size in this one process, after measuring the roofs."""
    roof = roofs()
    rows = []
    for num, path, seed in items:
        t0 = time.perf_counter()
        try:
            row = run_full(num, path, seed, repeat, roof)
        except Exception as exc:  # noqa: BLE001 - one puzzle's failure must not hide the others
            row = {"ok": False, "message": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
        row.update(puzzle=num, process_s=time.perf_counter() - t0)
        rows.append(row)
        print(f"  puzzle {num:2d}: " + (f"median {row['median_s'] * 1e3:.3f} ms, "
              f"{row.get('percent_of_roof', float('nan')):.1f} % of roof" if row["ok"] else row["message"]),
              flush=True)
    return {"roofs": roof, "rows": rows}
