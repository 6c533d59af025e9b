"""The Mandelbrot chapter's measurements: what ``gpukit bench mandelbrot --save`` records.

Every backend is measured in a **fresh process** (:func:`gpukit.proc.run_fresh` calling
:func:`time_backend`), so its first call really includes what a user's first call includes:
importing, creating the GPU context, compiling the kernel (numba's and CuPy's on-disk caches
start empty unless the experiment says otherwise). The child processes save their counts
to a ``.npy`` file, and the parent compares them with a float64 reference, pixel by pixel.

:func:`remeasure_cache` re-runs only the on-disk cache experiment and stores it in this
machine's results file::

    python -m gpukit.mandelbrot.measure remeasure-cache
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np

from .. import proc

CHILD_TIMEOUT_S = 900


def time_backend(spec: dict) -> dict:
    """Runs in a fresh process: time import, GPU context, first call, steady state.

    ``spec`` names the backend, dtype, size, iterations and repeats, and ``out``, the
    ``.npy`` file that receives the counts of the last call.
    """
    t0 = time.perf_counter()
    from gpukit import bench, device
    if spec["backend"] == "numba-cuda" and not device.has_gpu():
        device.use_simulator_if_no_gpu()
    from gpukit.mandelbrot import kernels as mandel
    t_import = time.perf_counter() - t0

    backend = spec["backend"]
    timer, t_context = "cpu", 0.0
    t0 = time.perf_counter()
    if backend == "numba-cuda":
        from numba import cuda
        cuda.current_context()
        timer = "numba"
    elif backend == "cupy":
        import cupy
        cupy.cuda.Device(0).use()
        cupy.empty(1).sum()  # the first call that really needs the context
        cupy.cuda.Device().synchronize()
        timer = "cupy"
    elif backend == "torch":
        import torch
        if torch.cuda.is_available():
            torch.empty(1, device="cuda").sum().item()
            timer = "torch"
    t_context = time.perf_counter() - t0

    t_init = None
    if spec.get("split_init"):
        # numba sets up its CUDA compiler pipeline on the first kernel call of a process,
        # whichever kernel it is: time that with a tiny kernel of its own, apart.
        from numba import cuda
        t0 = time.perf_counter()
        mandel.warm_up_kernel[1, 1](cuda.device_array(1, dtype=np.int32))
        cuda.synchronize()
        t_init = time.perf_counter() - t0

    size, max_iter = spec["size"], spec["max_iter"]
    kw = dict(max_iter=max_iter, backend=backend, dtype=spec["dtype"],
              contract=spec.get("contract", False), to_host=False)
    if backend == "numba-cuda":
        kw.update(counter=spec.get("counter", "int32"), dispatch=spec.get("dispatch", "resolved"))
    if spec.get("preallocate"):
        # the output allocated once, outside the timing: the kernel alone, the same for both
        # libraries (numba allocates device memory per call; CuPy takes it from a pool)
        if backend == "numba-cuda":
            from numba import cuda
            kw["out"] = cuda.device_array((size, size), dtype=np.int32)
        else:
            import cupy
            kw["out"] = cupy.empty((size, size), dtype=cupy.int32)
    result = {}

    def once():
        result["out"] = mandel.mandelbrot(size, size, **kw)

    profile = None
    collections = _Collections()
    start = time.perf_counter()
    if spec.get("profile_first"):
        # Where the first call's time goes: the functions it spent the most time in.
        profile, start = _profiled(once)
    t = bench.bench(once, timer=timer, name=backend, warmup=spec.get("warmup", 1),
                    repeat=spec["repeat"])
    collections.stop()
    first_end = start + (profile["wall_s"] if profile else t.first_call_s)
    from gpukit.arrays import to_host
    np.save(spec["out"], to_host(result["out"]))
    return bench.row(t, import_s=t_import, context_s=t_context, numba_init_s=t_init,
                     **collections.during(start, first_end),
                     **({"first_call_profile": profile} if profile else {}))


class _Collections:
    """Python's garbage collections while it is alive: when each started and how long it took.

    A full collection visits every object the process keeps (numba's compiler among them), so
    one that falls inside a timed call adds its time to that call.
    """

    def __init__(self):
        import gc
        self.objects = len(gc.get_objects())      # what a full collection would visit now
        self.events: list[tuple[float, float, int]] = []
        self._began = 0.0
        gc.callbacks.append(self._note)

    def _note(self, phase, info):
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.events.append((self._began, time.perf_counter() - self._began,
                                info["generation"]))

    def stop(self):
        import gc
        gc.callbacks.remove(self._note)

    def during(self, t0: float, t1: float) -> dict:
        """The collections that started between ``t0`` and ``t1``."""
        inside = [(s, g) for began, s, g in self.events if t0 <= began <= t1]
        return {"gc_objects": self.objects, "first_call_gc_s": sum(s for s, _ in inside),
                "first_call_full_gc_s": sum(s for s, g in inside if g == 2),
                "first_call_gc": [sum(g == k for _, g in inside) for k in range(3)]}


def _profiled(fn, top: int = 12) -> tuple[dict, float]:
    """Run ``fn`` once under cProfile: its wall time and the ``top`` functions by time spent
    inside them and their callees (cumulative), each with its own time and call count; and
    the ``perf_counter`` time the call started."""
    import cProfile
    import pstats
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.runcall(fn)
    wall = time.perf_counter() - t0
    stats = pstats.Stats(prof).stats
    rows = []
    for (file, line, func), (_, ncalls, tottime, cumtime, _) in stats.items():
        where = file.split("site-packages/")[-1] if "site-packages/" in file else os.path.basename(file)
        rows.append({"function": f"{where}:{line}({func})", "calls": ncalls, "own_s": tottime,
                     "cumulative_s": cumtime})
    rows.sort(key=lambda r: -r["cumulative_s"])
    by_own = sorted(rows, key=lambda r: -r["own_s"])[:top]
    return {"wall_s": wall, "cumulative": rows[:top], "own": by_own}, t0


def _fresh(spec: dict, cache_dir: str) -> dict:
    """:func:`time_backend` in a fresh process; the row gets the counts it saved.

    Every on-disk kernel cache of the child (numba's and CuPy's among them) is the one folder
    ``cache_dir``: empty, unless the caller passes a folder an earlier child filled.
    """
    fd, path = tempfile.mkstemp(suffix=".npy")
    os.close(fd)
    spec = {**spec, "out": path}
    try:
        data = proc.run_fresh("gpukit.mandelbrot.measure:time_backend", spec,
                              env=proc.cache_env(cache_dir, shared=True), timeout=CHILD_TIMEOUT_S)
        if "error" not in data:
            data["counts"] = np.load(path)
    finally:
        os.unlink(path)
    return {**spec, **data}


#: the cache experiment's fresh processes, in order: (case, how the call finds the kernel,
#: profiled). The first compiles into the shared cache folder; the others load from it. A full
#: garbage collection lands inside some processes' first call and not others', so each warm
#: case runs in several processes.
CACHE_CASES = (
    (("empty cache (compiles)", "numba", False),)
    + (("warm cache (loads)", "numba", False),) * 3
    + (("warm cache, profiled", "numba", True),)
    + (("warm cache, types named once", "resolved", False),) * 5
    + (("warm cache, types named once, profiled", "resolved", True),)
)


def cache_experiment(size: int, max_iter: int, cache_dir: str) -> list[dict]:
    """The numba CUDA kernel in fresh processes that share one on-disk cache folder: the first
    compiles into it, the others load from it, through numba's dispatcher or with the argument
    types named once (:mod:`gpukit.launch`); repeated cases show the spread between processes."""
    rows = []
    for label, dispatch, profiled in CACHE_CASES:
        row = _fresh({"backend": "numba-cuda", "dtype": "float64", "size": size, "repeat": 3,
                      "max_iter": max_iter, "split_init": True, "dispatch": dispatch,
                      "profile_first": profiled}, cache_dir)
        row.pop("counts", None)
        row.pop("out", None)
        rows.append({"case": label, **row})
    return rows


def remeasure_cache(root=None) -> None:
    """Re-run only the cache experiment and store it in this machine's mandelbrot.json."""
    from gpukit import device, results
    found = results.load("mandelbrot", root=root).get(device.gpu_slug())
    if not found or "gpu" not in found:
        raise SystemExit("no GPU mandelbrot results for this machine: run `gpukit bench mandelbrot` first")
    part = found["gpu"]
    with tempfile.TemporaryDirectory() as tmp:
        part["cache"] = cache_experiment(part["size"], part["max_iter"], tmp)
    results.save_part("mandelbrot", "gpu", part, root=root)  # only the gpu part gets a new stamp


def target_backend_pitfall() -> dict:
    """What ``@jit(target_backend='cuda')``, seen in many tutorials, really does here."""
    import numba
    record = {"numba": numba.__version__}
    try:
        @numba.jit(target_backend="cuda")
        def double(x):
            return x * 2
        record["decorated"] = f"ok: {type(double).__module__}.{type(double).__name__} (a CPU dispatcher)"
    except Exception as exc:  # noqa: BLE001 - we record whatever happens
        record["decorated"] = f"{type(exc).__name__}: {exc}"
        return record
    try:
        value = double(np.arange(4.0))
        record["called"] = f"ok, returned {value.tolist()} (computed on the CPU)"
    except Exception as exc:  # noqa: BLE001
        record["called"] = f"{type(exc).__name__}: {exc}"
    return record


def simd_instructions() -> dict:
    """What LLVM made of the CPU loops on this machine: packed (SIMD) and scalar float
    multiplies in the machine code, and the widest registers used."""
    import re

    import numba

    from gpukit.mandelbrot import kernels as mandel
    cr = ci = np.zeros(8)
    out = {}
    for name, fn, args in (("numba-cpu", mandel.mandel_cpu_parallel, ()),
                           ("numba-cpu-simd", mandel.mandel_cpu_simd, (4.0,))):
        fresh = numba.njit(parallel=True)(fn.py_func)   # code loaded from numba's cache cannot be inspected
        fresh(np.empty((8, 8), np.int32), cr, ci, 10, *args)
        asm = "\n".join(fresh.inspect_asm().values())
        packed = re.findall(r"\bv?mulp[sd]\s+(\S+)", asm)
        out[name] = {"packed_mul": len(packed),
                     "packed_mul_512": sum("zmm" in p for p in packed),
                     "scalar_mul": len(re.findall(r"\bv?muls[sd]\b", asm))}
    return out


def gallery() -> tuple[list[dict], dict[str, bytes]]:
    """The page's two pictures (:data:`.meta.GALLERY`), drawn on every CPU core: what the
    record lists, and the PNG files saved beside it."""
    from gpukit.files import png_bytes
    from gpukit.mandelbrot import kernels as mandel

    from .image import colorize
    from .meta import GALLERY, GALLERY_SIZE
    shown, files = [], {}
    for name, caption, bounds, iters, cmap in GALLERY:
        counts = mandel.mandelbrot(GALLERY_SIZE, GALLERY_SIZE, max_iter=iters, bounds=bounds,
                                   backend="numba-cpu")
        files[name] = png_bytes(colorize(counts, iters, cmap), optimize=True)
        shown.append({"png": name, "caption": caption, "pixels": GALLERY_SIZE})
    return shown, files


def run(n: int | None, repeat: int) -> dict:
    """All measurements for the chapter; GPU parts only where a GPU is present."""
    from gpukit import device, results
    from gpukit.mandelbrot import kernels as mandel

    size = n or 4096
    max_iter = 256
    gpu = device.has_gpu() and not device.simulator_enabled()
    repeat = max(3, min(repeat, 20))
    cpu_repeat = max(3, repeat // 4)  # a CPU row takes ~0.6 s a call: its spread is small anyway
    # The float64 reference, computed once with every core.
    reference = mandel.mandelbrot(size, size, max_iter=max_iter, backend="numba-cpu")
    small = min(size, 512)  # NumPy takes ~4 s a call at 1024x1024; pixels per second compare
    reference_small = reference if small == size else mandel.mandelbrot(small, small, max_iter=max_iter,
                                                                        backend="numba-cpu")

    specs = [
        {"backend": "numba-cpu-1core", "dtype": "float64", "size": size, "repeat": 3, "warmup": 0},
        {"backend": "numba-cpu", "dtype": "float64", "size": size, "repeat": cpu_repeat},
        {"backend": "numpy", "dtype": "float64", "size": small, "repeat": 2, "warmup": 0},
        {"backend": "numba-cpu", "dtype": "float32", "size": size, "repeat": cpu_repeat},
        {"backend": "numba-cpu-simd", "dtype": "float64", "size": size, "repeat": cpu_repeat},
        {"backend": "numba-cpu-simd", "dtype": "float32", "size": size, "repeat": cpu_repeat},
    ]
    if gpu:
        specs += [
            {"backend": "numba-cuda", "dtype": "float64", "size": size, "repeat": 4 * repeat},
            {"backend": "cupy", "dtype": "float64", "size": size, "repeat": 4 * repeat},
            {"backend": "torch", "dtype": "float64", "size": size, "repeat": 3, "warmup": 0},
            {"backend": "numba-cuda", "dtype": "float32", "size": size, "repeat": 4 * repeat},
            {"backend": "cupy", "dtype": "float32", "size": size, "repeat": 4 * repeat},
            {"backend": "numba-cuda", "dtype": "float64", "contract": True, "size": size, "repeat": 4 * repeat},
            {"backend": "cupy", "dtype": "float64", "contract": True, "size": size, "repeat": 4 * repeat},
        ]
        # The kernels alone: the output allocated once, outside the timing; numba's earlier
        # kernels (a 64-bit counter) next to the current ones.
        specs += [{"backend": b, "dtype": d, "size": size, "repeat": 4 * repeat, "preallocate": True}
                  for d in ("float32", "float64") for b in ("numba-cuda", "cupy")]
        specs += [{"backend": "numba-cuda", "dtype": d, "size": size, "repeat": 4 * repeat,
                   "preallocate": True, "counter": "int64"} for d in ("float32", "float64")]
    for spec in specs:
        if spec["backend"] == "numba-cuda":
            # said explicitly, so the views tell these rows from records made before the options
            spec.setdefault("counter", "int32")
            spec.setdefault("dispatch", "resolved")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, spec in enumerate(specs):
            row = _fresh({**spec, "max_iter": max_iter}, os.path.join(tmp, f"cache{i}"))
            counts = row.pop("counts", None)
            row.pop("out", None)
            if counts is not None:
                ref = reference if spec["size"] == size else reference_small
                row["differing_pixels"] = int(np.count_nonzero(counts != ref))
                row["differing_fraction"] = row["differing_pixels"] / counts.size
            row["pixels"] = spec["size"] ** 2
            if "median_s" in row:
                row["mpixels_per_s"] = row["pixels"] / row["median_s"] / 1e6
            rows.append(row)
            print(f"  {spec['backend']:<16} {spec['dtype']} {'fma' if spec.get('contract') else '   '} "
                  + (f"median {row['median_s'] * 1e3:10.3f} ms, first call {row['first_call_s']:.3f} s, "
                     f"differing {row['differing_pixels']}" if "median_s" in row else row.get("error", "")),
                  flush=True)

        # numba's on-disk cache: the same kernel in two fresh processes sharing one cache folder.
        cache = []
        if gpu:
            shared = os.path.join(tmp, "shared-cache")
            cache = cache_experiment(size, max_iter, shared)

    base = {r["backend"]: r for r in rows if r["dtype"] == "float64" and not r.get("contract")
            and not r.get("preallocate") and "mpixels_per_s" in r}
    for r in rows:
        if "mpixels_per_s" in r:
            for key, name in (("vs_1core", "numba-cpu-1core"), ("vs_all_cores", "numba-cpu"),
                              ("vs_simd", "numba-cpu-simd")):
                if name in base:
                    r[key] = r["mpixels_per_s"] / base[name]["mpixels_per_s"]
    part = {"n": size, "size": size, "max_iter": max_iter, "rows": [
        {**r, "name": r["backend"] + (" (fma)" if r.get("contract") else "")
         + (" (kernel alone)" if r.get("preallocate") else "")
         + (" (64-bit counter)" if r.get("counter") == "int64" else "") + f" {r['dtype']}"}
        for r in rows], "cache": cache, "target_backend": target_backend_pitfall(),
        "simd": simd_instructions()}
    part["gallery"], files = gallery()
    return {"gpu" if gpu else "cpu": part, results.FILES: files}


if __name__ == "__main__":
    if sys.argv[1:] != ["remeasure-cache"]:
        sys.exit("usage: python -m gpukit.mandelbrot.measure remeasure-cache")
    remeasure_cache()
