"""Profiling chapter: ncu's CSV, the ``gpukit profile`` command's bad input, the chunk scheduler
(on the host stand-in without a GPU, on CuPy streams with one), the views on CPU records."""

import os
import sys

import numpy as np
import pytest

from gpukit import device, pages, results
from gpukit.profiling import ncu, pipeline, targets, views
from gpukit.profiling.torchprof import busy_fraction
from tests.helpers import ROOT, assert_one_line_error, cpu_results_file, page_source, run_cli

#: ncu's ``--csv --page raw`` layout, written by hand (not a measurement): progress lines, a
#: header, a units row, two kernels, thousands separators and an "n/a"
SAMPLE = ROOT / "tests" / "data" / "profiling_ncu_raw.csv"
#: trimmed copies of real ncu output (H200, Nsight Compute 2025.3.1): per kernel, its source page
#: as SASS (a warning line, the "Kernel Name" line, the header and about 40 of its instructions)
#: and a few columns of its raw page
REAL = ROOT / "tests" / "data" / "ncu"
NUMBA, CUDA_C, MATMUL = "why-gpus-horner", "why-gpus-horner-cuda-c", "matmul-warptile"


def _sass(name: str) -> list[dict]:
    return ncu.parse_source_csv((REAL / f"{name}.sass.csv").read_text())


def _raw(name: str) -> dict:
    (kernel,) = ncu.parse_raw_csv((REAL / f"{name}.raw.csv").read_text())
    return kernel


# ------------------------------------------------------------------ reading ncu's output

def test_raw_csv_sample_parses_to_si_units():
    kernels = ncu.parse_raw_csv(SAMPLE.read_text())
    assert [k["id"] for k in kernels] == ["0", "1"]
    add, mm = kernels
    assert "add_kernel" in add["name"] and mm["name"] == "mm08_warptile"
    assert add["block"] == "(256, 1, 1)" and mm["grid"] == "(32, 32, 1)"
    m = add["metrics"]
    assert m["gpu__time_duration.sum"] == pytest.approx(191_232e-9)      # nsecond -> s
    assert m["dram__bytes_read.sum"] == 536_870_912                        # separators gone
    assert m["gpc__cycles_elapsed.avg.per_second"] == 1.755e9
    assert "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum" not in mm["metrics"]  # n/a
    assert "Kernel Name" not in m and "Block Size" not in m


def test_key_metrics_from_the_sample():
    add, mm = (ncu.key_metrics(k["metrics"]) for k in ncu.parse_raw_csv(SAMPLE.read_text()))
    assert add["dram_bytes"] == 536_870_912 + 268_435_456
    assert add["dram_gbs"] == pytest.approx(add["dram_bytes"] / 191_232e-9 / 1e9)
    assert add["dram_pct"] == 82.51 and add["sm_pct"] == 21.3 and add["registers_per_thread"] == 16
    assert add["top_stalls"][0]["reason"] == "long_scoreboard"
    reasons = [s["reason"] for s in add["top_stalls"]]
    assert not any("not_issued" in r for r in reasons) and len(reasons) <= 4
    assert mm["bank_conflicts"] == 1_048_576                              # ld only; st was n/a
    assert mm["top_stalls"][0]["reason"] == "mio_throttle"
    lines = ncu.summary_lines("matmul", mm)
    assert any("bank conflicts" in ln for ln in lines) and any("128" in ln for ln in lines)


@pytest.mark.parametrize("name", [NUMBA, CUDA_C, MATMUL])
def test_real_source_pages_parse(name):
    rows = _sass(name)
    assert 40 <= len(rows) <= 44
    assert all(r["samples"] is not None and r["executed"] >= 0 for r in rows)
    assert all(not r["sass"].startswith(" ") and "  " not in r["sass"] for r in rows)
    s = ncu.sass_summary(rows)
    assert s["instructions"] == sum(r["executed"] for r in rows)
    assert sum(v for _, v in s["mix"]) == pytest.approx(1.0)
    assert len(s["mix"]) <= ncu.MIX_TOP + 1 and all("." not in f and "@" not in f for f, _ in s["mix"])
    assert s["samples"] == sum(r["samples"] for r in rows) and len(s["hot"]) == 5
    shares = [h["share"] for h in s["hot"]]
    assert shares == sorted(shares, reverse=True) and sum(shares) <= 1
    base = min(r["address"] for r in rows)
    assert base > 0x7F0000000000                   # the page's addresses are absolute ...
    assert all(0 <= h["offset"] < 0x100000 and h["offset"] % 16 == 0 for h in s["hot"])   # ... offsets not
    assert all(h["reason"] in ncu.SAMPLE_REASONS.values() or h["reason"] in
               ("barrier", "not_selected", "selected", "wait", "branch_resolving", "drain", "membar", "misc")
               for h in s["hot"])


