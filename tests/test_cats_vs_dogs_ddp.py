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
