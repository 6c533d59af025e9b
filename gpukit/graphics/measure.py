"""What ``gpukit bench graphics`` records: the path tracer on all CPU cores and on the GPU.

Every part is verified before it is timed: the GPU image is checked against the CPU image of the
same scene, size, samples and seed by the chapter's one criterion (``renderer.images_agree``), and
a white-furnace scene must return its albedo on every path. Rates are ray segments per second (one segment
is one ray tested against the scene: a camera ray or a bounce) and samples per second; the
brute-force kernels test every sphere on every segment, so ray-sphere tests per second are
segments per second times the number of spheres, 17 FLOPs each (see ``trace.nearest``).
"""

from __future__ import annotations

import re

import numpy as np

from gpukit import bench, device, results

from .meta import BASE, CPU_ROWS, VARIANTS, every_sphere
from .renderer import images_agree, to_jpeg_uri

#: floating-point operations in one ray-sphere test (trace.nearest, the miss path)
FLOPS_PER_TEST = 17
SEED, DEPTH = 1, 8


def _row(name, backend, width, height, spp, timing, segments, n_spheres, peak=None) -> dict:
    samples = width * height * spp
    per_s = {"segments_per_s": segments, "samples_per_s": samples}
    extra = {}
    if every_sphere(name):
        per_s["tests_per_s"] = segments * n_spheres
        extra["tflops"] = segments * n_spheres / timing.median_s * FLOPS_PER_TEST / 1e12
    roofs = {"pct_fp32_peak": bench.Roof("tflops", peak["tflops"])} if peak else {}
    return bench.row(timing, roofs=roofs, per_s=per_s, backend=backend, width=width,
                     height=height, spp=spp, depth=DEPTH, segments=segments,
                     segments_per_sample=segments / samples, **extra)


def _cpu_rows(scene, sizes: dict, repeat: int) -> tuple[list[dict], dict]:
    from . import trace
    from .bvh import build_bvh
    from .scene import camera
    rows, images = [], {}
    plain, bvh_scene = scene, build_bvh(scene)
    for backend in CPU_ROWS:
        w, h, spp = sizes[backend]
        fn = {"numba-cpu": trace.render_cpu, "numba-cpu-1core": trace.render_cpu_1core,
              "numba-cpu-bvh": trace.render_cpu_bvh}[backend]
        scene = bvh_scene if backend.endswith("-bvh") else plain
        out = np.full((h, w, 3), np.nan, np.float32)
        segs = np.zeros((h, w), np.int64)
        args = (out, segs, spp, SEED, camera(scene, w, h), *scene.arrays(), DEPTH)
        t = bench.bench(lambda: fn(*args), timer="cpu", name=backend, warmup=0, repeat=repeat)
        if not np.isfinite(out).all():
            raise AssertionError(f"{backend}: unwritten or NaN pixels")
        rows.append(_row(backend, backend, w, h, spp, t, int(segs.sum()), scene.n))
        images[backend] = out.copy()
        images[backend + ":segs"] = segs.copy()
    if "numba-cpu-bvh" in images and not np.array_equal(images["numba-cpu-bvh"], images["numba-cpu"]):
        raise AssertionError("the BVH changed the CPU image")
    return rows, images


def _leak_cpu(scene) -> dict:
    """float64 instructions in the CPU tracer's LLVM IR, clean and leaky; vector instructions."""
    from . import trace
    from .scene import camera
    leaky, leaky_shade = trace.leaky_cpu()
    w, h = 8, 4
    out, segs = np.zeros((h, w, 3), np.float32), np.zeros((h, w), np.int64)
    leaky(out, segs, 1, SEED, camera(scene, w, h), *scene.arrays(), DEPTH)
    clean_ir = "\n".join(trace.shade_cpu.inspect_llvm().values())
    leaky_ir = "\n".join(leaky_shade.inspect_llvm().values())
    return {"cpu_llvm_f64_clean": trace.float64_ops(clean_ir), "cpu_llvm_f64_leaky": trace.float64_ops(leaky_ir),
            "cpu_llvm_vector_ops": trace.vector_ops(clean_ir)}


#: the float64 instructions libdevice's sinf and cosf carry for arguments beyond about 1e5 (their
#: Payne-Hanek range reduction): three per call, in every kernel that calls them, never run here
LIBDEVICE_F64 = re.compile(r"cvt\.rn\.f64\.s64|mul\.f64\s+%fd\d+, %fd\d+, 0d3BF921FB54442D19|cvt\.rn\.f32\.f64")


def f64_lines(ptx: str) -> list[str]:
    """The PTX instructions that operate on float64 (``.f64``, conversions included)."""
    return [ln.strip() for ln in re.findall(r"^\s*[a-z][\w.]*\.f64\b.*$", ptx, re.M)]


def ptx_f64(kernel) -> dict | None:
    """float64 instructions in a compiled kernel's PTX: all of them, and those not from libdevice's
    sin/cos range reduction (None on the simulator, which compiles nothing)."""
    if device.simulator_enabled():
        return None
    lines = [ln for ptx in kernel.inspect_asm().values() for ln in f64_lines(ptx)]
    return {"all": len(lines), "outside_sincos": sum(1 for ln in lines if not LIBDEVICE_F64.search(ln))}