def test_real_pages_tell_the_two_horner_kernels_apart():
    numba, cuda_c = (ncu.sass_summary(_sass(n)) for n in (NUMBA, CUDA_C))
    assert cuda_c["ffma_share"] > numba["ffma_share"] > 0
    assert cuda_c["mix"][0][0] == "FFMA"
    assert numba["mix"][0][0] != "FFMA"            # numba's loop is mostly something else
    hot = ncu.sass_summary(_sass(MATMUL))["hot"][0]
    assert hot["sass"].startswith("UMOV") and hot["reason"] == "barrier"    # the line after BAR.SYNC
    assert hot["offset"] == 0x5C60


def test_predicates_are_stripped_from_the_family_not_the_text():
    assert ncu.opcode("@P0 BRA 0x7f7d737a12f0") == "BRA"
    assert ncu.opcode("@!PT LDS.U.128 R4, [R2]") == "LDS"
    assert ncu.opcode("FFMA.FTZ R9, R8, R22, R23") == "FFMA" and ncu.opcode("NOP") == "NOP"
    assert ncu.opcode("") == ""
    texts = [r["sass"] for r in _sass(MATMUL)]
    assert "@!P0 BRA 0x7fccaf7a15c0" in texts       # "@!P0  BRA" in the page: spaces collapsed
    assert "@!P2 LDG.E.CONSTANT R6, desc[UR4][R14.64]" in [r["sass"] for r in _sass(CUDA_C)]


SOURCE_HEAD = ('"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed",'
               '"stall_long_sb","stall_math","stall_wait (Not Issued)"')


def test_source_page_separators_empty_cells_and_a_second_kernel():
    text = "\n".join([
        "==PROF== Connected to process 1", "==WARNING== No source files were imported.",
        '"Kernel Name","k",', SOURCE_HEAD,
        '"0x1000","  @P0 BRA 0x1040","1,200","2,000","1,000","","7"',
        '"0x1010","FFMA R1, R2, R3, R1","","6,000","-","",""',
        '"0x1020","@!PT LDS R4, [R2]","300","2,000","","300","0"',
        '"Kernel Name","another",', SOURCE_HEAD, '"0x9000","FFMA R1, R1, R1, R1","5","9","0","5","0"'])
    rows = ncu.parse_source_csv(text)
    assert [r["address"] for r in rows] == [0x1000, 0x1010, 0x1020]     # the second kernel is not read
    assert rows[0]["executed"] == 2000 and rows[0]["samples"] == 1200 and rows[1]["samples"] == 0
    assert rows[0]["stalls"] == {"long_scoreboard": 1000} and rows[2]["stalls"] == {"math_pipe_throttle": 300}
    s = ncu.sass_summary(rows)
    assert s["mix"] == [["FFMA", 0.6], ["BRA", 0.2], ["LDS", 0.2]] and s["ffma_share"] == 0.6
    assert s["samples"] == 1500 and [h["offset"] for h in s["hot"]] == [0, 0x20]
    assert s["hot"][0]["reason"] == "long_scoreboard" and s["hot"][0]["share"] == pytest.approx(0.8)
    assert ncu.sass_line(s).startswith("  instructions        FFMA 60.0 %")


def test_source_page_without_what_the_summary_needs():
    with pytest.raises(ValueError, match="Instructions Executed"):
        ncu.parse_source_csv('"Address","Source"\n"0x10","NOP"')
    with pytest.raises(ValueError, match="not an ncu source page"):
        ncu.parse_source_csv((SAMPLE).read_text())
    with pytest.raises(ValueError, match="no instruction"):
        ncu.sass_summary([])
    rows = ncu.parse_source_csv('"Address","Source","Instructions Executed"\n"0x10","FFMA R1, R1, R1, R1","4"')
    s = ncu.sass_summary(rows)                     # no sampling column: no samples, no hot lines
    assert rows[0]["samples"] is None and s["samples"] is None and s["hot"] == [] and s["ffma_share"] == 1.0
    assert ncu.sass_line(None) is None


def test_pipes_from_the_real_raw_pages():
    numba, cuda_c = (ncu.key_metrics(_raw(n)["metrics"]) for n in (NUMBA, CUDA_C))
    assert next(iter(numba["pipes"])) == "alu" and next(iter(cuda_c["pipes"])) == "fma"
    assert list(numba["pipes"].values()) == sorted(numba["pipes"].values(), reverse=True)
    assert numba["sm_issue_pct"] is not None
    old = ncu.key_metrics(ncu.parse_raw_csv(SAMPLE.read_text())[0]["metrics"])
    assert old["pipes"] is None and old["sm_issue_pct"] is None
    assert any("busiest pipes       alu" in ln for ln in ncu.summary_lines("numba", numba))


def test_text_without_a_table_has_no_kernels():
    assert ncu.parse_raw_csv("==PROF== Connected\n==WARNING== No kernels were profiled.\n") == []
    assert ncu.number("n/a") is None and ncu.number("1,234.5") == 1234.5


