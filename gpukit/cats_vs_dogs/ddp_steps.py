"""Where the time of a data-parallel training step goes: compute, all-reduce, fixed overhead.

Run by :func:`measure_regime` as ``torchrun --standalone --nproc_per_node=N -m
gpukit.cats_vs_dogs.ddp_steps IMG WIDTH BATCH STEPS WARMUP SAMPLES``: every process trains the
chapter's network on a synthetic batch already on its GPU (bf16 autocast, channels_last, the
recipe's SGD), so the numbers are the step alone, without data. Every time is taken in
``SAMPLES`` samples of ``STEPS`` steps (the slowest process's time of each) and kept whole, so
that a view can give the median and the spread; the host's time per step (from the call to
its return, the GPU idle at the call) comes from one more pass with a synchronisation after
each step.

With one process it times the step at the global batch (one GPU doing all the work) and at the
batch one of N processes gets (the compute each process does), the two alternating sample by
sample, and profiles both with ``torch.profiler`` (GPU busy time, kernel time, the gaps between
kernels). With N processes it times, in the same run, the command's own exchange
(:data:`COMMAND`: one all-reduce of a flat gradient buffer after backward) with and without the
all-reduce, the overlapped exchange (:data:`OVERLAPPED`: buckets all-reduced from gradient hooks
during backward), the first construction of DistributedDataParallel in a process (and how many
modules it imports), then for each way of wrapping the model in DistributedDataParallel
(:data:`WRAPPINGS`) the whole step and the step under ``no_sync()`` (no gradient exchange), and
the all-reduce of a buffer the size of the gradients alone.
Process 0 prints one line ``gpukit-ddp-steps {json}``.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time

from .meta import COMMAND, OVERLAPPED  # noqa: F401  (public here)

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
SAMPLES = 5
#: ``GPUKIT_DDP_STEPS_DEVICE=cpu`` runs the breakdown on the CPU with gloo (the tests): every
#: number but the profile, which needs a GPU
DEVICE_ENV = "GPUKIT_DDP_STEPS_DEVICE"


def _device() -> str:
    return "cpu" if os.environ.get(DEVICE_ENV) == "cpu" else "cuda"


def _sync():
    import torch
    if _device() == "cuda":
        torch.cuda.synchronize()
TAG = "gpukit-ddp-steps "


def synthetic_step(net, params, n: int, img: int, *, weight_decay: float = 5e-4, wrap=None,
                   device: str = "cuda"):
    """One training step of ``net`` on a synthetic batch of ``n`` photos of ``img`` px already on
    the GPU (bf16 autocast, channels_last, the recipe's loss, torch's Nesterov SGD): a callable.
    ``wrap(optimiser)``, if given, wraps the optimiser (the command's gradient averaging).
    ``device="cpu"`` runs the same on the CPU (the tests)."""
    import torch
    from torch import nn
    crit = nn.CrossEntropyLoss(label_smoothing=0.1)
    x = torch.randn(n, 3, img, img, device=device).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 2, (n,), device=device)
    opt = torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, weight_decay=weight_decay)
    opt = wrap(opt) if wrap is not None else opt

    def step():
        with torch.autocast(device, dtype=torch.bfloat16):
            loss = crit(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def _slowest(seconds: float) -> float:
    """The largest of ``seconds`` over the processes (itself with one process)."""
    import torch
    if not torch.distributed.is_initialized():
        return seconds
    t = torch.tensor([seconds], device=_device())
    torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
    return float(t)


def _sample(fn, steps: int) -> float:
    """Seconds per call of ``fn`` over ``steps`` calls, the slowest process's."""
    _sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    _sync()
    return _slowest((time.perf_counter() - t0) / steps)


def _host(fn, steps: int) -> float:
    """Median seconds from a call of ``fn`` to its return, the GPU idle at each call (a
    synchronisation after each), the slowest process's."""
    import statistics
    times = []
    for _ in range(steps):
        _sync()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    _sync()
    return _slowest(statistics.median(times))


def summary(samples: list[float], host_s: float | None = None) -> dict:
    """The record of one timed step: every sample, their median, lowest and highest."""
    import statistics
    out = {"samples": samples, "median_s": statistics.median(samples), "min_s": min(samples),
           "max_s": max(samples)}
    if host_s is not None:
        out["host_s"] = host_s
    return out


def timed(fns: dict, steps: int, warmup: int, samples: int) -> dict:
    """Each callable of ``fns`` (name -> fn) warmed up, then timed in ``samples`` samples of
    ``steps`` calls, the callables alternating sample by sample; then each one's host time.
    Name -> :func:`summary`."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    got = {name: [] for name in fns}
    for _ in range(samples):
        for name, fn in fns.items():
            got[name].append(_sample(fn, steps))
    return {name: summary(got[name], _host(fn, steps)) for name, fn in fns.items()}


def profile_step(fn, steps: int = 10, warmup: int = 5) -> dict:
    """``steps`` calls of ``fn`` under ``torch.profiler`` (GPU activity only): per step, the
    wall time, the kernel time (every kernel, copy and set summed), the GPU busy time (the
    union of their intervals), and the gaps between them; the busy fraction over the wall."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    spans = sorted((e.time_range.start, e.time_range.end) for e in prof.events()
                   if e.device_type == torch.autograd.DeviceType.CUDA)
    return {"steps": steps, **busy(spans, wall * 1e6, steps)}


