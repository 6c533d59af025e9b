"""The data-parallel benchmark's plumbing on the CPU: its order of runs, its time budget, the
rows it records, the merge of a part into the stored record, and its command's bad input."""

import pytest

torch = pytest.importorskip("torch")
from gpukit.cats_vs_dogs import scaling  # noqa: E402


def _fake(monkeypatch, seconds_per_run: float, clock: list, calls: list | None = None):
    """Two GPUs that are not there: each training 'takes' ``seconds_per_run`` on a fake clock."""
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(scaling.time, "perf_counter", lambda: clock[0])

    def train_once(data, nproc, seed, args):
        clock[0] += seconds_per_run
        if calls is not None:
            calls.append((nproc, seed, args))
        return {"gpus": nproc, "seed": seed, "args": args, "launcher_s": seconds_per_run,
                "test_acc": 0.9, "images_per_s": 1000.0 * nproc, "time_to_model_s": seconds_per_run - 6,
                "ranks_agree": nproc > 1}

    def measure_regime(img, width, batch, gpus):
        clock[0] += 5
        return {"one": {"img": img}, "many": {"world": gpus}}
    monkeypatch.setattr(scaling, "train_once", train_once)
    import gpukit.cats_vs_dogs.ddp_steps as ddp_steps
    monkeypatch.setattr(ddp_steps, "measure_regime", measure_regime)


def test_one_and_two_gpus_alternate_seed_by_seed_after_an_untimed_warmup(monkeypatch):
    clock, calls = [0.0], []
    _fake(monkeypatch, 10.0, clock, calls)
    monkeypatch.setenv("GPUKIT_BENCH_BUDGET_S", "1000")
    g = scaling.run(None, 1)["gpu"]
    assert g["shape"] == scaling.SHAPE and g["seeds"] == scaling.SEEDS == 5
    assert len(g["rows"]) == 2 * 5 * len(scaling.REGIMES) and not any("skipped" in r for r in g["rows"])
    assert [s["regime"] for s in g["steps"]] == list(scaling.REGIMES)
    chapter = [r for r in g["rows"] if r["regime"] == "chapter"]
    assert [(r["gpus"], r["seed"]) for r in chapter] == [(1, 0), (2, 0), (1, 1), (2, 1), (1, 2), (2, 2),
                                                        (1, 3), (2, 3), (1, 4), (2, 4)]
    assert [r["order"] for r in chapter] == list(range(10))
    assert all(r["median_s"] == r["launcher_s"] for r in g["rows"])      # the launcher's time counts
    # one short run on both GPUs before each regime's timed runs, not recorded as a row
    warm = [c for c in calls if "--epochs" in c[2] and c[2][c[2].index("--epochs") + 1] == "1"]
    assert len(warm) == len(scaling.REGIMES) and all(c[0] == 2 for c in warm)
    assert len(calls) == len(g["rows"]) + len(warm)
    for name, reg in g["regimes"].items():
        assert set(reg["sessions"]) == {"steps", "runs"} and reg["sessions"]["runs"]["warmup_s"] == 10.0
        assert reg["sessions"]["runs"]["code"]["gpukit"]


def test_runs_past_the_budget_are_skipped_and_the_rest_is_kept(monkeypatch):
    clock = [0.0]
    _fake(monkeypatch, 30.0, clock)
    monkeypatch.setenv("GPUKIT_BENCH_BUDGET_S", "200")
    g = scaling.run(3, 1)["gpu"]
    done = [r for r in g["rows"] if "skipped" not in r]
    skipped = [r for r in g["rows"] if "skipped" in r]
    assert done and skipped and clock[0] <= 200          # it never started what would not fit
    assert all("time budget" in r["skipped"] and r["label"] for r in skipped)
    assert len(done) + len(skipped) == 2 * 3 * len(scaling.REGIMES)


def test_one_part_of_some_regimes_only(monkeypatch):
    clock, calls = [0.0], []
    _fake(monkeypatch, 10.0, clock, calls)
    g = scaling.record(["wide"], 2, ("runs",), budget=1000, data="DATA", warmup=False)
    assert g["steps"] == [] and list(g["regimes"]) == ["wide"]
    assert set(g["regimes"]["wide"]["sessions"]) == {"runs"} and len(calls) == 4
    assert all("--width" in c[2] and c[2][c[2].index("--width") + 1] == "96" for c in calls)