@pytest.mark.parametrize("output, rc, kind", [
    ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission", 1, "permission"),
    ("==WARNING== No kernels were profiled.", 0, "no-kernel"),
    ("==ERROR== Failed to find metric foo", 1, "failed"),
    ("==PROF== Disconnected from process 1", 0, None),
])
def test_failures_are_classified(output, rc, kind):
    err = ncu.classify(output, rc)
    assert (err and err.kind) == kind
    if kind == "permission":
        assert "NVreg_RestrictProfilingToAdminUsers=0" in str(err) and ncu.PERMISSION_URL in str(err)


def test_command_profiles_one_steady_state_launch():
    cmd = ncu.command("/x/ncu", "gpukit.profiling.targets:launch", "add_kernel", 2, "/tmp/r")
    text = " ".join(cmd)
    assert "--launch-skip 2" in text and "--launch-count 1" in text
    assert "--kernel-name regex:add_kernel" in text and "--clock-control none" in text
    assert all(f"--section {s}" in text for s in ncu.SECTIONS)
    assert cmd[-3:] == ["-m", "gpukit.proc", "gpukit.profiling.targets:launch"]
    assert "--metrics" not in ncu.command("/x/ncu", "t", "r", 0, "/tmp/r", metrics=False)


FAKE_NCU = """#!{python}
import os, sys
args = sys.argv[1:]
mode = os.environ.get("FAKE_NCU_MODE", "ok")
with open(os.environ["FAKE_NCU_LOG"], "a") as log:
    log.write(" ".join(args) + "\\n")
if "--import" in args and "source" in args:
    if mode == "no-source":
        print("==ERROR== unknown option --print-source")
        sys.exit(1)
    print(open({source!r}).read())
    sys.exit(0)
if "--import" in args:
    print(open({sample!r}).read())
    sys.exit(0)
if mode == "permission":
    print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access counters")
    sys.exit(1)
if mode == "bad-metric" and "--metrics" in args:
    print("==ERROR== Failed to find metric dram__bytes_read.sum")
    sys.exit(1)
if mode == "mangled-misses" and "mangled" in args:
    print("==WARNING== No kernels were profiled.")
    sys.exit(0)
with open(args[args.index("--export") + 1] + ".ncu-rep", "w") as fh:
    fh.write("not a real report")
print("==PROF== Disconnected from process 1")
"""


@pytest.mark.parametrize("mode, calls, named", [("ok", 1, True), ("bad-metric", 2, False),
                                                 ("mangled-misses", 2, True)])
def test_run_retries_only_what_failed(tmp_path, monkeypatch, mode, calls, named):
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.format(python=sys.executable, sample=str(SAMPLE), source=str(REAL / f"{CUDA_C}.sass.csv")))
    fake.chmod(0o755)
    log = tmp_path / "log"
    monkeypatch.setenv("GPUKIT_NCU", str(fake))
    monkeypatch.setenv("FAKE_NCU_MODE", mode)
    monkeypatch.setenv("FAKE_NCU_LOG", str(log))
    res = ncu.run(["vector-add-numba", 2], "add_kernel", 2, str(tmp_path / "r"))
    runs = [ln for ln in log.read_text().splitlines() if "--import" not in ln]
    assert len(runs) == calls and res["used_named_metrics"] is named
    assert len(res["kernels"]) == 2 and res["report"].endswith("r.ncu-rep")
    if mode == "mangled-misses":
        assert "--kernel-name-base demangled" in runs[-1]
    assert res["sass"]["ffma_share"] > 0.5 and res["sass_error"] is None


def test_run_without_a_source_page_still_profiles(tmp_path, monkeypatch):
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.format(python=sys.executable, sample=str(SAMPLE), source=str(REAL / f"{CUDA_C}.sass.csv")))
    fake.chmod(0o755)
    monkeypatch.setenv("GPUKIT_NCU", str(fake))
    monkeypatch.setenv("FAKE_NCU_MODE", "no-source")
    monkeypatch.setenv("FAKE_NCU_LOG", str(tmp_path / "log"))
    res = ncu.run(["vector-add-numba", 2], "add_kernel", 2, str(tmp_path / "r"))
    assert len(res["kernels"]) == 2 and res["sass"] is None
    assert "source page" in res["sass_error"] and "--print-source" in res["sass_error"]


def test_run_stops_at_a_permission_error(tmp_path, monkeypatch):
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.format(python=sys.executable, sample=str(SAMPLE), source=str(REAL / f"{CUDA_C}.sass.csv")))
    fake.chmod(0o755)
    monkeypatch.setenv("GPUKIT_NCU", str(fake))
    monkeypatch.setenv("FAKE_NCU_MODE", "permission")
    monkeypatch.setenv("FAKE_NCU_LOG", str(tmp_path / "log"))
    with pytest.raises(ncu.NcuError) as info:
        ncu.run(["vector-add-numba", 2], "add_kernel", 2, str(tmp_path / "r"))
    assert info.value.kind == "permission"
    assert len((tmp_path / "log").read_text().splitlines()) == 1


