"""``gpukit results``: every benchmark and every example on this machine, in one command.

Runs ``gpukit doctor --save``, executes every example into ``results/<machine>/notebooks/``
(quick, and a failing example points at a broken set-up before the long benchmarks start),
then each benchmark of :data:`gpukit.benchmarks.BENCHMARKS` (except the multi-GPU one) in its
own process with ``--save``, and prints a summary table: what ran, whether it passed, how long
it took. The site's next build shows the new files, and
``gpukit bench compare`` sets them beside the reference GPU's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

#: benchmarks that ``gpukit results`` runs by default, in this order
DEFAULT = ["vector-add", "mandelbrot", "matmul", "crossover", "gpu-anatomy", "timing-pitfalls",
           "ladder", "cats-vs-dogs"]

#: time budgets (s) given to benchmarks that adapt to one (``GPUKIT_BENCH_BUDGET_S``): within
#: ``gpukit results`` the training benchmark trains one seed and leaves out the recipe variants
#: and torch.compile, to shorten the whole command;
#: ``gpukit bench cats-vs-dogs --save`` alone trains three seeds and the variants
BUDGETS = {"cats-vs-dogs": 70}


def register(sub) -> None:
    p = sub.add_parser("results", help="run every benchmark and example here and record them",
                       description="Run every benchmark and every example on this machine, record "
                                   "them under results/<machine>/, and print a summary.")
    p.add_argument("--only", nargs="+", metavar="NAME",
                   help="only these benchmarks (names as for `gpukit bench`) and examples")
    p.add_argument("--no-examples", action="store_true", help="benchmarks only")
    p.add_argument("--no-benchmarks", action="store_true", help="examples only")
    p.set_defaults(func=_main)


def _step(cmd: list[str], env: dict | None = None) -> tuple[bool, float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    if proc.returncode != 0:
        return False, seconds, (lines or ["no output"])[-1]
    return True, seconds, ""


def _main(args) -> int:
    from . import benchmarks, bench, device, notebook
    from .cli import UserError
    from .report import table
    names = list(DEFAULT)
    examples = None
    if args.only:
        known_examples = {p.stem for p in (notebook.PROJECT / "examples").glob("*.py")}
        unknown = [n for n in args.only if n not in benchmarks.BENCHMARKS and n not in known_examples]
        if unknown:
            raise UserError(f"unknown benchmark or example: {', '.join(unknown)}")
        names = [n for n in args.only if n in benchmarks.BENCHMARKS]
        examples = [n for n in args.only if n in known_examples]
    t_all = time.perf_counter()
    where = device.gpu_slug()
    print(f"gpukit results on {where}: writing {bench.results_dir() / where}/", flush=True)
    rows = []
    if not args.only and not args.no_benchmarks:
        ok, s, err = _step([sys.executable, "-m", "gpukit", "doctor", "--save"])
        rows.append(["doctor", "ok" if ok else "GPU not usable", s, err])
    if not args.no_examples and (examples is None or examples):
        print("== examples (executed outputs)", flush=True)
        for r in notebook.run_all(examples, log=lambda m: print(m, flush=True)):
            rows.append([f"example {r['name']}", "ok" if r["ok"] else "FAILED", r["seconds"], r.get("error", "")])
    if not args.no_benchmarks:
        for name in names:
            print(f"== benchmark {name}", flush=True)
            env = None
            if name in BUDGETS and "GPUKIT_BENCH_BUDGET_S" not in os.environ:
                env = {**os.environ, "GPUKIT_BENCH_BUDGET_S": str(BUDGETS[name])}
            ok, s, err = _step([sys.executable, "-m", "gpukit", "bench", name, "--save"], env)
            rows.append([f"bench {name}", "ok" if ok else "FAILED", s, err])
            print(f"   {'ok' if ok else 'FAILED: ' + err} ({s:.0f} s)", flush=True)
    total = time.perf_counter() - t_all
    body = [[name, status, f"{s:.1f} s", err[:80]] for name, status, s, err in rows]
    body.append(["**total**", "", f"{total:.1f} s", ""])
    print()
    print(table(["step", "result", "time", "error"], body, align="llrl"))
    if not args.only:  # a complete run: record how long the whole command took
        bench.save("results_run", {"run": {
            "n": len(rows), "total_s": total,
            "rows": [{"name": name, "median_s": s, "result": status, "error": err}
                     for name, status, s, err in rows]}})
    failed = [r for r in rows if r[1] == "FAILED"]
    return 1 if failed else 0