def busy(spans: list[tuple[float, float]], wall_us: float, steps: int = 1) -> dict:
    """GPU intervals (start, end) in microseconds over ``steps`` steps: kernel time, busy time
    (their union), gaps between the merged intervals, per step and in seconds."""
    kernel = sum(e - s for s, e in spans)
    merged: list[list[float]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    union = sum(e - s for s, e in merged)
    gaps = [b[0] - a[1] for a, b in zip(merged, merged[1:])]
    per = 1e-6 / steps
    return {"kernels_per_step": len(spans) / steps, "kernel_s": kernel * per, "busy_s": union * per,
            "wall_s": wall_us * per, "busy_fraction": union / wall_us if wall_us > 0 else None,
            "gaps_per_step": len(gaps) / steps, "gap_s": sum(gaps) * per,
            "largest_gap_s": max(gaps, default=0.0) * 1e-6,
            "gaps_over_10us_per_step": sum(g > 10 for g in gaps) / steps}


def _worker(img: int, width: int, batch: int, steps: int, warmup: int,
            samples: int = SAMPLES) -> dict:
    import torch
    import torch.distributed as dist
    from torch import nn

    from .model import build_model, count_params
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    dev = _device()
    if dev == "cuda":
        torch.cuda.set_device(rank)
    if world > 1 and dev == "cuda":
        dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    elif world > 1:
        dist.init_process_group("gloo")
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    ids = [rank] if dev == "cuda" else None

    def stepper(net, params, n, wrap=None):
        return synthetic_step(net, params, n, img, wrap=wrap, device=dev)

    out = {"img": img, "width": width, "batch": batch, "world": world, "steps": steps,
           "samples": samples}
    model = build_model(width).to(dev, memory_format=torch.channels_last)
    out["params"] = count_params(model)
    if world == 1:
        half = batch // 2
        whole_fn, half_fn = stepper(model, model.parameters(), batch), stepper(model, model.parameters(), half)
        t = timed({"whole": whole_fn, "half": half_fn}, steps, warmup, samples)
        out["one_gpu_step"], out["one_gpu_half_batch_step"] = t["whole"], t["half"]
        out["one_gpu_step_s"] = t["whole"]["median_s"]
        out["one_gpu_half_batch_step_s"] = t["half"]["median_s"]
        if dev == "cuda":
            try:   # the timings above are kept whatever the profiler does
                out["profile"] = {"whole": profile_step(whole_fn), "half": profile_step(half_fn)}
            except Exception as exc:  # noqa: BLE001 - recorded, not raised
                out["profile"] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:200]}
        return out
    per_rank = batch // world
    from .allreduce import AveragedGradients, OverlappedGradients, same_start
    same_start(model)  # also the first collective: the communicator is set up here
    # DistributedDataParallel's first construction in this process, before any optimiser is
    # built (torch.optim may import the same modules): its own cost, and what it imports
    before = set(sys.modules)
    t0 = time.perf_counter()
    first = nn.parallel.DistributedDataParallel(model, device_ids=ids)
    _sync()
    out["ddp_first_wrap_s"] = _slowest(time.perf_counter() - t0)
    out["ddp_first_wrap_modules"] = len(set(sys.modules) - before)
    out["ddp_imports_compiler"] = "torch._dynamo" in set(sys.modules) - before
    del first
    params = list(model.parameters())

    def row(name, options, t, quiet=None):
        r = {"wrapping": name, "options": options, "step": t, "step_s": t["median_s"]}
        if quiet is not None:
            r.update(no_sync_step=quiet, no_sync_step_s=quiet["median_s"])
        return r

    made = []
    command = stepper(model, params, per_rank,
                      wrap=lambda o: made.append(AveragedGradients(o, params, world)) or made[0])

    def command_step(exchange: bool):   # the command's step, or the same without the all-reduce
        def step():
            made[0].exchange = exchange
            command()
        return step
    t = timed({"on": command_step(True), "off": command_step(False)}, steps, warmup, samples)
    rows = [row(COMMAND, {}, t["on"], t["off"])]
    for name, mb in OVERLAPPED.items():
        made.clear()

        def wrap(o, mb=mb):
            made.append(OverlappedGradients(o, params, world, bucket_mb=mb))
            return made[0]
        t = timed({"on": stepper(model, params, per_rank, wrap=wrap)}, steps, warmup, samples)
        rows.append({**row(name, {"bucket_mb": mb}, t["on"]), "buckets": len(made[0].buckets)})
        made[0].remove()
    for p in model.parameters():
        p.grad = None      # the views into the flat buffer go; DDP makes its own
    for name, options in WRAPPINGS.items():
        ddp = nn.parallel.DistributedDataParallel(model, device_ids=ids, **options)
        step = stepper(ddp, ddp.parameters(), per_rank)
        fns = {"on": step}
        if not options.get("static_graph"):
            def quiet(ddp=ddp, step=step):
                with ddp.no_sync():
                    step()
            fns["off"] = quiet
        t = timed(fns, steps, warmup, samples)
        rows.append(row(name, options, t["on"], t.get("off")))
        del ddp, step, fns
        quiet = None
    out["ddp"] = rows
    out["command_wrapping"] = COMMAND
    flat = torch.zeros(out["params"], device=dev)
    t = timed({"all_reduce": lambda: dist.all_reduce(flat)}, steps, warmup, samples)["all_reduce"]
    out["all_reduce"], out["all_reduce_s"] = t, t["median_s"]
    out["all_reduce_bytes"] = flat.numel() * flat.element_size()
    # every wrapper gone before the process group: a DDP object outliving it can abort the
    # process at exit
    made.clear()
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()
    return out


def measure_regime(img: int, width: int, batch: int, gpus: int, *, steps: int = 40,
                   warmup: int = 15, samples: int = SAMPLES, timeout: int = 300) -> dict:
    """One regime on 1 process and on ``gpus`` processes: the records of both."""
    from .meta import MULTICAST_OFF
    res = {}
    for n in (1, gpus):
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}",
               "-m", "gpukit.cats_vs_dogs.ddp_steps", str(img), str(width), str(batch),
               str(steps), str(warmup), str(samples)]
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
