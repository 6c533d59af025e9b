"""The PyTorch profiler on one training step of a small CNN on random data.

:func:`profile_steps` trains a few steps under ``torch.profiler``, with each phase (forward,
backward, optimizer) marked twice: as an NVTX range (``torch.cuda.nvtx``, which Nsight Systems
shows) and as a ``record_function`` range (which the PyTorch profiler shows). It returns the
kernels ranked by GPU time, the GPU time under each phase, and how busy the GPU was: the union
of the intervals in which a kernel or a copy ran, over the span of the profiled steps.
"""

from __future__ import annotations

import time


def small_cnn():
    import torch.nn as nn
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 2))


def busy_fraction(intervals: list[tuple[float, float]], start: float, stop: float) -> float:
    """Share of ``[start, stop]`` covered by the union of ``intervals``."""
    if stop <= start:
        return 0.0
    covered, end = 0.0, start
    for a, b in sorted((max(a, start), min(b, stop)) for a, b in intervals):
        if b <= end:
            continue
        covered += b - max(a, end)
        end = b
    return covered / (stop - start)


# --8<-- [start:step]
def train_step(model, opt, loss_fn, x, y, nvtx, record_function):
    with record_function("forward"):
        nvtx.range_push("forward")
        loss = loss_fn(model(x), y)
        nvtx.range_pop()
    with record_function("backward"):
        nvtx.range_push("backward")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nvtx.range_pop()
    with record_function("optimizer"):
        nvtx.range_push("optimizer")
        opt.step()
        nvtx.range_pop()
    return loss
# --8<-- [end:step]


def profile_steps(batch: int = 128, size: int = 64, steps: int = 5, device: str = "cuda") -> dict:
    """Profile ``steps`` training steps (after three warm-up steps) of :func:`small_cnn`."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    torch.manual_seed(0)
    model = small_cnn().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(batch, 3, size, size, device=device)
    y = torch.randint(0, 2, (batch,), device=device)
    gpu = device == "cuda"
    nvtx = torch.cuda.nvtx if gpu else _NoNvtx()
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    for _ in range(3):
        train_step(model, opt, loss_fn, x, y, nvtx, record_function)
    sync()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    t0 = time.perf_counter()
    with profile(activities=activities) as prof:
        for _ in range(steps):
            with record_function("step"):
                loss = train_step(model, opt, loss_fn, x, y, nvtx, record_function)
        sync()
    wall = time.perf_counter() - t0
    if not torch.isfinite(loss).item():
        raise FloatingPointError("the training loss is not finite")
    return summarise(prof, steps, wall, batch, size)


class _NoNvtx:
    def range_push(self, name):
        pass

    def range_pop(self):
        pass


def _device_time(e) -> float:
    for attr in ("self_device_time_total", "self_cuda_time_total"):
        v = getattr(e, attr, None)
        if v is not None:
            return float(v)
    return 0.0


def _device_total(e) -> float:
    for attr in ("device_time_total", "cuda_time_total"):
        v = getattr(e, attr, None)
        if v is not None:
            return float(v)
    return 0.0


def summarise(prof, steps: int, wall: float, batch: int, size: int) -> dict:
    """Kernel table, phase times and GPU busy share from a finished profiler."""
    from torch.autograd import DeviceType
    events = prof.events()
    device_events = [e for e in events if getattr(e, "device_type", None) == DeviceType.CUDA]
    intervals = [(e.time_range.start, e.time_range.end) for e in device_events]
    step_ranges = [e.time_range for e in events if e.name == "step"]
    start = min((r.start for r in step_ranges), default=0.0)
    stop = max([r.end for r in step_ranges] + [b for _, b in intervals]) if step_ranges else 0.0
    kernel_total = {}
    for e in device_events:
        kernel_total.setdefault(e.name, [0.0, 0])
        kernel_total[e.name][0] += e.time_range.end - e.time_range.start
        kernel_total[e.name][1] += 1
    total = sum(t for t, _ in kernel_total.values())
    rows = [{"name": name, "calls": calls, "device_us": t, "share": t / total if total else 0.0}
            for name, (t, calls) in sorted(kernel_total.items(), key=lambda kv: -kv[1][0])]
    phases = {}
    for e in prof.key_averages():
        if e.key in ("forward", "backward", "optimizer", "step"):
            phases[e.key] = {"device_us": _device_total(e), "cpu_us": float(e.cpu_time_total)}
    return {"steps": steps, "batch": batch, "image_size": size, "wall_s": wall,
            "span_us": stop - start, "device_us": total,
            "busy": busy_fraction(intervals, start, stop), "kernels": rows[:10],
            "kernel_count": sum(c for _, c in kernel_total.values()), "phases": phases}