def test_every_target_names_its_kernel_and_work():
    assert set(targets.RECORDED) <= set(targets.TARGETS) and len(targets.RECORDED) == 7
    assert "why-gpus-horner-cuda-c" in targets.RECORDED
    for name, t in targets.TARGETS.items():
        nbytes, flops = t.work()
        assert nbytes > 0 and flops >= 0 and t.regex and t.bound in ("memory", "compute")


# ------------------------------------------------------------------ the command

def test_list_names_every_target():
    proc = run_cli("profile", "--list")
    assert proc.returncode == 0, proc.stderr
    assert all(name in proc.stdout for name in targets.TARGETS)


def test_unknown_name(tmp_path):
    line = assert_one_line_error(run_cli("profile", "no-such-kernel", "--out", tmp_path))
    assert "unknown kernel" in line and "--list" in line
    assert not list(tmp_path.iterdir())


def test_no_name():
    assert "--list" in assert_one_line_error(run_cli("profile"))


def test_missing_ncu(tmp_path):
    env = {"PATH": os.path.dirname(sys.executable), "GPUKIT_NCU": str(tmp_path / "no-ncu")}
    line = assert_one_line_error(run_cli("profile", "vector-add-numba", "--out", tmp_path / "o", env=env))
    assert "not found" in line and "/usr/local/cuda/bin" in line
    assert not (tmp_path / "o").exists()


def test_no_gpu(tmp_path):
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.format(python=sys.executable, sample=str(SAMPLE), source=str(REAL / f"{CUDA_C}.sass.csv")))
    fake.chmod(0o755)
    env = {"GPUKIT_NCU": str(fake), "CUDA_VISIBLE_DEVICES": "", "FAKE_NCU_LOG": str(tmp_path / "log")}
    line = assert_one_line_error(run_cli("profile", "matmul-warptile", "--out", tmp_path / "o", env=env))
    assert "needs an NVIDIA GPU" in line and not (tmp_path / "log").exists()


def test_out_is_a_file(tmp_path):
    blocker = tmp_path / "f"
    blocker.write_text("a file")
    line = assert_one_line_error(run_cli("profile", "vector-add-numba", "--out", blocker))
    assert "is a file" in line


# ------------------------------------------------------------------ chunks and the scheduler

@pytest.mark.parametrize("n, count", [(0, 3), (1, 1), (1, 5), (7, 3), (1001, 16), (64, 64), (10, 1)])
def test_chunks_cover_the_range(n, count):
    parts = pipeline.chunks(n, count)
    assert len(parts) == min(n, count)
    if parts:
        assert [lo for lo, _ in parts] == [0] + [hi for _, hi in parts[:-1]]
        assert parts[-1][1] == n
        sizes = [hi - lo for lo, hi in parts]
        assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1


def test_bad_chunk_arguments():
    with pytest.raises(ValueError):
        pipeline.chunks(10, 0)
    with pytest.raises(ValueError):
        pipeline.chunks(-1, 2)


@pytest.mark.parametrize("n, count, streams", [(1, 1, 1), (7, 3, 2), (1001, 16, 4), (333, 5, 8)])
def test_host_pipeline_equals_serial(n, count, streams):
    x = np.random.default_rng(n).random(n, dtype=np.float32)
    serial, piped = np.full_like(x, np.nan), np.full_like(x, np.nan)
    pipeline.run(pipeline.HostOps(x, serial, 12), n, 1, 1)
    res = pipeline.run(pipeline.HostOps(x, piped, 12), n, count, streams)
    assert np.array_equal(serial, piped) and np.isfinite(piped).all()
    ref = pipeline.reference(x, 12)
    assert np.max(np.abs(piped - ref) / ref) < pipeline.rtol(12)
    assert [r["stream"] for r in res["chunks"]] == [i % streams for i in range(min(n, count))]
    for r in res["chunks"]:
        assert r["t"] == sorted(r["t"])          # before <= copied <= computed <= done


def test_timeline_keeps_copies_of_one_direction_apart():
    recs = [{"chunk": 0, "stream": 0, "t": [0.0, 2.0, 5.0, 6.0]},
            {"chunk": 1, "stream": 1, "t": [0.0, 4.0, 7.0, 8.0]}]
    bars = pipeline.timeline(recs)
    copy_in = [b for b in bars if b["kind"] == "copy in"]
    assert copy_in[1]["start"] == 2.0             # waited for chunk 0's copy in
    assert all(b["start"] <= b["stop"] for b in bars)