def _progressive(scene, backend: str, size: tuple, spps: list, ref_spp: int, timer: str,
                 repeat: int = 5) -> dict:
    """1-sample-per-pixel and more: frame time and noise against a high-spp reference."""
    from .renderer import render, tonemap
    w, h = size
    ref = render(scene, w, h, spp=ref_spp, max_depth=DEPTH, seed=SEED + 1000, backend=backend)
    rows, strip = [], []
    for spp in spps:
        if backend == "numba-cuda":
            from .gpu import DeviceScene
            dev = DeviceScene(scene, w, h)
            t = bench.bench(lambda: dev.launch(spp, DEPTH, SEED), timer=timer, warmup=1, repeat=repeat)
            img = tonemap(dev.out.copy_to_host())
        else:
            t = bench.bench(lambda: render(scene, w, h, spp=spp, max_depth=DEPTH, seed=SEED, backend=backend),
                            timer="cpu", warmup=0, repeat=min(2, repeat))
            img = render(scene, w, h, spp=spp, max_depth=DEPTH, seed=SEED, backend=backend)
        rmse = float(np.sqrt(np.mean((img - ref) ** 2)))
        rows.append(bench.row(t, only=("first_call_s", "median_s"), spp=spp, rmse=rmse))
        if spp in (1, 4, 16, 64):
            strip.append({"spp": spp, "image": to_jpeg_uri(img)})
    strip.append({"spp": ref_spp, "image": to_jpeg_uri(ref), "reference": True})
    return {"backend": backend, "width": w, "height": h, "ref_spp": ref_spp, "rows": rows, "strip": strip}


def _gpu(scene, cpu_images: dict, cpu_sizes: dict, repeat: int, size=(1920, 1080, 16)) -> dict:
    """The GPU part: verified against the CPU image, then timed (``size``: width, height, spp)."""
    from .bvh import build_bvh
    from .gpu import KERNELS, DeviceScene
    from .renderer import tonemap
    record = device.machine_record().get("gpu")
    peak = device.fp32_peak(record) if record else None      # None on the simulator
    out = {"fp32_peak": peak}
    # 1. verify: the GPU image of the CPU baseline's exact job, by the chapter's one criterion
    w, h, spp = cpu_sizes["numba-cpu"]
    dev = DeviceScene(scene, w, h)
    dev.launch(spp, DEPTH, SEED)
    check = images_agree(dev.out.copy_to_host(), cpu_images["numba-cpu"])
    out["agreement"] = {"width": w, "height": h, "spp": spp, **check}
    if not check["ok"]:
        raise AssertionError(f"the GPU image is not the CPU's: {check}")
    # 2. every variant on the final scene at 1080p, 16 spp (1-spp frames: more runs)
    W, H, SPP = size
    diffuse = type(scene)(scene.center, scene.radius, np.zeros_like(scene.material), scene.albedo,
                          scene.fuzz)
    scenes = {"final": DeviceScene(scene, W, H), "bvh": DeviceScene(build_bvh(scene), W, H),
              "diffuse": DeviceScene(diffuse, W, H)}
    rows, images = [], {}
    reps = max(1, min(repeat, 10))
    for name, v in VARIANTS.items():
        if v.most_spheres is not None and scene.n > v.most_spheres:
            continue
        dev, spp = scenes[v.scene], v.spp or SPP
        warmup, runs = (2, 4 * reps) if spp == 1 else (1, reps)
        t = bench.bench(lambda: dev.launch(spp, DEPTH, SEED, v.kernel), timer="numba", name=name,
                        warmup=warmup, repeat=runs)
        segs = int(dev.segs.copy_to_host().sum())
        rows.append(_row(name, "numba-cuda", W, H, spp, t, segs, scene.n, peak))
        if v.compare:
            images[name] = dev.out.copy_to_host()
    out["max_abs_vs_plain"] = {v: float(np.abs(images[v] - images[BASE]).max()) for v in images}
    hero = tonemap(images[BASE])
    out["rows"] = rows
    out["ptx_f64"] = {"plain": ptx_f64(KERNELS["plain"]), "leaky": ptx_f64(KERNELS["leaky"])}
    from .renderer import to_png_bytes
    png = f"graphics-{H}p.png"
    out[results.FILES] = {png: to_png_bytes(hero)}      # written beside the JSON by a save only
    out["hero"] = {"image": to_jpeg_uri(hero, 960), "png": png, "width": W, "height": H, "spp": SPP}
    return out


#: what the GPU machine measures: CPU baseline sizes (width, height, spp), the GPU frame, the
#: progressive study (size, spp list, reference spp) and the raster frame (size, mesh, frames)
GPU_SIZES = {"cpu": {"numba-cpu": (480, 270, 4), "numba-cpu-1core": (160, 90, 2), "numba-cpu-bvh": (480, 270, 4)},
             "furnace": (320, 180),
             "gpu": (1920, 1080, 16), "progressive": ((480, 270), [1, 2, 4, 8, 16, 32, 64, 128], 2048),
             "raster": dict(width=1920, height=1080, stacks=16, slices=32, frames=50)}


