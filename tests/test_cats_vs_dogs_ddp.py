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
