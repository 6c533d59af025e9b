"""The data-parallel benchmark's plumbing on the CPU: its time budget, and the rows it records."""

import pytest

torch = pytest.importorskip("torch")
from gpukit.cats_vs_dogs import scaling  # noqa: E402


def _fake(monkeypatch, seconds_per_run: float, clock: list):
    """Two GPUs that are not there: each training 'takes' ``seconds_per_run`` on a fake clock."""
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(scaling.time, "perf_counter", lambda: clock[0])

    def train_once(data, nproc, seed, args):
        clock[0] += seconds_per_run
        return {"gpus": nproc, "seed": seed, "args": args, "process_s": seconds_per_run,
                "test_acc": 0.9, "images_per_s": 1000.0 * nproc, "time_to_model_s": seconds_per_run - 1,
                "ranks_agree": nproc > 1}

    def measure_regime(img, width, batch, gpus):
        clock[0] += 5
        return {"one": {"img": img}, "many": {"world": gpus}}
    monkeypatch.setattr(scaling, "train_once", train_once)
    import gpukit.cats_vs_dogs.ddp_steps as ddp_steps
    monkeypatch.setattr(ddp_steps, "measure_regime", measure_regime)


def test_every_run_is_recorded_when_the_budget_allows(monkeypatch):
    clock = [0.0]
    _fake(monkeypatch, 10.0, clock)
    monkeypatch.setenv("GPUKIT_BENCH_BUDGET_S", "1000")
    g = scaling.run(None, 1)["gpu"]
    expected = sum(2 * scaling.SEEDS[name] for name in scaling.REGIMES)
    assert len(g["rows"]) == expected and not any("skipped" in r for r in g["rows"])
    assert [s["regime"] for s in g["steps"]] == list(scaling.REGIMES)
    assert all(r["median_s"] == r["time_to_model_s"] for r in g["rows"])


def test_runs_past_the_budget_are_skipped_and_the_rest_is_kept(monkeypatch):
    clock = [0.0]
    _fake(monkeypatch, 30.0, clock)
    monkeypatch.setenv("GPUKIT_BENCH_BUDGET_S", "100")
    g = scaling.run(None, 1)["gpu"]
    done = [r for r in g["rows"] if "skipped" not in r]
    skipped = [r for r in g["rows"] if "skipped" in r]
    assert done and skipped and clock[0] <= 100          # it never started what would not fit
    assert all("time budget" in r["skipped"] and r["label"] for r in skipped)
    assert len(done) + len(skipped) == sum(2 * scaling.SEEDS[name] for name in scaling.REGIMES)


def test_the_benchmark_needs_two_gpus(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(RuntimeError, match="at least 2 GPUs"):
        scaling.run(None, 1)


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
