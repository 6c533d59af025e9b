"""The path tracer: deterministic scenes and images, CPU and GPU (or simulator) agree, the sky
is exact, energy is bounded, float64 leaks are visible in the compiled code, bad input."""

import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gpukit import pages
from gpukit.graphics import empty_scene, final_scene, images_agree, render
from gpukit.graphics import scene as gscene
from gpukit.graphics.meta import CPU_ROWS, VARIANTS
from tests.helpers import assert_one_line_error, run_cli, shared_once

#: linear radiance per channel: how far two backends' pixels may be apart (float rounding, FMA)
ATOL = 1e-3
#: the sky is computed by numpy here and by the tracer there: a few float32 roundings apart
SKY_ATOL = 2e-6


def test_final_scene_follows_the_book_and_is_deterministic():
    a, b, c = final_scene(7), final_scene(7), final_scene(8)
    for x, y in zip(a.arrays(), b.arrays()):
        assert x.dtype in (np.float32, np.int32) and np.array_equal(x, y)
    assert not np.array_equal(a.center, c.center)
    assert a.radius[0] == 1000 and a.center[0, 1] == -1000          # the ground
    small = a.radius == np.float32(0.2)
    assert 400 < small.sum() <= 22 * 22 and a.n == small.sum() + 4
    assert np.all(np.linalg.norm(a.center[small] - (4, 0.2, 0), axis=1) > 0.9)
    assert set(np.unique(a.material)) == {gscene.DIFFUSE, gscene.METAL, gscene.GLASS}
    assert np.all((a.albedo >= 0) & (a.albedo <= 1))
    counts = a.counts()
    assert counts["diffuse"] > counts["metal"] > counts["glass"] > 0


def test_same_seed_same_image_and_one_core_equals_all_cores():
    scene = final_scene(0)
    stats = {}
    one = render(scene, 24, 13, spp=2, seed=5, backend="numba-cpu", stats=stats)
    assert one.shape == (13, 24, 3) and one.dtype == np.float32 and np.isfinite(one).all()
    assert 0 <= one.min() and one.max() <= 1 and one.std() > 0.05
    assert np.array_equal(one, render(scene, 24, 13, spp=2, seed=5, backend="numba-cpu"))
    assert np.array_equal(one, render(scene, 24, 13, spp=2, seed=5, backend="numba-cpu-1core"))
    assert not np.array_equal(one, render(scene, 24, 13, spp=2, seed=6, backend="numba-cpu"))
    assert 24 * 13 * 2 <= stats["segments"] <= 24 * 13 * 2 * 8


def test_bvh_finds_the_same_hits_as_brute_force():
    from gpukit.graphics.bvh import build_bvh
    scene = final_scene(2)
    tree = build_bvh(scene, leaf_size=3)
    nodes = tree.nodes
    assert sorted(map(tuple, tree.center.tolist())) == sorted(map(tuple, scene.center.tolist()))
    leaves = nodes[nodes[:, 7] > 0]
    assert leaves[:, 7].sum() == scene.n and leaves[:, 7].max() <= 3       # every sphere once
    assert np.all(nodes[:, 8] > np.arange(len(nodes)))                       # skips go forward
    for first, count in leaves[:, 6:8].astype(int):                          # boxes hold spheres
        c, r = tree.center[first:first + count], tree.radius[first:first + count, None]
        box = nodes[(nodes[:, 6] == first) & (nodes[:, 7] == count)][0]
        assert np.all(c - r >= box[:3]) and np.all(c + r <= box[3:6])
    brute = render(scene, 20, 11, spp=2, seed=3, backend="numba-cpu", linear=True)
    assert np.array_equal(brute, render(scene, 20, 11, spp=2, seed=3, backend="numba-cpu-bvh", linear=True))
    empty = render(empty_scene(), 6, 4, spp=1, seed=3, backend="numba-cpu-bvh", linear=True)
    assert np.array_equal(empty, render(empty_scene(), 6, 4, spp=1, seed=3, backend="numba-cpu", linear=True))