def test_model_timeline():
    serial = pipeline.model_timeline(4, 1, 1, 1, pipelined=False)
    piped = pipeline.model_timeline(4, 1, 1, 1, pipelined=True)
    assert pipeline.makespan(serial) == pytest.approx(3.0)
    assert pipeline.makespan(piped) == pytest.approx(1.0 + 2 * 0.25)   # bound + fill and drain
    lopsided = pipeline.model_timeline(8, 1, 4, 1)
    assert pipeline.makespan(lopsided) == pytest.approx(4 + 2 / 8)      # the kernel is the bound


def test_busy_fraction_is_the_union():
    assert busy_fraction([(0, 2), (1, 3), (5, 6)], 0, 10) == pytest.approx(0.4)
    assert busy_fraction([], 0, 1) == 0.0 and busy_fraction([(0, 1)], 1, 1) == 0.0


# ------------------------------------------------------------------ records and views, no GPU

def test_profiles_without_ncu_fail_soft(tmp_path):
    data = cpu_results_file("gpukit.profiling.profiles:run", [None, 3], "profiles", tmp_path)
    part = data["cpu"]
    assert part["rows"] == [] and len(part["failed"]) == len(targets.RECORDED)
    assert all(f["error"] for f in part["failed"])
    for view in ("summary", "stalls", "littles-law", "bytes", "readings", "horner-fix", "mix", "sass"):
        with pytest.raises(pages.MissingResults):
            pages.render("profiles", view, root=tmp_path)


def test_cpu_record_and_views(tmp_path):
    data = cpu_results_file("gpukit.profiling.measure:run", [4096, 3], "profiling", tmp_path)
    part = data["cpu"]
    assert part["host_scheduler_equal"] and part["rows"][0]["max_rel_err"] < pipeline.rtol(64)
    md = pages.render("profiling", "baseline", root=tmp_path)
    assert "numba parallel" in md and "Measured on" in md
    for view in ("stages", "runs", "sweep", "timeline", "managed", "torch", "card", "bound"):
        with pytest.raises(pages.MissingResults):
            pages.render("profiling", view, root=tmp_path)


def test_concept_picture_builds_without_a_gpu():
    html = pages.render_data("profiling", "concept")
    assert 'class="gpukit-plot"' in html and "<svg" in html


def test_profile_views_render_a_record_built_from_the_sample(tmp_path):
    rows = []
    for name, k in zip(("vector-add-numba", "matmul-warptile"), ncu.parse_raw_csv(SAMPLE.read_text())):
        t = targets.TARGETS[name]
        key = ncu.key_metrics(k["metrics"])
        nbytes, flops = t.work()
        rows.append({"name": name, "label": t.label, **key, "median_s": key["duration_s"],
                     "counted_bytes": nbytes, "counted_flops": flops,
                     "in_flight_bytes_per_thread": t.in_flight})
    machine = {**device.machine_record(), "slug": "sample-gpu",
               "gpu": {"name": "sample", "multiprocessors": 132, "max_threads_per_multiprocessor": 2048}}
    results.save("profiles", {"gpu": {"n": 2, "rows": rows, "failed": [], "ncu_version": "sample",
                                      "sections": list(ncu.SECTIONS), "warmup_launches": 2}},
                 root=tmp_path, machine=machine)
    summary = pages.render("profiles", "summary", root=tmp_path)
    assert "| 82.5 |" in summary and "matmul warptile" in summary
    settings = pages.render("profiles", "settings", root=tmp_path)
    assert "Nsight Compute sample, sections" in settings and "2 earlier ones" in settings
    stalls = pages.render("profiles", "stalls", root=tmp_path)
    assert "1,048,576" in stalls and "long scoreboard" in stalls
    law = pages.render("profiles", "littles-law", root=tmp_path)
    assert "vector add, numba" in law and "matmul" not in law
    assert "DRAM moved / needed" in pages.render("profiles", "bytes", root=tmp_path)
    read = pages.render("profiles", "readings", root=tmp_path)
    assert "near the memory limit" in read and "latency" not in read.split("matmul")[0]
    for view in ("mix", "sass"):                    # a record without SASS summaries
        assert "holds no instruction statistics" in pages.render("profiles", view, root=tmp_path)


def _real_rows(with_sass: bool = True) -> list[dict]:
    """Rows as ``profiles.profile_one`` writes them, from the trimmed real pages; the fields the
    trimmed raw pages lack are filled with made-up values (not measurements)."""
    rows = []
    for name in (MATMUL, NUMBA, CUDA_C):
        t = targets.TARGETS[name]
        key = ncu.key_metrics(_raw(name)["metrics"])
        key.update(dram_pct=1.0, achieved_occupancy_pct=50.0, issue_active_pct=70.0)
        nbytes, flops = t.work()
        row = {"name": name, "label": t.label, "n": t.n, **key, "median_s": key["duration_s"],
               "counted_bytes": nbytes, "counted_flops": flops, "in_flight_bytes_per_thread": t.in_flight,
               "tflops": flops / key["duration_s"] / 1e12}
        if with_sass:
            row.update(sass=ncu.sass_summary(_sass(name)), sass_error=None)
        else:                                     # the committed record's rows: no such fields
            for field in ("pipes", "sm_issue_pct"):
                row.pop(field)
        rows.append(row)
    return rows


