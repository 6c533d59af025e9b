"""Timing: the helpers that judge a number, the poisoned-output catch, the example's
bad input, and the chapter's tables and plots from a quick CPU run."""

import json
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from gpukit import pages, results
from gpukit.timing import first_call, kernels, measure, profile, timers, views
from gpukit.verify import Mismatch
from tests.helpers import ROOT, assert_one_line_error, run_without_gpu


# ------------------------------------------------------------------ numbers

def test_saxpy_bytes_and_implied_bandwidth():
    assert kernels.saxpy_bytes(2**28) == 3 * 2**30            # read x, read y, write out
    assert kernels.saxpy_bytes(0) == 0
    assert kernels.saxpy_bytes(10, itemsize=2) == 60
    assert kernels.implied_gbs(3e9, 1e-3) == pytest.approx(3000.0)
    assert kernels.implied_gbs(0, 1.0) == 0.0


@pytest.mark.parametrize("nbytes, seconds", [(1e9, 0.0), (1e9, -1e-3), (1e9, float("nan")), (-1, 1.0)])
def test_implied_bandwidth_rejects_impossible_inputs(nbytes, seconds):
    with pytest.raises(ValueError):
        kernels.implied_gbs(nbytes, seconds)


def test_saxpy_bytes_rejects_bad_sizes():
    with pytest.raises(ValueError):
        kernels.saxpy_bytes(-1)
    with pytest.raises(ValueError):
        kernels.saxpy_bytes(4, itemsize=0)


def test_impossible_numbers_are_flagged():
    peak = 4800.0
    # 3.2 GB "moved" in 47 microseconds: the clock stopped at the launch
    assert kernels.is_impossible(kernels.implied_gbs(3 * 2**30, 47e-6), peak)
    assert not kernels.is_impossible(4300.0, peak)
    assert not kernels.is_impossible(peak * 1.04, peak)        # within the default 5 % tolerance
    assert kernels.is_impossible(peak * 1.04, peak, tolerance=0.0)
    with pytest.raises(ValueError):
        kernels.is_impossible(100.0, 0.0)


def test_spread_of_single_runs():
    samples = [5.0, 1.0, 1.2, 0.9, 1.1, 1.0, 1.05]
    st = kernels.spread(samples)
    assert st["first_s"] == 5.0 and st["first5_s"] == samples[:5]
    assert st["min_s"] == 0.9 and st["max_s"] == 5.0 and st["median_s"] == 1.05
    assert st["max_over_min"] == pytest.approx(5.0 / 0.9)
    assert st["worst_error_pct"] == pytest.approx(100 * (5.0 - 1.05) / 1.05)
    with pytest.raises(ValueError):
        kernels.spread([])


def test_working_sets_double_from_one_mib():
    sizes = measure.working_sets(4 * 2**20)
    assert sizes == [2**20, 2**21, 2**22]
    assert measure.working_sets(5 * 2**20)[-1] == 4 * 2**20
    with pytest.raises(ValueError):
        measure.working_sets(1000)


# ------------------------------------------------------------------ inputs and the check

@pytest.mark.parametrize("n", [0, 1, 257, 2**20 + 3])
def test_inputs_are_random_and_the_check_accepts_a_right_answer(n):
    x, y = kernels.make_inputs(n)
    assert x.shape == y.shape == (n,) and x.dtype == np.float32
    if n > 1:
        assert np.count_nonzero(x) > n // 2 and not np.array_equal(x, y)
    out = np.float32(2) * x + y
    assert kernels.check_saxpy(out, x, y, chunk=1000) <= 2**-24


def test_check_catches_an_unwritten_element_in_any_chunk():
    x, y = kernels.make_inputs(3001)
    out = np.float32(2) * x + y
    out[-1] = np.nan                                       # last element of the last chunk
    with pytest.raises(Mismatch, match="NaN"):
        kernels.check_saxpy(out, x, y, chunk=1000)
    out = np.float32(2) * x + y
    out[1500] *= 1.001                                     # a wrong value, not on the 1-in-64 grid
    with pytest.raises(Mismatch, match="relative error"):
        kernels.check_saxpy(out, x, y, chunk=1000)
    with pytest.raises(Mismatch, match="shape"):
        kernels.check_saxpy(out[:-1], x, y)


# ------------------------------------------------------------------ mistake 1, without a GPU