def _sky_reference(width, height, spp, seed):
    """The empty scene computed here, in numpy float32, with the tracer's random numbers."""
    from gpukit.graphics.trace import INV24, MASK, TWO_PI, pcg_cpu
    scene = empty_scene()
    cam = gscene.camera(scene, width, height).astype(np.float32)
    f = np.float32
    out = np.zeros((height, width, 3), np.float32)
    for py in range(height):
        for px in range(width):
            acc = np.zeros(3, np.float32)
            for s in range(spp):
                state = pcg_cpu(pcg_cpu(pcg_cpu(seed & MASK) ^ s) ^ (py * width + px))
                r = []
                for _ in range(4):
                    state = pcg_cpu(state)
                    r.append(f(state >> 8) * INV24)
                u = (f(px) + r[0]) / f(width)
                v = (f(height - 1 - py) + r[1]) / f(height)
                rad = cam[18] * np.sqrt(r[2])
                lx, ly = rad * np.cos(TWO_PI * r[3]), rad * np.sin(TWO_PI * r[3])
                o = cam[0:3] + lx * cam[12:15] + ly * cam[15:18]
                d = cam[3:6] + u * cam[6:9] + v * cam[9:12] - o
                dy = d[1] * (f(1) / np.sqrt(d @ d))
                w = f(0.5) * (dy + f(1))
                acc += np.array([f(1) - w + w * f(0.5), f(1) - w + w * f(0.7), f(1)], np.float32)
            out[py, px] = acc * (f(1) / f(spp))
    return out


def test_no_hits_gives_the_sky_gradient():
    got = render(empty_scene(), 9, 5, spp=3, seed=11, backend="numba-cpu", linear=True)
    want = _sky_reference(9, 5, 3, 11)
    np.testing.assert_allclose(got, want, rtol=0, atol=SKY_ATOL)
    assert np.all(got[..., 2] == 1)                          # blue is 1 everywhere in the sky
    assert np.all(np.diff(got[:, :, 0].mean(axis=1)) > 0)    # whiter towards the horizon (down)


def furnace_scene(radius: float, albedo: float = 0.5):
    """One diffuse sphere resting on y = 0 under the sky, whose blue channel is 1 everywhere:
    a path that leaves the convex sphere never meets it again, so blue is the albedo exactly."""
    return gscene._scene([((0.0, -radius, 0.0), radius, gscene.DIFFUSE, (albedo,) * 3, 0.0)])


def furnace_blues(radius: float, backend: str, width=320, height=180, seed=5):
    """Blue of one sample per pixel (so each pixel is one path) of :func:`furnace_scene`."""
    img = render(furnace_scene(radius), width, height, spp=1, seed=seed, max_depth=4,
                 backend=backend, linear=True)
    return img[..., 2]


@pytest.mark.parametrize("backend", ["numba-cpu", "numba-cpu-bvh"])
@pytest.mark.parametrize("radius", [1.0, 1000.0])
def test_white_furnace_a_diffuse_sphere_returns_its_albedo(radius, backend):
    # about 3 in 10,000 paths leaving the radius-1000 sphere met it again when its distances
    # were left to float32 rounding; here some 30,000 paths start on the sphere
    blue = furnace_blues(radius, backend)
    sphere = blue < 1
    assert 0.05 < sphere.mean() < 0.95, sphere.mean()         # the sphere and the sky both in view
    # one bounce to the sky gives blue = 0.5 exactly; a second hit would give 0.25
    assert set(np.unique(blue).tolist()) == {0.5, 1.0}, np.unique(blue)


def test_images_agree_is_one_criterion_that_can_fail():
    rng = np.random.default_rng(0)
    a = rng.random((20, 10, 3), dtype=np.float32)
    assert images_agree(a, a.copy())["ok"]
    b = a.copy()
    b[0, :6, 2] += 0.05                             # 6 of 200 pixels: 3 %, allowed
    got = images_agree(a, b)
    assert got["ok"] and got["pixels_over_atol"] == 0.03 and got["max_abs"] == pytest.approx(0.05)
    b[1, 0, 0] += 0.05                              # a 7th: 3.5 %, too many
    assert not images_agree(a, b)["ok"]
    c = a + np.float32(2e-3)                        # every pixel a little off: the mean fails too
    assert not images_agree(a, c)["ok"]
    d = a.copy()
    d[3, 3, 1] = np.nan                             # NaN fails
    assert not images_agree(a, d)["ok"]
    with pytest.raises(ValueError):
        images_agree(a, a[:, :5])