def _save_rows(tmp_path, rows):
    machine = {**device.machine_record(), "slug": "sample-gpu", "gpu": {"name": "sample"}}
    results.save("profiles", {"gpu": {"n": len(rows), "rows": rows, "failed": [], "ncu_version": "sample",
                                      "sections": list(ncu.SECTIONS), "warmup_launches": 2}},
                 root=tmp_path, machine=machine)


def test_sass_views_with_the_new_fields(tmp_path):
    _save_rows(tmp_path, _real_rows())
    fix = pages.render("profiles", "horner-fix", root=tmp_path)
    assert "|  | numba loop | CUDA C, 4 per thread |" in fix
    assert "| busiest pipe | ALU 92 % | FMA 75 % |" in fix and "| FFMA share | 12.0 % | 65.0 % |" in fix
    change = pages.render("profiles", "horner-change", root=tmp_path)
    assert "faster" in change and "fewer for the same polynomial" in change
    assert "(`LDC`) per multiply-add" in change and "not in this record" not in change
    mix = pages.render("profiles", "mix", root=tmp_path)
    assert mix.count("| Horner") == 2 and "| **FFMA 65.0**, ULDC 10," in mix and "matmul" in mix
    assert "| Horner, numba (why GPUs) (139 M) | **FFMA 12.0**, IMAD 33, LDC 15, SEL 15," in mix
    sass = pages.render("profiles", "sass", root=tmp_path)
    assert sass.index("matmul") < sass.index("Horner, numba") < sass.index("Horner, CUDA C")
    assert "`UMOV UR4, UR10`" in sass and "barrier (95 %)" in sass and "| 0x5c60 |" in sass
    assert sass.split("**Horner, numba")[0].count("| 0x") == views.HOT_MATMUL
    horner = pages.render("profiles", "horner", root=tmp_path)
    assert "were the multiply-adds (`FFMA`)" in horner and "**ALU** pipe" in horner
    r = next(r for r in _real_rows() if r["name"] == MATMUL)
    r["bank_conflicts"] = 1000.0
    assert "conflicts per instruction" in views._shared_accesses(r)


def test_sass_views_on_an_old_record(tmp_path):
    rows = [r for r in _real_rows(with_sass=False) if r["name"] != CUDA_C]
    _save_rows(tmp_path, rows)
    fix = pages.render("profiles", "horner-fix", root=tmp_path)
    assert "|  | numba loop |" in fix and "CUDA C" not in fix.split("\n\n")[0]
    assert "| FFMA share | - |" in fix and "| busiest pipe | - |" in fix     # not in the old record
    change = pages.render("profiles", "horner-change", root=tmp_path)
    assert "not in this record" in change and "faster" not in change
    for view in ("mix", "sass"):
        assert "holds no instruction statistics" in pages.render("profiles", view, root=tmp_path)
    horner = pages.render("profiles", "horner", root=tmp_path)
    assert "(`FFMA`)" not in horner and "busiest execution pipe" not in horner
    assert "no count of shared-memory accesses" in views._shared_accesses(rows[0])
    _save_rows(tmp_path, [r for r in rows if r["name"] != NUMBA])
    for view in ("horner-fix", "horner-change"):       # no Horner row at all: nothing to show
        with pytest.raises(pages.MissingResults):
            pages.render("profiles", view, root=tmp_path)


