"""``gpukit bench``: the measurements behind the chapters' tables.

Each benchmark verifies what it times, times it with :mod:`gpukit.bench`, and
returns a plain dict that :func:`gpukit.bench.save` writes under ``results/``.
"""

from __future__ import annotations

import os
import time

import numpy as np

from . import bench, device
from .verify import check_close


def vector_add_gpu(n: int = 2**28, repeat: int = 30) -> dict:
    """Every gpukit vector add on the GPU vs torch.add and the copy ceiling, plus transfers."""
    import cupy
    import cupyx
    import torch
    from numba import cuda

    from .kernels import vecadd

    rows: list[dict] = []
    nbytes = n * 4
    traffic = 3 * nbytes  # read x, read y, write out

    x = cupy.random.random(n, dtype=cupy.float32)
    y = cupy.random.random(n, dtype=cupy.float32)
    ref = cupy.asnumpy(x).astype(np.float64) + cupy.asnumpy(y).astype(np.float64)
    out = cupy.empty_like(x)

    ceiling = bench.copy_ceiling("cupy", nbytes=nbytes)
    rows.append({"name": "device copy (ceiling)", **ceiling.to_dict()})

    tx, ty = torch.as_tensor(x, device="cuda"), torch.as_tensor(y, device="cuda")
    tout = torch.empty_like(tx)
    t_torch = bench.bench(lambda: torch.add(tx, ty, out=tout), timer="torch", name="torch.add",
                          repeat=repeat, bytes=traffic)
    check_close(tout, ref, what="torch.add")
    rows.append({"name": "torch.add", "backend": "torch", **t_torch.to_dict()})

    variants = [
        ("numba.cuda grid-stride", "numba-cuda", None, "numba"),
        ("CuPy ElementwiseKernel", "cupy", "elementwise", "cupy"),
        ("CuPy RawKernel, 1 element/thread", "cupy", "raw", "cupy"),
        ("CuPy RawKernel, float4 loads", "cupy", "raw-vec4", "cupy"),
    ]
    for label, backend, impl, timer in variants:
        out.fill(cupy.nan)  # poison: an unwritten element fails the check
        kw = {"impl": impl} if impl else {}
        fn = lambda: vecadd.vector_add(x, y, backend=backend, out=out, **kw)  # noqa: E731
        t = bench.bench(fn, timer=timer, name=label, repeat=repeat, bytes=traffic)
        out.fill(cupy.nan)
        fn()
        err = check_close(out, ref, what=label)
        rows.append({"name": label, "backend": backend, "impl": impl, "max_rel_err": err,
                     **t.to_dict()})
    for r in rows:
        if r.get("gbs"):
            r["pct_of_copy"] = 100 * r["gbs"] / ceiling.gbs
            r["pct_of_torch_add"] = 100 * r["gbs"] / t_torch.gbs

    # Host <-> device copies, pageable and pinned memory.
    host = np.random.default_rng(1).random(n, dtype=np.float32)
    pinned = cupyx.empty_pinned((n,), dtype=np.float32)
    pinned[...] = host
    dev = cupy.empty(n, dtype=cupy.float32)
    copies = []
    for label, fn in [
        ("host to device, pageable", lambda: dev.set(host)),
        ("host to device, pinned", lambda: dev.set(pinned)),
        ("device to host, pageable", lambda: dev.get(out=host)),
        ("device to host, pinned", lambda: dev.get(out=pinned)),
    ]:
        t = bench.bench(fn, timer="cupy", name=label, repeat=10, bytes=nbytes)
        copies.append({"name": label, **t.to_dict()})

    # The article's bug: a kernel that is never launched, and a launch never waited for.
    blocks, threads = vecadd._launch_config(n)
    kernel = vecadd.add_kernel
    dx, dy, dout = cuda.as_cuda_array(x), cuda.as_cuda_array(y), cuda.as_cuda_array(out)
    kernel[blocks, threads](dx, dy, dout)
    cuda.synchronize()
    t0 = time.perf_counter()
    kernel[blocks, threads]  # configured, never called: nothing runs
    not_launched = time.perf_counter() - t0
    cuda.synchronize()
    t0 = time.perf_counter()
    kernel[blocks, threads](dx, dy, dout)  # launched, but the clock stops before the GPU is done
    no_sync = time.perf_counter() - t0
    cuda.synchronize()
    pitfalls = {
        "not_launched_s": not_launched, "not_launched_gbs": traffic / not_launched / 1e9,
        "no_sync_s": no_sync, "no_sync_gbs": traffic / no_sync / 1e9,
        "events_s": next(r for r in rows if r["name"].startswith("numba"))["median_s"],
    }

    # End to end for a reader whose data starts on the host: copy in, add, copy out.
    def end_to_end():
        a = cupy.asarray(host)
        b = cupy.asarray(host)
        return cupy.asnumpy(vecadd.vector_add(a, b, backend="cupy"))
    e2e = bench.bench(end_to_end, timer="cupy", name="copy in + add + copy out (pageable)",
                      repeat=5, bytes=traffic)
    return {"n": n, "dtype": "float32", "rows": rows, "copies": copies, "pitfalls": pitfalls,
            "end_to_end": e2e.to_dict(), "ceiling_gbs": ceiling.gbs, "torch_add_gbs": t_torch.gbs}