def test_energy_is_bounded_by_the_sky():
    linear = render(final_scene(3), 32, 18, spp=4, seed=2, backend="numba-cpu", linear=True)
    assert np.isfinite(linear).all() and linear.min() >= 0
    assert linear.max() <= 1 + 1e-6              # nothing brighter than the brightest light, 1.0
    assert 0.05 < linear.mean() < 0.95


@pytest.mark.parametrize("kwargs, error", [
    ({"width": 0}, ValueError), ({"height": -2}, ValueError), ({"width": 2.5}, TypeError),
    ({"spp": 0}, ValueError), ({"max_depth": 0}, ValueError), ({"max_depth": 65}, ValueError),
    ({"seed": -1}, ValueError), ({"seed": 2**32}, ValueError), ({"backend": "opengl"}, ValueError),
    ({"width": True}, TypeError),
])
def test_bad_arguments(kwargs, error):
    args = {"width": 4, "height": 3, **kwargs}
    with pytest.raises(error):
        render(final_scene(0), args.pop("width"), args.pop("height"), **args)


def test_float64_leak_shows_in_the_llvm_ir():
    from gpukit.graphics import trace
    scene = final_scene(0)
    leaky, leaky_shade = trace.leaky_cpu()
    out, segs = np.zeros((2, 3, 3), np.float32), np.zeros((2, 3), np.int64)
    args = (1, 1, gscene.camera(scene, 3, 2), *scene.arrays(), 4)
    leaky(out, segs, *args)
    trace.render_cpu_1core(out, segs, *args)
    clean = "\n".join(trace.shade_cpu.inspect_llvm().values())
    dirty = "\n".join(leaky_shade.inspect_llvm().values())
    assert trace.float64_ops(clean) == 0 and trace.float64_ops(dirty) > 20
    assert trace.float64_ops("%.5 = fmul double %.3, %.4\n") == 0          # only inside functions
    assert trace.float64_ops("define i32 @f() {\n%.5 = fmul double %.3, %.4\n") == 1


def test_raster_draws_or_skips_in_one_line():
    from gpukit.graphics import raster
    reason = raster.available()
    if reason is not None:                       # no moderngl or no EGL driver: one line, recorded
        record = raster.measure(final_scene(0))
        assert record == {"status": f"not run: {reason}"} and "\n" not in reason
        return
    got = raster.render_raster(final_scene(0), 32, 18, stacks=6, slices=12, frames=2)
    img = got["image"]
    assert img.shape == (18, 32, 3) and got["status"] == "ok" and got["median_s"] > 0
    assert img.std() > 0.05 and (img < 0.99).mean() > 0.5     # spheres and ground, not just sky


def test_sphere_mesh_is_closed_and_on_the_unit_sphere():
    from gpukit.graphics.raster import sphere_mesh
    verts, tris = sphere_mesh(5, 8)
    assert np.allclose(np.linalg.norm(verts, axis=1), 1, atol=1e-6)
    assert len(tris) == 2 * 5 * 8 and tris.min() >= 0 and tris.max() < len(verts)


