"""Exercises: every reference passes at its minimum score, every starter fails, typical wrong or
lazy solutions fail with a useful message, the progress file, the command's bad input."""

import json
import os

import pytest

from gpukit import pages, proc
from gpukit.exercises import puzzles
from tests.helpers import ROOT, assert_one_line_error, run_cli, run_without_gpu

SEED = 12345


def _check(items):
    return run_without_gpu("gpukit.exercises.grader:check_many", items, timeout=300)


@pytest.mark.parametrize("nums", [range(1, 11), range(11, 21)], ids=["1-10", "11-20"])
def test_reference_solutions_pass_at_their_minimum(nums):
    items = [[n, str(puzzles.solution(puzzles.find(n))), SEED + n] for n in nums]
    results = _check(items)
    assert sum(r["seconds"] for r in results) < 30     # the first one starts the child processes
    for n, r in zip(nums, results):
        assert r["ok"], (n, r)
        assert r["at_minimum"], (n, r)
        for t in r["trials"]:
            assert t["score"] == t["minimum"], (n, t)   # the stated minimum is what the reference does
        sizes = [t["sizes"] for t in r["trials"]]
        assert sizes[0] != sizes[1], n                   # two different sizes
        assert n == nums[0] or r["seconds"] < 4, (n, r["seconds"])


def test_every_starter_fails():
    items = [[p.num, str(puzzles.starter(p)), SEED] for p in puzzles.PUZZLES]
    for p, r in zip(puzzles.PUZZLES, _check(items)):
        assert "bad_input" not in r, (p.num, r)
        assert not r["ok"], (p.num, r)


