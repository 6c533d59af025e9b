"""Where the time of a data-parallel training step goes: compute, all-reduce, fixed overhead.

Run by :func:`measure_regime` as ``torchrun --standalone --nproc_per_node=N -m
gpukit.cats_vs_dogs.ddp_steps IMG WIDTH BATCH``: every process trains the chapter's network on
a synthetic batch already on its GPU (bf16 autocast, channels_last, the recipe's SGD), so the
numbers are the step alone, without data. With one process it times the step at the global
batch (one GPU doing all the work) and at the batch one of N processes gets (the compute each
process does). With N processes it times the command's own exchange (:data:`COMMAND`: one
all-reduce of a flat gradient buffer after backward) with and without the all-reduce, the first
construction of DistributedDataParallel in a process (and how many modules it imports), then
for each way of wrapping the model in DistributedDataParallel (:data:`WRAPPINGS`) the whole
step and the step under ``no_sync()`` (no gradient exchange), and the all-reduce of a buffer
the size of the gradients alone.
Process 0 prints one line ``gpukit-ddp-steps {json}``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

#: DistributedDataParallel's options tried, by name, against the command's own exchange
#: (:class:`~gpukit.cats_vs_dogs.allreduce.AveragedGradients`, one all-reduce after backward)
WRAPPINGS = {
    "default": {},
    "no buffer broadcast": {"broadcast_buffers": False},
    "no buffer broadcast, bucket view + static graph": {"broadcast_buffers": False,
                                                        "gradient_as_bucket_view": True, "static_graph": True},
    "the same, one bucket": {"broadcast_buffers": False, "gradient_as_bucket_view": True,
                             "static_graph": True, "bucket_cap_mb": 256},
}
COMMAND = "gpukit: one all-reduce after backward"
TAG = "gpukit-ddp-steps "


def synthetic_step(net, params, n: int, img: int, *, weight_decay: float = 5e-4, wrap=None):
    """One training step of ``net`` on a synthetic batch of ``n`` photos of ``img`` px already on
    the GPU (bf16 autocast, channels_last, the recipe's loss, torch's Nesterov SGD): a callable.
    ``wrap(optimiser)``, if given, wraps the optimiser (the command's gradient averaging)."""
    import torch
    from torch import nn
    crit = nn.CrossEntropyLoss(label_smoothing=0.1)
    x = torch.randn(n, 3, img, img, device="cuda").contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 2, (n,), device="cuda")
    opt = torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, weight_decay=weight_decay)
    opt = wrap(opt) if wrap is not None else opt

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = crit(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def _timed(fn, steps: int, warmup: int) -> float:
    """Seconds per call of ``fn`` over ``steps`` calls after ``warmup``, slowest process's."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    torch.cuda.synchronize()
    dt = torch.tensor([(time.perf_counter() - t0) / steps], device="cuda")
    if torch.distributed.is_initialized():
        torch.distributed.all_reduce(dt, op=torch.distributed.ReduceOp.MAX)
    return float(dt)


def _worker(img: int, width: int, batch: int, steps: int, warmup: int) -> dict:
    import torch
    import torch.distributed as dist
    from torch import nn

    from .model import build_model, count_params
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(rank)
    if world > 1:
        dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)

    def stepper(net, params, n):
        return synthetic_step(net, params, n, img)

    out = {"img": img, "width": width, "batch": batch, "world": world, "steps": steps}
    model = build_model(width).cuda().to(memory_format=torch.channels_last)
    out["params"] = count_params(model)
    if world == 1:
        out["one_gpu_step_s"] = _timed(stepper(model, model.parameters(), batch), steps, warmup)
        half = batch // 2
        out["one_gpu_half_batch_step_s"] = _timed(stepper(model, model.parameters(), half), steps, warmup)
        return out
    per_rank = batch // world
    from .allreduce import AveragedGradients, same_start
    same_start(model)  # also the first collective: the communicator is set up here
    # DistributedDataParallel's first construction in this process, before any optimiser is
    # built (torch.optim may import the same modules): its own cost, and what it imports
    before = set(sys.modules)
    t0 = time.perf_counter()
    first = nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    torch.cuda.synchronize()
    seconds = torch.tensor([time.perf_counter() - t0], device="cuda")
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
    out["ddp_first_wrap_s"] = float(seconds)
    out["ddp_first_wrap_modules"] = len(set(sys.modules) - before)
    out["ddp_imports_compiler"] = "torch._dynamo" in set(sys.modules) - before
    del first
    params = list(model.parameters())

    def command_step(exchange: bool):   # the command's step, or the same without the all-reduce
        return synthetic_step(model, params, per_rank, img,
                              wrap=lambda o: AveragedGradients(o, params, world, exchange=exchange))
    rows = [{"wrapping": COMMAND, "options": {}, "step_s": _timed(command_step(True), steps, warmup),
             "no_sync_step_s": _timed(command_step(False), steps, warmup)}]
    for p in model.parameters():
        p.grad = None      # the views into the flat buffer go; DDP makes its own
    for name, options in WRAPPINGS.items():
        ddp = nn.parallel.DistributedDataParallel(model, device_ids=[rank], **options)
        step = stepper(ddp, ddp.parameters(), per_rank)
        row = {"wrapping": name, "options": options, "step_s": _timed(step, steps, warmup)}
        if not options.get("static_graph"):
            def quiet(ddp=ddp, step=step):
                with ddp.no_sync():
                    step()
            row["no_sync_step_s"] = _timed(quiet, steps, warmup)
        rows.append(row)
        del ddp
    out["ddp"] = rows
    out["command_wrapping"] = COMMAND
    flat = torch.zeros(out["params"], device="cuda")
    out["all_reduce_s"] = _timed(lambda: dist.all_reduce(flat), steps, warmup)
    out["all_reduce_bytes"] = flat.numel() * flat.element_size()
    dist.destroy_process_group()
    return out


def measure_regime(img: int, width: int, batch: int, gpus: int, *, steps: int = 40,
                   warmup: int = 15, timeout: int = 300) -> dict:
    """One regime on 1 process and on ``gpus`` processes: the records of both."""
    from .scaling import MULTICAST_OFF
    res = {}
    for n in (1, gpus):
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}",
               "-m", "gpukit.cats_vs_dogs.ddp_steps", str(img), str(width), str(batch),
               str(steps), str(warmup)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **MULTICAST_OFF, "OMP_NUM_THREADS": "4"})
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith(TAG)]
        if proc.returncode != 0 or not line:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise RuntimeError(f"ddp_steps with {n} process(es) failed: {tail[0][:300]}")
        res[n] = json.loads(line[0][len(TAG):])
    return {"one": res[1], "many": res[gpus]}


def main(argv=None) -> int:
    args = [int(a) for a in (argv if argv is not None else sys.argv[1:])]
    out = _worker(*args)
    if int(os.environ.get("RANK", "0")) == 0:
        print(TAG + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