def test_sphere_tests_are_counted_only_where_every_sphere_is_tested():
    """A row walking the BVH tests a few spheres per segment: no tests/s, no share of FP32."""
    from gpukit.bench import Timing
    from gpukit.graphics import measure, views

    def row(name, spp=2):
        timing = Timing(name, "numba", 0.5, [0.01, 0.01])      # its name is the row's
        return measure._row(name, "numba-cuda", 8, 4, spp, timing, 200, 50, {"tflops": 60.0})
    brute = {"numba-cpu", "numba-cpu-1core", "plain", "shared", "1 spp", "leaky", "all diffuse",
             "sorted"}
    for name in [*CPU_ROWS, *VARIANTS]:
        r = row(name)
        assert ("tests_per_s" in r) == (name in brute) == ("pct_fp32_peak" in r), name
        if name in brute:
            assert r["tests_per_s"] == pytest.approx(200 * 50 / 0.01)
    # a record made before the table: its BVH row still carries a share, which is not shown
    old = {**row("1 spp", 1), "name": "1 spp, BVH"}
    data = {"machine": {"gpu": {"name": "G"}}, "gpu": {"flops_per_test": 17,
                                                       "rows": [row("plain"), old]}}
    lines = views.variants("nvidia-h200", data).splitlines()
    plain = next(ln for ln in lines if ln.startswith("| every sphere tested |"))
    tree = next(ln for ln in lines if ln.startswith("| 1 sample per pixel, BVH |"))
    assert plain.rstrip(" |").endswith("%") and tree.rstrip(" |").endswith("-"), (plain, tree)


# ------------------------------------------------------------------ the simulator

def _simulated(width, height, spp, tmp, cpu_tmp):
    """In a fresh process on numba's CUDA simulator: the GPU kernels against the CPU, the
    whole measurement with its GPU parts at a tiny size, saved under ``tmp`` as if by the H200,
    and the measurement of a machine without a GPU, saved under ``cpu_tmp`` (one process, so
    that the CPU tracers compile once for both)."""
    from gpukit import device, results
    from gpukit.graphics import measure
    from gpukit.graphics.renderer import render as rnd
    scene = final_scene(0)
    out = {}
    again = rnd(scene, width, height, spp=spp, seed=9, backend="numba-cuda", linear=True)
    out["same_twice"] = bool(np.array_equal(again, rnd(scene, width, height, spp=spp, seed=9,
                                                        backend="numba-cuda", linear=True)))
    sky = rnd(empty_scene(), 5, 3, spp=1, seed=4, backend="numba-cuda", linear=True)
    out["sky"] = sky.tolist()
    tiny = (width, height, spp)
    sizes = {"cpu": {"numba-cpu": tiny, "numba-cpu-1core": (6, 3, 1), "numba-cpu-bvh": tiny}, "gpu": tiny,
             "progressive": ((8, 4), [1, 2], 8), "raster": dict(width=16, height=9, stacks=4, slices=8, frames=1),
             "furnace": (24, 14)}
    data = measure.measure_all(sizes, 1, gpu=True)
    part = data["gpu"]
    assert part["ptx_f64"] == {"plain": None, "leaky": None}      # the simulator compiles nothing
    # test data in place of what only a real compile gives, to render every view
    part["ptx_f64"] = {"plain": {"all": 18, "outside_sincos": 0}, "leaky": {"all": 245, "outside_sincos": 225}}
    machine = {**device.machine_record(), "slug": "nvidia-h200",
               "gpu": {"name": "simulated GPU", "multiprocessors": 1}}
    results.save("graphics", {"gpu": part, results.FILES: data[results.FILES]}, root=tmp,
                 machine=machine)
    out["part_rows"] = [r["name"] for r in part["rows"]]
    out["agreement"] = part["agreement"]
    out["max_abs_vs_plain"] = part["max_abs_vs_plain"]
    out["furnace"] = part["furnace"]
    out["cpu_balance"] = part["cpu_balance"]
    out["raster_status"] = part["raster"]["status"]
    from tests.helpers import _run_and_save
    out["cpu_record"] = _run_and_save("gpukit.graphics.measure:run", [32, 2], "graphics", cpu_tmp)
    from gpukit.graphics import raster
    out["raster_reason"] = raster.available()        # why OpenGL cannot draw here, or None
    return out


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    def make(folder):
        from gpukit import proc
        gpu_root, cpu_root = folder / "gpu", folder / "cpu"
        gpu_root.mkdir()
        cpu_root.mkdir()
        got = proc.run_fresh("tests.test_graphics:_simulated", 12, 5, 1, str(gpu_root),
                             str(cpu_root), timeout=600,
                             env={**proc.NO_GPU, "GPUKIT_RESULTS_DIR": str(gpu_root)})
        assert "error" not in got, got
        return {"got": got, "gpu": str(gpu_root), "cpu": str(cpu_root)}
    # made once for the two slow tests that read it, whichever workers take them
    made = shared_once(tmp_path_factory, "graphics-simulated", make)
    return made["got"], Path(made["gpu"]), Path(made["cpu"])