WRONG = {
    # (puzzle, kernel body or whole file, what the message must say)
    "off_by_one_guard": (3, """
from numba import cuda
@cuda.jit
def guard_add_ten(out, a):
    i = cuda.threadIdx.x
    if i <= a.shape[0]:
        out[i] = a[i] + 10
""", "outside the array"),
    "no_guard": (3, """
from numba import cuda
@cuda.jit
def guard_add_ten(out, a):
    i = cuda.threadIdx.x
    out[i] = a[i] + 10
""", "needs a guard"),
    "returns_the_input": (1, """
from numba import cuda
@cuda.jit
def map_add_ten(out, a):
    i = cuda.threadIdx.x
    out[i] = a[i]
""", "first wrong element: out[0]"),
    "only_the_example_size": (6, """
from numba import cuda
@cuda.jit
def blocks_add_ten(out, a):
    i = cuda.grid(1)
    if i < 24:
        out[i] = a[i] + 10
""", "never written"),
    "hard_coded_block_size": (6, """
from numba import cuda
@cuda.jit
def blocks_add_ten(out, a):
    i = cuda.blockIdx.x * 16 + cuda.threadIdx.x
    if i < a.shape[0]:
        out[i] = a[i] + 10
""", "first wrong element"),
    "missing_syncthreads": (7, """
import numba
from numba import cuda
TPB = 8
@cuda.jit
def swap_pairs(out, a):
    s = cuda.shared.array(TPB, numba.float32)
    i = cuda.grid(1)
    l = cuda.threadIdx.x
    if i < a.shape[0]:
        s[l] = a[i]
        if (i ^ 1) < a.shape[0]:
            out[i] = s[l ^ 1]
        else:
            out[i] = s[l]
""", "race on shared"),
    "partner_from_global_memory": (7, """
from numba import cuda
@cuda.jit
def swap_pairs(out, a):
    i = cuda.grid(1)
    if i < a.shape[0]:
        j = i ^ 1
        out[i] = a[j] if j < a.shape[0] else a[i]
""", "use shared memory"),
    "reads_twice": (7, """
import numba
from numba import cuda
TPB = 8
@cuda.jit
def swap_pairs(out, a):
    s = cuda.shared.array(TPB, numba.float32)
    i = cuda.grid(1)
    l = cuda.threadIdx.x
    if i < a.shape[0]:
        s[l] = a[i]
        j = i ^ 1
        out[i] = a[j] if j < a.shape[0] else a[i]
""", "the rules allow at most 1"),
    "window_too_wide": (8, """
import numba
from numba import cuda
TPB = 8
SIZE = TPB + 2
@cuda.jit
def pool3(out, a):
    s = cuda.shared.array(SIZE, numba.float32)
    i = cuda.grid(1)
    l = cuda.threadIdx.x
    if i < a.shape[0]:
        s[l + 2] = a[i]
    if l < 2:
        s[l] = a[i - 3] if i >= 3 else 0
    cuda.syncthreads()
    if i < a.shape[0]:
        out[i] = s[l] + s[l + 1] + s[l + 2]
""", "first wrong element"),
    "scan_without_the_first_barrier": (12, """
import numba
from numba import cuda
TPB = 8
@cuda.jit
def block_scan(out, a):
    s = cuda.shared.array(TPB, numba.float32)
    i = cuda.grid(1)
    l = cuda.threadIdx.x
    v = numba.float32(0)
    if i < a.shape[0]:
        v = a[i]
    s[l] = v
    cuda.syncthreads()
    d = 1
    while d < TPB:
        if l >= d:
            v += s[l - d]
            s[l] = v
        cuda.syncthreads()
        d *= 2
    if i < a.shape[0]:
        out[i] = v
""", "race on shared"),
    "histogram_without_atomics": (13, """
from numba import cuda
@cuda.jit
def histogram(hist, values):
    i = cuda.grid(1)
    if i < values.shape[0]:
        hist[values[i]] += 1
""", "race on hist"),
    "transpose_without_padding": (14, """
import numba
from numba import cuda
TILE = 4
@cuda.jit
def transpose(out, a):
    tile = cuda.shared.array((TILE, TILE), numba.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    r = cuda.blockIdx.y * TILE + ty
    c = cuda.blockIdx.x * TILE + tx
    if r < a.shape[0] and c < a.shape[1]:
        tile[ty, tx] = a[r, c]
    cuda.syncthreads()
    r = cuda.blockIdx.x * TILE + ty
    c = cuda.blockIdx.y * TILE + tx
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = tile[tx, ty]
""", "bank conflict"),
    "naive_transpose": (14, """
from numba import cuda
@cuda.jit
def transpose(out, a):
    c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    r = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if r < a.shape[0] and c < a.shape[1]:
        out[c, r] = a[r, c]
""", "use shared memory"),
    "warp_lanes_leave_early": (20, """
import numba
from numba import cuda
@cuda.jit
def warp_sum(out, a):
    i = cuda.grid(1)
    if i >= a.shape[0]:
        return
    v = a[i]
    k = 16
    while k > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, k)
        k //= 2
    if cuda.threadIdx.x % 32 == 0:
        out[i // 32] = v
""", "returned before the cuda.shfl_down_sync"),
    "hard_coded_answer": (9, """
from numba import cuda
@cuda.jit
def dot(out, a, b):
    if cuda.threadIdx.x == 0:
        out[0] = 14.36859
""", "first wrong element: out[0]"),
    "changes_its_input": (1, """
from numba import cuda
@cuda.jit
def map_add_ten(out, a):
    i = cuda.threadIdx.x
    a[i] = a[i] + 10
    out[i] = a[i]
""", "changed its input"),
}

BAD = {
    "numpy_on_the_host": (1, """
import numpy as np
def map_add_ten(out, a):
    out[:] = np.asarray(a) + 10
""", "is not a @cuda.jit kernel"),
    "wrong_kernel_name": (1, """
from numba import cuda
@cuda.jit
def add_ten(out, a):
    out[cuda.threadIdx.x] = a[cuda.threadIdx.x] + 10
""", "defines no `map_add_ten`"),
    "syntax_error": (1, "def map_add_ten(out, a:\n", "syntax error"),
    "fails_on_import": (1, """
from numba import cuda
X = 1 / 0
@cuda.jit
def map_add_ten(out, a):
    pass
""", "failed on import"),
}


def test_wrong_and_lazy_solutions_fail_with_a_useful_message(tmp_path):
    cases = {**WRONG, **BAD}
    items = []
    for name, (num, source, _) in cases.items():
        path = tmp_path / f"{name}.py"
        path.write_text(source.lstrip())
        items.append([num, str(path), SEED])
    for (name, (num, _, needle)), r in zip(cases.items(), _check(items)):
        if name in BAD:
            assert needle in r["bad_input"], (name, r)
        else:
            assert r["ok"] is False and needle in r["message"], (name, r)