def _synthetic_gpu_part() -> dict:
    """A record shaped like ``measure.gpu_part``'s, with made-up times (not measurements): it
    exercises every view's code path on a machine without a GPU."""
    x = np.random.default_rng(0).random(1000, dtype=np.float32)
    out = np.full_like(x, np.nan)
    events = pipeline.run(pipeline.HostOps(x, out, 8), x.size, 8, 4)
    stage = {"median_s": 0.02, "gbs": 50.0}
    names = ["serial, pageable", "serial, pinned", "16 chunks, 1 stream, pinned",
             "pipelined, 16 chunks on 4 streams, pageable", "pipelined, 16 chunks on 4 streams, pinned"]
    rows = [{"name": nm, "chunks": 16 if "16" in nm else 1, "streams": 4 if "4 streams" in nm else 1,
             "median_s": t, "vs_ideal": t / 0.02, "pinned": "pageable" not in nm}
            for nm, t in zip(names, (0.13, 0.06, 0.06, 0.12, 0.024))]
    return {"n": 1000, "bytes": 4000, "degree": 8, "flops_per_byte": 2.0, "copy_engines": 2,
            "max_rel_err": 1e-7, "pipelined_equals_serial": True,
            "stages": [{"name": n, **stage} for n in ("copy in, pinned", "copy out, pinned")]
            + [{"name": "kernel", "median_s": 0.02, "gbs": None}],
            "ideal_s": 0.02, "serial_sum_s": 0.06, "rows": rows,
            "sweep": [{"chunks": c, "streams": min(c, 4), "median_s": 0.03, "vs_ideal": 1.5} for c in (1, 8)],
            "timeline": {"pipelined": {"streams": 4, "bars": pipeline.timeline(events["chunks"])},
                         "serial": {"streams": 1, "bars": pipeline.timeline(events["chunks"])}},
            "managed": {"n": 1000, "bytes": 4000, "rows": [
                {"name": "managed, page faults", "in_and_kernel_s": 0.1, "back_s": 0.1, "median_s": 0.2},
                {"name": "managed, prefetched", "error": "RuntimeError: synthetic"}]},
            "cpu_baseline": {"name": "numba parallel (all cores)", "threads": 16, "elements": 1000,
                             "median_s": 0.5, "elements_per_s": 2000.0},
            "torch": {"steps": 2, "batch": 8, "image_size": 32, "span_us": 2000.0, "busy": 0.5,
                      "device_us": 150.0, "kernel_count": 40,
                      "kernels": [{"name": "void k<float>(float*)", "calls": 4, "device_us": 100.0, "share": 0.67},
                                  {"name": "forward", "calls": 2, "device_us": 50.0, "share": 0.33}],
                      "phases": {"forward": {"cpu_us": 10.0, "device_us": 5.0}}}}


def test_target_missed_when_no_run_is_within_the_bound(tmp_path):
    part = _synthetic_gpu_part()
    for r in part["rows"]:                     # every run 1.25x its bound or worse
        r["vs_ideal"] = max(r["vs_ideal"], 1.25)
    part["sweep"] = [{"chunks": c, "streams": min(c, 4), "median_s": 0.02 * v, "vs_ideal": v}
                     for c, v in ((16, 1.25), (32, 1.2104), (64, 1.2102))]
    machine = {**device.machine_record(), "slug": results.reference_machine(),
               "gpu": {"name": "synthetic GPU"}}
    results.save("profiling", {"gpu": part}, root=tmp_path, machine=machine)
    bound = pages.render("profiling", "bound", root=tmp_path)
    assert "1.21x at 32 chunks on 4 streams and 64 chunks on 4 streams" in bound
    assert "**missed**" not in bound
    (t,) = pages.TARGETS["profiling"](results.load("profiling", root=tmp_path)[machine["slug"]])
    assert t.met is False and t.value == "82.6 %" and t.goal == ">= 90 %"
    part["sweep"][-1]["vs_ideal"] = 1.11                # 90.1 % of the bound: met
    stage = {st["name"]: st["median_s"] for st in part["stages"]}
    part["together"] = {"copies_s": 1.05 * part["ideal_s"], "all_three_s": 1.06 * part["ideal_s"],
                        "copy_in_s": 1.04 * stage["copy in, pinned"], "copy_out_s": 0.02,
                        "copy_in_gbs": 50.0, "copy_out_gbs": 49.0}
    results.save("profiling", {"gpu": part}, root=tmp_path, machine=machine)
    (t,) = pages.TARGETS["profiling"](results.load("profiling", root=tmp_path)[machine["slug"]])
    assert t.met is True and t.value.startswith("90.1 % (")
    assert "of the bound with both copies at once" in t.value
    text = pages.render("profiling", "together", root=tmp_path)
    assert "copy in, while copying out" in text and "| 50.0 |" in text
    assert "missed" not in pages.render("profiling", "card", root=tmp_path)


def test_kernel_names_are_shortened():
    assert views.kernel_name("void at::native::(anonymous namespace)::max_pool_backward_nchw<float, float, int>"
                             "(float const*, long const*)") == "at::native::max_pool_backward_nchw"
    assert views.kernel_name("sm80_xmma_gemm") == "sm80_xmma_gemm"
    assert len(views.kernel_name("x" * 100)) == 48