def test_a_clock_without_sync_misses_asynchronous_work():
    # A thread stands in for the GPU: started beforehand, it waits for a "launch" (an event
    # set, which returns at once) and then works for 250 ms; the sync waits for it to finish.
    # The thread is not started inside the timed launch: on a loaded 2-core machine starting
    # one once took over 300 ms.
    go, done = threading.Event(), threading.Event()

    def device():
        while True:
            go.wait()
            go.clear()
            time.sleep(0.25)
            done.set()

    threading.Thread(target=device, daemon=True).start()
    done.set()                                  # nothing queued yet

    def launch():
        done.clear()
        go.set()

    def sync():
        done.wait(timeout=10)

    wrong = timers.time_without_sync(launch)
    sync()
    right = timers.time_with_sync(launch, sync)
    assert wrong < 0.1 and right >= 0.25, (wrong, right)


def test_single_runs_times_each_call():
    calls = []
    res = timers.single_runs(lambda: calls.append(time.sleep(0.001)), lambda: None, count=7, idle_s=0)
    assert len(calls) == 7 and len(res["host_s"]) == 7
    assert min(res["host_s"]) >= 0.001 and "events_s" not in res


# ------------------------------------------------------------------ kernels and poison

@pytest.mark.parametrize("n", [1, 255, 257, 600])
def test_numba_saxpy_writes_every_element(n):
    # on numba's CUDA simulator without a GPU, on the device with one
    from numba import cuda
    x, y = kernels.make_inputs(n)
    out = cuda.to_device(np.full_like(x, np.nan))
    kernels.launch_saxpy(kernels.A, cuda.to_device(x), cuda.to_device(y), out, threads=128)
    kernels.check_saxpy(out, x, y)


def test_zeros_hide_the_missing_tail_and_nan_poison_catches_it():
    demo = kernels.poison_demo(600, threads=256)
    assert demo["unwritten"] == 600 - 512
    cases = {c["case"]: c for c in demo["cases"]}
    assert not cases["zeros in, zero-filled output"]["caught"]
    assert not cases["random in, output left from a correct run"]["caught"]
    nan = cases["random in, NaN-poisoned output"]
    assert nan["caught"] and f"{600 - 512} of 600" in nan["message"]


def test_poison_demo_refuses_a_size_where_the_bug_cannot_show():
    with pytest.raises(ValueError):
        kernels.poison_demo(512, threads=256)


# ------------------------------------------------------------------ the example

@pytest.mark.parametrize("args, needle", [(["--n", "-5"], "--n must be"), (["--n", "ten"], "invalid int"),
                                          (["--repeat", "0"], "--repeat >= 1")])
def test_example_bad_input(args, needle):
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "timing.py"), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert needle in assert_one_line_error(proc, code=2)