def test_occupancy_launch_rules(tmp_path):
    base = puzzles.solution(puzzles.find(19)).read_text()
    too_few = base.replace("blocks = min(", "blocks = 1 or min(")
    odd = base.replace("threads = min(256, max_threads_per_block)", "threads = 100")
    idle = base.replace("blocks = min(", "blocks = 2 * min(")
    items = []
    for name, text in (("few", too_few), ("odd", odd), ("idle", idle)):
        (tmp_path / f"{name}.py").write_text(text)
        items.append([19, str(tmp_path / f"{name}.py"), SEED])
    few, odd_r, idle_r = _check(items)
    assert "part empty" in few["message"]
    assert "multiple of 32" in odd_r["message"]
    assert "no element to work on" in idle_r["message"]


def test_the_same_seed_gives_the_same_inputs(tmp_path):
    path = str(puzzles.solution(puzzles.find(6)))
    a, b, c = _check([[6, path, 7], [6, path, 7], [6, path, 8]])
    assert a["trials"][0]["sizes"] == b["trials"][0]["sizes"]
    assert [t["sizes"] for t in a["trials"]] != [t["sizes"] for t in c["trials"]]


def test_reference_solutions_compile_for_a_gpu():
    """The simulator runs Python; numba's compiler to PTX (no GPU needed) checks the real thing."""
    items = [[p.num, str(puzzles.solution(p))] for p in puzzles.PUZZLES]
    out = proc.run_fresh("gpukit.exercises.compile:compile_many", items,
                         env={"NUMBA_ENABLE_CUDASIM": "0"}, timeout=600)
    assert isinstance(out, list), out
    if all("skipped" in r for r in out):
        pytest.skip(out[0]["skipped"])
    for p, r in zip(puzzles.PUZZLES, out):
        assert r.get("ok"), (p.num, r)
        assert r["f64_arith"] == 0, (p.num, "float64 arithmetic in a float32 kernel")


# ------------------------------------------------------------------ progress file

def test_progress_is_recorded_and_a_corrupt_file_is_kept(tmp_path, monkeypatch, capsys):
    from gpukit.exercises import state
    target = tmp_path / "progress.json"
    monkeypatch.setenv("GPUKIT_EXERCISES_STATE", str(target))
    assert state.load()["puzzles"] == {}
    state.record(3, {"ok": True, "seed": 1, "at_minimum": True, "score": {"gr": 1, "gw": 1, "sh": 0}},
                 solved_now=True)
    state.record(4, {"ok": False, "seed": 2}, solved_now=False)
    saved = json.loads(target.read_text())
    assert saved["puzzles"]["3"]["passed"] and saved["puzzles"]["3"]["at_minimum"]
    assert not saved["puzzles"]["4"].get("passed") and saved["puzzles"]["4"]["last"]["seed"] == 2
    state.record(3, {"ok": False, "seed": 5}, solved_now=False)  # a later failure keeps the pass
    assert state.load()["puzzles"]["3"]["passed"]
    target.write_text("{not json")
    assert state.load()["puzzles"] == {}
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "warning" in err[0] and "corrupt" in err[0]
    backups = list(tmp_path.glob("progress.json.corrupt-*"))
    assert len(backups) == 1 and backups[0].read_text() == "{not json"


@pytest.mark.parametrize("content", [
    b"\xff\xfe not text",                                           # not UTF-8
    b'{"version": 1, "puzzles": {"3": "passed"}}',                   # an entry of the wrong type
    b'{"version": 1, "puzzles": {"3": {"passed": "yes"}}}',
    b'{"version": 1, "puzzles": {"3": {"passed": true, "percent_of_roof": "ninety"}}}',
    b'{"version": 1, "puzzles": {"3": {"passed": true, "score": {"gr": "x"}}}}',
    b'[1, 2]', None])                                                # None: a folder in its place