@pytest.mark.slow
def test_simulator_kernels_match_the_cpu_and_every_view_renders(simulated):
    got, tmp_path, _ = simulated
    assert got["same_twice"]
    np.testing.assert_allclose(np.array(got["sky"]), _sky_reference(5, 3, 1, 4), rtol=0, atol=SKY_ATOL)
    # every variant of the table measured (the scene is small enough for shared memory)
    assert got["part_rows"] == list(CPU_ROWS) + list(VARIANTS)
    # every kernel against the plain one, the plain one against the CPU (the same image)
    vs_plain = got["max_abs_vs_plain"]
    assert sorted(vs_plain) == sorted(name for name, v in VARIANTS.items() if v.compare)
    assert {"plain", "leaky", "shared", "bvh", "sorted"} <= set(vs_plain)
    assert got["agreement"]["max_abs"] <= ATOL and max(vs_plain.values()) <= ATOL, (got["agreement"], vs_plain)
    assert got["agreement"]["ok"] and got["agreement"]["max_share"] == 0.03
    assert [f["backend"] for f in got["furnace"]] == ["numba-cpu", "numba-cuda"]
    assert all(f["paths_on_sphere"] > 50 and f["paths_off"] == 0 == f["sky_off"] for f in got["furnace"])
    assert got["cpu_balance"]["dealt_max_over_mean"] >= 1
    reason = got["raster_reason"]
    assert got["raster_status"] == ("ok" if reason is None else f"not run: {reason}")
    png, = tmp_path.glob("*/graphics-5p.png")         # beside this machine's results
    with Image.open(png) as img:
        assert img.size == (12, 5)
    # what each view must show (the part it is about), rendered from the saved file
    expect = {"card": "    1. ", "hero": "data:image/jpeg", "speed": "| CPU, all cores |",
              "cpu": "busiest of", "ratio": "scalar code", "agreement": "passed",
              "variants": "| 1 sample per pixel, BVH |", "shared": "shared memory", "divergence": "diffuse",
              "bvh": "bit for bit", "leak": "| 245 |", "progressive": "<svg",
              "raster": "| path tracer, 1 spp, BVH |" if got["raster_status"] == "ok" else "not run: "}
    for view, needle in expect.items():
        md = pages.render("graphics", view, root=tmp_path)
        assert needle in md, (view, md[:500])
    assert pages.render("graphics", "card", root=tmp_path).count("    1. ") == 3
    assert "| `numba-cuda` |" in pages.render("graphics", "furnace", root=tmp_path)
    # the targets are judged for the scorecard, never in the chapter's views
    with pytest.raises(pages.MissingResults):
        pages.render("graphics", "targets", root=tmp_path)
    # 4 goals for 3 kernels, less the 1-spp frame not measured with shared memory
    judged = pages.TARGETS["graphics"](next(iter(__import__("gpukit.results", fromlist=["load"])
                                                 .load("graphics", root=tmp_path).values())))
    assert len(judged) == 11 and all(t.met is not None for t in judged)
    assert "225" in pages.render("graphics", "card", root=tmp_path)
    table = pages.render("graphics", "variants", root=tmp_path)
    assert all(f"| {v.label} |" in table for v in VARIANTS.values()), table


# ------------------------------------------------------------------ PTX for a real GPU, here

