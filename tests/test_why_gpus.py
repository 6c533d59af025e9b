"""CPU vs GPU crossover: every backend's result, the crossover rule, the chapter's plots and tables."""

import copy
import json
import sys
from pathlib import Path

import numpy as np
import pytest


from gpukit import pages, results
from gpukit.why_gpus import kernels as xk
from gpukit.why_gpus import measure as xo
from gpukit.why_gpus import views as xv
from tests.helpers import ROOT, assert_one_line_error, cpu_results_file, shared_once

# 0 and 1; odd; around the SIMD block of 128; not a multiple of the GPU's 256-thread block
SIZES = [0, 1, 7, 127, 128, 129, 1003]
CPU = ["python", "numpy", "numba-1core", "numba-parallel"]


def inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)


@pytest.mark.parametrize("work", ["saxpy", "poly"])
@pytest.mark.parametrize("n", SIZES)
def test_cpu_backends_match_float64(work, n):
    x, y = inputs(n)
    ref = xk.reference(work, x, y)
    backends = CPU + (["numba-1core-naive"] if work == "poly" else [])
    for backend in backends:
        got = xk.compute(work, backend, x, y)
        assert got.dtype == np.float32 and got.shape == (n,)
        assert np.all(np.isfinite(got)), backend
        if n:
            err = np.max(np.abs(got - ref) / np.abs(ref))
            assert err <= xk.RTOL[work], (backend, err)


def test_reference_is_the_polynomial():
    x = np.array([0.0, 0.5, 0.999], dtype=np.float32)
    want = np.polyval(xk.COEFFS.astype(np.float64), x.astype(np.float64))
    assert np.allclose(xk.reference("poly", x), want, rtol=1e-12)
    assert xk.reference("poly", np.zeros(1, np.float32))[0] == pytest.approx(float(xk.COEFFS[-1]))
    assert np.array_equal(xk.reference("saxpy", np.ones(2, np.float32), np.full(2, 3, np.float32)), [5.0, 5.0])


@pytest.mark.parametrize("work", ["saxpy", "poly"])
@pytest.mark.parametrize("n", [0, 1, 257])
def test_gpu_kernel(work, n):
    # the numba CUDA simulator without a GPU, the device with one
    x, y = inputs(n, seed=n)
    got = xk.compute(work, "gpu", x, y)
    assert np.all(np.isfinite(got))
    if n:
        assert np.max(np.abs(got - xk.reference(work, x, y)) / xk.reference(work, x, y)) <= xk.RTOL[work]


@pytest.mark.parametrize("args, error", [
    (("cube", "numpy", np.ones(3)), ValueError),
    (("poly", "numpy", np.ones((2, 2))), ValueError),
    (("saxpy", "numpy", np.ones(3)), ValueError),                    # no y
    (("saxpy", "numpy", np.ones(3), np.ones(4)), ValueError),
    (("saxpy", "numba-1core-naive", np.ones(3), np.ones(3)), ValueError),
    (("poly", "opencl", np.ones(3)), ValueError),
])
def test_bad_arguments(args, error):
    with pytest.raises(error):
        xk.compute(*args)


def test_sizes_are_half_decades():
    assert xo.sizes(10**4) == [1000, 3162, 10000]
    assert xo.sizes(5000) == [1000, 3162, 5000]
    assert xo.sizes(10**9)[-1] == 10**9 and len(xo.sizes(10**9)) == 13
    with pytest.raises(ValueError):
        xo.sizes(0)


def test_check_catches_unwritten_and_wrong_elements():
    k = xk.numba_cpu()
    x, y = inputs(300)
    out = xk.compute("saxpy", "numpy", x, y)
    assert xo._check("saxpy", out, x, y, 300, "ok", k) <= xk.RTOL["saxpy"]
    bad = out.copy()
    bad[299] = np.nan
    with pytest.raises(AssertionError, match="NaN"):
        xo._check("saxpy", bad, x, y, 300, "nan", k)
    bad = out.copy()
    bad[5] *= 1.001
    with pytest.raises(AssertionError, match="relative error"):
        xo._check("saxpy", bad, x, y, 300, "off", k)


def test_public_api_is_lazy_and_complete():
    import subprocess

    import gpukit.why_gpus as why_gpus
    for name in why_gpus.__all__:
        assert getattr(why_gpus, name) is getattr(xk, name)
    with pytest.raises(AttributeError):
        why_gpus.no_such_name
    code = "import sys, gpukit.why_gpus as w; w.compute; print('numba' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "False", proc.stderr


