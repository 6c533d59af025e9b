"""The training loop: learning, checkpoints, resume, Ctrl-C, DistributedDataParallel (CPU, gloo)."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gpukit.cats_vs_dogs import loop  # noqa: E402
from gpukit.cats_vs_dogs.model import CatDogNet, macs_per_image  # noqa: E402
from tests.helpers import ROOT  # noqa: E402
from tests.cats_vs_dogs_helpers import (filtered_layout, needs_shared_data, shared_data,  # noqa: E402
                                        two_process_training)

TINY = dict(img_size=32, store_size=40, width=8, batch_size=8, lr=0.1, warmup=0.1,
            device="cpu", progress=False)


def quiet(*args, **kwargs):
    pass


def test_lr_schedule_warms_up_then_decays_to_zero():
    f = [loop.lr_factor(s, 100, 10) for s in range(101)]
    assert f[0] == pytest.approx(0.1) and f[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(f[10:], f[11:]))
    assert f[100] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("size", [32, 64, 100, 128])
def test_model_any_input_size(size):
    net = CatDogNet(width=8).eval()
    assert net(torch.randn(2, 3, size, size)).shape == (2, 2)


def test_macs_count_matches_hand_count():
    # stem 3->8 at 16x16 output, then 8->8 at 16x16 ... count one layer by hand
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Flatten(),
                              torch.nn.Linear(8 * 10 * 10, 2))
    assert macs_per_image(net, 10) == 8 * 10 * 10 * 3 * 9 + 800 * 2


def test_checkpoint_is_atomic_and_checked(tmp_path):
    path = tmp_path / "c.pt"
    loop.save_checkpoint(path, {"model": {"w": torch.ones(2)}, "config": {"width": 8}, "epoch": 1})
    assert loop.load_checkpoint(path)["epoch"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]  # no temp file left behind
    with pytest.raises(Exception):
        loop.save_checkpoint(path, {"model": lambda: 0})  # cannot be pickled: old file kept
    assert loop.load_checkpoint(path)["epoch"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(Exception):
        loop.load_checkpoint(tmp_path / "bad.pt")
    torch.save({"something": 1}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a gpukit"):
        loop.load_checkpoint(tmp_path / "other.pt")


def test_fit_learns_checkpoints_and_resumes(tmp_path):
    data = filtered_layout(tmp_path / "data", n_train=24, n_val=8)
    out = tmp_path / "run.pt"
    cfg = loop.TrainConfig(data=str(data), epochs=3, out=str(out), **TINY)
    r = loop.fit(cfg, log=quiet)
    assert [h["epoch"] for h in r["history"]] == [1, 2, 3]
    state = loop.load_checkpoint(out)
    assert state["epoch"] == 3 and state["step_in_epoch"] == 0 and state["classes"] == ["cat", "dog"]
    assert set(state) >= {"model", "optimizer", "scheduler", "rng", "config", "history"}
    # the same run asked for more epochs continues from epoch 3
    r2 = loop.fit(loop.TrainConfig(data=str(data), epochs=8, out=str(out), resume=True, **TINY), log=quiet)
    assert [h["epoch"] for h in r2["history"]] == list(range(1, 9))
    assert r2["val_acc"] >= 0.9, r2["history"]  # colour says the class: easy once trained
    assert sum(map(sum, r2["confusion"])) == r2["n_val"] == 16
    with pytest.raises(ValueError, match="width"):
        loop.fit(loop.TrainConfig(data=str(data), epochs=9, out=str(out), resume=True,
                                  **{**TINY, "width": 16}), log=quiet)


def test_streamed_photos_train_like_kept_ones(tmp_path):
    data = filtered_layout(tmp_path / "data", n_train=12, n_val=4)
    (data / "train" / "dogs" / "broken.jpg").write_bytes(b"")
    cfg = dict(data=str(data), epochs=2, **TINY)
    kept = loop.fit(loop.TrainConfig(out=str(tmp_path / "a.pt"), data_mode="memory", **cfg), log=quiet)
    lines = []
    streamed = loop.fit(loop.TrainConfig(out=str(tmp_path / "b.pt"), data_mode="stream", **cfg),
                        log=lines.append)
    assert streamed["n_train"] == 25 and kept["n_train"] == 24  # streaming finds bad files as it goes
    assert "warning: skipped 1 unreadable training file(s)" in lines
    assert [h["epoch"] for h in streamed["history"]] == [1, 2]
    assert all(h["train_loss"] > 0 for h in streamed["history"])


def _train_cmd(data, out, epochs, *extra):
    return [sys.executable, "-m", "gpukit.cli", "train", "cats-vs-dogs", "--data", str(data),
            "--epochs", str(epochs), "--img-size", "32", "--width", "8", "--batch-size", "4",
            "--device", "cpu", "--out", str(out), "--quiet", *extra]


def test_ctrl_c_saves_a_checkpoint_and_resume_loses_no_epoch(tmp_path):
    data = filtered_layout(tmp_path / "data", n_train=20, n_val=4)  # 40 photos: 10 steps of 4
    out = tmp_path / "run.pt"
    epochs = 60
    proc = subprocess.Popen(_train_cmd(data, out, epochs), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not out.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert out.exists(), proc.communicate()
    time.sleep(0.05)  # a little way into a later epoch
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stdout + stderr
    assert "interrupted: checkpoint saved" in stderr and "Traceback" not in stderr
    state = loop.load_checkpoint(out)
    done = state["epoch"]
    assert 1 <= done < epochs
    assert [h["epoch"] for h in state["history"]] == list(range(1, done + 1))
    proc = subprocess.run(_train_cmd(data, out, epochs, "--resume"), cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    m = re.search(r"resumed from .*: (\d+) complete epoch", proc.stdout)
    assert m and int(m.group(1)) == done
    final = loop.load_checkpoint(out)
    assert final["epoch"] == epochs and final["step_in_epoch"] == 0
    assert [h["epoch"] for h in final["history"]] == list(range(1, epochs + 1))
    # a mid-epoch stop resumes inside that epoch: the schedule ends exactly on its last step
    assert final["scheduler"]["last_epoch"] == epochs * 10
    assert ("step(s) of the next" in stderr) == (state["step_in_epoch"] > 0)


def test_two_processes_gloo_agree_on_the_weights(tmp_path_factory):
    # torchrun, two gloo processes, the default exchange (shared with the exchanges' test)
    run = two_process_training(tmp_path_factory)
    assert run["returncode"] == 0, run["stdout"] + run["stderr"]
    digests = dict(re.findall(r"rank (\d) weights sha256 ([0-9a-f]{64})", run["stdout"]))
    assert set(digests) == {"0", "1"}, run["stdout"]
    assert digests["0"] == digests["1"]
    assert "training 2 epochs x 4 steps of 4 x 2 process(es)" in run["stdout"]
    state = loop.load_checkpoint(run["out"])
    assert state["world_size"] == 2 and state["epoch"] == 2


@pytest.mark.gpu
@needs_shared_data
def test_short_gpu_run_on_real_photos(tmp_path):
    cfg = loop.TrainConfig(data=str(shared_data()), epochs=40, out=str(tmp_path / "g.pt"), progress=False,
                           eval_every=10)
    r = loop.fit(cfg, log=quiet)
    assert r["device"].startswith("cuda") and r["precision"] == "bf16"
    # Chance is 0.5 (1000 photos: one standard deviation is 1.6 points). 40 epochs of the
    # recipe are far from its full accuracy (the benchmark's job) but well above chance.
    assert r["val_acc"] >= 0.65, r["history"]
    assert r["images_per_s"] > 5000


def test_weight_average_follows_the_weights_and_survives_a_checkpoint(tmp_path):
    net = CatDogNet(width=4)
    ema = loop.EMA(net, decay=0.9)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(1.0)
    for _ in range(200):
        ema.update(net)
    for (name, a), b in zip(ema.model.state_dict().items(), net.state_dict().values()):
        if a.is_floating_point():
            assert torch.allclose(a, b, atol=1e-5), name  # converged to the constant weights
    net.features[0][1].num_batches_tracked += 7
    assert ema.sync_counters(net).features[0][1].num_batches_tracked.item() == 7
    other = loop.EMA(CatDogNet(width=4), decay=0.9)
    other.load_state_dict(ema.state_dict())
    assert other.updates == 200
    with pytest.raises(ValueError):
        loop.EMA(net, decay=1.0)


def test_checkpoint_writer_writes_in_the_background_and_reports_errors(tmp_path):
    target = tmp_path / "ck.pt"
    w = loop.CheckpointWriter(target)
    t = torch.arange(5.0)
    w.submit({"model": {"w": t}, "config": {}})
    t.add_(100)  # training goes on changing the weights: the checkpoint keeps the copy
    w.close()
    assert loop.load_checkpoint(target)["model"]["w"].tolist() == [0, 1, 2, 3, 4]
    bad = loop.CheckpointWriter(tmp_path / "missing-dir" / "x" / "ck.pt")
    (tmp_path / "missing-dir").write_text("a file where a folder should be")
    bad.submit({"model": {}, "config": {}})
    with pytest.raises(OSError):
        bad.close()


def test_chunks_split_into_batches_in_order():
    store = type("S", (), {})()
    store.images = torch.arange(20).view(20, 1, 1, 1).expand(20, 3, 2, 2)
    store.labels = torch.arange(20)
    order = torch.randperm(20)
    chunks = list(loop.memory_batches(store, order, 1, 5, 4, chunk=3))
    assert [len(y) for _, y in chunks] == [12, 4]  # batches 1-3, then batch 4
    batches = list(loop.split_batches(iter(chunks), 4))
    assert [y.tolist() for _, y in batches] == [order[i * 4:(i + 1) * 4].tolist() for i in range(1, 5)]
    prepared = list(loop.prefetched(iter(chunks), lambda x, y: (x + 1, y), torch.device("cpu")))
    assert torch.equal(prepared[0][0], chunks[0][0] + 1)


def test_resume_needs_the_weight_average_it_was_trained_with(tmp_path):
    data = filtered_layout(tmp_path / "d", n_train=8, n_val=4)
    out = tmp_path / "ck.pt"
    loop.fit(loop.TrainConfig(data=str(data), epochs=1, out=str(out), ema=0.0, **TINY), log=quiet)
    with pytest.raises(ValueError, match="weight average"):
        loop.fit(loop.TrainConfig(data=str(data), epochs=2, out=str(out), resume=True, ema=0.9, **TINY),
                 log=quiet)


class _Recorder(loop.Hooks):
    def __init__(self):
        self.calls = []

    def after_step(self, epoch, step, started):
        self.calls.append(("step", epoch, step))

    def steps_done(self, epoch):
        self.calls.append(("steps done", epoch))

    def after_epoch(self, epoch, row):
        self.calls.append(("epoch", epoch, row["epoch"]))


def _tiny_training(**extra):
    from gpukit.cats_vs_dogs import data as D
    torch.manual_seed(0)
    labels = torch.arange(16) % 2
    images = torch.randint(0, 90, (16, 3, 24, 24), dtype=torch.uint8)
    images[:, 0][labels == 0] += 150  # the colour says the class: reddish cats, bluish dogs
    images[:, 2][labels == 1] += 150
    store = D.Store(images, labels, [""] * 16)
    model = CatDogNet(width=4)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    t = loop.Training(model=model, net=model, opt=opt, sched=sched, criterion=torch.nn.CrossEntropyLoss(),
                      amp=loop.autocast(torch.device("cpu"), "fp32"), ema=loop.EMA(model, 0.9), val=store,
                      device=torch.device("cpu"), eval_size=24, **extra)

    def batches(epoch, first):
        order = torch.randperm(16, generator=torch.Generator().manual_seed(epoch))
        for step in range(first, 4):
            idx = order[4 * step:4 * step + 4]
            yield D.prepare_eval(store.images[idx], 24), store.labels[idx]
    return t, batches


def test_core_loop_runs_on_its_own_and_calls_its_hooks_in_order():
    t, batches = _tiny_training(epochs=2, eval_every=2)
    hooks = _Recorder()
    history = loop.train_epochs(t, batches, hooks)
    assert [h["epoch"] for h in history] == [1, 2] and history is t.history
    assert "val_acc" not in history[0] and 0 <= history[1]["val_acc"] <= 1  # evaluated every 2nd epoch
    assert t.sched.last_epoch == 8 and t.ema.updates == 8  # one schedule step, one average update a step
    assert hooks.calls == ([("step", 0, s) for s in (1, 2, 3, 4)] + [("steps done", 0), ("epoch", 0, 1)]
                           + [("step", 1, s) for s in (1, 2, 3, 4)] + [("steps done", 1), ("epoch", 1, 2)])
    assert t.trained_s > 0 and all(h["train_loss"] > 0 for h in history)


def test_core_loop_starts_where_a_resumed_run_stopped():
    t, batches = _tiny_training(epochs=3, start_epoch=1, start_step=3)
    hooks = _Recorder()
    history = loop.train_epochs(t, batches, hooks)
    assert [(h["epoch"], h["partial"]) for h in history] == [(2, True), (3, False)]
    assert [c for c in hooks.calls if c[0] == "step"] == [("step", 1, 4)] + [("step", 2, s) for s in (1, 2, 3, 4)]


def test_package_names_are_lazy_and_all_resolve():
    code = ("import sys, gpukit.cats_vs_dogs as c; print('torch' in sys.modules); "
            "[getattr(c, name) for name in c.__all__]; print('torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]
    from gpukit import cats_vs_dogs
    assert cats_vs_dogs.fit is loop.fit and cats_vs_dogs.default_data_dir.__module__.endswith(".photos")


# ------------------------------------------------------------------ the benchmark's views

def _throughput(tutorial_measured=True):
    """A recorded throughput part, shaped like the H200 run: real photos 36,000 images/s, the
    tutorial pipeline measured in the same run at 4,000 (9.0x), the cited figure 3,483 (10.3x)."""
    step = 256 / 36000
    rows = [{"name": "synthetic", "median_s": step / 1.05, "images_per_s": 1.0, "first_call_s": 0.1},
            {"name": "real", "median_s": step, "images_per_s": 1.0, "first_call_s": 0.1}]
    tp = {"batch_size": 256, "img_size": 128, "steps": 7, "macs_per_image": 324e6, "rows": rows,
          "tutorial_reported": {"images_per_s": 3483, "val_acc": 0.815, "wall_s": 22}}
    if tutorial_measured:
        tp["tutorial_measured"] = {"images_per_s": 4000.0, "loader_only_images_per_s": 5000.0,
                                   "workers": 16, "batch_size": 32}
    return {"machine": {"gpu": {"name": "NVIDIA Test GPU"}, "date": "2026-11-30T00:00:00+00:00"},
            "throughput": tp}


def _targets(name, data):
    import importlib

    from gpukit import pages
    importlib.import_module("gpukit.cats_vs_dogs.views")            # registers the targets
    return {t.name.split(": ", 1)[1]: t for t in pages.TARGETS[name](data)}


def test_the_ten_times_target_uses_the_pipeline_measured_in_the_same_run():
    from gpukit import pages
    from gpukit.cats_vs_dogs import views
    md = pages.RENDERERS[(views.NAME, "throughput")]("test", _throughput())
    assert "**met**" not in md and "**missed**" not in md             # verdicts live on the scorecard
    t = _targets(views.NAME, _throughput())
    real = t["step on real photos over a step on synthetic data"]
    assert real.met is True and real.value == "1.050x"
    tut = t["images/s over a tutorial pipeline measured in the same run"]
    assert tut.met is False and tut.value == "9.0x"
    # the cited figure is shown as cited, with its source, and judges nothing
    cited = next(line for line in md.splitlines() if "3,483" in line)
    assert "reported outside this benchmark (an H200 runner" in cited and "10.3x" in cited
    assert "issue" not in cited


def test_without_a_same_run_measurement_the_ten_times_target_is_not_judged():
    from gpukit.cats_vs_dogs import views
    t = _targets(views.NAME, _throughput(tutorial_measured=False))
    tut = t["images/s over a tutorial pipeline measured in the same run"]
    assert tut.met is None and tut.value == "not recorded"


def _render(name, view, data):
    import importlib

    from gpukit import pages
    importlib.import_module("gpukit.cats_vs_dogs.views")            # registers the renderers
    return pages.RENDERERS[(name, view)]("test", data)


def _sweep_record(chosen_test=0.9346):
    def row(name, changes, sel, test):
        return {"name": name, "changes": changes, "seeds": [0, 1, 2], "selection_mean": sel, "test_mean": test,
                "test_min": test - 0.01, "test_max": test + 0.01, "median_s": 14.0}
    runs = [{"variant": "recipe", "seed": 0, "n_selection": 500, "n_test": 500}]
    return {"machine": {"gpu": {"name": "NVIDIA Test GPU"}, "date": "2026-11-30T18:19:41+00:00"},
            "base": {"lr": 0.05, "ema": 0.995, "label_smoothing": 0.1, "crop_scale": 0.25, "epochs": 250,
                     "width": 32}, "seeds": [0, 1, 2], "gpus": 2, "runs": runs,
            "sweep": {"rows": [row("recipe", {}, 0.9307, 0.9346), row("crop0.35", {"crop_scale": 0.35}, 0.9407,
                                                                         chosen_test)], "chosen": "crop0.35"}}


def test_sweep_table_shows_the_deciding_and_the_reporting_half():
    md = _render("cats_vs_dogs_sweep", "table", _sweep_record())
    assert "selection half, mean (decides)" in md and "test half, mean (reports)" in md
    first = next(line for line in md.splitlines() if line.startswith("| **`"))
    assert "crop0.35" in first and "(chosen)" in first and "**94.1 %**" in first   # sorted by the selection half
    assert "leads the base recipe by 1.0 points on the selection half" in md
    assert "equal to the base recipe's" in md
    other = _render("cats_vs_dogs_sweep", "table", _sweep_record(chosen_test=0.9446))
    assert "equal to" not in other and "+1.0 points from the base recipe's 93.5 %" in other


def _training_record(times=(17.0, 18.0, 19.0), accs=(0.92, 0.94, 0.944)):
    rows = [{"seed": k, "test_acc": a, "test_ci": [a - 0.024, a + 0.018], "selection_acc": a, "val_acc": a,
             "time_to_model_s": t, "process_s": t + 1, "images_per_s": 39000.0, "n_test": 500, "n_selection": 500,
             "phases": {"import torch": 3.0, "training steps": t - 3.0},
             "decoding": {"how": "16 processes", "seconds": 3.0, "waited_s": 0.07}}
            for k, (t, a) in enumerate(zip(times, accs))]
    config = {"width": 32, "epochs": 250, "img_size": 128, "batch_size": 256, "crop_scale": 0.35}
    return {"machine": {"gpu": {"name": "NVIDIA Test GPU"}, "date": "2026-11-30T18:31:20+00:00"},
            "training": {"n": 2000, "n_val": 1000, "rows": rows, "config": config, "params": 1.95e6,
                         "precision": "bf16", "tta": True}}


def test_training_targets_judge_time_and_mean_test_accuracy():
    md = _render("cats_vs_dogs", "summary", _training_record())
    assert "**met**" not in md and "| **mean** | **93.5 %** |" in md
    t = _targets("cats_vs_dogs", _training_record())
    time_t = t["command start to a trained model, slowest seed"]
    acc_t = t["mean test-half accuracy over 3 seeds"]
    assert time_t.met is True and time_t.value == "19.00 s"
    assert acc_t.met is True and acc_t.value == "93.47 %" and "post hoc" in acc_t.goal
    late = _targets("cats_vs_dogs", _training_record(times=(17.0, 26.0, 19.0), accs=(0.90, 0.92, 0.93)))
    assert late["command start to a trained model, slowest seed"].met is False
    assert late["mean test-half accuracy over 3 seeds"].met is False


def test_phases_add_up_to_the_time_to_a_model():
    md = _render("cats_vs_dogs", "phases", _training_record())
    assert "| **time to a model** | **18.00 s** | 100 % | **17.00 s** | **18.00 s** | **19.00 s** |" in md
    assert "| import torch | 3.00 s | 16.7 % | 3.00 s | 3.00 s | 3.00 s |" in md
    assert "waited 70.00 ms for the workers" in md


def test_scaling_runs_spell_out_the_recipe_they_train():
    from gpukit.cats_vs_dogs.scaling import recipe_args, regime_label
    cfg = loop.TrainConfig()
    args = recipe_args(img_size=144)
    opts = dict(zip(args[::2], args[1::2]))
    assert opts == {"--epochs": str(cfg.epochs), "--img-size": "144", "--width": str(cfg.width),
                    "--batch-size": str(cfg.batch_size), "--lr": str(cfg.lr), "--ema": str(cfg.ema),
                    "--crop-scale": str(cfg.crop_scale), "--eval-every": str(cfg.eval_every)}
    assert regime_label(args) == f"144 px, width {cfg.width}, batch {cfg.batch_size}, {cfg.epochs} epochs"
    assert "chapter" not in regime_label(args)


def test_nesterov_sgd_makes_the_same_steps_as_torch_optim_sgd():
    from torch import nn
    import copy
    torch.manual_seed(0)
    a = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
    b = copy.deepcopy(a)

    def groups(m):
        return [{"params": [p for p in m.parameters() if p.ndim > 1], "weight_decay": 5e-3},
                {"params": [p for p in m.parameters() if p.ndim <= 1], "weight_decay": 0.0}]
    factor = lambda s: 1.0 / (1 + s)  # noqa: E731 - a schedule that changes every step
    ours = loop.NesterovSGD(groups(a), lr=0.3, momentum=0.9)
    ours_sched = loop.Schedule(ours, factor)
    ref = torch.optim.SGD(groups(b), lr=0.3, momentum=0.9, nesterov=True)
    ref_sched = torch.optim.lr_scheduler.LambdaLR(ref, factor)
    for step in range(6):
        x, y = torch.randn(8, 5), torch.randint(0, 2, (8,))
        for m, opt, sched in ((a, ours, ours_sched), (b, ref, ref_sched)):
            loss = nn.functional.cross_entropy(m(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
        assert ours.param_groups[0]["lr"] == pytest.approx(ref.param_groups[0]["lr"])
        for p, q in zip(a.parameters(), b.parameters()):
            assert torch.allclose(p, q, atol=1e-6), step
    # the state dicts are interchangeable: torch's loads into ours and the steps stay equal
    fresh = loop.NesterovSGD(groups(a), lr=0.3, momentum=0.9)
    fresh.load_state_dict(ref.state_dict())
    assert set(fresh.buffers) == set(ours.buffers)
    for i, buf in ours.buffers.items():
        assert torch.equal(buf, fresh.buffers[i])
    assert loop.Schedule(fresh, factor).last_epoch == 0
    with pytest.raises(ValueError):
        loop.NesterovSGD(groups(a)[:1], lr=0.1, momentum=0.9).load_state_dict(ref.state_dict())


_AVERAGING_SCRIPT = """
import os, sys, torch, torch.distributed as dist
from gpukit.cats_vs_dogs.allreduce import AveragedGradients, same_start
from gpukit.cats_vs_dogs.loop import NesterovSGD
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)                      # different starting weights: same_start must fix them
net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 2))
net = net.to(memory_format=torch.channels_last)
same_start(net)
opt = AveragedGradients(NesterovSGD([{"params": list(net.parameters())}], lr=0.1, momentum=0.9),
                        net.parameters(), world)
