"""Recording numbers: ``gpukit bench NAME`` (one chapter) and ``gpukit results`` (all of them).

``gpukit bench NAME --save`` runs one chapter's benchmark and writes
``results/<machine>/<name>.json``; ``gpukit bench compare A B`` sets two machines' results side
by side. The benchmarks are those of :data:`gpukit.results.CHAPTERS`.

``gpukit results`` runs ``gpukit doctor --save``, executes every example into
``results/<machine>/notebooks/`` (quick, and a failing example points at a broken set-up before
the long benchmarks start), then each benchmark (except the multi-GPU ones) in its own process
with ``--save``, and prints a summary table: what ran, whether it passed, how long it took.

A save never replaces a richer file with a poorer one: a chapter's measure module may define
``coverage(data) -> int`` (for training, the number of seeds), and a run that covers less than
the file already stored is not saved over it (``--force`` does).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from . import results

#: time budgets (s) given to benchmarks that adapt to one (``GPUKIT_BENCH_BUDGET_S``): within
#: ``gpukit results`` the training benchmark trains one seed and leaves out torch.compile, to
#: shorten the whole command (its file of three seeds is kept); ``gpukit bench cats-vs-dogs
#: --save`` alone trains three seeds
BUDGETS = {"cats-vs-dogs": 70}


def register(sub) -> None:
    from .cli import positive_int
    names = sorted(results.benchmarks())
    p = sub.add_parser("bench", help="run a chapter's benchmark and record its results",
                       description="Run a benchmark, print a summary and optionally record it "
                                   "under results/<machine>/; or `gpukit bench compare A B` to "
                                   "set two machines' recorded results side by side.")
    p.add_argument("name", choices=names + ["compare"], help="which benchmark, or compare")
    p.add_argument("machines", nargs="*", metavar="MACHINE",
                   help="with compare: two folders under results/ (or paths to them)")
    p.add_argument("--n", type=positive_int, default=None, help="problem size (elements)")
    p.add_argument("--repeat", type=positive_int, default=30, help="timed repetitions")
    p.add_argument("--save", action="store_true", help="write results/<machine>/<name>.json")
    p.add_argument("--force", action="store_true",
                   help="with --save: replace the stored file even if it covers more (more seeds)")
    p.set_defaults(func=_bench)

    r = sub.add_parser("results", help="run every benchmark and example here and record them",
                       description="Run every benchmark and every example on this machine, record "
                                   "them under results/<machine>/, and print a summary.")
    r.add_argument("--only", nargs="+", metavar="NAME",
                   help="only these benchmarks (names as for `gpukit bench`) and examples")
    r.add_argument("--no-examples", action="store_true", help="benchmarks only")
    r.add_argument("--no-benchmarks", action="store_true", help="examples only")
    r.set_defaults(func=_results)


# ----------------------------------------------------------------- gpukit bench

def save_unless_poorer(file_name: str, target: str, data: dict, *, force: bool = False,
                       root=None) -> tuple[bool, str]:
    """Save ``data`` as ``file_name`` unless the stored file covers more; (saved, message)."""
    import importlib

    from . import device
    coverage = getattr(importlib.import_module(target.split(":")[0]), "coverage", None)
    if coverage is not None and not force:
        stored = results.load(file_name, root=root).get(device.gpu_slug())
        if stored is not None and coverage(stored) > coverage(data):
            return False, (f"kept the stored {file_name}.json (it covers {coverage(stored)}, this run "
                           f"{coverage(data)}); --force replaces it")
    path = results.save(file_name, data, root=root)
    return True, f"saved {path}"


def _bench(args) -> int:
    from .cli import UserError
    machines = getattr(args, "machines", None) or []
    if args.name == "compare":
        from .compare import compare
        if len(machines) != 2:
            raise UserError("compare needs two results folders, e.g. nvidia-h200 nvidia-geforce-rtx-4090")
        print(compare(*machines))
        return 0
    if machines:
        raise UserError(f"unexpected arguments {' '.join(machines)!r} (only compare takes folders)")
    file_name, target = results.benchmarks()[args.name]
    data = results.resolve(target)(args.n, args.repeat)
    for part, block in data.items():
        if part == results.FILES:
            continue
        print(f"== {args.name} ({part}), n = {block['n']:,}")
        for r in block["rows"] + block.get("copies", []):
            rate = (f"{r['gbs']:9.1f} GB/s" if r.get("gbs") else
                    f"{r['tflops']:9.2f} TFLOP/s" if r.get("tflops") else "")
            print(f"  {r['name']:<38} {r['median_s'] * 1e3:10.4f} ms  {rate}")
    if args.save:
        _, message = save_unless_poorer(file_name, target, data, force=args.force)
        print(message)
    return 0


# ----------------------------------------------------------------- gpukit results

def _step(cmd: list[str], env: dict | None = None) -> tuple[bool, float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    if proc.returncode != 0:
        return False, seconds, (lines or ["no output"])[-1]
    kept = [ln for ln in lines if ln.startswith("kept the stored")]
    return True, seconds, kept[-1] if kept else ""


def _results(args) -> int:
    from . import device, notebook
    from .cli import UserError
    from .pages import table
    known = results.benchmarks()
    names = [n for n in known if n not in results.multi_gpu_benchmarks()]
    examples = None
    if args.only:
        known_examples = {p.stem for p in (results.PROJECT / "examples").glob("*.py")}
        unknown = [n for n in args.only if n not in known and n not in known_examples]
        if unknown:
            raise UserError(f"unknown benchmark or example: {', '.join(unknown)}")
        names = [n for n in args.only if n in known]
        examples = [n for n in args.only if n in known_examples]
    t_all = time.perf_counter()
    where = device.gpu_slug()
    print(f"gpukit results on {where}: writing {results.results_dir() / where}/", flush=True)
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
    print(table(["step", "result", "time", "note"], body, align="llrl"))
    if not (args.only or args.no_examples or args.no_benchmarks):  # a complete run: its total time
        results.save("results_run", {"run": {
            "n": len(rows), "total_s": total,
            "rows": [{"name": name, "median_s": s, "result": status, "error": err}
                     for name, status, s, err in rows]}})
    failed = [r for r in rows if r[1] == "FAILED"]
    return 1 if failed else 0