# ------------------------------------------------------------------ the crossover rule

def rows(times: dict) -> list[dict]:
    return [{"backend": b, "size": s, "median_s": t} for b, series in times.items() for s, t in series.items()]


def test_crossover_on_synthetic_rows():
    cpu = {10**3: 1e-6, 10**4: 1e-5, 10**5: 1e-4, 10**6: 1e-3}
    slow_cpu = {s: 10 * t for s, t in cpu.items()}
    r = rows({"numba-parallel": cpu, "numpy": slow_cpu,
              "gpu-kernel": {10**3: 2e-5, 10**4: 2e-5, 10**5: 3e-5, 10**6: 1e-4},
              "gpu-pageable": {10**3: 1e-4, 10**4: 2e-4, 10**5: 2e-3, 10**6: 2e-2}})
    assert xo.best_cpu(r) == cpu                     # the fastest CPU row at each size
    assert xo.crossover(r, "gpu-kernel") == 10**5
    assert xo.crossover(r, "gpu-pageable") is None   # slower than the best CPU everywhere
    assert xo.crossover(r, "gpu-pinned") is None     # not measured


def test_crossover_must_hold_up_to_the_largest_size():
    r = rows({"numba-parallel": {1: 5.0, 2: 5.0, 3: 5.0, 4: 5.0},
              "gpu-kernel": {1: 1.0, 2: 9.0, 3: 1.0, 4: 1.0}})
    assert xo.crossover(r, "gpu-kernel") == 3        # a win at 1 does not count: it lost at 2
    r = rows({"numba-parallel": {1: 5.0, 2: 5.0}, "gpu-kernel": {1: 1.0, 2: 5.0}})
    assert xo.crossover(r, "gpu-kernel") is None     # a tie is not a win
    r = rows({"python": {1: 5.0}, "numba-parallel": {1: 9.0, 2: 9.0}, "gpu-kernel": {1: 6.0, 2: 1.0}})
    assert xo.crossover(r, "gpu-kernel") == 2        # the best CPU at size 1 is Python's 5.0


# ------------------------------------------------------------------ the chapter's plots and tables

@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """A CPU-only run in a fresh process that sees no GPU: the same on a GPU machine."""
    made = shared_once(tmp_path_factory, "why-gpus-results", lambda root: {
        "data": cpu_results_file("gpukit.why_gpus.measure:run", [3200, 3], "why_gpus", root),
        "root": str(root)})
    return made["data"], Path(made["root"])


def test_quick_run_on_cpu(quick_run):
    data, _ = quick_run
    for work in ("saxpy", "poly"):
        part = data[work]
        assert not part["errors"]
        got = {(r["backend"], r["size"]) for r in part["rows"]}
        want = {(b, s) for b in xo.BACKENDS[work] for s in (1000, 3162, 3200)}
        assert got == want
        assert all(r["median_s"] > 0 and r["max_rel_err"] <= xk.RTOL[work] for r in part["rows"])
        assert not any(r["backend"].startswith("gpu") for r in part["rows"])
    assert data["hardware"]["cpu"]["fp32_lanes"] in (4, 8, 16)


def test_renderers_on_cpu_results(quick_run):
    _, root = quick_run
    for work in ("saxpy", "poly"):
        svg = pages.render("why_gpus", f"{work}-plot", root=root)
        assert "<svg" in svg and "elements (float32)" in svg and "no GPU" in svg
        assert "\n\n" not in svg.split("<small>")[0].strip()        # a blank line would end the HTML block
    times = pages.render("why_gpus", "times", root=root)
    assert "3,162" in times and "| Python |" in times and "Measured on" in times
    assert "best CPU" in pages.render("why_gpus", "summary", root=root)
    assert "GPU: none" in pages.render("why_gpus", "hardware", root=root)
    assert "includes compiling" in pages.render("why_gpus", "first-call", root=root)
    key = pages.render("why_gpus", "key-numbers", root=root)
    assert "all CPU cores, SAXPY" in key and "launch" not in key     # no GPU rows on a CPU machine
    for view in ("crossover", "speedups"):
        with pytest.raises(pages.MissingResults):
            pages.render("why_gpus", view, root=root)              # no GPU, no crossover