def test_a_damaged_progress_file_is_kept_aside_and_never_crashes(content, tmp_path):
    target = tmp_path / "progress.json"
    if content is None:
        target.mkdir()
    else:
        target.write_bytes(content)
    env = {"GPUKIT_EXERCISES_STATE": str(target), "CUDA_VISIBLE_DEVICES": ""}
    listing = run_cli("exercises", "list", env=env)
    assert listing.returncode == 0 and "0 of 20 solved" in listing.stdout, listing.stderr
    err = [ln for ln in listing.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and "warning" in err[0] and "Traceback" not in listing.stderr
    kept = list(tmp_path.glob("progress.json.corrupt-*"))
    assert len(kept) == 1
    if content is not None:
        assert kept[0].read_bytes() == content
    assert run_cli("exercises", "list", env=env).stderr == ""     # afresh, no second warning


def test_unknown_puzzles_do_not_count(tmp_path):
    target = tmp_path / "progress.json"
    target.write_text(json.dumps({"version": 1, "puzzles": {
        str(k): {"passed": True} for k in ["3", "21", "99", "x", "-1"]}}))
    out = run_cli("exercises", "list", env={"GPUKIT_EXERCISES_STATE": str(target)}).stdout
    assert "1 of 20 solved" in out


def test_progress_is_written_by_the_checker_from_what_it_read_before(tmp_path, monkeypatch):
    from gpukit.exercises import state
    target = tmp_path / "progress.json"
    monkeypatch.setenv("GPUKIT_EXERCISES_STATE", str(target))
    before = state.load()
    target.write_text(json.dumps({"version": 1, "puzzles": {                # written meanwhile
        str(n): {"passed": True, "at_minimum": True} for n in range(1, 21)}}))
    state.record(2, {"ok": True, "seed": 1}, solved_now=False, base=before)
    data = state.load()
    assert state.solved(data, range(1, 21)) == 0 and data["puzzles"]["2"]["simulator"]


def _check_in_process(monkeypatch, tmp_path, gpu_row, argv):
    from gpukit import cli, device
    from gpukit.exercises import gpu
    monkeypatch.setenv("GPUKIT_EXERCISES_STATE", str(tmp_path / "s.json"))
    monkeypatch.setattr(device, "has_gpu", lambda: True)
    monkeypatch.setattr(gpu, "run_many", lambda items, repeat, quiet=False: {"rows": [gpu_row]})
    return cli.main(["exercises", "check", "7", str(puzzles.solution(puzzles.find(7))), *argv])


def test_a_failed_gpu_run_is_not_solved(monkeypatch, tmp_path, capsys):
    from gpukit.exercises import state
    code = _check_in_process(monkeypatch, tmp_path, {"ok": False, "message": "full size: wrong"}, [])
    assert code == 1 and "FAIL on the GPU" in capsys.readouterr().out
    assert state.solved(state.load(), [7]) == 0 and state.load()["puzzles"]["7"]["simulator"]


def test_with_a_gpu_only_the_full_size_run_solves(monkeypatch, tmp_path, capsys):
    from gpukit.exercises import state
    row = {"ok": True, "first_call_s": 0.1, "median_s": 1e-3, "gbs": 10.0, "roof": "copy",
           "percent_of_roof": 5.0}
    assert _check_in_process(monkeypatch, tmp_path, row, ["--no-gpu"]) == 0
    assert state.solved(state.load(), [7]) == 0                      # --no-gpu on a GPU machine
    assert _check_in_process(monkeypatch, tmp_path, row, ["--seed", "5"]) == 0
    assert state.solved(state.load(), [7]) == 0                      # a chosen seed
    assert _check_in_process(monkeypatch, tmp_path, row, []) == 0
    assert state.solved(state.load(), [7]) == 1
    assert state.load()["puzzles"]["7"]["percent_of_roof"] == 5.0


def test_progress_file_follows_xdg_cache_home(tmp_path, monkeypatch):
    from gpukit.exercises import state
    monkeypatch.delenv("GPUKIT_EXERCISES_STATE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert state.path() == tmp_path / "gpukit" / "exercises.json"


def test_cli_list_show_hint_solution_and_a_passing_check(tmp_path):
    env = {"GPUKIT_EXERCISES_STATE": str(tmp_path / "s.json"), "CUDA_VISIBLE_DEVICES": ""}
    assert "Swap neighbours" in run_cli("exercises", "show", "7", env=env).stdout
    assert "hint 2" in run_cli("exercises", "hint", "shared", "--level", "2", env=env).stdout
    assert "def swap_pairs" in run_cli("exercises", "solution", "7", env=env).stdout
    ok = run_cli("exercises", "check", "7", puzzles.solution(puzzles.find(7)), "--no-gpu", env=env)
    assert ok.returncode == 0 and "PASS" in ok.stdout and "seed" in ok.stdout, ok.stdout + ok.stderr
    listing = run_cli("exercises", "list", env=env).stdout
    assert "1 of 20 solved" in listing and "★" in listing


@pytest.mark.parametrize("args, needle", [
    (["check", "21", "x.py"], "no puzzle '21'"),
    (["show", "nonsense"], "no puzzle"),
    (["check", "3", "missing.py"], "no such file"),
    (["check", "3"], "start 3"),
    (["hint", "3", "--level", "3"], "invalid choice"),
])
def test_cli_bad_input(args, needle, tmp_path):
    proc_ = run_cli("exercises", *args, env={"GPUKIT_EXERCISES_STATE": str(tmp_path / "s.json")})
    assert needle in assert_one_line_error(proc_)


@pytest.mark.parametrize("source, needle", [("def broken(:\n", "syntax error"),
                                            ("from numba import cuda\n", "defines no `guard_add_ten`")])
def test_cli_bad_file_is_one_line(source, needle, tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(source)
    proc_ = run_cli("exercises", "check", "3", path, env={"GPUKIT_EXERCISES_STATE": str(tmp_path / "s.json")})
    assert needle in assert_one_line_error(proc_)


def test_start_copies_the_starter_and_never_overwrites(tmp_path):
    import subprocess
    import sys
    cmd = [sys.executable, "-m", "gpukit.cli", "exercises", "start", "2"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert first.returncode == 0 and (tmp_path / "p02_zip.py").exists()
    assert "already exists" in assert_one_line_error(subprocess.run(cmd, cwd=tmp_path, capture_output=True,
                                                                    text=True, env=env))


def test_the_page_words_are_the_puzzles_words():
    """The views read each puzzle's words from meta (no puzzle module): the puzzles are built
    from those words, in the same order."""
    from gpukit.exercises import meta
    assert [t.num for t in meta.TEXTS] == [p.num for p in puzzles.PUZZLES] == list(range(1, 21))
    for t, p in zip(meta.TEXTS, puzzles.PUZZLES):
        assert (t.title, t.task, t.rules, t.hints, t.args, t.roof, t.file) == (
            p.title, p.task, p.rules, p.hints, p.args, p.roof, p.file)
    with pytest.raises(LookupError):
        meta.text(21)


def test_pages_render_each_puzzle_and_the_table():
    for p in puzzles.PUZZLES:
        md = pages.render_data("exercises", f"p{p.num:02d}")
        assert p.task[:30] in md and "<svg" in md and f"solutions/{p.file}" in md
        assert puzzles.starter(p).exists() and puzzles.solution(p).exists()
    from gpukit.exercises import views
    table = pages.render("exercises", "table", root=ROOT / "results")
    assert all(f"(#{views.anchor(p)})" in table for p in puzzles.PUZZLES)
    cpu_only = views.scores("t", _record(None))        # a machine without a GPU: the checks
    assert cpu_only.count("passes, ") == len(puzzles.PUZZLES)


@pytest.mark.gpu
def test_reference_solutions_at_full_size_on_the_gpu():
    items = [[n, str(puzzles.solution(puzzles.find(n))), 1] for n in (6, 14, 15, 20)]
    out = proc.run_fresh("gpukit.exercises.gpu:run_many", items, 5, env={"NUMBA_ENABLE_CUDASIM": "0"},
                         timeout=600)
    assert "rows" in out, out
    for r in out["rows"]:
        assert r["ok"], r
        assert 0 < r["percent_of_roof"] < 110, r


def _record(rows_gpu=None):
    """A small record in the shape `measure.run` writes, with a GPU part when rows are given."""
    sim = {"seed": 1, "process_s": 1.0, "rows": [
        {"puzzle": p.num, "ok": True, "message": "passed", "seconds": 0.01,
         "score": {"gr": 1, "gw": 1, "sh": 0}, "minimum": {"gr": 1, "gw": 1, "sh": 0}} for p in puzzles.PUZZLES]}
    data = {"sim": sim, "machine": {"date": "2026-11-30", "gpu": {"name": "Test GPU", "multiprocessors": 4}}}
    if rows_gpu is not None:
        data["gpu"] = {"roofs": {"copy_gbs": 1000.0, "copy_timer": "cupy", "fp32_tflops": 10.0}, "rows": rows_gpu}
    return pages.Record(data)


def _gpu_rows(fail=None):
    rows = []
    for p in puzzles.PUZZLES:
        r = {"puzzle": p.num, "title": p.title, "ok": p.num != fail, "roof": p.roof, "median_s": 1e-3,
             "first_call_s": 0.1, "blocks": False, "launch_bound": p.roof is None, "grid": 8, "block": 256,
             "sizes": {"n": 1000, "tpb": 256, "bins": 16, "tile": 16}, "message": "full size: wrong"}
        if p.roof == "copy":
            r.update(gbs=10.0 * p.num, tflops=None, percent_of_roof=1.0 * p.num)
        elif p.roof == "fp32":
            r.update(gbs=None, tflops=1.5, percent_of_roof=15.0)
        rows.append(r)
    return rows


def test_views_render_rates_roofs_and_targets_from_the_record():
    from gpukit.exercises import views
    data = _record(_gpu_rows())
    gpu = views.speed("t", data)
    assert "- GB/s" not in gpu and "1.50 TFLOP/s" in gpu and "15.0 % of FP32 peak" in gpu
    assert "1. Map ‡" in gpu and "Launch-bound" in gpu        # one-block rows are marked
    assert "†" not in gpu                                     # no call waited
    table = views.scores("t", data)
    assert "no roof (one block) ‡" in table and "20.0 % of copy" in table
    assert "20 of 20 reference solutions pass" in table
    marks = views.targets(data)
    assert [t.met for t in marks] == [True, True, True]
    assert [t.value for t in marks] == ["20 of 20", "20 of 20", "15 of 15"]
    # every copy puzzle is below 25 % here: each is listed with what it does, its
    # unmeasured causes only among the open questions
    far, questions = views.far("t", data), views.questions("t", data)
    assert "13. Histogram](#13-histogram)**" in far and "15. Tiled matmul](#15-tiled-matmul)**" in far
    assert "measured" not in far and "?" not in far
    assert "**13. Histogram**" in questions and "**15. Tiled matmul**" in questions
    # one question per far reference, puzzle 16's and the launch shape's (the question about
    # every reference reads the same for any record: it is written in the page)
    assert questions.count("- **") == len(far.splitlines()) - 2 + 2
    assert "**Every reference**" not in questions
    assert "**Every reference**" in (ROOT / "docs" / "exercises.md").read_text(encoding="utf-8")
    assert "<svg" in views.plot("t", data) and "Left out: puzzles 1 to 5" in views.plot("t", data)
    for view in ("table", "gpu", "plot", "far", "questions", "launch"):
        assert "met**" not in pages.RENDERERS[("exercises", view)]("t", data)


def test_views_say_missed_and_failed_when_a_reference_fails():
    from gpukit.exercises import card, views
    data = _record(_gpu_rows(fail=13))
    marks = views.targets(data)
    assert [t.met for t in marks] == [True, False, False]
    assert [t.value for t in marks] == ["20 of 20", "19 of 20", "14 of 15"]
    assert "failed" in views.speed("t", data) and "**13." not in views.far("t", data)
    assert "puzzle 13 failed" in card.card(data)


def test_views_without_a_gpu_show_the_simulator_only():
    from gpukit.exercises import views
    data = _record()
    assert "passes, 10.00 ms" in views.scores("t", data) and "No GPU on this machine" in views.scores("t", data)
    for view in (views.speed, views.far, views.questions, views.plot):
        with pytest.raises(pages.NotRecorded):
            view("t", data)
    marks = views.targets(data)
    assert marks[0].met is True and [t.met for t in marks[1:]] == [None, None]
