"""Mandelbrot: every backend gives the same counts; the CLI's bad input; the chapter's tables."""

import re
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from gpukit import device, pages
from gpukit.mandelbrot import colorize, write_png
from gpukit.mandelbrot import kernels as mandel
from gpukit.mandelbrot import measure as mb
from tests.helpers import ROOT, assert_one_line_error, cpu_results_file, run_cli

# 333 and 97 are not multiples of the 16 x 16 block; 1 x 1 is one thread in one block
SHAPES = [(1, 1), (333, 97), (17, 5)]
CPU_BACKENDS = ["numpy", "numba-cpu", "numba-cpu-1core", "numba-cpu-simd", "torch"]


@pytest.fixture(scope="module")
def references():
    return {(w, h): mandel.mandelbrot(w, h, max_iter=64, backend="numpy") for w, h in SHAPES}


def test_reference_has_the_right_shape_and_values():
    counts = mandel.mandelbrot(40, 30, max_iter=50)
    assert counts.shape == (30, 40) and counts.dtype == np.int32
    assert counts.min() >= 0 and counts.max() == 50          # some points never escape
    assert counts[0, 0] < 5                                  # (-2, -1.5) escapes at once
    inside = mandel.mandelbrot(1, 1, max_iter=50, bounds=(-0.1, 0.1, -0.1, 0.1))
    assert inside[0, 0] == 50                                # (-0.1, -0.1) is in the set


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("shape", SHAPES)
def test_cpu_backends_identical_in_float64(backend, shape, references):
    got = mandel.mandelbrot(*shape, max_iter=64, backend=backend)
    assert np.array_equal(got, references[shape])


# numba's simulator runs a kernel far slower than a GPU: there 41 x 19 stands for
# 333 x 97 (3 x 2 blocks of 16 x 16, the last across and down only partly filled)
CUDA_SHAPES = SHAPES if not device.simulator_enabled() else [(1, 1), (41, 19), (17, 5)]


@pytest.mark.parametrize("shape", CUDA_SHAPES)
def test_numba_cuda_kernel_identical(shape, references):
    # on the simulator without a GPU, on the real device with one
    got = mandel.mandelbrot(*shape, max_iter=64, backend="numba-cuda")
    want = references.get(shape)
    if want is None:
        want = mandel.mandelbrot(*shape, max_iter=64, backend="numpy")
    assert np.array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("counter", ["int32", "int64"])
@pytest.mark.parametrize("dispatch", ["resolved", "numba"])
def test_numba_cuda_counters_and_dispatches_agree(dtype, counter, dispatch):
    # every kernel and both ways of launching it draw the CPU loop's image, at a size that
    # is not a multiple of the 16 x 16 block
    ref = mandel.mandelbrot(37, 21, max_iter=64, dtype=dtype, backend="numba-cpu")
    got = mandel.mandelbrot(37, 21, max_iter=64, dtype=dtype, backend="numba-cuda",
                            counter=counter, dispatch=dispatch)
    assert np.array_equal(got, ref)


@pytest.mark.parametrize("kwargs, needle", [({"counter": "int16"}, "counter must be"),
                                            ({"dispatch": "fast"}, "dispatch must be")])