def test_the_benchmark_needs_two_gpus(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(RuntimeError, match="at least 2 GPUs"):
        scaling.run(None, 1)


def _block(regimes: dict, seeds=2, date="2026-12-01T00:00:00+00:00"):
    """A ``gpu`` block: regime -> parts measured, each row and step tagged with ``date``."""
    stamp = {"date": date, "code": {"commit": "c"}, "boot": "b"}
    steps = [{"regime": k, "one": {"date": date}} for k, parts in regimes.items() if "steps" in parts]
    rows = [{"regime": k, "gpus": n, "seed": s, "date": date} for k, parts in regimes.items()
            if "runs" in parts for s in range(seeds) for n in (1, 2)]
    return {"shape": scaling.SHAPE, "n": seeds, "seeds": seeds, "gpus": 2, "steps": steps, "rows": rows,
            "regimes": {k: {"what": k, "args": [], "sessions": {p: stamp for p in parts}}
                        for k, parts in regimes.items()}}


def test_a_saved_part_replaces_only_its_own_part_of_its_own_regimes():
    old, new = "2026-11-30T10:00:00+00:00", "2026-12-01T12:00:00+00:00"
    stored = _block({"chapter": ("steps", "runs"), "wide": ("steps", "runs")}, date=old)
    fresh = _block({"chapter": ("runs",), "wide-512": ("steps",)}, seeds=5, date=new)
    m = scaling.merge(stored, fresh)
    assert list(m["regimes"]) == ["chapter", "wide", "wide-512"]
    by = {(r["regime"], r["date"]) for r in m["rows"]}
    assert by == {("chapter", new), ("wide", old)}                        # chapter's runs replaced
    assert {(s["regime"], s["one"]["date"]) for s in m["steps"]} == {
        ("chapter", old), ("wide", old), ("wide-512", new)}
    assert m["regimes"]["chapter"]["sessions"]["runs"]["date"] == new
    assert m["regimes"]["chapter"]["sessions"]["steps"]["date"] == old
    assert m["seeds"] == 5
    # a record of the older shape (times from inside the workers) is not kept
    older = {"n": 2, "gpus": 2, "steps": [], "rows": [{"regime": "wide", "gpus": 1, "seed": 0}],
             "regimes": {"wide": {}}}
    assert scaling.merge(older, fresh) == fresh and scaling.merge(None, fresh) == fresh


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "0"], "expected a number > 0"),
    (["--regimes", "huge"], "invalid choice"),
    (["--part", "steps", "--budget-s", "-1"], "--budget-s must be > 0"),
    (["--budget-s", "nan"], "expected a finite number"),
    (["--part", "steps"], "needs at least 2 GPUs"),
])
def test_the_record_command_rejects_bad_input_in_one_line(argv, message, capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    assert scaling.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and message in err and "Traceback" not in err
    assert err.startswith("python -m gpukit.cats_vs_dogs.scaling: error: ")


def test_an_old_data_parallel_record_shows_a_note_and_none_of_its_numbers():
    from gpukit import pages
    from gpukit.cats_vs_dogs import views  # noqa: F401 - registers the renderers
    old = {"machine": {"date": "2026-11-30T00:52:54+00:00", "gpu": {"name": "NVIDIA H200"}},
           "gpu": {"n": 2, "gpus": 2, "rows": [{"regime": "r", "gpus": 2, "seed": 0, "val_acc": 0.8123,
                                                "images_per_s": 20879.0, "wall_s": 47.25}]}}
    steps = pages.RENDERERS[("cats_vs_dogs_ddp", "steps")]("test", old)
    runs = pages.RENDERERS[("cats_vs_dogs_ddp", "runs")]("test", old)
    assert steps.startswith('!!! note "Not yet recorded') and "2026-11-30 00:52 UTC" in steps
    for md in (steps, runs):
        assert "20,879" not in md and "81.2" not in md and "47" not in md


def test_the_runs_can_train_with_the_overlapped_exchange(monkeypatch):
    clock, calls = [0.0], []
    _fake(monkeypatch, 10.0, clock, calls)
    g = scaling.record(["chapter"], 1, ("runs",), budget=1000, data="DATA", exchange="overlapped")
    assert len(calls) == 3                                        # the warm-up, then 1 and 2 GPUs
    for _, _, args in calls:
        assert args[-2:] == ["--exchange", "overlapped"]
    assert g["regimes"]["chapter"]["args"][-2:] == ["--exchange", "overlapped"]
    assert g["rows"][0]["label"].endswith(", gradients exchanged overlapped")
    warm = calls[0][2]
    assert warm[warm.index("--epochs") + 1] == "1"