g = torch.Generator().manual_seed(7)
x, y = torch.randn(3, 8, 3, 8, 8, generator=g), torch.randint(0, 2, (3, 8), generator=g)
for step in range(3):                        # each process: its half of each batch
    opt.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(net(x[step, rank::world]), y[step, rank::world]).backward()
    opt.step()
torch.save({"state": net.state_dict(), "grad_is_view": all(p.grad.data_ptr() >= opt.flat.data_ptr()
            for p in net.parameters())}, os.path.join(sys.argv[1], f"rank{rank}.pt"))
"""


def test_averaged_gradients_on_two_processes_equal_one_process_on_the_whole_batch(tmp_path):
    """Two gloo processes, each on half of every batch, end where one process ends that trains
    on the whole batch: the all-reduce averages (not sums) the gradients, into the flat buffer."""
    script = tmp_path / "avg.py"
    script.write_text(_AVERAGING_SCRIPT)
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                           str(script), str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r0, r1 = (torch.load(tmp_path / f"rank{k}.pt") for k in (0, 1))
    assert r0["grad_is_view"] and r1["grad_is_view"]
    # the same training on one process, with the whole batch, from process 0's starting weights
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 2))
    opt = loop.NesterovSGD([{"params": list(net.parameters())}], lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(7)
    x, y = torch.randn(3, 8, 3, 8, 8, generator=g), torch.randint(0, 2, (3, 8), generator=g)
    for step in range(3):
        opt.zero_grad()
        order = torch.cat([torch.arange(0, 8, 2), torch.arange(1, 8, 2)])  # process 0's half, then 1's
        torch.nn.functional.cross_entropy(net(x[step, order]), y[step, order]).backward()
        opt.step()
    for k, v in net.state_dict().items():
        assert torch.equal(r0["state"][k], r1["state"][k]), k
        torch.testing.assert_close(r0["state"][k], v, rtol=1e-5, atol=1e-6)


def test_sweep_record_carries_the_code_commit(tmp_path):
    from gpukit import results
    from gpukit.cats_vs_dogs import sweep
    machine = {"slug": "test-machine", "gpu": None}
    out = sweep.save({"runs": [], "sweep": {"rows": [], "chosen": None}}, machine,
                     str(tmp_path / "sweep.json"))
    rec = json.loads(Path(out).read_text())
    assert rec["benchmark"] == "cats_vs_dogs_sweep" and rec["machine"] == machine
    assert rec["code"] == results.code_record() and rec["schema"] == results.SCHEMA_VERSION
    assert not (tmp_path / "test-machine").exists()
