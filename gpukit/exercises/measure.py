"""What ``gpukit bench exercises --save`` records.

* ``sim``: every reference solution checked on numba's CUDA simulator (a fresh process, as
  ``gpukit exercises check`` runs it): pass or fail, its score and the puzzle's minimum, and how
  long the check took. Recorded on any machine.
* ``gpu`` (only with a GPU): every reference solution at full size, verified, its first call
  apart, timed with CUDA events, and its rate as a percentage of its roof measured in the same
  run (device copy bandwidth, or the FP32 peak of the machine record for the matmul).
"""

from __future__ import annotations

import time

#: the seed of the recorded runs (a reader's check draws a new one each time)
SEED = 2026


def _items():
    from .puzzles import PUZZLES, solution
    return [[p.num, str(solution(p)), SEED] for p in PUZZLES]


def run(n: int | None, repeat: int) -> dict:
    from .. import device, proc
    from .puzzles import PUZZLES
    t0 = time.perf_counter()
    checks = proc.run_fresh("gpukit.exercises.grader:check_many", _items(), env=proc.NO_GPU, timeout=600)
    wall = time.perf_counter() - t0
    if isinstance(checks, dict):
        raise RuntimeError(f"the simulator checks did not finish: {checks.get('error')}")
    rows = []
    for p, c in zip(PUZZLES, checks):
        rows.append({"puzzle": p.num, "slug": p.slug, "title": p.title, "ok": c.get("ok"),
                     "name": f"{p.num}. {p.title} (simulator check)", "median_s": c.get("seconds") or 0.0,
                     "message": c.get("message"), "seconds": c.get("seconds"),
                     "score": c.get("score"), "minimum": c.get("minimum"), "roof": p.roof,
                     "sizes": [t.get("sizes") for t in c.get("trials", [])]})
        print(f"  simulator, puzzle {p.num:2d}: {c.get('message')} in {c.get('seconds', 0):.2f} s", flush=True)
    out = {"sim": {"n": len(rows), "seed": SEED, "rows": rows, "process_s": wall}}
    if device.has_gpu() and not device.simulator_enabled():
        repeat = max(5, min(repeat, 50))
        t0 = time.perf_counter()
        full = proc.run_fresh("gpukit.exercises.gpu:run_many", _items(), repeat,
                              env={"NUMBA_ENABLE_CUDASIM": "0"}, timeout=900)
        if "rows" not in full:
            raise RuntimeError(f"the full-size runs did not finish: {full.get('error')}")
        for p, r in zip(PUZZLES, full["rows"]):
            r.update(slug=p.slug, title=p.title, name=f"{p.num}. {p.title}")
            r.setdefault("median_s", 0.0)   # a failed row: `ok` is False and the views say so
        out["gpu"] = {"n": len(full["rows"]), "seed": SEED, "repeat": repeat, **full, "process_s": time.perf_counter() - t0}
    return out