def vector_add_cpu(n: int = 2**26, repeat: int = 10) -> dict:
    """NumPy (one core) and numba parallel (all cores) vector add, and the host copy ceiling."""
    from .kernels import vecadd
    rng = np.random.default_rng(0)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    ref = x.astype(np.float64) + y
    out = np.empty_like(x)
    traffic = 3 * n * 4
    ceiling = bench.copy_ceiling("cpu", nbytes=n * 4)
    rows = [{"name": "host copy (ceiling)", **ceiling.to_dict()}]
    for label, backend in [("NumPy np.add (1 core)", "numpy"),
                           ("numba parallel (all cores)", "numba-cpu")]:
        out.fill(np.nan)
        t = bench.bench(lambda: vecadd.vector_add(x, y, backend=backend, out=out), timer="cpu",
                        name=label, repeat=repeat, bytes=traffic)
        err = check_close(out, ref, what=label)
        rows.append({"name": label, "backend": backend, "max_rel_err": err, **t.to_dict(),
                     "pct_of_copy": 100 * (traffic / t.median_s / 1e9) / ceiling.gbs})
    return {"n": n, "dtype": "float32", "rows": rows, "ceiling_gbs": ceiling.gbs}


def fresh_kernel_caches() -> str:
    """Point CuPy's on-disk kernel cache at an empty folder, so first calls include compiling.

    Works only before CuPy compiles its first kernel in this process; says which happened.
    """
    import sys
    import tempfile
    if "cupy" in sys.modules:
        return "CuPy was imported before the benchmark: its kernel cache may be warm"
    os.environ["CUPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="gpukit-cupy-cache-")
    return "empty at start: first calls include compilation"


def run_vector_add(n: int | None, repeat: int) -> dict:
    data = {}
    caches = fresh_kernel_caches()
    data["cpu"] = vector_add_cpu(min(n or 2**26, 2**28) if n else 2**26, repeat=max(3, repeat // 3))
    if device.has_gpu() and not device.simulator_enabled():
        data["gpu"] = vector_add_gpu(n or 2**28, repeat=repeat)
        data["gpu"]["kernel_caches"] = caches
    return data


#: name on the command line -> (results file name, "module:function").
#: The function takes (n, repeat), returns a dict of parts, each with "n" and "rows".
BENCHMARKS = {
    "vector-add": ("vector_add", "gpukit.benchmarks:run_vector_add"),
    "mandelbrot": ("mandelbrot", "gpukit.kernels.mandel_bench:run"),
    "matmul": ("matmul", "gpukit.kernels.matmul_bench:run"),
    "cats-vs-dogs": ("cats_vs_dogs", "gpukit.train.bench:run"),
    "cats-vs-dogs-ddp": ("cats_vs_dogs_ddp", "gpukit.train.scaling:run"),
    "crossover": ("crossover", "gpukit.experiments.crossover:run"),
    "gpu-anatomy": ("gpu_anatomy", "gpukit.experiments.anatomy:run"),
    "timing-pitfalls": ("timing_pitfalls", "gpukit.experiments.pitfalls:run"),
    "ladder": ("ladder", "gpukit.experiments.ladder:run"),
}


def _resolve(target: str):
    import importlib
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)


def register(sub) -> None:
    from .cli import positive_int
    p = sub.add_parser("bench", help="run a chapter's benchmark and record its results",
                       description="Run a benchmark, print a summary and optionally record it "
                                   "under results/<machine>/; or `gpukit bench compare A B` to "
                                   "set two machines' recorded results side by side.")
    p.add_argument("name", choices=sorted(BENCHMARKS) + ["compare"],
                   help="which benchmark, or compare")
    p.add_argument("machines", nargs="*", metavar="MACHINE",
                   help="with compare: two folders under results/ (or paths to them)")
    p.add_argument("--n", type=positive_int, default=None, help="problem size (elements)")
    p.add_argument("--repeat", type=positive_int, default=30, help="timed repetitions")
    p.add_argument("--save", action="store_true", help="write results/<machine>/<name>.json")
    p.set_defaults(func=_main)


def _rate(row: dict) -> tuple[float | None, str]:
    """The row's headline figure: a rate where there is one (higher is better), else a time."""
    for key, unit in (("tflops", "TFLOP/s"), ("gbs", "GB/s"), ("mpixels_per_s", "Mpixel/s"),
                      ("images_per_s", "images/s")):
        if row.get(key):
            return float(row[key]), unit
    if row.get("median_s"):
        return float(row["median_s"]), "s"
    return None, ""


def compare(a: str, b: str) -> str:
    """Every benchmark both folders recorded, row by row, with the ratio B / A."""
    from pathlib import Path

    from .cli import UserError
    from .report import table

    def folder(name: str) -> Path:
        path = Path(name)
        if not path.is_dir():
            path = bench.results_dir() / name
        if not path.is_dir():
            raise UserError(f"no results folder {name!r} (look in {bench.results_dir()})")
        return path

    fa, fb = folder(a), folder(b)
    common = sorted({p.name for p in fa.glob("*.json")} & {p.name for p in fb.glob("*.json")})
    if not common:
        raise UserError(f"{fa.name} and {fb.name} have no benchmark in common")
    import json
    out = []
    for file in common:
        da, db = (json.loads((f / file).read_text(encoding="utf-8")) for f in (fa, fb))
        rows = []
        for part in sorted(set(da) & set(db)):
            if not isinstance(da[part], dict) or "rows" not in da[part] or "rows" not in db[part]:
                continue
            rb = {r.get("name"): r for r in db[part]["rows"]}
            for r in da[part]["rows"]:
                other = rb.get(r.get("name"))
                if other is None:
                    continue
                va, unit = _rate(r)
                vb, _ = _rate(other)
                if va is None or vb is None:
                    continue
                ratio = (vb / va) if unit != "s" else (va / vb)  # > 1: B is faster
                rows.append([f"{part}: {r['name']}", f"{va:,.4g} {unit}", f"{vb:,.4g} {unit}",
                             f"{ratio:.2f}x"])
        if rows:
            out.append(f"{file[:-5]}: {fa.name} ({da['machine']['date'][:10]}) vs "
                       f"{fb.name} ({db['machine']['date'][:10]})\n"
                       + table(["row", fa.name, fb.name, "B faster by"], rows))
    if not out:
        raise UserError(f"{fa.name} and {fb.name} share no comparable rows")
    return "\n\n".join(out)


def compare_all(root=None) -> str:
    """Every machine's recorded results side by side: one table per benchmark, one column each.

    Rows are the headline figure of each row two or more machines recorded under the same
    name; a machine that did not record a row shows "-". The site's comparison page is this.
    """
    import json

    from .report import table
    root = root or bench.results_dir()
    machines = sorted(p for p in root.iterdir() if p.is_dir())
    files = sorted({f.name for m in machines for f in m.glob("*.json")})
    out = []
    for file in files:
        have = [(m, json.loads((m / file).read_text(encoding="utf-8"))) for m in machines if (m / file).exists()]
        if len(have) < 2:
            continue
        cells: dict[str, dict[str, str]] = {}
        for m, data in have:
            for part, block in data.items():
                if not isinstance(block, dict) or not isinstance(block.get("rows"), list):
                    continue
                for r in block["rows"]:
                    if not isinstance(r, dict) or "name" not in r or " @ " in str(r["name"]):
                        continue  # size sweeps (name @ size) are the chapters' plots
                    value, unit = _rate(r)
                    if value is None:
                        continue
                    text = f"{value * 1e3:,.3g} ms" if unit == "s" else f"{value:,.4g} {unit}"
                    cells.setdefault(f"{part}: {r['name']}", {})[m.name] = text
        rows = [[name] + [per.get(m.name, "-") for m, _ in have]
                for name, per in cells.items() if len(per) >= 2]
        if rows:
            heads = [f"{m.name}<br><small>{d['machine']['date'][:10]}</small>" for m, d in have]
            out.append(f"### {file[:-5]}\n\n" + table(["row"] + heads, rows, "l" + "r" * len(have)))
    return "\n\n".join(out)


def _main(args) -> int:
    from .cli import UserError
    machines = getattr(args, "machines", None) or []
    if args.name == "compare":
        if len(machines) != 2:
            raise UserError("compare needs two results folders, e.g. nvidia-h200 nvidia-geforce-rtx-4090")
        print(compare(*machines))
        return 0
    if machines:
        raise UserError(f"unexpected arguments {' '.join(machines)!r} (only compare takes folders)")
    file_name, target = BENCHMARKS[args.name]
    data = _resolve(target)(args.n, args.repeat)
    for part, block in data.items():
        print(f"== {args.name} ({part}), n = {block['n']:,}")
        for r in block["rows"] + block.get("copies", []):
            rate = (f"{r['gbs']:9.1f} GB/s" if r.get("gbs") else
                    f"{r['tflops']:9.2f} TFLOP/s" if r.get("tflops") else "")
            print(f"  {r['name']:<38} {r['median_s'] * 1e3:10.4f} ms  {rate}")
    if args.save:
        path = bench.save(file_name, data)
        print(f"saved {path}")
    return 0