def _example_cache_timing():
    """In a fresh process without a GPU: the example's cache mistake as it runs on a GPU (GPU
    set, CUDA graph timing recorded instead of run): the working sets and how each was timed."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("timing_example", ROOT / "examples" / "timing.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    calls = []

    def graph_time(fn, launches, replays=5):
        fn()                                       # the output is checked after timing
        calls.append({"launches": launches, "replays": replays})
        return 1e-3

    def bench(*args, **kwargs):
        raise AssertionError("the cache mistake must not time one call at a time")
    example.GPU, example.graph_time = True, graph_time
    example.bench = type("bench", (), {"bench": staticmethod(bench)})
    sets = []
    workload = example.workload

    def recording_workload(m):
        sets.append(12 * m)                       # x + y + out, float32
        return workload(m)
    example.workload = recording_workload
    row = example.mistake_cache(2**10, 3)
    return {"sets": sets, "calls": calls, "row": row}


def test_example_times_the_cache_mistake_back_to_back():
    """The cache-resident set must fit in an H200's L2 (60 MiB) and the other be far larger, and
    both must be timed from CUDA graphs: with one pair of events per call, the host's launch gap
    made the cache-resident data look slower than memory."""
    got = run_without_gpu("tests.test_timing:_example_cache_timing")
    small, large = got["sets"]
    l2 = 60 * 2**20
    assert small <= l2 / 2 and large >= 3 * l2, got["sets"]
    assert [c["launches"] for c in got["calls"]] == [200, 10] and all(c["replays"] == 3 for c in got["calls"])
    assert set(got["row"]) == {"mistake", "wrong_gbs", "right_gbs"}


# ------------------------------------------------------------------ the chapter's tables and plots

def test_quick_cpu_run_renders_the_chapter(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    data = measure.run(2**16, 5)
    assert set(data) == {"first_call", "one_run", "cache", "poison"}
    assert all("error" not in p for p in data.values()), data
    child = data["first_call"]["rows"][0]
    assert child["name"] == "numba-cpu" and child["first_call_s"] > child["median_s"] > 0
    assert child["max_rel_err"] <= 2**-24
    assert data["poison"]["simulator"] and data["poison"]["cases"][-1]["caught"]
    assert [r["working_set_bytes"] for r in data["cache"]["rows"]] == [2**20, 2**21, 2**22]

    saved = results.save(measure.NAME, data, root=tmp_path)
    md = pages.render(measure.NAME, "first_call", root=tmp_path)
    assert "`numba-cpu`" in md and "Measured on" in md
    assert "start Python" in pages.render(measure.NAME, "context", root=tmp_path)
    assert "max / min" in pages.render(measure.NAME, "one_run", root=tmp_path)
    for view in ("one_run_plot", "cache_plot"):
        html = _markdown(pages.render(measure.NAME, view, root=tmp_path))
        # the plot reaches the page whole: one <svg> element, not cut into paragraphs
        svg = html[html.index("<svg"):html.index("</svg>")]
        assert "<p>" not in svg and "</p>" not in svg and ("MiB" in svg or "run number" in svg)
    facts = pages.render(measure.NAME, "cache_facts", root=tmp_path)
    assert "highest apparent bandwidth" in facts and "smallest working set, 1 MiB" in facts
    # a server CPU's long model name still fits a phone-width plot (check_figure refuses wider)
    record = json.loads(saved.read_text())
    record["machine"]["cpu"]["model"] = "Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz, 2 sockets"
    saved.write_text(json.dumps(record))
    for view in ("one_run_plot", "cache_plot"):
        assert "Platinum" in pages.render(measure.NAME, view, root=tmp_path)
    assert "**caught**" in pages.render(measure.NAME, "poison", root=tmp_path)
    for gpu_only in ("nosync", "transfers", "cache", "zeros", "right_way", "torch_profiler", "ncu",
                     "one_run_facts"):
        with pytest.raises(pages.MissingResults):
            pages.render(measure.NAME, gpu_only, root=tmp_path)


def _markdown(text: str) -> str:
    import markdown
    return markdown.markdown(text, extensions=["admonition", "attr_list", "md_in_html", "tables"])


def _machine():
    return {"gpu": {"name": "Test GPU", "theoretical_bandwidth_gbs": 1000.0}, "date": "2026-01-01"}


@pytest.mark.parametrize("method, note", [(None, True), ("CUDA graph of 200 launches", False)])
def test_cache_table_explains_a_hot_time_that_includes_the_launch_gap(method, note):
    hot = {"working_set_bytes": 24 * 2**20, "hot_s": 15e-6, "cold_s": 11e-6, "hot_gbs": 1.0, "cold_gbs": 2.0}
    if method:
        hot["hot_method"] = method
    data = {"machine": _machine(), "cache": {
        "l2_bytes": 60 * 2**20, "peak_gbs": 1000.0, "hot_cold": [hot],
        "rows": [{"name": "16 MiB", "working_set_bytes": 16 * 2**20, "median_s": 3e-6, "gbs": 5000.0,
                  "method": "CUDA graph of 200 launches"}]}}
    md = pages.RENDERERS[(views.NAME, "cache")]("test", data)
    assert ("launches the kernel" in md) is note
    assert ("16 MiB: 3.0 µs" in md) is note
    assert ("hot (events per call)" in md) is note


def test_profiler_table_separates_the_profilers_own_overhead():
    rows = [{"name": "aten::add", "calls": 10, "device_us": 8000.0, "cpu_us": 3000.0},
            {"name": "void vectorized_elementwise_kernel<4>", "calls": 10, "device_us": 7300.0, "cpu_us": 0.0},
            {"name": "Activity Buffer Request", "calls": 1, "device_us": 700.0, "cpu_us": 2600.0}]
    data = {"machine": _machine(), "right_way": {"torch_profiler": {"steps": 10, "rows": rows}}}
    md = pages.RENDERERS[(views.NAME, "torch_profiler")]("test", data)
    assert "730.0 µs of GPU time and 40.0 µs of CPU time per call" in md
    rows[2]["device_us"] = 100.0                           # does not add up: no subtraction shown
    assert "per call." not in pages.RENDERERS[(views.NAME, "torch_profiler")]("test", data)


def test_ncu_metric_reads_the_text_report():
    out = ("    DRAM Throughput                   %        50.62\n"
           "    Duration                         us       1,326.05\n"
           "    SM Frequency                    Ghz         1.50\n")
    assert profile.ncu_metric(out, "Duration") == pytest.approx(1326.05)
    assert profile.ncu_metric(out, "DRAM Throughput") == pytest.approx(50.62)
    assert profile.ncu_metric(out, "Elapsed Cycles") is None
    assert profile.ncu_metric("==ERROR== ERR_NVGPUCTRPERM", "Duration") is None


@pytest.mark.parametrize("command, n", [
    ("ncu --launch-count 1 python -m gpukit.timing.measure ncu-target 67108864", 67108864),
    (f"ncu --launch-count 1 python -m gpukit.proc {profile.TARGET} '[4096]'", 4096),
    ("", None), ("ncu", None)])
def test_ncu_elements_reads_old_and_new_command_lines(command, n):
    assert profile.ncu_elements(command) == n


def test_nsight_compute_without_ncu_shows_the_command_it_would_run(monkeypatch):
    monkeypatch.setattr(profile, "find_ncu", lambda: None)
    nc = profile.nsight_compute(4096)
    assert nc["available"] is False and "not found" in nc["output"]
    assert nc["command"].endswith(f"python -m gpukit.proc {profile.TARGET} '[4096]'")
    assert profile.ncu_elements(nc["command"]) == 4096


# ------------------------------------------------------------------ the public API and child processes

def test_public_api_resolves_without_importing_gpu_libraries():
    code = ("import sys, gpukit.timing as t\n"
            "assert not {'numba', 'cupy', 'torch'} & set(sys.modules), sys.modules.keys()\n"
            "missing = [name for name in t.__all__ if getattr(t, name, None) is None]\n"
            "assert not missing, missing\n"
            "assert not {'numba', 'cupy', 'torch'} & set(sys.modules), sys.modules.keys()\n"
            "print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_a_failed_first_call_child_gives_a_row_with_its_error():
    r = first_call.in_fresh_process("numba-cpu", -1, 1)        # make_inputs refuses n < 0
    assert r["name"] == "numba-cpu" and "n must be >= 0" in r["error"] and r["process_s"] > 0
    assert "median_s" not in r


# ------------------------------------------------------------------ real GPU

@pytest.mark.gpu
def test_gpu_parts_measure_verify_and_render(tmp_path, monkeypatch):
    from gpukit import device
    monkeypatch.setattr(profile, "find_ncu", lambda: None)      # ncu is slow; the benchmark runs it
    machine = device.machine_record()
    peak = machine["gpu"]["theoretical_bandwidth_gbs"]
    n = 2**22 + 3
    # a kernel of ~0.2 ms (800 MB moved), so an unsynchronised host clock (one launch, some
    # microseconds) stays below it even on a busy machine; at 2**22 both are ~15 us
    data = {"nosync": measure.part_nosync(2**26 + 3, 5, peak), "transfers": measure.part_transfers(n, 5),
            "one_run": measure.part_one_run(n, True, count=20),
            "cache": measure.part_cache_gpu(8 * 2**20, machine["gpu"]["l2_cache_bytes"], peak),
            "zeros": measure.part_zeros(1024, 5), "right_way": measure.part_right_way(n, 5),
            "poison": measure._poison_in_child(True)}
    rows = {r["name"]: r for r in data["nosync"]["rows"]}
    events = rows["torch: CUDA events (gpukit.bench)"]["median_s"]
    assert rows["torch: host clock, no sync (1 call)"]["median_s"] < events
    assert not data["right_way"]["errors"], data["right_way"]["errors"]
    assert data["poison"]["cases"][-1]["caught"]
    results.save(measure.NAME, data, root=tmp_path, machine=machine)
    assert all(h["hot_method"].startswith("CUDA graph") for h in data["cache"]["hot_cold"])
    for view in ("nosync", "transfers", "one_run", "one_run_facts", "one_run_plot", "cache",
                 "cache_facts", "cache_plot", "zeros", "poison", "right_way", "torch_profiler", "ncu"):
        assert pages.render(measure.NAME, view, root=tmp_path)


@pytest.mark.gpu
def test_the_process_ncu_profiles_runs_and_checks_its_answer():
    from gpukit import proc
    assert proc.run_fresh(profile.TARGET, 2**16 + 3, timeout=300) is None   # a failure is a dict