def test_bad_counter_or_dispatch(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        mandel.mandelbrot(8, 8, backend="numba-cuda", **kwargs)


_PTX = """
import json, sys
from numba import cuda
from gpukit.mandelbrot import kernels as k
out = {}
for name in sys.argv[1:]:
    real = "float32" if "32" in name else "float64"
    sig = f"void(int32[:, ::1], {real}, {real}, {real}, {real}, int32)"
    out[name] = cuda.compile_ptx(getattr(k, name).py_func, sig, cc=(9, 0))[0]
print(json.dumps(out))
"""


def test_the_counter_stays_32_bit_in_the_compiled_loop():
    # Compiling to PTX needs numba's NVVM but no GPU; the simulator is off in the child.
    import json
    import os
    import re
    names = ["mandel_f32", "mandel_f64", "mandel_kernel_f32", "mandel_kernel_f64"]
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    done = subprocess.run([sys.executable, "-c", _PTX, *names], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)
    if done.returncode and re.search(r"NVVM|libnvvm|CUDA_HOME|cuda_paths", done.stderr):
        pytest.skip("numba cannot find NVVM here: " + done.stderr.strip().splitlines()[-1])
    assert done.returncode == 0, done.stderr[-2000:]
    ptx = json.loads(done.stdout)
    step = {name: re.findall(r"add\.s(32|64)\s+%\w+, %\w+, 1;", text) for name, text in ptx.items()}
    assert step["mandel_f32"] == ["32"] and step["mandel_f64"] == ["32"]
    assert step["mandel_kernel_f32"] == ["64"] and step["mandel_kernel_f64"] == ["64"]


@pytest.mark.parametrize("width", [1, 63, 64, 65, 129])
def test_simd_blocks_match_the_scalar_loop_in_float32(width):
    # blocks of LANES pixels; the last one repeats its last column: widths around LANES
    ref = mandel.mandelbrot(width, 9, max_iter=80, dtype="float32", backend="numba-cpu")
    got = mandel.mandelbrot(width, 9, max_iter=80, dtype="float32", backend="numba-cpu-simd")
    assert mandel.LANES == 64 and np.array_equal(got, ref)


def test_simd_loop_compiles_to_packed_multiplies():
    # the point of the tuned loop: LLVM gives it SIMD multiplies, the scalar loop gets none
    found = mb.simd_instructions()
    assert found["numba-cpu-simd"]["packed_mul"] > 0
    assert found["numba-cpu"]["packed_mul"] == 0 and found["numba-cpu"]["scalar_mul"] > 0


def test_float32_differs_little():
    ref = mandel.mandelbrot(333, 97, max_iter=64)
    got = mandel.mandelbrot(333, 97, max_iter=64, dtype="float32", backend="numba-cpu")
    assert got.dtype == np.int32
    assert np.count_nonzero(got != ref) / ref.size < 0.01
    assert np.array_equal(got, mandel.mandelbrot(333, 97, max_iter=64, dtype="float32"))


@pytest.mark.parametrize("kwargs, error", [
    ({"width": 0, "height": 5}, ValueError),
    ({"width": 5, "height": -1}, ValueError),
    ({"width": 2.5, "height": 5}, TypeError),
    ({"width": 5, "height": 5, "max_iter": 0}, ValueError),
    ({"width": 5, "height": 5, "bounds": (1, 0, 0, 1)}, ValueError),
    ({"width": 5, "height": 5, "bounds": (0, 1, 0)}, ValueError),
    ({"width": 5, "height": 5, "bounds": (0, float("inf"), 0, 1)}, ValueError),
    ({"width": 5, "height": 5, "dtype": "float16"}, ValueError),
    ({"width": 5, "height": 5, "backend": "opencl"}, ValueError),
])
def test_bad_arguments(kwargs, error):
    width, height = kwargs.pop("width"), kwargs.pop("height")
    with pytest.raises(error):
        mandel.mandelbrot(width, height, **kwargs)


def test_colorize_and_write_png(tmp_path):
    counts = mandel.mandelbrot(30, 20, max_iter=40)
    rgb = colorize(counts, 40)
    assert rgb.shape == (20, 30, 3) and rgb.dtype == np.uint8
    assert (rgb[counts == 40] == 0).all() and rgb[counts < 40].any()
    write_png(rgb, str(tmp_path / "m.png"))
    with Image.open(tmp_path / "m.png") as img:
        assert img.size == (30, 20) and np.array_equal(np.asarray(img), rgb)
    assert [p.name for p in tmp_path.iterdir()] == ["m.png"]


def test_every_public_name_resolves():
    import gpukit.kernels
    import gpukit.mandelbrot
    assert all(getattr(gpukit.mandelbrot, name) is not None for name in gpukit.mandelbrot.__all__)
    assert gpukit.mandelbrot.mandelbrot is gpukit.kernels.mandelbrot is mandel.mandelbrot


def test_target_backend_never_reaches_a_gpu():
    record = mb.target_backend_pitfall()
    assert "Error" in record["decorated"] + record.get("called", "") or "CPU" in record["decorated"]


# ------------------------------------------------------------------ the command

def test_cli_writes_png(tmp_path):
    out = tmp_path / "m.png"
    proc = run_cli("mandelbrot", "--width", 64, "--height", 48, "--max-iter", 32, "--out", out,
                   env={"CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stderr
    assert "first call" in proc.stdout and "Mpixel/s" in proc.stdout
    with Image.open(out) as img:
        assert img.size == (64, 48) and img.mode == "RGB"
    assert [p.name for p in tmp_path.iterdir()] == ["m.png"]


@pytest.mark.parametrize("args, needle", [
    (["--width", "0"], "> 0"),
    (["--height", "-3"], "> 0"),
    (["--width", "12.5"], "whole number"),
    (["--max-iter", "many"], "whole number"),
    (["--backend", "opencl"], "invalid choice"),
    (["--bounds", "1", "0", "-1", "1"], "XMIN < XMAX"),
    (["--bounds", "0", "1", "1", "1"], "YMIN < YMAX"),
    (["--bounds", "0", "1", "nan", "1"], "finite"),
    (["--width", "2000000", "--height", "2000000"], "memory"),
    (["--cmap", "rainbowz"], "colormap"),
])
def test_cli_bad_input(tmp_path, args, needle):
    out = tmp_path / "m.png"
    line = assert_one_line_error(run_cli("mandelbrot", "--out", out, *args))
    assert needle in line
    assert not list(tmp_path.iterdir())          # nothing half-written


def test_cli_unwritable_output(tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("a file, not a folder")
    line = assert_one_line_error(run_cli("mandelbrot", "--width", 8, "--height", 8,
                                         "--out", blocker / "m.png"))
    assert "cannot write" in line
    line = assert_one_line_error(run_cli("mandelbrot", "--out", tmp_path / "m.jpg"))
    assert ".png" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]


def test_cli_gpu_backend_without_gpu(tmp_path):
    line = assert_one_line_error(run_cli("mandelbrot", "--backend", "cupy", "--out", tmp_path / "m.png",
                                         env={"CUDA_VISIBLE_DEVICES": ""}))
    assert "needs an NVIDIA GPU" in line


# ------------------------------------------------------------------ the chapter's tables

@pytest.mark.slow
def test_benchmark_and_tables_on_cpu(tmp_path):
    # each backend in a fresh process that saves its counts; the parent compares them
    data = cpu_results_file("gpukit.mandelbrot.measure:run", [48, 3], "mandelbrot", tmp_path)
    part = data["cpu"]
    assert all("error" not in r for r in part["rows"])
    assert all(r["differing_pixels"] == 0 for r in part["rows"] if r["dtype"] == "float64")
    assert all(r["process_s"] > r["first_call_s"] > 0 and r["pixels"] == r["size"] ** 2
               for r in part["rows"])
    assert all("counts" not in r and "out" not in r for r in part["rows"])
    md = pages.render("mandelbrot", "table", root=tmp_path)
    assert "`numba-cpu`" in md and "identical" in md and "Measured on" in md
    assert "`numba-cpu-simd`" in md and all("vs_simd" in r for r in part["rows"] if "median_s" in r)
    assert "lanes filled, at most" in pages.render("mandelbrot", "simd", root=tmp_path)
    assert "float32" in pages.render("mandelbrot", "precision", root=tmp_path)
    assert "target_backend" in pages.render("mandelbrot", "pitfall", root=tmp_path)
    (folder,) = (f for f in tmp_path.iterdir() if f.is_dir())
    assert len(part["gallery"]) == 2 and all((folder / g["png"]).is_file() for g in part["gallery"])
    with pytest.raises(pages.MissingResults):
        pages.render("mandelbrot", "cache", root=tmp_path)   # a GPU-only experiment


def test_lane_share_counts_narrow_and_scalar_multiplies():
    from gpukit.mandelbrot.views import lane_share
    avx512 = {"cpu": {"simd": ["avx", "avx2", "avx512f"]}}
    avx2 = {"cpu": {"simd": ["avx", "avx2"]}}
    half = {"packed_mul": 6, "packed_mul_512": 0, "scalar_mul": 6}
    assert lane_share(half, avx512) == pytest.approx((6 * 4 + 6) / 12 / 8)
    assert lane_share(half, avx2) == pytest.approx((6 * 4 + 6) / 12 / 4)
    wide = {"packed_mul": 4, "packed_mul_512": 4, "scalar_mul": 0}
    assert lane_share(wide, avx512) == 1.0
    assert lane_share({"packed_mul": 0, "packed_mul_512": 0, "scalar_mul": 0}, avx512) is None


def test_targets_come_from_the_record():
    from gpukit import results
    pages._load_modules()
    data = results.load("mandelbrot")[results.reference_machine()]
    target, kernel, first = pages.TARGETS["mandelbrot"](data)
    worst = max(r["differing_pixels"] for r in data["gpu"]["rows"]
                if r["dtype"] == "float64" and not r.get("contract") and "differing_pixels" in r)
    assert target.met is (worst == 0) and f"{worst:,}" in target.value
    assert "float32" in kernel.name and "1.10" in kernel.goal and "30 ms" in first.goal


def _with_new_rows(data: dict) -> dict:
    """A copy of a record with what the current benchmark adds: numba's 32-bit-counter kernel
    alone, and warm-cache processes of both ways of launching (one with a collection)."""
    import copy
    new = copy.deepcopy(data)
    p = new["gpu"]
    # the committed record may hold these rows already: made-up ones replace them
    p["rows"] = [r for r in p["rows"] if not (r["backend"] == "numba-cuda" and r.get("preallocate")
                                               and r.get("counter") == "int32")]
    p["cache"] = [c for c in p["cache"] if c.get("dispatch") != "resolved"]
    cupy32 = next(r for r in p["rows"] if r.get("preallocate") and r["backend"] == "cupy"
                  and r["dtype"] == "float32")
    p["rows"].append({**cupy32, "backend": "numba-cuda", "counter": "int32",
                      "median_s": cupy32["median_s"] * 1.03, "host_median_s": 5e-5})
    warm = next(c for c in p["cache"] if c["case"] == "warm cache (loads)")
    p["cache"] += [{**warm, "case": "warm cache, types named once", "dispatch": "resolved",
                    "first_call_s": s, "first_call_gc_s": g, "first_call_full_gc_s": g,
                    "gc_objects": 210000} for s, g in ((0.003, 0.0), (0.072, 0.069), (0.0025, 0.0))]
    return new


def test_targets_and_views_of_a_record_with_the_new_rows():
    from gpukit import results
    from gpukit.mandelbrot import views
    pages._load_modules()
    data = _with_new_rows(results.load("mandelbrot")[results.reference_machine()])
    _, kernel, first = pages.TARGETS["mandelbrot"](data)
    assert kernel.value == "1.03x" and kernel.met is True
    # the median of the three processes, not the one a collection landed in
    assert first.value == "3.00 ms" and first.met is True
    table = views.kernels("nvidia-h200", data)
    assert "float32, 64-bit counter" in table and "float32, 32-bit counter" in table
    assert "| 1.03x |" in table
    cache = views.cache("nvidia-h200", data)
    assert "69.00 ms" in cache and cache.count("types named once") == 3
    missing = copy_without_cache(data)
    assert pages.TARGETS["mandelbrot"](missing)[2].met is None


def copy_without_cache(data: dict) -> dict:
    import copy
    new = copy.deepcopy(data)
    new["gpu"]["cache"] = []
    return new


def test_fresh_process_failure_is_a_row(tmp_path):
    row = mb._fresh({"backend": "no-such-backend", "dtype": "float64", "size": 8, "repeat": 1,
                     "max_iter": 8}, str(tmp_path))
    assert "unknown backend" in row["error"] and row["process_s"] > 0 and "counts" not in row


def test_measure_command_line_is_remeasure_cache_only():
    proc = subprocess.run([sys.executable, "-m", "gpukit.mandelbrot.measure"], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode != 0 and "remeasure-cache" in proc.stderr


def test_gallery_is_drawn_at_record_time_and_read_beside_the_record(tmp_path):
    """The page's two pictures come from PNG files saved beside the record (no kernel runs
    when the site is built); a record made before them says they are not recorded yet."""
    import base64
    import json

    from gpukit import results
    from gpukit.mandelbrot.meta import GALLERY
    ref = results.reference_machine()
    record = json.loads((results.PROJECT / "results" / ref / "mandelbrot.json").read_text())
    record["gpu"].pop("gallery", None)
    folder = tmp_path / ref
    folder.mkdir()
    (folder / "mandelbrot.json").write_text(json.dumps(record))
    assert "not recorded yet" in pages.render("mandelbrot", "gallery", root=tmp_path)
    record["gpu"]["gallery"], files = mb.gallery()
    assert sorted(files) == sorted(g[0] for g in GALLERY)
    (folder / "mandelbrot.json").write_text(json.dumps(record))
    for name, blob in files.items():
        (folder / name).write_bytes(blob)
    html = pages.render("mandelbrot", "gallery", root=tmp_path)
    shown = [base64.b64decode(u) for u in re.findall(r'src="data:image/png;base64,([^"]+)"', html)]
    assert shown == [files[g[0]] for g in GALLERY] and all(g[1] in html for g in GALLERY)
    with pytest.raises(ValueError):               # only a file beside the record
        pages.Record(record).file(f"../{ref}/{GALLERY[0][0]}")
    (folder / GALLERY[0][0]).unlink()
    with pytest.raises(FileNotFoundError):
        pages.render("mandelbrot", "gallery", root=tmp_path)


# ------------------------------------------------------------------ real GPU

@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["numba-cuda", "cupy", "torch"])
@pytest.mark.parametrize("shape", SHAPES + [(1000, 1000)])
def test_gpu_backends_identical_in_float64(backend, shape):
    ref = mandel.mandelbrot(*shape, max_iter=256, backend="numba-cpu")
    assert np.array_equal(mandel.mandelbrot(*shape, max_iter=256, backend=backend), ref)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["numba-cuda", "cupy"])
def test_gpu_float32_and_fma_differ_little(backend):
    ref = mandel.mandelbrot(1000, 1000, max_iter=256, backend="numba-cpu")
    f32 = mandel.mandelbrot(1000, 1000, max_iter=256, backend=backend, dtype="float32")
    assert np.array_equal(f32, mandel.mandelbrot(1000, 1000, max_iter=256, backend="numba-cpu",
                                                 dtype="float32"))
    assert np.count_nonzero(f32 != ref) / ref.size < 0.01
    fma = mandel.mandelbrot(1000, 1000, max_iter=256, backend=backend, contract=True)
    assert np.count_nonzero(fma != ref) / ref.size < 0.01


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_counters_and_dispatches_identical(dtype):
    ref = mandel.mandelbrot(1000, 700, max_iter=256, backend="numba-cpu", dtype=dtype)
    for counter in ("int32", "int64"):
        for dispatch in ("resolved", "numba"):
            got = mandel.mandelbrot(1000, 700, max_iter=256, backend="numba-cuda", dtype=dtype,
                                    counter=counter, dispatch=dispatch)
            assert np.array_equal(got, ref), (counter, dispatch)
    # the resolved launch found the compiled kernel for the named types
    assert mandel._launcher(mandel._KERNELS[dtype, "int32"], dtype).compiled is not None


@pytest.mark.gpu
def test_gpu_results_stay_on_gpu():
    import cupy
    from numba import cuda
    assert isinstance(mandel.mandelbrot(33, 17, backend="cupy", to_host=False), cupy.ndarray)
    assert cuda.is_cuda_array(mandel.mandelbrot(33, 17, backend="numba-cuda", to_host=False))
