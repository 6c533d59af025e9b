"""The Mandelbrot chapter's measurements.

Every backend is measured in a **fresh process**, so its first call really
includes what a user's first call includes: importing, creating the GPU
context, compiling the kernel (numba's on-disk cache starts empty unless the
experiment says otherwise). The child processes save their counts, and the
parent compares them with a float64 reference, pixel by pixel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

CHILD_TIMEOUT_S = 900


def _child(spec: dict) -> dict:
    """Runs in a fresh process: time import, GPU context, first call, steady state."""
    t0 = time.perf_counter()
    from gpukit import bench, device
    if spec["backend"] == "numba-cuda" and not device.has_gpu():
        device.use_simulator_if_no_gpu()
    from gpukit.kernels import mandel
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
    result = {}

    def once():
        result["out"] = mandel.mandelbrot(size, size, **kw)

    t = bench.bench(once, timer=timer, name=backend, warmup=spec.get("warmup", 1),
                    repeat=spec["repeat"])
    from gpukit.verify import to_host
    np.save(spec["out"], to_host(result["out"]))
    return {"import_s": t_import, "context_s": t_context, "numba_init_s": t_init, **t.to_dict()}


def _spawn(spec: dict, cache_dir: str) -> dict:
    # Both numba's and CuPy's on-disk kernel caches live in cache_dir: empty unless shared.
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir, "CUPY_CACHE_DIR": cache_dir,
           "PYTHONUNBUFFERED": "1"}
    fd, path = tempfile.mkstemp(suffix=".npy")
    os.close(fd)
    spec = {**spec, "out": path}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gpukit.kernels.mandel_bench", "child", json.dumps(spec)],
                          capture_output=True, text=True, env=env, timeout=CHILD_TIMEOUT_S)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        os.unlink(path)
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return {**spec, "error": tail[0], "process_s": wall}
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    data["counts"] = np.load(path)
    os.unlink(path)
    return {**spec, **data, "process_s": wall}


def cache_experiment(size: int, max_iter: int, cache_dir: str) -> list[dict]:
    """The numba CUDA kernel in two fresh processes that share one on-disk cache folder."""
    rows = []
    for label in ("empty cache (compiles)", "warm cache (loads)"):
        row = _spawn({"backend": "numba-cuda", "dtype": "float64", "size": size, "repeat": 3,
                      "max_iter": max_iter, "split_init": True}, cache_dir)
        row.pop("counts", None)
        row.pop("out", None)
        rows.append({"case": label, **row})
    return rows


def remeasure_cache(root=None) -> None:
    """Re-run only the cache experiment and store it in this machine's mandelbrot.json."""
    from gpukit import bench, device
    found = bench.load("mandelbrot", root=root).get(device.gpu_slug())
    if not found or "gpu" not in found:
        raise SystemExit("no GPU mandelbrot results for this machine: run `gpukit bench mandelbrot` first")
    part = found["gpu"]
    with tempfile.TemporaryDirectory() as tmp:
        part["cache"] = cache_experiment(part["size"], part["max_iter"], tmp)
    found.pop("benchmark", None)
    found.pop("machine", None)
    bench.save("mandelbrot", found, root=root)


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


def run(n: int | None, repeat: int) -> dict:
    """All measurements for the chapter; GPU parts only where a GPU is present."""
    from gpukit import device
    from gpukit.kernels import mandel

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
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, spec in enumerate(specs):
            row = _spawn({**spec, "max_iter": max_iter}, os.path.join(tmp, f"cache{i}"))
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
            and "mpixels_per_s" in r}
    for r in rows:
        if "mpixels_per_s" in r:
            for key, name in (("vs_1core", "numba-cpu-1core"), ("vs_all_cores", "numba-cpu")):
                if name in base:
                    r[key] = r["mpixels_per_s"] / base[name]["mpixels_per_s"]
    part = {"n": size, "size": size, "max_iter": max_iter, "rows": [
        {**r, "name": r["backend"] + (" (fma)" if r.get("contract") else "") + f" {r['dtype']}"}
        for r in rows], "cache": cache, "target_backend": target_backend_pitfall()}
    return {"gpu" if gpu else "cpu": part}


# ------------------------------------------------------------------ tables for the chapter

def _rows(data: dict) -> tuple[str, dict]:
    part = "gpu" if "gpu" in data else "cpu"
    return part, data[part]


def _label(r: dict) -> str:
    return f"`{r['backend']}`" + (" with FMA" if r.get("contract") else "")