def _compile_for_sm90():
    """In a fresh process without the simulator: every kernel compiled to PTX for compute
    capability 9.0 (the H200's) through NVVM, which needs no GPU. numba asks the current device
    for its compute capability when it compiles a called device function: answer 9.0."""
    from numba import cuda
    from numba import types as T
    import numba.cuda.dispatcher as dispatcher

    from gpukit.graphics import gpu, measure

    class Hopper:
        compute_capability = (9, 0)
    dispatcher.get_current_device = lambda: Hopper()
    f1 = T.float32[::1]
    sig = (T.float32[:, :, ::1], T.int64[:, ::1], T.int64, T.int64, f1, f1, f1, f1, f1, T.int32[::1],
           f1, f1, f1, f1, T.float32[:, ::1], T.int64)
    i1, nodes = T.int32[::1], T.float32[:, ::1]
    kernels = {**{name: (k, sig) for name, k in gpu.KERNELS.items()},
               "first_hit": (gpu.first_hit_kernel, (i1, i1, T.int64, f1, f1, f1, f1, f1, i1, nodes, T.int64, T.int64)),
               "bucket": (gpu.bucket_kernel, (i1, i1, i1, i1)), "zero": (gpu.zero_kernel, (i1, i1)),
               "sorted": (gpu.render_kernel_sorted, sig[:2] + (i1,) + sig[2:])}
    out = {}
    for name, (kernel, sig) in kernels.items():
        ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0))
        lines = measure.f64_lines(ptx)
        out[name] = {"all": len(lines), "outside_sincos": sum(1 for ln in lines if not measure.LIBDEVICE_F64.search(ln)),
                     "entry": ".entry" in ptx}
    return out


def test_kernels_compile_for_the_h200_without_one():
    from gpukit import proc
    got = proc.run_fresh("tests.test_graphics:_compile_for_sm90", env={"NUMBA_ENABLE_CUDASIM": "0"}, timeout=300)
    if "error" in got and ("nvvm" in got["error"].lower() or "libNVVM" in got["error"]):
        pytest.skip(f"no NVVM here to compile PTX: {got['error']}")
    assert "error" not in got, got
    for name in ("plain", "shared", "bvh", "first_hit", "bucket", "zero", "sorted"):
        assert got[name]["entry"] and got[name]["outside_sincos"] == 0, (name, got[name])
    assert got["leaky"]["outside_sincos"] > 50


# ------------------------------------------------------------------ the command