def test_summary_compares_at_the_same_size():
    # one core measured only up to 10 elements, all cores up to 100: the one-core row must be
    # compared with the best CPU at 10, not with the all-cores time at 100
    rows = [{"backend": "numba-1core", "size": 10, "median_s": 2.0, "gbs": 1.0, "gflops": 1.0},
            {"backend": "numba-parallel", "size": 10, "median_s": 1.0, "gbs": 2.0, "gflops": 2.0},
            {"backend": "numba-parallel", "size": 100, "median_s": 10.0, "gbs": 2.0, "gflops": 2.0}]
    data = {"machine": {"cpu": {"model": "Test CPU"}, "date": "2026-01-01"},
            "hardware": {"cpu": {"cores_used": 2}}, "saxpy": {"rows": rows}, "poly": {"rows": rows}}
    text = pages.RENDERERS[("why_gpus", "summary")]("x", data)
    assert "0.50x" in text and "5.00x" not in text


def test_key_numbers_and_speedups_from_rows():
    part = {"rows": [{"backend": b, "size": s, "median_s": t, "gbs": 12.0 / t, "gflops": 1.0}
                     for b, series in {"numba-1core": {10: 4.0, 100: 40.0}, "numba-parallel": {10: 1.0, 100: 8.0},
                                       "python": {10: 400.0}, "gpu-kernel": {10: 2.0, 100: 2.0},
                                       "gpu-pinned": {10: 3.0, 100: 4.0}}.items() for s, t in series.items()],
            "crossover": {"gpu-kernel": 100}}
    data = {"hardware": {"cpu": {"cores_used": 2, "peak_gflops_1fma": 100.0, "clock_mhz": 1000.0},
                         "gpu": {"peak_tflops": 1.0, "theoretical_bandwidth_gbs": 24.0}},
            "machine": {"gpu": {"name": "G"}}, "saxpy": part, "poly": copy.deepcopy(part)}
    key = {(k.split(",")[0] if k.startswith("SAXPY crossover") else k): v for k, v in xv.key_numbers(data)}
    assert key["SAXPY crossover"] == "0 MB"                            # 100 elements x 12 B
    assert key["SAXPY: speed-up of all 2 cores over one core, at 100 elements"] == "5.0x"
    assert key["GPU SAXPY kernel at 100 elements: share of the data-sheet bandwidth (24 GB/s)"] == "25%"
    rows = xv.speedups(data)
    assert ["saxpy", xv.SHORT["python"], "200.0x", "133.33x", "10"] in rows
    assert ["saxpy", xv.SHORT["numba-parallel"], "4.0x", "2.00x", "100"] in rows


def test_renderers_mark_the_crossover(quick_run, tmp_path, monkeypatch):
    # The CPU results plus GPU rows shaped like a GPU run: checks the plot's markers and ratios.
    _, root = quick_run
    fake = copy.deepcopy(results.load("why_gpus", root=root).popitem()[1])
    fake.pop("benchmark")
    fake["machine"]["slug"] = "fake-gpu"
    fake["machine"]["gpu"] = {"name": "Fake GPU", "compute_capability": "9.0"}
    fake["hardware"]["gpu"] = {"name": "Fake GPU", "compute_capability": "9.0", "sms": 100,
                               "fp32_lanes_per_sm": 128, "clock_mhz": 2000.0, "peak_tflops": 51.2,
                               "theoretical_bandwidth_gbs": 4000.0}
    for work in ("saxpy", "poly"):
        part = fake[work]
        best = xo.best_cpu(part["rows"])
        for s, t in best.items():
            for b, f in (("gpu-kernel", 0.5 if s > 1000 else 2.0), ("gpu-pageable", 3.0), ("gpu-pinned", 3.0)):
                part["rows"].append({"backend": b, "size": s, "median_s": t * f, "gbs": 1.0, "gflops": 1.0,
                                     "first_call_s": 0.1})
        part["crossover"] = {b: xo.crossover(part["rows"], b) for b in xo.GPU_BACKENDS}
        assert part["crossover"]["gpu-kernel"] == 3162 and part["crossover"]["gpu-pageable"] is None
    results.save("why_gpus", fake, root=tmp_path, machine=fake["machine"])
    svg = pages.render("why_gpus", "saxpy-plot", root=tmp_path)
    assert "Fake GPU" in svg
    # a crossover is a vertical line in its GPU line's colour and style, with no text on the
    # plot area (the crossover table names the sizes)
    figures = []
    monkeypatch.setattr(pages, "svg", lambda fig: figures.append(fig) or "<svg/>")
    xv.plot_svg(fake, "poly")
    ax = figures[0].axes[0]
    assert not ax.texts
    vertical = [ln for ln in ax.lines if list(ln.get_xdata()) == [3162, 3162]]
    assert len(vertical) == 1 and vertical[0].get_color() == xv.COLORS["gpu-kernel"]
    assert "GPU kernel" in [t.get_text() for t in ax.get_legend().get_texts()]
    table = pages.render("why_gpus", "crossover", root=tmp_path)
    assert "3,162" in table and "never (up to 3,200)" in table
    hw = pages.render("why_gpus", "hardware", root=tmp_path)
    assert "100 SMs" in hw and "GPU / CPU" in hw