def _register() -> None:
    from gpukit import report
    from gpukit.report import fmt_num, fmt_ratio, fmt_time, table

    @report.renderer("mandelbrot", "table")
    def speed(slug: str, data: dict) -> str:
        part, p = _rows(data)
        rows = []
        for r in p["rows"]:
            if r["dtype"] != "float64" or r.get("contract"):
                continue
            if "error" in r:
                rows.append([_label(r), "-", "-", "-", "-", "-", "-", f"failed: {r['error']}"])
                continue
            size = f"{int(r['pixels'] ** 0.5)}²"
            rows.append([_label(r), size, fmt_time(r["first_call_s"]), fmt_time(r["median_s"]),
                         fmt_num(r["mpixels_per_s"], 1), fmt_ratio(r.get("vs_1core"), 1),
                         fmt_ratio(r.get("vs_all_cores"), 2),
                         "identical" if r["differing_pixels"] == 0 else f"{r['differing_pixels']} differ"])
        m = data["machine"]
        where = m["gpu"]["name"] + " + " if m.get("gpu") else ""
        head = (f"**{where}{m['cpu']['model']} ({m['cpu']['usable_cpus']} cores)**, "
                f"{p['size']} x {p['size']} pixels, {p['max_iter']} iterations, float64\n\n")
        return head + table(["backend", "size", "first call", "steady state", "Mpixel/s",
                             "vs 1 core", "vs all cores", "counts vs reference"], rows)

    @report.renderer("mandelbrot", "precision")
    def precision(slug: str, data: dict) -> str:
        part, p = _rows(data)
        rows = [[_label(r), r["dtype"], fmt_time(r["median_s"]), fmt_num(r["mpixels_per_s"], 1),
                 f"{r['differing_pixels']:,} ({100 * r['differing_fraction']:.3f} %)"]
                for r in p["rows"] if "median_s" in r and r["backend"] not in ("numpy", "numba-cpu-1core")]
        return table(["backend", "dtype", "steady state", "Mpixel/s", "pixels differing from float64"], rows)

    @report.renderer("mandelbrot", "cache")
    def cache(slug: str, data: dict) -> str:
        _, p = _rows(data)
        if not p.get("cache"):
            raise KeyError("cache")  # no GPU experiment on this machine
        rows = [[c["case"], fmt_time(c["import_s"]), fmt_time(c["context_s"]),
                 fmt_time(c.get("numba_init_s")), fmt_time(c["first_call_s"]), fmt_time(c["median_s"])]
                for c in p["cache"] if "median_s" in c]
        return table(["numba CUDA kernel, fresh process", "import", "GPU context",
                      "numba's first kernel call", "first call of this kernel", "steady state"], rows)

    @report.renderer("mandelbrot", "pitfall")
    def pitfall(slug: str, data: dict) -> str:
        _, p = _rows(data)
        t = p["target_backend"]
        return (f"```text\nnumba {t['numba']}\n@jit(target_backend='cuda') -> {t['decorated']}\n"
                f"calling it -> {t.get('called', 'not reached')}\n```")

    @report.data_renderer("mandelbrot", "gallery")
    def gallery() -> str:
        return _gallery_html()

    @report.data_renderer("mandelbrot", "fp64")
    def fp64() -> str:
        from gpukit.cloud import data
        rows = []
        for g in data.gpus():
            ratio, fp32 = g.get("fp64_ratio"), g.get("fp32_tflops")
            if not ratio or not fp32:
                continue
            rows.append([g["name"], fmt_num(fp32, 1), f"1:{round(1 / ratio)}", fmt_num(fp32 * ratio, 2),
                         f"[vendor]({g['source']})"])
        return (table(["GPU", "FP32 TFLOP/s", "FP64 : FP32", "FP64 TFLOP/s", "source"], rows, "lrrrl")
                + f"\n\n<small>From `gpukit/data/gpus.yaml`, data as of {data.data_as_of()}; "
                  "peak rates without tensor cores.</small>")


def _gallery_html() -> str:
    """Two images made by gpukit.kernels.mandelbrot when the site is built."""
    import base64
    import io

    from PIL import Image

    from gpukit.kernels import mandel
    views = [("The whole set, (-2, 1) x (-1.5, 1.5), 256 iterations", mandel.DEFAULT_BOUNDS, 256, "magma"),
             ("Seahorse valley, (-0.7463, -0.7413) x (0.1102, 0.1152), 1000 iterations",
              (-0.7463, -0.7413, 0.1102, 0.1152), 1000, "twilight_shifted")]
    figures = []
    for caption, bounds, iters, cmap in views:
        counts = mandel.mandelbrot(480, 480, max_iter=iters, bounds=bounds, backend="numba-cpu")
        buf = io.BytesIO()
        Image.fromarray(mandel.colorize(counts, iters, cmap)).save(buf, format="PNG", optimize=True)
        src = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
        figures.append(f'<figure style="margin:0">'
                       f'<img src="{src}" width="340" height="340" alt="{caption}">'
                       f"<figcaption>{caption}</figcaption></figure>")
    return ('<div style="display:flex;flex-wrap:wrap;gap:1em;justify-content:center">'
            + "".join(figures) + "</div>")


_register()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "child":
        print(json.dumps(_child(json.loads(sys.argv[2]))))
    elif sys.argv[1:] == ["cache"]:
        remeasure_cache()
    else:
        print("usage: python -m gpukit.kernels.mandel_bench child SPEC_JSON | cache", file=sys.stderr)
        sys.exit(2)