def test_gpu_views_render_a_synthetic_record(tmp_path):
    machine = {**device.machine_record(), "slug": results.reference_machine(),
               "gpu": {"name": "synthetic GPU"}}
    results.save("profiling", {"gpu": _synthetic_gpu_part()}, root=tmp_path, machine=machine)
    for view in ("stages", "runs", "sweep", "managed", "baseline", "torch"):
        assert "Measured on" in pages.render("profiling", view, root=tmp_path), view
    assert "<svg" in pages.render("profiling", "timeline", root=tmp_path)
    assert "bit for bit" in pages.render("profiling", "runs", root=tmp_path)
    assert "failed: RuntimeError" in pages.render("profiling", "managed", root=tmp_path)
    card = pages.render("profiling", "card", root=tmp_path)
    assert card.count("    1. ") == 3 and "2.5x faster than step after step" in card   # 0.06 / 0.024
    assert "2.2x slower than from pinned memory" in card                           # 0.13 / 0.06
    meta = page_source(ROOT / "docs" / "profiling.md")[0]
    full = pages.card(meta, card, page="profiling.md")
    assert "**Level:** intermediate" in full and "target" not in full
    bound = pages.render("profiling", "bound", root=tmp_path)
    assert "1.20x the bound" in bound and "**met**" not in bound
    (t,) = pages.TARGETS["profiling"](results.load("profiling", root=tmp_path)[machine["slug"]])
    assert t.met is False and t.value == "83.3 %"                    # 1 / 1.20
    torch = pages.render("profiling", "torch", root=tmp_path)
    table_part, after = torch.split("The record's device events", 1)
    assert "`k`" in table_part and "forward" not in table_part      # a range is not a kernel
    assert "covered 50 %" in after and "at most **5 %**" in after   # (150 - 50) us of 2000 us


def test_views_read_the_other_records_beside_the_one_they_render(tmp_path):
    """Views and the card that join records read them from the results folder being rendered
    (``render(root=)``), on the same machine, never from the project's results."""
    ref = results.reference_machine()
    machine = {**device.machine_record(), "slug": ref, "gpu": {"name": "synthetic GPU"}}
    results.save("profiling", {"gpu": _synthetic_gpu_part()}, root=tmp_path, machine=machine)
    rows = _real_rows()
    results.save("profiles", {"gpu": {"n": len(rows), "rows": rows, "failed": [],
                                      "ncu_version": "sample", "sections": list(ncu.SECTIONS),
                                      "warmup_launches": 2}}, root=tmp_path, machine=machine)
    assert "of the FP32 peak" not in pages.render("profiles", "horner", root=tmp_path)
    assert "fp32 peak" not in pages.render("profiling", "card", root=tmp_path)
    records = pages.render("profiling", "records", root=tmp_path)
    assert "`profiling.json`" in records and "`profiles.json`" in records
    assert "synthetic GPU" in records
    results.save("why_gpus", {"hardware": {"gpu": {"peak_tflops": 50.0}}}, root=tmp_path,
                 machine=machine)
    horner = pages.render("profiles", "horner", root=tmp_path)
    assert "of the FP32 peak of 50.0 TFLOP/s" in horner
    assert "of the GPU's fp32 peak" in pages.render("profiling", "card", root=tmp_path)


# ------------------------------------------------------------------ real GPU

@pytest.mark.gpu
@pytest.mark.parametrize("count, streams", [(1, 1), (7, 3), (16, 4)])
def test_gpu_pipeline_equals_serial_and_events_are_ordered(count, streams):
    import cupy
    import cupyx
    n = 1_000_003                                  # not a multiple of any chunk count here
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    pin_in = cupyx.empty_pinned(n, np.float32)
    pin_in[:] = x
    outs = []
    for c, s in ((1, 1), (count, streams)):
        out = cupyx.empty_pinned(n, np.float32)
        out[:] = np.nan
        ops = pipeline.CupyOps(pin_in, out, cupy.empty(n, cupy.float32), cupy.empty(n, cupy.float32), 64, s)
        res = pipeline.run(ops, n, c, s)
        for r in res["chunks"]:
            assert r["t"] == sorted(r["t"]) and r["t"][0] > -1e-4   # after the start event
        outs.append(out.copy())
    assert np.array_equal(outs[0], outs[1]) and np.isfinite(outs[1]).all()
    sample = slice(0, n, 997)
    ref = pipeline.reference(x[sample], 64)
    assert np.max(np.abs(outs[1][sample] - ref) / ref) < pipeline.rtol(64)


@pytest.mark.gpu
def test_gpu_target_launches_and_checks():
    rec = targets.launch("vector-add-cupy-raw", 1, 1 << 20)
    assert rec["launches"] == 2 and rec["max_rel_err"] <= 1e-6


@pytest.mark.gpu
def test_gpu_profile_command(tmp_path):
    proc = run_cli("profile", "vector-add-cupy-raw", "--out", tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "DRAM throughput" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vector-add-cupy-raw.json",
                                                          "vector-add-cupy-raw.ncu-rep"]


def test_every_chapter_finds_ncu_the_same_way(tmp_path, monkeypatch):
    from gpukit import tools
    from gpukit.timing import profile
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("GPUKIT_NCU", str(fake))
    assert tools.find_ncu() == ncu.find_ncu() == profile.find_ncu() == str(fake)
    monkeypatch.setenv("GPUKIT_NCU", str(tmp_path / "missing"))    # set means only that one
    assert tools.find_ncu() is None and profile.find_ncu() is None
    fake.chmod(0o644)                                              # not executable
    monkeypatch.setenv("GPUKIT_NCU", str(fake))
    assert tools.find_ncu() is None
