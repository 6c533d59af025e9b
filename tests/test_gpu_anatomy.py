"""GPU anatomy chapter: kernels at awkward sizes, occupancy arithmetic, the example, the renderers."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from numba import cuda

from gpukit import pages, results
from gpukit.gpu_anatomy import host, kernels, measure
from tests.helpers import ROOT, cpu_results_file, run_without_gpu, shared_once

H200 = json.loads((ROOT / "results" / "nvidia-h200" / "doctor.json").read_text())["machine"]["gpu"]


def _device_random(n, seed=1):
    x = cuda.device_array(n, dtype=np.float32)
    kernels.fill_random[(n + 63) // 64, 64](x, seed)
    return x, x.copy_to_host()


# ------------------------------------------------------------------ kernels (simulator or GPU)

def test_fill_random_is_not_constant_and_in_range():
    _, hx = _device_random(777)
    assert ((hx >= 0.5) & (hx < 1.5)).all()
    assert len(np.unique(hx)) > 700
    _, other = _device_random(777, seed=2)
    assert not np.array_equal(hx, other)


@pytest.mark.parametrize("kernel", [kernels.read_sum_dependent, kernels.read_sum, kernels.read_sum_ilp4])
@pytest.mark.parametrize("n, grid, threads", [(1, 1, 32), (999, 3, 32), (130, 2, 64)])
def test_read_kernels_sum_every_element_once(kernel, n, grid, threads):
    x, hx = _device_random(n)
    partial = cuda.to_device(np.full(grid * threads, np.nan, dtype=np.float32))
    kernel[grid, threads](x, partial)
    got = partial.copy_to_host()
    assert np.isfinite(got).all()                       # every thread wrote its partial sum
    # thread t sums elements t, t + T, t + 2T, ...: check each partial, not only the total
    T = grid * threads
    ref = np.array([hx[t::T].astype(np.float64).sum() for t in range(T)])
    assert np.allclose(got, ref, rtol=1e-5, atol=0)


@pytest.mark.parametrize("n, stride", [(1, 1), (1000, 3), (257, 32), (64, 2)])
def test_strided_copy_touches_exactly_the_strided_elements(n, stride):
    x, hx = _device_random(n)
    m = n // stride
    if m == 0:
        pytest.skip("nothing to copy")
    out = cuda.to_device(np.full(m + 5, np.nan, dtype=np.float32))   # 5 guard elements
    kernels.strided_copy[(m + 31) // 32, 32](x, out[:m], stride)
    got = out.copy_to_host()
    assert np.array_equal(got[:m], hx[: m * stride: stride])
    assert np.isnan(got[m:]).all()                       # nothing written past the end


@pytest.mark.parametrize("k", [1, 2, 4, 32])
def test_divergent_uniform_and_branchless_kernels_agree(k):
    n, iters = 1024, 3
    x, hx = _device_random(n)
    outs = []
    for mode in range(3):
        out = cuda.to_device(np.full(n, np.nan, dtype=np.float32))
        kernels.paths_kernel[n // 256, 256](x, out, k, iters, mode)
        outs.append(out.copy_to_host())
    assert all(np.array_equal(outs[0], o) for o in outs[1:])
    assert np.allclose(outs[0], kernels.paths_reference(hx, k, iters), rtol=1e-5)


def test_paths_differ_from_each_other():
    # if every path computed the same thing, the divergence experiment would prove nothing
    x = np.full(4, 1.0, dtype=np.float32)
    ref = kernels.paths_reference(x, 4, 2000)
    assert len(np.unique(ref)) == 4


def test_warp_renumbering_is_a_permutation():
    # mode 1 gives thread t element e(t); each warp must share e % k and all elements be covered
    n = 2048
    for k in kernels.PATHS:
        t = np.arange(n)
        w = t // 32
        e = (w // k) * 32 * k + (t % 32) * k + w % k
        assert np.array_equal(np.sort(e), t)
        assert all(len(set(e[i:i + 32] % k)) == 1 for i in range(0, n, 32))


def test_pointer_chase_follows_the_cycle():
    nxt = kernels.random_cycle(101, seed=4)
    seen, j = set(), 0
    for _ in range(101):
        seen.add(j)
        j = int(nxt[j])
    assert j == 0 and len(seen) == 101                   # one cycle through every element
    pos = cuda.to_device(np.array([5], dtype=np.int32))
    kernels.chase[1, 1](cuda.to_device(nxt), 37, pos)
    assert int(pos.copy_to_host()[0]) == kernels.walk(nxt, 5, 37)


def test_selfcheck_passes():
    assert all(c["ok"] for c in measure.selfcheck())


def test_simulator_part_records_a_failed_child(monkeypatch):
    calls = []

    def failing(target, *args, **kw):
        calls.append((target, kw.get("env")))
        return {"error": "RuntimeError: boom", "process_s": 0.1}

    monkeypatch.setattr(measure.proc, "run_fresh", failing)
    assert measure.simulator_part() == {"n": 0, "rows": [], "error": "RuntimeError: boom"}
    assert calls == [("gpukit.gpu_anatomy.measure:selfcheck", measure.proc.NO_GPU)]


def test_public_api_is_lazy_and_complete():
    import gpukit.gpu_anatomy as anatomy
    for name in anatomy.__all__:
        assert getattr(anatomy, name) is not None
    with pytest.raises(AttributeError):
        anatomy.no_such_name
    code = "import sys, gpukit.gpu_anatomy; print('numba' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "False", proc.stderr


# ------------------------------------------------------------------ arithmetic

@pytest.mark.parametrize("threads, regs, smem, blocks, warps, limiter", [
    (256, 32, 0, 8, 64, "threads"),
    (1024, 64, 0, 1, 32, "registers"),
    (128, 32, 100 * 1024, 2, 8, "shared memory"),
    (32, 16, 0, 32, 32, "block slots"),
    (96, 40, 0, 17, 51, "registers"),       # 1280 registers per warp: 51 warps fit, 17 blocks of 3
])
def test_occupancy_on_the_h200(threads, regs, smem, blocks, warps, limiter):
    occ = kernels.occupancy(threads, regs, smem, H200)
    assert (occ["blocks_per_sm"], occ["warps_per_sm"], occ["limited_by"]) == (blocks, warps, limiter)
    assert 0 < occ["occupancy"] <= 1


@pytest.mark.parametrize("args", [(0, 32, 0), (2048, 32, 0), (256, -1, 0), (256, 32, -5)])
def test_occupancy_bad_input(args):
    with pytest.raises(ValueError):
        kernels.occupancy(*args, H200)


def test_littles_law():
    law = kernels.littles_law(4000, 500, 100)             # 4 TB/s x 500 ns = 2 MB
    assert law["bytes_in_flight"] == pytest.approx(2e6)
    assert law["bytes_per_sm"] == pytest.approx(2e4)
    assert law["warps_per_sm_one_load_each"] == pytest.approx(2e4 / 128)
    with pytest.raises(ValueError):
        kernels.littles_law(0, 500, 100)


def test_window_elements():
    assert kernels.window_elements(100) == 47 * 2**20    # 100 GB/s x 2 ms = 50 MB, whole MiB-floats
    assert kernels.window_elements(1.0) == 2**24         # never below the minimum (64 MiB)
    assert kernels.window_elements(4000) == 2**28        # nor above the maximum (1 GiB)


def test_host_facts_describe_this_machine():
    facts = host.host_facts()
    assert facts["usable_cpus"] >= 1 and facts["float32_lanes"] in (4, 8, 16)
    if Path("/sys/devices/system/cpu/cpu0/cache").exists():
        assert any(c["level"] == 1 and c["bytes"] for c in facts["caches"])


# ------------------------------------------------------------------ example

def test_example_bad_input():
    for bad in (["--n", "-5"], ["--n", "1000"], ["--iters", "0"]):
        proc = subprocess.run([sys.executable, "examples/gpu_anatomy.py", *bad], capture_output=True,
                              text=True, cwd=ROOT, timeout=300)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


# ------------------------------------------------------------------ renderers

@pytest.fixture(scope="module")
def cpu_results(tmp_path_factory):
    """A quick CPU run() saved as a results file (host part and the simulator self-check), in a
    fresh process that sees no GPU: the same on a GPU machine."""
    def make(root):
        cpu_results_file("gpukit.gpu_anatomy.measure:run", [2**16, 3], measure.NAME, root)
        return str(root)
    root = Path(shared_once(tmp_path_factory, "gpu-anatomy-results", make))
    (saved,) = results.load(measure.NAME, root=root).values()
    return root, saved


def test_cpu_run_records_host_and_simulator(cpu_results):
    _, data = cpu_results
    host = data["host"]
    assert "error" not in host and host["facts"]["model"]
    strided = [r for r in host["rows"] if r.get("kind") == "strided"]
    assert [r["stride"] for r in strided] == list(kernels.STRIDES)
    assert strided[0]["fraction_of_stride1"] == 1.0
    assert all(c["ok"] for c in data["simulator"]["checks"])


def test_cpu_renderers(cpu_results):
    root, data = cpu_results
    facts = pages.render(measure.NAME, "facts", root=root)
    assert data["host"]["facts"]["model"] in facts and "without a GPU" in facts and "Measured on" in facts
    assert "|  | host CPU |" in facts and "| GPU |" not in facts     # no column of dashes
    svg = pages.render(measure.NAME, "strided", root=root)
    assert svg.count("<svg") == 1 and "stride" in svg
    for view in ("occupancy", "occupancy-table", "occupancy-latency", "latency", "divergence",
                 "divergence-summary", "launch", "graph", "little", "strided-traffic"):
        with pytest.raises(pages.MissingResults):
            pages.render(measure.NAME, view, root=root)      # GPU-only parts


def _synthetic_gpu(data):
    """The CPU run plus GPU parts made up in this test (shape only; no page uses them)."""
    d = json.loads(json.dumps(data, default=float))
    d["machine"] = {**d["machine"], "gpu": H200, "slug": "test-gpu"}
    t = lambda s, **kw: {"median_s": s, "first_call_s": s, **kw}  # noqa: E731
    d["latency"] = {"n": 1, "rows": [
        t(4e-3, name="load latency, L2", array_bytes=2**23, steps=20000, latency_ns=200, latency_cycles=400),
        t(1e-2, name="load latency, memory", array_bytes=2**28, steps=20000, latency_ns=500,
          latency_cycles=1000)]}
    rows = []
    for v in kernels.READ_VARIANTS:
        for th in (32, 256):
            for k in (1, 8):
                w = k * th // 32
                rows.append(t(1e-3, name=f"{v} {th} {k}", variant=v, threads=th, blocks_per_sm=k,
                              warps_per_sm=w, gbs=50.0 * w, registers=20))
    d["occupancy"] = {"n": 1, "rows": rows, "copy_ceiling_gbs": 4000.0, "theoretical_gbs": 4800.0}
    d["strided"] = {"n": 1, "rows": [t(1e-3 * s, name=f"s{s}", stride=s, gbs=4000 / s,
                                        fraction_of_stride1=1 / s) for s in kernels.STRIDES]}
    d["divergence"] = {"n": 1024, "iters": 10, "rows": [
        t(1e-3 * (k if m == 0 else 1), name=f"{k} {m}", k=k, mode=m)
        for k in kernels.PATHS for m in range(3)]}
    d["launch"] = {"n": 10, "rows": [
        {"name": "CuPy RawKernel", "host_submit_s": 4e-6, "gpu_per_kernel_s": 2e-6, "round_trip_s": 1e-5,
         "median_s": 2e-6, "queue_stayed_ahead": False}],
        "chain": {"kernels": 1000, "elements": 4096, "rows": [
            t(5e-3, name="one by one", per_kernel_s=5e-6),
            t(1e-3, name="graph", per_kernel_s=1e-6, capture_s=0.01, identical_to_one_by_one=True)]}}
    return d


def test_gpu_renderers_on_a_synthetic_file(cpu_results, tmp_path):
    _, data = cpu_results
    d = _synthetic_gpu(data)
    (tmp_path / "test-gpu").mkdir()
    (tmp_path / "test-gpu" / f"{measure.NAME}.json").write_text(json.dumps(d))
    facts = pages.render(measure.NAME, "facts", root=tmp_path)
    assert "132 multiprocessors" in facts and "a warp of 32 threads" in facts and "3,200 GB/s" in facts
    little = pages.render(measure.NAME, "little", root=tmp_path)
    assert "500 ns" in little and "3,200 GB/s" in little and "1.5 MiB" in little
    assert "(queue ran dry)" in pages.render(measure.NAME, "launch", root=tmp_path)
    graph = pages.render(measure.NAME, "graph", root=tmp_path)
    assert "5.0x" in graph and "| 10.00 ms | yes |" in graph
    table = pages.render(measure.NAME, "occupancy-table", root=tmp_path)
    assert "| 3,200 |" in table and "| 50 |" in table and "| 80 % |" in table
    # one 4-byte load per thread, 1 warp on each of 132 SMs: 16,896 bytes in flight at 50 GB/s
    latency = pages.render(measure.NAME, "occupancy-latency", root=tmp_path)
    assert "| 1 | 50 | 16 KiB | 338 ns | 50 | 1,352 ns |" in latency and "one load alone" in latency
    # stride 16 at 250 useful GB/s: 36 bytes moved per element with 32-byte sectors, 68 with 64-byte
    traffic = pages.render(measure.NAME, "strided-traffic", root=tmp_path)
    assert "| 16 | 250 | 6 % | 36 | 1,125 | 68 | 2,125 |" in traffic and "reaches 100 % of it" in traffic
    summary = pages.render(measure.NAME, "divergence-summary", root=tmp_path)
    assert "| 32.00x |" in summary and "| 1.00x |" in summary
    assert "after 3 replays" in graph and "2.0 times one chain" in graph
    for view in ("occupancy", "strided", "divergence"):
        svg = pages.render(measure.NAME, view, root=tmp_path)
        assert svg.count("<svg") == 1 and "NVIDIA H200" in svg
        # a raw HTML block that Markdown leaves alone: starts with a div, no blank line, no metadata
        plot = svg.split("\n\n<small>")[0]
        assert plot.startswith('<div class="gpukit-plot" markdown="0">') and plot.endswith("</div>")
        assert "\n\n" not in plot and "<metadata>" not in plot


def _header_cells(md: str) -> list[list[str]]:
    """The header cells of every Markdown table in ``md``."""
    lines = md.splitlines()
    return [[c.strip() for c in lines[i - 1].strip().strip("|").split("|")]
            for i, line in enumerate(lines) if i and line.startswith(("| :--", "| --:"))]


def test_every_table_column_has_a_header(cpu_results, tmp_path):
    _, data = cpu_results
    (tmp_path / "test-gpu").mkdir()
    (tmp_path / "test-gpu" / f"{measure.NAME}.json").write_text(json.dumps(_synthetic_gpu(data)))
    for view in ("launch", "graph", "little", "latency", "occupancy-table", "occupancy-latency",
                 "strided-traffic", "divergence-summary"):
        headers = _header_cells(pages.render(measure.NAME, view, root=tmp_path))
        assert headers, view
        for cells in headers:
            assert all(cells), (view, cells)


def test_divergence_plot_gives_every_series_its_own_style(cpu_results, tmp_path, monkeypatch):
    """Two pairs of series nearly coincide: each must differ in line style or marker, so that
    none hides under another."""
    import importlib
    importlib.import_module("gpukit.gpu_anatomy.views")            # registers the renderers
    _, data = cpu_results
    figures = []
    monkeypatch.setattr(pages, "svg", lambda fig: figures.append(fig) or "<svg/>")
    pages.RENDERERS[(measure.NAME, "divergence")]("test-gpu", _synthetic_gpu(data))
    lines = figures[0].axes[0].get_lines()
    assert len(lines) == len(kernels.DIVERGENCE_MODES) + 1            # three versions and k x one path
    looks = {(line.get_linestyle(), line.get_marker(), line.get_linewidth(), line.get_markersize())
             for line in lines}
    assert len(looks) == len(lines)
    assert all(len(line.get_xdata()) == len(kernels.PATHS) for line in lines)   # no point dropped


def _example_rows_timed():
    """In a fresh process: the example's experiments, timed as on a GPU (gpukit.bench, on the
    simulator's wall clock): the names its rows carry."""
    import importlib.util
    import types
    spec = importlib.util.spec_from_file_location("gpu_anatomy_example", ROOT / "examples" / "gpu_anatomy.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.SIMULATED = False                       # time every kernel, as on a GPU
    example.cuda.get_current_device = lambda: types.SimpleNamespace(MULTIPROCESSOR_COUNT=1)
    return [r["name"] for r in example.experiments(1024, 2, 1)]


def test_example_rows_carry_their_names_when_timed():
    names = run_without_gpu("tests.test_gpu_anatomy:_example_rows_timed")
    assert len(names) == 8 and len(set(names)) == 8, names
    assert not any("lambda" in n for n in names), names
    assert names[0] == "read, 8 warps per SM" and names[-1].startswith("2 paths, no branch")


def test_plot_survives_markdown(cpu_results):
    """The plot's <style> element must reach the HTML intact (a bare <svg> got mangled: empty plot)."""
    import markdown
    root, _ = cpu_results
    svg = pages.render(measure.NAME, "strided", root=root)
    html = markdown.markdown(svg, extensions=["md_in_html", "tables"])
    style = html[html.index("<style"):html.index("</style>")]
    assert "<p>" not in style and "<br" not in style
    assert "</p>" not in html[html.index("<svg"):html.index("</svg>")]


def test_failed_part_is_not_rendered(cpu_results, tmp_path):
    _, data = cpu_results
    d = _synthetic_gpu(data)
    d["divergence"] = {"n": 0, "rows": [], "error": "RuntimeError: boom"}
    (tmp_path / "test-gpu").mkdir()
    (tmp_path / "test-gpu" / f"{measure.NAME}.json").write_text(json.dumps(d))
    with pytest.raises(pages.MissingResults):
        pages.render(measure.NAME, "divergence", root=tmp_path)


# ------------------------------------------------------------------ real GPU

@pytest.mark.gpu
def test_occupancy_formula_matches_the_driver():
    from gpukit import device
    props = device.gpu_properties()
    x = cuda.device_array(2**20, dtype=np.float32)
    for kernel in (kernels.read_sum_dependent, kernels.read_sum, kernels.read_sum_ilp4):
        for threads in kernels.BLOCK_SIZES:
            partial = cuda.device_array(props["multiprocessors"] * threads, dtype=np.float32)
            kernel[props["multiprocessors"], threads](x, partial)
            attrs = measure._kernel_attrs(kernel)
            calc = kernels.occupancy(threads, attrs["registers"], attrs["shared_bytes"] or 0, props)
            api = measure._driver_blocks_per_sm(kernel, threads, props["multiprocessors"])
            assert calc["blocks_per_sm"] == api, (kernel, threads, attrs, calc)


@pytest.mark.gpu
def test_gpu_parts_run_and_verify():
    from gpukit import device
    props = device.gpu_properties()
    div = measure.divergence_experiment(props, 3, iters=64)
    assert len(div["rows"]) == 3 * len(kernels.PATHS)
    launch = measure.launch_experiment(props, 3, launches=100, chain=50)
    assert launch["chain"]["rows"][-1]["identical_to_one_by_one"]


def test_the_hierarchy_reads_the_other_files_from_the_folder_it_renders(tmp_path):
    """The diagram's bandwidths from vector_add and timing come from the same results folder as
    the record it draws: with only gpu_anatomy.json there, it names no other file."""
    ref = results.reference_machine()
    (tmp_path / ref).mkdir()
    (tmp_path / ref / "gpu_anatomy.json").write_text(
        (ROOT / "results" / ref / "gpu_anatomy.json").read_text())
    alone = pages.render("gpu_anatomy", "hierarchy", root=tmp_path)
    assert "Bandwidths also from" not in alone
    (tmp_path / ref / "vector_add.json").write_text(
        (ROOT / "results" / ref / "vector_add.json").read_text())
    assert f"results/{ref}/vector_add.json" in pages.render("gpu_anatomy", "hierarchy", root=tmp_path)
