"""The ladder's benchmark: every level on this machine, each in a fresh process.

:func:`run` (``gpukit bench ladder``) runs each level of :data:`.levels.LEVELS` in a fresh
Python process whose kernel caches all start empty, so its first call includes what a
reader's first call includes (import, GPU context, compiling). Each level is verified against
the float64 reference and timed at a main shape and a sweep of row lengths, then compared
with the copy bandwidth ceiling measured in the same run.
"""

from __future__ import annotations

import os
import tempfile
import time

from gpukit import proc

from .levels import LEVELS, RTOL, Skip, level_loc, measure_level, real_gpu
from .meta import NAME

#: Row lengths of the sweep; every shape has the same number of elements as the main one.
SWEEP_COLS = (1024, 4096, 16384)
CHILD_TIMEOUT_S = 400


def one_level(level: str, shapes: list, repeat: int) -> dict:
    """:func:`.levels.measure_level`, or ``{"level", "skipped"}`` with the reason when the
    level cannot run here: what the fresh process of :func:`run` returns."""
    try:
        return measure_level(level, [tuple(s) for s in shapes], repeat)
    except Skip as exc:
        return {"level": level, "skipped": str(exc)}


def _fresh(spec: dict, cache_dir: str) -> dict:
    """One level in a fresh Python process whose kernel caches all start empty."""
    env = {**proc.cache_env(cache_dir), "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    res = proc.run_fresh("gpukit.ladder.measure:one_level", spec["level"], spec["shapes"],
                         spec["repeat"], env=env, timeout=CHILD_TIMEOUT_S)
    return {"level": spec["level"], **res} if "error" in res else res


def _in_process(spec: dict) -> dict:
    try:
        return one_level(spec["level"], spec["shapes"], spec["repeat"])
    except Exception as exc:  # noqa: BLE001 - a failing level is recorded, the rest go on
        return {"level": spec["level"], "error": f"{type(exc).__name__}: {str(exc)[:400]}"}


def run(n: int | None = None, repeat: int = 30, *, fresh_process: bool = True,
        levels=None, sweep: bool = True) -> dict:
    """Every level on this machine; ``n`` is the number of matrix elements (default 2**27 on a GPU).

    Without a GPU: torch levels on all CPU cores, the numba kernel on the CUDA simulator and
    Triton in its interpreter (tiny shapes, correctness only), CuPy and CUDA C skipped.
    """
    from gpukit import bench
    t_start = time.perf_counter()
    gpu = real_gpu()
    main_cols = 4096
    elements = n or (2**27 if gpu else 2**24)
    main = (max(1, elements // main_cols), main_cols)
    shapes = [main] + ([(max(1, elements // c), c) for c in SWEEP_COLS if c != main_cols]
                       if sweep else [])
    tiny = [(6, 300), (3, 1000)]
    repeat = max(2, repeat)
    rows, failed, skipped, sweep_rows = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i, level in enumerate(levels or LEVELS):
            simulated = not gpu and level in ("numba-cuda", "triton")
            spec = {"level": level, "shapes": tiny if simulated else shapes,
                    "repeat": 2 if simulated else (repeat if gpu else max(2, repeat // 6))}
            t0 = time.perf_counter()
            res = (_fresh(spec, os.path.join(tmp, f"cache{i}")) if fresh_process
                   else _in_process(spec))
            label, library, _, passes = LEVELS[level]
            base = {"level": level, "label": label, "library": library, "loc": level_loc(level),
                    "passes": passes}
            if "skipped" in res:
                skipped.append({**base, "reason": res["skipped"]})
                print(f"  {level:<14} skipped: {res['skipped']}", flush=True)
                continue
            if "error" in res:
                failed.append({**base, "error": res["error"]})
                print(f"  {level:<14} FAILED: {res['error']}", flush=True)
                continue
            for k, s in enumerate(res["shapes"]):
                row = {**base, **s, "name": label, "import_s": res["import_s"],
                       "context_s": res["context_s"], "simulated": simulated,
                       "process_s": res.get("process_s")}
                if k == 0:
                    rows.append(row)
                if len(res["shapes"]) > 1:
                    sweep_rows.append({**row, "name": f"{label} [{s['rows']}x{s['cols']}]"})
            r = rows[-1]
            rate = "" if simulated else f", {r['gbs']:8.1f} GB/s"
            print(f"  {level:<14} first call {r['first_call_s']:8.3f} s, median "
                  f"{r['median_s'] * 1e3:9.3f} ms{rate} ({time.perf_counter() - t0:.1f} s)", flush=True)

    # The ceiling, measured after the levels so it competes with nothing.
    ceiling = bench.copy_ceiling("torch" if gpu else "cpu", nbytes=main[0] * main[1] * 4)
    roofs = {"pct_of_copy": bench.Roof("gbs", ceiling.gbs)}
    for r in rows + sweep_rows:
        if not r["simulated"]:
            r.update(bench.shares(r, roofs))
    total = time.perf_counter() - t_start
    print(f"  {ceiling.name} ceiling {ceiling.gbs:,.1f} GB/s; ladder total {total:.1f} s", flush=True)
    part = {"n": main[0] * main[1], "shape": list(main), "dtype": "float32",
            "ideal_bytes": (2 * main[0] * main[1] + main[1]) * 4, "rows": rows,
            "sweep": sweep_rows, "failed": failed, "skipped": skipped,
            "ceiling": bench.row(ceiling), "ceiling_gbs": ceiling.gbs,
            "fresh_process": fresh_process, "total_s": total, "rtol": RTOL}
    return {"gpu" if gpu else "cpu": part}
