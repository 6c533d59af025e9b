"""The data-parallel exchanges on the CPU: two gloo processes, a small network.

The overlapped exchange (buckets all-reduced from gradient hooks during backward) must give
the same averaged gradients as the one all-reduce after backward and as DistributedDataParallel,
bit for bit: with two processes each element is one sum of two numbers (the same whichever
process adds) followed by a division by two (exact in binary floating point), whatever the
bucketing.
"""

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
from gpukit.cats_vs_dogs.allreduce import AveragedGradients, OverlappedGradients  # noqa: E402
from tests.helpers import ROOT  # noqa: E402


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(4 * 6 * 6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def test_buckets_cut_the_flat_buffer_from_its_end_in_runs_under_the_cap():
    net = _net()
    params = list(net.parameters())
    sgd = torch.optim.SGD(params, lr=0.1)
    cap_mb = 200 * 4 / 2**20                                     # 200 fp32 elements
    opt = OverlappedGradients(sgd, params, 1, bucket_mb=cap_mb)
    flat = opt.flat
    # the buckets tile the buffer from its end to its start, with no gap and no overlap
    ends = [b.data_ptr() + b.numel() * 4 for b in opt.buckets]
    starts = [b.data_ptr() for b in opt.buckets]
    assert ends[0] == flat.data_ptr() + flat.numel() * 4 and starts[-1] == flat.data_ptr()
    assert all(s == e for s, e in zip(starts[:-1], ends[1:]))
    # each bucket holds whole parameters, at most 200 elements unless one parameter is larger
    sizes = {p: p.numel() for p in params}
    for k, b in enumerate(opt.buckets):
        members = [p for p in params if opt.bucket_of[p] == k]
        assert sum(sizes[p] for p in members) == b.numel()
        assert b.numel() <= 200 or len(members) == 1
    assert len(opt.buckets) >= 3 and opt.bucket_of[params[-1]] == 0   # last layer, first bucket
    assert opt.hooks == []                                            # one process: no exchange
    # one bucket when the cap holds everything
    assert len(OverlappedGradients(sgd, params, 1, bucket_mb=25.0).buckets) == 1


_EXCHANGES_SCRIPT = """
import os, sys, torch, torch.distributed as dist
from gpukit.cats_vs_dogs.allreduce import AveragedGradients, OverlappedGradients
sys.path.insert(0, os.getcwd())
from tests.test_cats_vs_dogs_ddp import _net
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
g = torch.Generator().manual_seed(7)
x, y = torch.randn(3, 8, 3, 8, 8, generator=g), torch.randint(0, 2, (3, 8), generator=g)
out = {}
for kind in ("after backward", "overlapped", "ddp"):
    net = _net()
    params = list(net.parameters())
    sgd = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    model, opt = net, sgd
    if kind == "after backward":
        opt = AveragedGradients(sgd, params, world)
    elif kind == "overlapped":
        opt = OverlappedGradients(sgd, params, world, bucket_mb=200 * 4 / 2**20)
        out["buckets"] = len(opt.buckets)
    else:
        model = torch.nn.parallel.DistributedDataParallel(net)
    grads, started = [], []
    for step in range(3):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[step, rank::world]), y[step, rank::world])
        loss.backward()
        if kind == "overlapped":        # every bucket's all-reduce began during backward
            started.append(all(w is not None for w in opt.works))
        opt.step()
        grads.append([p.grad.clone() for p in params])
    if kind == "overlapped":
        out["started_in_backward"] = started
        opt.zero_grad()
        model(x[0, rank::world]).sum().backward()
        try:
            model(x[0, rank::world]).sum().backward()
            out["second_backward"] = "accepted"
        except RuntimeError as exc:
            out["second_backward"] = str(exc)
        opt.zero_grad()
        opt.remove()
    out[kind] = {"grads": grads, "state": {k: v.clone() for k, v in net.state_dict().items()}}
torch.save(out, os.path.join(sys.argv[1], f"rank{rank}.pt"))
dist.destroy_process_group()
"""


def test_overlapped_exchange_equals_the_one_after_backward_and_ddp_bit_for_bit(tmp_path):
    script = tmp_path / "exchanges.py"
    script.write_text(_EXCHANGES_SCRIPT)
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc_per_node=2", str(script), str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=180,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r0, r1 = (torch.load(tmp_path / f"rank{k}.pt") for k in (0, 1))
    for r in (r0, r1):
        assert r["buckets"] >= 3 and r["started_in_backward"] == [True, True, True]
        assert "one backward per step" in r["second_backward"]
        ref = r["after backward"]["grads"]
        for kind in ("overlapped", "ddp"):
            for step, (mine, theirs) in enumerate(zip(r[kind]["grads"], ref)):
                for k, (a, b) in enumerate(zip(mine, theirs)):
                    assert torch.equal(a, b), (kind, step, k)
    # the averaged gradients are the same on both processes, and so are the weights after
    # three steps, for every exchange (the two processes saw different photos)
    for kind in ("after backward", "overlapped", "ddp"):
        for a, b in zip(r0[kind]["grads"][-1], r1[kind]["grads"][-1]):
            assert torch.equal(a, b), kind
        for k, v in r0[kind]["state"].items():
            assert torch.equal(v, r1[kind]["state"][k]), (kind, k)
            assert torch.equal(v, r0["after backward"]["state"][k]), (kind, k)
    first = r0["after backward"]["state"]
    assert not torch.equal(first["0.weight"], _net().state_dict()["0.weight"])   # it trained


def test_without_the_exchange_the_overlapped_wrapper_steps_on_local_gradients():
    net = _net()
    params = list(net.parameters())
    opt = OverlappedGradients(torch.optim.SGD(params, lr=0.1), params, 2, exchange=False)
    assert opt.hooks == []
    opt.zero_grad()
    net(torch.ones(2, 3, 8, 8)).sum().backward()
    grad = params[0].grad.clone()
    opt.step()                             # no process group: nothing exchanged, nothing divided
    assert torch.equal(params[0].grad, grad) and grad.abs().sum() > 0
    assert isinstance(opt, AveragedGradients)


# ------------------------------------------------------------- means and intervals over seeds

def test_t_quantiles_match_the_printed_table():
    from gpukit.cats_vs_dogs.intervals import t_probability, t_quantile
    # two-sided 95 % points of Student's t (any statistics table)
    for df, t in ((1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (30, 2.042)):
        assert abs(t_quantile(0.975, df) - t) < 1e-3, df
    assert abs(t_quantile(0.975, 1e6) - 1.960) < 1e-3          # the normal's limit
    assert abs(t_quantile(0.95, 4) - 2.132) < 1e-3
    assert t_probability(0.0, 3) == 0.5
    assert abs(t_probability(-2.776, 4) - 0.025) < 1e-4
    with pytest.raises(ValueError):
        t_quantile(0.3, 4)


def test_mean_interval_of_made_up_accuracies():
    from gpukit.cats_vs_dogs.intervals import mean_interval
    m = mean_interval([0.90, 0.91, 0.92, 0.93, 0.94])
    # sd 0.0158, half width 2.776 * 0.0158 / sqrt(5) = 0.0196
    assert m["n"] == 5 and abs(m["mean"] - 0.92) < 1e-12
    assert abs(m["lo"] - (0.92 - 0.019632)) < 1e-5 and abs(m["hi"] - (0.92 + 0.019632)) < 1e-5
    one = mean_interval([0.9])
    assert one["lo"] is None and one["hi"] is None and one["mean"] == 0.9
    flat = mean_interval([0.8, 0.8, 0.8])
    assert flat["lo"] == pytest.approx(0.8, abs=1e-12) == flat["hi"]


def test_welch_difference_and_the_same_accuracy_verdict():
    from gpukit.cats_vs_dogs.intervals import difference_interval, same_accuracy
    d = difference_interval([1, 2, 3], [2, 4, 6])
    # variances of the means 1/3 and 4/3; Welch df = (5/3)^2 / ((1/9)/2 + (16/9)/2) = 50/17
    assert d["diff"] == 2 and abs(d["df"] - 50 / 17) < 1e-9
    # half width t(0.975, 50/17) * sqrt(5/3): between t's values at 2 and 3 df
    assert 4.303 * (5 / 3) ** 0.5 > d["hi"] - 2 > 3.182 * (5 / 3) ** 0.5
    assert d["lo"] < 0 < d["hi"]
    tight = difference_interval([0.90, 0.901, 0.899], [0.95, 0.951, 0.949])
    assert tight["lo"] > 0.045 and tight["hi"] < 0.055
    assert difference_interval([0.9], [0.8, 0.85])["lo"] is None
    ones = [0.92, 0.93, 0.91, 0.94, 0.92]
    v = same_accuracy(ones, [0.925, 0.93, 0.92, 0.915, 0.93])
    assert v["within"] is True and v["diff"]["lo"] < 0 < v["diff"]["hi"]
    worse = same_accuracy(ones, [0.85, 0.86, 0.84, 0.85, 0.86])
    assert worse["within"] is False and worse["diff"]["hi"] < 0
    assert same_accuracy([0.92], [0.9, 0.91])["within"] is None


# ------------------------------------------------------------------- the step breakdown

def test_busy_time_is_the_union_of_kernels_and_the_rest_is_gaps():
    from gpukit.cats_vs_dogs.ddp_steps import busy
    # microseconds over 2 steps: [0, 10] and [5, 20] overlap (busy 20, kernel time 25), then
    # a gap of 30 to [50, 60], a gap of 5 to [65, 70]; the window is 100 us
    b = busy([(50, 60), (0, 10), (5, 20), (65, 70)], 100.0, steps=2)
    assert b["kernel_s"] == pytest.approx(40e-6 / 2) and b["busy_s"] == pytest.approx(35e-6 / 2)
    assert b["busy_fraction"] == pytest.approx(0.35) and b["wall_s"] == pytest.approx(50e-6)
    assert b["gap_s"] == pytest.approx(35e-6 / 2) and b["largest_gap_s"] == pytest.approx(30e-6)
    assert b["gaps_per_step"] == 1 and b["gaps_over_10us_per_step"] == 0.5
    assert b["kernels_per_step"] == 2
    assert busy([], 10.0)["busy_fraction"] == 0 and busy([], 10.0)["largest_gap_s"] == 0


def test_timed_alternates_the_steps_sample_by_sample_and_keeps_every_sample(monkeypatch):
    from gpukit.cats_vs_dogs import ddp_steps
    monkeypatch.setenv(ddp_steps.DEVICE_ENV, "cpu")
    clock, calls = [0.0], []
    monkeypatch.setattr(ddp_steps.time, "perf_counter", lambda: clock[0])

    def fake(name, seconds):
        def fn():
            calls.append(name)
            clock[0] += seconds[0]
            seconds.append(seconds.pop(0))       # the next call takes the next duration
        return fn
    t = ddp_steps.timed({"a": fake("a", [1.0, 2.0, 3.0]), "b": fake("b", [0.5])}, steps=3, warmup=2,
                        samples=3)
    assert calls[:4] == ["a", "a", "b", "b"]                        # warm-up, each in turn
    timed_calls = calls[4:4 + 18]
    assert timed_calls == ["a"] * 3 + ["b"] * 3 + ["a"] * 3 + ["b"] * 3 + ["a"] * 3 + ["b"] * 3
    assert t["b"]["samples"] == [0.5, 0.5, 0.5] and t["b"]["host_s"] == 0.5
    # a's calls cycle 3, 1, 2 after the warm-up took 1, 2: every sample of three averages 2
    assert t["a"]["median_s"] == pytest.approx(2.0) and t["a"]["min_s"] == pytest.approx(2.0)
    assert set(t["a"]) == {"samples", "median_s", "min_s", "max_s", "host_s"}


@pytest.mark.slow
def test_step_breakdown_on_two_gloo_processes_gives_every_row_and_renders(monkeypatch):
    """The whole breakdown on the CPU at a tiny size (two torchrun launches, gloo): the record
    has every exchange with its samples, no profile without a GPU, and the view renders it."""
    from gpukit.cats_vs_dogs import ddp_steps, scaling
    monkeypatch.setenv(ddp_steps.DEVICE_ENV, "cpu")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    st = ddp_steps.measure_regime(16, 4, 4, 2, steps=1, warmup=1, samples=2, timeout=170)
    one, many = st["one"], st["many"]
    assert one["world"] == 1 and many["world"] == 2 and "profile" not in one
    for t in (one["one_gpu_step"], one["one_gpu_half_batch_step"], many["all_reduce"]):
        assert len(t["samples"]) == 2 and t["min_s"] <= t["median_s"] <= t["max_s"] and t["host_s"] > 0
    names = [w["wrapping"] for w in many["ddp"]]
    assert names == [ddp_steps.COMMAND, *ddp_steps.OVERLAPPED, *ddp_steps.WRAPPINGS]
    assert all(w["buckets"] == 1 for w in many["ddp"] if w["wrapping"] in ddp_steps.OVERLAPPED)
    assert "no_sync_step" in many["ddp"][0] and many["ddp_first_wrap_modules"] > 0
    record = {"machine": {"gpu": {"name": "CPU"}, "date": "2026-12-01T00:00:00+00:00"},
              "gpu": {"shape": scaling.SHAPE, "gpus": 2, "rows": [], "regimes": {},
                      "steps": [{"regime": "tiny", "what": "16 px, width 4", **st}]}}
    md = _render("steps", record)
    assert "**`tiny`**" in md and "No profile was recorded" in md
    for name in names:
        assert f"`{name}`" in md
    assert "per-step overhead" in md and "The end-to-end runs are not recorded yet." == _render(
        "runs", record)


# ------------------------------------------------------------------------------ the views

def _t(*ms):
    s = sorted(x / 1e3 for x in ms)
    return {"samples": list(ms), "median_s": s[len(s) // 2], "min_s": s[0], "max_s": s[-1],
            "host_s": s[0] / 2}


def _steps(regime, whole, half, command, quiet, overlapped=None, ddp=None, ddp_quiet=None):
    from gpukit.cats_vs_dogs.ddp_steps import COMMAND
    rows = [{"wrapping": COMMAND, "options": {}, "step": _t(*command), "no_sync_step": _t(*quiet)}]
    if overlapped:
        rows.append({"wrapping": "gpukit: overlapped, 25 MB buckets", "options": {"bucket_mb": 25.0},
                     "step": _t(*overlapped), "buckets": 3})
    if ddp:
        rows.append({"wrapping": "default", "options": {}, "step": _t(*ddp), "no_sync_step": _t(*ddp_quiet)})
    prof = {"whole": {"wall_s": 0.0061, "busy_s": 0.0058, "busy_fraction": 0.95, "kernel_s": 0.0059,
                      "kernels_per_step": 300, "gap_s": 0.0003, "largest_gap_s": 0.00005},
            "half": {"wall_s": 0.0036, "busy_s": 0.0030, "busy_fraction": 0.83, "kernel_s": 0.0031,
                     "kernels_per_step": 300, "gap_s": 0.0006, "largest_gap_s": 0.0001}}
    return {"regime": regime, "what": f"{regime} recipe",
            "one": {"batch": 256, "params": 2_000_000, "samples": 3, "steps": 40,
                    "one_gpu_step": _t(*whole), "one_gpu_half_batch_step": _t(*half), "profile": prof},
            "many": {"ddp": rows, "all_reduce": _t(0.05, 0.05, 0.06), "all_reduce_bytes": 8_000_000,
                     "ddp_first_wrap_s": 4.2, "ddp_first_wrap_modules": 899, "ddp_imports_compiler": True}}


def _row(regime, gpus, seed, order, acc, launcher):
    return {"regime": regime, "label": f"{regime} label", "gpus": gpus, "seed": seed, "order": order,
            "test_acc": acc, "test_ci": [acc - 0.02, acc + 0.02], "launcher_s": launcher,
            "time_to_model_s": launcher - 6, "images_per_s": 30000.0 * gpus,
            "ranks_agree": gpus > 1, "digests": {}}


def _record(chapter_half=(3.5, 3.6, 3.7), ranks_agree=True):
    from gpukit.cats_vs_dogs.scaling import SHAPE
    steps = [_steps("chapter", (5.9, 6.0, 6.1), chapter_half, (3.9, 4.0, 4.1), (3.6, 3.65, 3.8)),
             _steps("wide", (30, 30.5, 31), (15, 15.2, 15.4), (16.0, 16.2, 16.4), (15.5, 15.6, 15.7),
                    overlapped=(15.6, 15.8, 16.0), ddp=(16.5, 16.6, 16.8), ddp_quiet=(15.6, 15.7, 15.8))]
    rows = []
    runs = {"chapter": ([30, 31, 29, 30, 30], [20, 21, 19, 20, 20],
                        [0.92, 0.93, 0.91, 0.94, 0.92], [0.925, 0.93, 0.92, 0.915, 0.93]),
            "wide": ([44, 45, 43, 44, 44], [37, 36, 38, 37, 37],
                     [0.88, 0.89, 0.87, 0.88, 0.88], [0.84, 0.85, 0.83, 0.84, 0.84])}
    for regime, (t1, t2, a1, a2) in runs.items():
        for seed in range(5):
            rows.append(_row(regime, 1, seed, 2 * seed, a1[seed], t1[seed]))
            rows.append(_row(regime, 2, seed, 2 * seed + 1, a2[seed], t2[seed]))
    if not ranks_agree:
        rows[1]["ranks_agree"] = False
    rows.append({"regime": "wide", "label": "wide label", "gpus": 2, "seed": 5, "order": 11,
                 "error": ["NCCL timeout"]})
    return {"machine": {"gpu": {"name": "NVIDIA Test GPU"}, "date": "2026-12-01T18:45:00+00:00"},
            "gpu": {"shape": SHAPE, "n": 5, "seeds": 5, "gpus": 2, "steps": steps, "rows": rows,
                    "regimes": {k: {"what": k, "args": [], "sessions": {"runs": {
                        "date": "2026-12-01T18:05:09+00:00", "code": {"commit": "abcdef123456"},
                        "boot": "b"}} if k == "chapter" else {}} for k in runs}}}


def _render(view, data):
    import importlib

    from gpukit import pages
    importlib.import_module("gpukit.cats_vs_dogs.views")            # registers the renderers
    return pages.RENDERERS[("cats_vs_dogs_ddp", view)]("test", data)


def _targets(data):
    from gpukit import pages
    _render("runs", data)
    return {t.name: t for t in pages.TARGETS["cats_vs_dogs_ddp"](data)}


def test_steps_view_gives_medians_spreads_the_three_exchanges_and_the_profile():
    md = _render("steps", _record())
    # wide: 30.5 ms on one GPU over 16.2 ms after backward, 15.8 overlapped, 16.6 DDP
    assert "**1.88x (1.83-1.94x)** with the exchange after backward" in md
    assert "**1.93x (1.88-1.99x)** overlapped (`gpukit: overlapped, 25 MB buckets`)" in md
    assert "**1.84x (1.79-1.88x)** with DDP (`default`)" in md
    assert "| 1 GPU, global batch 256 | 30.50 ms | 30.00 ms to 31.00 ms | 15.00 ms | 8,393 |" in md
    # chapter: overhead 3.65 - 3.6 ms, spread 3.6 - 3.7 to 3.8 - 3.5: holds 0
    assert ("per-step overhead, the step without the all-reduce minus the compute: 50.0 µs "
            "(spread -100.0 µs to 300.0 µs): indistinguishable from 0 at this spread") in md
    assert "the overlapped exchange minus the one after backward: -400.0 µs" in md
    assert "`gpukit: overlapped, 25 MB buckets` (3 buckets)" in md
    assert "busy 95 % of a step at batch 256 and 83 % at batch 128" in md
    assert "| batch 128 | 3.60 ms | 3.00 ms | 83 % | 3.10 ms | 300 | 600.0 µs | 100.0 µs |" in md
    assert "took 4.20 s and imported 899 modules" in md
    # the host issues the half-batch step in 1.75 ms (made up: half the fastest sample), less
    # than the GPU's 3.00 ms
    assert "took the host 1.75 ms, less than the GPU's busy time" in md


def test_a_negative_overhead_beyond_the_spread_is_said_to_be_one():
    md = _render("steps", _record(chapter_half=(8.0, 8.1, 8.2)))
    # 3.65 - 8.1 ms, at most 3.8 - 8.0 ms: below 0 whatever the spread
    assert "-4.45 ms (spread -4.60 ms to -4.20 ms): below 0 beyond the spread, an open question" in md


def test_runs_view_compares_launcher_times_and_mean_accuracies_with_intervals():
    md = _render("runs", _record())
    chapter = next(line for line in md.splitlines() if line.startswith("- `chapter`"))
    assert "**1.50x**" in chapter and "30.00 s (" in chapter and "20.00 s (" in chapter
    assert "(1.50x on the time the workers measure" not in chapter      # 24 / 14 s: 1.71x
    assert "1.71x on the time the workers measure" in chapter
    assert "the 2-GPU mean is within the 1-GPU interval" in chapter
    assert chapter.endswith("All from one command: 2026-12-01 18:05 UTC, commit abcdef1.")
    wide = next(line for line in md.splitlines() if line.startswith("- `wide`"))
    assert "**1.19x**" in wide and "is outside the 1-GPU interval" in wide
    assert "difference of the means -4.0 points (" in wide
    assert "10 of 10 multi-GPU runs ended with identical weights" in md
    assert "failed: NCCL timeout" in md
    order = [line.split("|")[2:4] for line in md.splitlines() if line.startswith("| `chapter`")]
    assert [(int(g), int(s)) for g, s in order][:4] == [(1, 0), (2, 0), (1, 1), (2, 1)]


def test_targets_judge_launcher_time_at_the_same_accuracy_and_the_long_steps():
    t = _targets(_record())
    chapter = t["Cats vs dogs `chapter`: launcher start to exit, 1 GPU over 2, at the same accuracy"]
    assert chapter.met is True and chapter.value == "1.50x, accuracy within"
    wide = t["Cats vs dogs `wide`: launcher start to exit, 1 GPU over 2, at the same accuracy"]
    assert wide.met is False and wide.value == "1.19x, accuracy outside"
    # only the wide step (30.5 ms) is long enough for the images/s target; the chapter's is 6 ms
    long = [k for k in t if "steady images/s" in k]
    assert all("`wide`" in k for k in long) and len(long) == 2
    assert t["Cats vs dogs `wide`: steady images/s of 2 GPUs over one, gpukit's exchange after "
             "backward"].met is True
    assert t["Cats vs dogs, data parallel: identical weights on every process"].met is True
    split = _targets(_record(ranks_agree=False))
    assert split["Cats vs dogs, data parallel: identical weights on every process"].value == "9 of 10"
    assert split["Cats vs dogs, data parallel: identical weights on every process"].met is False


def test_records_of_an_older_shape_or_with_parts_missing_render_without_numbers():
    old = {"machine": {"date": "2026-11-30T20:49:42+00:00", "gpu": {"name": "NVIDIA H200"}},
           "gpu": {"n": 2, "gpus": 2, "steps": [{"regime": "chapter", "one": {"one_gpu_step_s": 0.0059}}],
                   "rows": [{"regime": "chapter", "gpus": 1, "seed": 0, "process_s": 29.71}]}}
    for view in ("steps", "runs"):
        md = _render(view, old)
        assert "29.7" not in md and "5.9" not in md
    assert _render("steps", old).startswith('!!! note "Not yet recorded"')
    t = _targets(old)
    assert [x.met for x in t.values()] == [None] and "not recorded" in list(t.values())[0].value
    empty = _record()
    empty["gpu"]["steps"], empty["gpu"]["rows"] = [], []
    assert _render("steps", empty) == "The step breakdown is not recorded yet."
    assert {x.value for x in _targets(empty).values()} == {"not recorded"}


@pytest.mark.slow
def test_training_under_torchrun_ends_on_the_same_weights_with_either_exchange(tmp_path_factory):
    """``gpukit train --exchange``: two gloo processes end with identical weights, and the
    overlapped exchange ends on the very weights of the one after backward (the default: its
    run is shared with the test of two-process training)."""
    import re

    from tests.cats_vs_dogs_helpers import two_process_training
    digests = {}
    for exchange in ("after-backward", "overlapped"):
        run = two_process_training(tmp_path_factory, None if exchange == "after-backward" else exchange)
        assert run["returncode"] == 0, run["stdout"] + run["stderr"]
        assert f"gradients exchanged {exchange}" in run["stdout"]
        digests[exchange] = dict(re.findall(r"rank (\d) weights sha256 ([0-9a-f]{64})", run["stdout"]))
        assert set(digests[exchange]) == {"0", "1"}, run["stdout"]
    assert len({d for per in digests.values() for d in per.values()}) == 1, digests


def test_a_bad_exchange_is_one_line_and_status_2():
    from tests.helpers import assert_one_line_error, run_cli
    proc = run_cli("train", "cats-vs-dogs", "--data", "x", "--exchange", "sideways")
    assert "invalid choice: 'sideways'" in assert_one_line_error(proc)


def test_a_failed_profile_is_said_and_the_timings_stay():
    record = _record()
    record["gpu"]["steps"][0]["one"]["profile"] = {"error": "RuntimeError: CUPTI busy"}
    md = _render("steps", record)
    assert "The profiler failed (RuntimeError: CUPTI busy); no profile was recorded." in md
    assert "| 1 GPU, global batch 256 | 6.00 ms |" in md