def test_cli_writes_png(tmp_path):
    out = tmp_path / "r.png"
    proc = run_cli("render", "--width", 20, "--height", 12, "--spp", 2, "--depth", 3, "--seed", 4,
                   "--out", out, env={"CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stderr
    assert "ray segments/s" in proc.stdout and "spheres" in proc.stdout
    with Image.open(out) as img:
        assert img.size == (20, 12) and img.mode == "RGB"
        want = render(final_scene(4), 20, 12, spp=2, max_depth=3, seed=4)
        assert np.abs(np.asarray(img) / 255.0 - want).max() <= 0.5 / 255 + 1e-6
    assert [p.name for p in tmp_path.iterdir()] == ["r.png"]


@pytest.mark.parametrize("args, needle", [
    (["--width", "0"], "> 0"), (["--height", "-3"], "> 0"), (["--spp", "lots"], "whole number"),
    (["--depth", "0"], "> 0"), (["--depth", "65"], "at most 64"), (["--width", "20000"], "at most"),
    (["--seed", "-1"], "seed"), (["--backend", "opencl"], "invalid choice"),
])
def test_cli_bad_input(tmp_path, args, needle):
    line = assert_one_line_error(run_cli("render", "--out", tmp_path / "r.png", *args))
    assert needle in line
    assert not list(tmp_path.iterdir())


def test_cli_bad_output_and_missing_gpu(tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("a file, not a folder")
    assert "cannot write" in assert_one_line_error(run_cli("render", "--out", blocker / "r.png"))
    assert ".png" in assert_one_line_error(run_cli("render", "--out", tmp_path / "r.jpg"))
    assert "does not exist" in assert_one_line_error(run_cli("render", "--out", tmp_path / "no" / "r.png"))
    line = assert_one_line_error(run_cli("render", "--backend", "numba-cuda", "--out", tmp_path / "r.png",
                                         env={"CUDA_VISIBLE_DEVICES": ""}))
    assert "needs an NVIDIA GPU" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]


# ------------------------------------------------------------------ the chapter's views

@pytest.mark.slow      # shares the simulator's run with the test above
def test_benchmark_and_views_on_cpu(simulated):
    data, tmp_path = simulated[0]["cpu_record"], simulated[2]
    part = data["cpu"]
    assert [r["name"] for r in part["rows"]] == ["numba-cpu", "numba-cpu-1core", "numba-cpu-bvh"]
    assert all(r["segments"] >= r["width"] * r["height"] * r["spp"] for r in part["rows"])
    assert part["cpu_llvm_f64_clean"] == 0 < part["cpu_llvm_f64_leaky"]
    rmse = [r["rmse"] for r in part["progressive"]["rows"]]
    assert rmse[-1] < rmse[0] / 2                     # more samples, less noise
    reason = simulated[0]["raster_reason"]
    assert part["raster"]["status"] == ("ok" if reason is None else f"not run: {reason}")
    assert [f["backend"] for f in part["furnace"]] == ["numba-cpu"] and part["furnace"][0]["paths_off"] == 0
    b = part["cpu_balance"]
    assert b["threads"] == part["cores"] and 1 <= b["dealt_max_over_mean"] and 1 <= b["runs_max_over_mean"]
    expect = {"hero": "data:image/jpeg", "speed": "| CPU, all cores |", "cpu": "parallel efficiency",
              "bvh": "bit for bit", "leak": "LLVM IR", "progressive": "<svg",
              "raster": "| OpenGL" if part["raster"]["status"] == "ok" else "not run: "}
    for view, needle in expect.items():
        assert needle in pages.render("graphics", view, root=tmp_path), view
    for view in ("ratio", "agreement", "furnace", "variants", "shared", "divergence", "card"):
        with pytest.raises(pages.MissingResults):
            pages.render("graphics", view, root=tmp_path)          # GPU-only parts


# ------------------------------------------------------------------ real GPU

@pytest.mark.gpu
def test_gpu_kernel_has_no_float64_and_the_leaky_one_has():
    from gpukit.graphics import gpu, measure
    from gpukit.graphics.bvh import build_bvh
    scenes = {"final": gpu.DeviceScene(final_scene(0), 64, 32),
              "bvh": gpu.DeviceScene(build_bvh(final_scene(0)), 64, 32)}
    for v in VARIANTS.values():                       # compile every kernel of the table
        scenes.get(v.scene, scenes["final"]).launch(1, 8, 1, v.kernel)
    for kernel in (gpu.render_kernel, gpu.render_kernel_shared, gpu.render_kernel_bvh):
        assert measure.ptx_f64(kernel)["outside_sincos"] == 0
    assert measure.ptx_f64(gpu.render_kernel_leaky)["outside_sincos"] > 50


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 1), (17, 5), (320, 180)])
def test_gpu_matches_cpu_and_repeats(shape):
    scene = final_scene(0)
    cpu = render(scene, *shape, spp=4, seed=3, backend="numba-cpu", linear=True)
    gpu = render(scene, *shape, spp=4, seed=3, backend="numba-cuda", linear=True)
    assert np.array_equal(gpu, render(scene, *shape, spp=4, seed=3, backend="numba-cuda", linear=True))
    check = images_agree(gpu, cpu)                    # the chapter's one criterion
    assert check["ok"], check
    assert math.isclose(float(gpu.mean()), float(cpu.mean()), rel_tol=0.01)
    tree = render(scene, *shape, spp=4, seed=3, backend="numba-cuda-bvh", linear=True)
    assert images_agree(tree, cpu)["ok"]
    from gpukit.graphics.gpu import DeviceScene
    dev = DeviceScene(scene, *shape)
    dev.launch(4, 8, 3, "sorted")                     # the same pixels, computed in another order
    assert images_agree(dev.out.copy_to_host(), gpu)["ok"]


@pytest.mark.gpu
def test_gpu_sky_is_exact():
    got = render(empty_scene(), 7, 4, spp=2, seed=8, backend="numba-cuda", linear=True)
    np.testing.assert_allclose(got, _sky_reference(7, 4, 2, 8), rtol=0, atol=SKY_ATOL)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["numba-cuda", "numba-cuda-bvh"])
def test_gpu_white_furnace_on_the_ground_sphere(backend):
    blue = furnace_blues(1000.0, backend)
    assert set(np.unique(blue).tolist()) == {0.5, 1.0}, np.unique(blue)