# ------------------------------------------------------------------ the example

@pytest.mark.parametrize("args, needle", [
    (["--n", "-5"], "--n must be >= 0"),
    (["--n", "lots"], "invalid int value"),
    (["--repeat", "0"], "--repeat"),
])
def test_example_bad_input(args, needle):
    import subprocess
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "why_gpus.py"), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert needle in assert_one_line_error(proc)


# ------------------------------------------------------------------ real GPU

@pytest.mark.gpu
@pytest.mark.parametrize("work", ["saxpy", "poly"])
@pytest.mark.parametrize("n", [1, 255, 257, 1_000_003])
def test_gpu_kernel_on_device(work, n):
    from numba import cuda
    assert cuda.is_available()
    x, y = inputs(n, seed=3)
    got = xk.compute(work, "gpu", x, y)
    assert np.all(np.isfinite(got))
    assert np.max(np.abs(got - xk.reference(work, x, y)) / xk.reference(work, x, y)) <= xk.RTOL[work]


@pytest.mark.gpu
@pytest.mark.parametrize("elems", xk.CUDA_C_ELEMS)
@pytest.mark.parametrize("n", [1, 255, 257, 1_000_003])
def test_cuda_c_polynomial_on_device(elems, n):
    # numba arrays in, only their addresses passed; sizes that leave threads idle or partial
    from numba import cuda
    x, _ = inputs(n, seed=4)
    dx, dout = cuda.to_device(x), cuda.to_device(np.full(n + 1, np.nan, np.float32))
    xk.horner_cuda_c(n, dx, dout, elems)
    got = dout.copy_to_host()
    assert np.isnan(got[n])                                   # nothing written past the end
    ref = xk.reference("poly", x)
    assert np.max(np.abs(got[:n] - ref) / ref) <= xk.RTOL["poly"]


def test_cuda_c_polynomial_bad_arguments():
    with pytest.raises(ValueError, match="elems"):
        xk.horner_cuda_c(10, None, None, 3)
    with pytest.raises(ValueError, match="32-bit"):
        xk.horner_cuda_c(2**32, None, None, 1)


@pytest.mark.gpu
def test_run_on_gpu_has_every_backend():
    data = xo.run(10**5, 3)
    kernels = data["poly_kernels"]
    assert len(kernels["rows"]) == 1 + len(xk.CUDA_C_ELEMS) and kernels["best_elems"] in xk.CUDA_C_ELEMS
    assert all(r["max_rel_err"] <= xk.RTOL["poly"] for r in kernels["rows"])
    assert kernels["rows"][0]["ptx"]["fma"] > 0
    for work in ("saxpy", "poly"):
        assert data[work]["errors"] == []
        backends = {r["backend"] for r in data[work]["rows"]}
        assert set(xo.GPU_BACKENDS) <= backends
        assert set(data[work]["crossover"]) == set(xo.GPU_BACKENDS)
    assert data["hardware"]["gpu"]["sms"] > 0


def test_hardware_facts_of_a_gpu_take_the_fp32_peak_from_the_machine_record(monkeypatch):
    from gpukit import device
    h200 = json.loads((ROOT / "results" / "nvidia-h200" / "doctor.json").read_text())["machine"]["gpu"]
    monkeypatch.setattr(device, "gpu_properties", lambda index=0: h200)
    g = xo.hardware_facts(gpu=True)["gpu"]
    assert g["sms"] == 132 and g["fp32_lanes_per_sm"] == 128 and g["clock_mhz"] == 1980.0
    assert abs(g["peak_tflops"] - 66.9) < 0.05