def cpu_sizes_for(n: int | None) -> dict:
    """The sizes on a machine without a GPU (``n``: the width of the all-cores image)."""
    w = n or 160
    h = max(1, w * 9 // 16)
    return {"cpu": {"numba-cpu": (w, h, 4), "numba-cpu-1core": (48, 27, 2), "numba-cpu-bvh": (w, h, 4)},
            "furnace": (160, 90),
            "progressive": ((48, 27), [1, 2, 4, 8, 16, 32], 256),
            "raster": dict(width=w, height=h, stacks=8, slices=16, frames=5)}


def run(n: int | None, repeat: int) -> dict:
    """All measurements for the chapter; GPU parts only where a GPU is present."""
    gpu = device.has_gpu() and not device.simulator_enabled()
    return measure_all(GPU_SIZES if gpu else cpu_sizes_for(n), max(3, min(repeat, 5)), gpu=gpu)


def measure_all(sizes: dict, repeat: int, *, gpu: bool) -> dict:
    """Every part at the given sizes (``gpu``: also the GPU parts, on the simulator in tests),
    each timed ``repeat`` times after its first call."""
    from . import raster
    from .scene import final_scene
    from .trace import work_balance
    scene = final_scene(SEED - 1)
    repeat = max(1, repeat)
    cpu_sizes = sizes["cpu"]
    rows, images = _cpu_rows(scene, cpu_sizes, repeat)
    by = {r["name"]: r for r in rows}
    cores = device.cpu_info().get("usable_cpus") or 1
    part = {"n": cpu_sizes["numba-cpu"][0] * cpu_sizes["numba-cpu"][1], "seed": SEED, "depth": DEPTH,
            "scene": {"spheres": scene.n, **scene.counts()}, "rows": rows, "cores": cores,
            "cpu_speedup": by["numba-cpu"]["segments_per_s"] / by["numba-cpu-1core"]["segments_per_s"],
            "flops_per_test": FLOPS_PER_TEST, **_leak_cpu(scene),
            "cpu_image": to_jpeg_uri(tonemap_(images["numba-cpu"]))}
    part["cpu_efficiency"] = part["cpu_speedup"] / cores
    part["cpu_balance"] = work_balance(images["numba-cpu:segs"], cores)
    part["furnace"] = [furnace("numba-cpu", sizes["furnace"])] + (
        [furnace("numba-cuda", sizes["furnace"])] if gpu else [])
    bad = [f for f in part["furnace"] if f["paths_off"] or f["sky_off"]]
    if bad:
        raise AssertionError(f"white furnace: paths that did not return the albedo: {bad}")
    size, spps, ref_spp = sizes["progressive"]
    if gpu:
        g = _gpu(scene, images, cpu_sizes, repeat, size=sizes["gpu"])
        gby = {r["name"]: r for r in g["rows"]}
        g["vs_all_cores"] = gby["plain"]["segments_per_s"] / by["numba-cpu"]["segments_per_s"]
        g["bvh_vs_all_cores_bvh"] = gby["bvh"]["segments_per_s"] / by["numba-cpu-bvh"]["segments_per_s"]
        part["rows"] = rows + g.pop("rows")
        files = g.pop(results.FILES)
        part.update(g)
        part["progressive"] = _progressive(scene, "numba-cuda", size, spps, ref_spp, "numba", repeat)
    else:
        part["progressive"] = _progressive(scene, "numba-cpu", size, spps, ref_spp, "cpu", repeat)
    # the GPU's OpenGL driver; without a GPU a software rasterizer (Mesa's llvmpipe) where installed
    part["raster"] = raster.measure(scene, **sizes["raster"])
    if gpu:
        return {"gpu": part, results.FILES: files}
    return {"cpu": part}


def furnace(backend: str, size: tuple) -> dict:
    """A white-furnace check: one diffuse sphere of radius 1000 and albedo 1/2 under the sky,
    whose blue channel is 1 everywhere, one sample per pixel. A path that leaves the convex
    sphere never meets it again, so the blue of every path that hits it is 1/2 exactly (1/4
    would be a second hit)."""
    from .renderer import render
    from .scene import DIFFUSE, _scene
    w, h = size
    sphere = _scene([((0.0, -1000.0, 0.0), 1000.0, DIFFUSE, (0.5, 0.5, 0.5), 0.0)])
    blue = render(sphere, w, h, spp=1, seed=SEED, max_depth=4, backend=backend, linear=True)[..., 2]
    hits = blue < 1
    return {"backend": backend, "width": w, "height": h, "radius": 1000.0, "albedo": 0.5,
            "paths_on_sphere": int(hits.sum()), "paths_off": int(np.count_nonzero(blue[hits] != 0.5)),
            "sky_off": int(np.count_nonzero(blue[~hits] != 1))}


def tonemap_(image):
    from .renderer import tonemap
    return tonemap(image)
