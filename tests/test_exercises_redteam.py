"""The checker against submissions that try to pass without doing the work, careless ones,
and unusual correct ones. Each file under tests/data/exercises/ names its puzzle and its
expected verdict (``# expect: pass`` or ``# expect: fail: <words of the message>``); all are
checked in one batch (one pair of child processes), then each is one test."""

import json
import re

import numpy as np
import pytest

from gpukit.exercises import grader, puzzles
from tests.helpers import ROOT, run_without_gpu, shared_once

DATA = ROOT / "tests" / "data" / "exercises"
FILES = sorted(DATA.glob("*.py"))
SEED = 20261201


def _header(path):
    text = path.read_text()
    num = int(re.search(r"^# puzzle: (\d+)$", text, re.M).group(1))
    expect = re.search(r"^# expect: (.*)$", text, re.M).group(1)
    return num, expect


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    items = [[_header(f)[0], str(f), SEED] for f in FILES]
    found = shared_once(tmp_path_factory, "redteam-verdicts",
                        lambda _: run_without_gpu("gpukit.exercises.grader:check_many", items,
                                                  timeout=900))
    assert len(found) == len(FILES)
    return dict(zip(FILES, found))


def test_the_suite_is_large_and_varied():
    heads = [_header(f) for f in FILES]
    bad = [(n, e) for n, e in heads if e != "pass"]
    assert len(bad) >= 30 and len({n for n, _ in bad}) >= 10
    assert sum(1 for _, e in heads if e == "pass") >= 6
    for k in range(1, 9):                                   # every class of the review
        assert any(re.search(rf"^# class: {k}\b", f.read_text(), re.M) for f in FILES), k


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_submission_gets_its_verdict(path, verdicts):
    num, expect = _header(path)
    r = verdicts[path]
    message = r.get(grader.BAD) or r.get("message") or ""
    if expect == "pass":
        assert r.get("ok") is True, r
        assert r["ptx"] == "compiled" or r["ptx"].startswith("skipped"), r
    else:
        assert r.get("ok") is not True, r
        assert expect.split(": ", 1)[1] in message, message
        assert "\n" not in message


def test_references_pass_at_more_seeds():
    """The tolerances in ulps hold for the reference solutions at other sizes and blocks."""
    nums = (9, 10, 11, 12, 15, 16, 17, 19, 20)
    items = [[n, str(puzzles.solution(puzzles.find(n))), seed] for n in nums for seed in (1, 2)]
    for item, r in zip(items, run_without_gpu("gpukit.exercises.grader:check_many", items)):
        assert r["ok"] and r["at_minimum"], (item, r)


def test_each_trial_takes_another_block_size():
    for p in puzzles.PUZZLES:
        for seed in range(5):
            trials = grader.plan(p, seed)
            if p.consts:
                assert trials[0]["consts"] != trials[1]["consts"], p.num


def test_the_child_gets_neither_the_seed_nor_the_answers():
    p = puzzles.find(15)
    seed = 987654321
    trials = grader.plan(p, seed)
    text = json.dumps(grader._sim_job(p, "x.py", trials))
    assert str(seed) not in text and "want" not in text
    for tr in trials:
        c = tr["want"]["c"]
        assert np.isfinite(c).all()


def _answer(puzzle, tr, score, outputs=None):
    """What a child would send: the right outputs (or ``outputs``) with the given counts."""
    from gpukit.exercises.child import encode
    specs = puzzle.outs(tr["p"])
    outs = outputs or {k: tr["want"][k].astype(specs[k][1]) for k in specs}
    return {"score": score, "outputs": {k: encode(v) for k, v in outs.items()}, "changed": [],
            "strides": {}, "banks": []}


def test_a_forged_answer_with_too_few_reads_is_suspect():
    p = puzzles.find(15)
    tr = grader.plan(p, 3)[0]
    r = grader._judge(p, tr, _answer(p, tr, {"gr": 0, "gw": 1, "sh": 40}))
    assert not r["ok"] and r["message"].startswith("suspect"), r


def test_tolerance_in_ulps():
    p = puzzles.find(1)
    tr = grader.plan(p, 4)[0]
    want = tr["want"]["out"].astype(np.float32)
    ok = grader._judge(p, tr, _answer(p, tr, {"gr": 1, "gw": 1, "sh": 0},
                                      {"out": np.nextafter(want, np.float32(np.inf))}))
    assert ok["ok"], ok                                         # one ulp: rounding
    off = want + np.float32(100) * np.spacing(want)
    r = grader._judge(p, tr, _answer(p, tr, {"gr": 1, "gw": 1, "sh": 0}, {"out": off}))
    assert not r["ok"] and "100 float32 ulps off" in r["message"], r


def test_a_malformed_answer_fails():
    p = puzzles.find(1)
    tr = grader.plan(p, 4)[0]
    bad = _answer(p, tr, {"gr": 1, "gw": 1, "sh": 0})
    bad["outputs"]["out"]["dtype"] = "<f8"
    r = grader._judge(p, tr, bad)
    assert not r["ok"] and "malformed" in r["message"]


def test_the_full_size_run_is_judged_by_the_checker():
    """The GPU path's protocol, run on the simulator at puzzle 3's small full size: the child
    returns outputs in files, the checker compares them (a GPU runs the real thing)."""
    import tempfile

    from gpukit.exercises import gpu
    with tempfile.TemporaryDirectory() as work:
        child = grader.Child("gpu", grader.SIM_ENV, work)
        try:
            ok = gpu.full_size(child, puzzles.find(3), str(puzzles.solution(puzzles.find(3))), 5, 1)
            wrong = gpu.full_size(child, puzzles.find(1), str(DATA / "r39_prints_a_verdict_from_the_kernel.py"),
                                  5, 1)
        finally:
            child.close()
    assert ok["ok"] and ok["sizes"]["n"] == 1000, ok
    assert not wrong["ok"] and "full size: first wrong element" in wrong["message"], wrong


def test_the_children_run_the_text_that_was_judged(tmp_path, monkeypatch):
    """A file swapped after the checker read it changes nothing: the children get the text."""
    right = puzzles.solution(puzzles.find(1)).read_text()
    swapped = tmp_path / "p01.py"
    swapped.write_text((DATA / "r39_prints_a_verdict_from_the_kernel.py").read_text())
    monkeypatch.setattr(grader, "read_submission", lambda puzzle, path: (right, None))
    assert grader.check_sim(1, str(swapped), 5)["ok"]


def test_a_file_that_is_not_utf8_is_bad_input(tmp_path):
    from tests.helpers import assert_one_line_error, run_cli
    path = tmp_path / "p01_map.py"
    path.write_bytes(b"\xff\xfe\x00def map_add_ten(out, a): pass\n")
    out = run_cli("exercises", "check", "1", path, env={"GPUKIT_EXERCISES_STATE": str(tmp_path / "s")})
    assert "not a UTF-8 text file" in assert_one_line_error(out)
