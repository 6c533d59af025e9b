"""The training loop: one step, the epoch loop, evaluation, the weight average, the batches.

:func:`train_epochs` is the loop itself: every epoch, every batch, one step (forward, backward,
SGD update, learning-rate schedule) and an update of the weight average, then an evaluation.
:func:`fit` is what ``gpukit train cats-vs-dogs`` runs: it sets the loop up and runs it
inside :class:`~gpukit.cats_vs_dogs.run.Run`, which adds what a long run needs around it
(resume, N processes averaging their gradients, Ctrl-C, checkpoints written in the background). The same
code runs on one GPU, on the CPU, and on N GPUs under ``torchrun --nproc_per_node=N``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from . import data as D
from .checkpoint import CheckpointWriter, load_checkpoint, load_for_inference, save_checkpoint

__all__ = ["TrainConfig", "fit", "train_epochs", "Training", "Hooks", "train_step", "lr_factor",
           "NesterovSGD", "Schedule",
           "evaluate", "predict_logits", "EMA", "autocast", "resolve_precision", "pick_device",
           "memory_batches", "stream_batches", "prefetched", "split_batches",
           # defined in checkpoint.py, importable from here too
           "CheckpointWriter", "save_checkpoint", "load_checkpoint", "load_for_inference"]


@dataclass
class TrainConfig:
    data: str = ""
    epochs: int = 250
    img_size: int = 128          # training crops
    store_size: int = 0          # decoded square kept in memory; 0 -> 1.25 x img_size
    eval_size: int = 0           # validation resolution; 0 -> store_size (see the chapter)
    batch_size: int = 256        # global: split across processes under torchrun
    lr: float = 0.05             # peak SGD learning rate for batch 256 (scaled linearly)
    momentum: float = 0.9
    weight_decay: float = 5e-4
    label_smoothing: float = 0.1
    warmup: float = 0.05         # fraction of all steps spent warming the learning rate up
    width: int = 32
    crop_scale: float = 0.35     # smallest crop area of the random resized crop (chosen by the sweep)
    jitter: float = 0.2
    pretrained: bool = False
    device: str = "auto"
    precision: str = "auto"      # bf16 on CUDA, fp32 on CPU
    compile: bool = False
    seed: int = 0
    out: str = "cats_vs_dogs.pt"
    resume: bool = False
    workers: int = 0             # decode threads / loader processes (0: all cores / 8)
    data_mode: str = "auto"      # memory: decode once, keep on the device; stream: decode per epoch
    val_fraction: float = 0.2
    limit: int = 0               # at most this many photos per class and split (quick runs)
    tta: bool = True             # final evaluation averages the photo and its mirror image
    ema: float = 0.995           # average of the weights, evaluated and kept (decay per step; 0: off)
    eval_every: int = 10         # evaluate (and checkpoint, and print a line) every N epochs and at the end
    cudnn_benchmark: bool = False  # let cuDNN time its algorithms at the first step (see the chapter)
    chunk_images: int = 1024     # photos augmented per call, one chunk ahead on a side stream
    exchange: str = "after-backward"  # data parallel: one all-reduce after backward, or "overlapped"
    progress: bool = True

    def resolved(self) -> "TrainConfig":
        c = dataclasses.replace(self)
        c.store_size = c.store_size or D.store_size_for(c.img_size)
        c.eval_size = c.eval_size or c.store_size
        return c


# --------------------------------------------------------------------- device, precision

def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda was asked for but torch sees no CUDA GPU")
    return dev


def sync(device: torch.device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def autocast(device: torch.device, precision: str):
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return torch.autocast(device.type, enabled=False)


def resolve_precision(precision: str, device: torch.device) -> str:
    if precision == "auto":
        return "bf16" if device.type == "cuda" else "fp32"
    if precision not in ("bf16", "fp32"):
        raise ValueError(f"precision must be auto, bf16 or fp32, not {precision!r}")
    return precision


# --------------------------------------------------------------------- schedule, step, evaluation

# --8<-- [start:schedule]
def lr_factor(step: int, total: int, warmup: int) -> float:
    """Linear warm-up to the peak, then a cosine decay to zero."""
    if step < warmup:
        return (step + 1) / warmup
    t = min(1.0, (step - warmup) / max(1, total - warmup))
    return 0.5 * (1 + math.cos(math.pi * t))
# --8<-- [end:schedule]


# --8<-- [start:sgd]
class NesterovSGD:
    """SGD with Nesterov momentum and weight decay: the update of ``torch.optim.SGD(...,
    nesterov=True)``, written with torch's multi-tensor (``_foreach``) operations.

    Why not ``torch.optim.SGD``: building one calls methods that import torch's compiler
    (``torch._dynamo``) on first use: start-up that trains nothing, which the chapter's time
    breakdown showed as seconds before this class replaced it. The arithmetic is the same (a test compares the two step by step), and so is the
    format of :meth:`state_dict`, so checkpoints of either load into the other.
    """

    def __init__(self, groups: list[dict], lr: float, momentum: float):
        self.momentum = momentum
        self.param_groups = [{"params": list(g["params"]), "lr": lr, "initial_lr": lr,
                              "weight_decay": g.get("weight_decay", 0.0)} for g in groups]
        self.params = [p for g in self.param_groups for p in g["params"]]
        self.buffers: dict[int, torch.Tensor] = {}        # parameter index -> momentum buffer

    def zero_grad(self, set_to_none: bool = True):
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self):
        first = 0
        for g in self.param_groups:
            idx = [first + i for i, p in enumerate(g["params"]) if p.grad is not None]
            first += len(g["params"])
            params = [self.params[i] for i in idx]
            if not params:
                continue
            grads = [p.grad for p in params]
            if g["weight_decay"]:
                grads = torch._foreach_add(grads, params, alpha=g["weight_decay"])   # g + wd * w
            if all(i in self.buffers for i in idx):
                bufs = [self.buffers[i] for i in idx]
                torch._foreach_mul_(bufs, self.momentum)               # b = m * b + g
                torch._foreach_add_(bufs, grads)
            else:                                                      # the first step: b = g
                bufs = [torch.clone(x).detach() for x in grads]
                self.buffers.update(zip(idx, bufs))
            grads = torch._foreach_add(grads, bufs, alpha=self.momentum)   # Nesterov: g + m * b
            torch._foreach_add_(params, grads, alpha=-g["lr"])             # w = w - lr * that

    def state_dict(self) -> dict:
        groups, first = [], 0
        for g in self.param_groups:       # parameters are numbered across the groups, as torch does
            groups.append({"lr": g["lr"], "initial_lr": g["initial_lr"], "momentum": self.momentum,
                           "weight_decay": g["weight_decay"], "nesterov": True, "dampening": 0,
                           "params": list(range(first, first + len(g["params"])))})
            first += len(g["params"])
        return {"state": {i: {"momentum_buffer": b} for i, b in self.buffers.items()},
                "param_groups": groups}

    def load_state_dict(self, state: dict):
        if len(state["param_groups"]) != len(self.param_groups):
            raise ValueError("the checkpoint's optimiser has another number of parameter groups")
        for g, saved in zip(self.param_groups, state["param_groups"]):
            g["lr"], g["weight_decay"] = saved["lr"], saved["weight_decay"]
            g["initial_lr"] = saved.get("initial_lr", saved["lr"])
        self.buffers = {int(i): s["momentum_buffer"].to(self.params[int(i)].device)
                        for i, s in state["state"].items() if s.get("momentum_buffer") is not None}


class Schedule:
    """The learning rate of every step: ``initial_lr * factor(step)`` (what torch's ``LambdaLR``
    does), stepped once per training step."""

    def __init__(self, opt: NesterovSGD, factor):
        self.opt, self.factor, self.last_epoch = opt, factor, 0
        self._apply()

    def _apply(self):
        for g in self.opt.param_groups:
            g["lr"] = g["initial_lr"] * self.factor(self.last_epoch)

    def step(self):
        self.last_epoch += 1
        self._apply()

    def state_dict(self) -> dict:
        return {"last_epoch": self.last_epoch}

    def load_state_dict(self, state: dict):
        self.last_epoch = int(state["last_epoch"])
        self._apply()
# --8<-- [end:sgd]


# --8<-- [start:step]
def train_step(model, opt, sched, x, y, *, criterion, amp):
    """One optimisation step; returns the loss and the number of right answers, both
    on the device."""
    with amp:
        logits = model(x)
        loss = criterion(logits, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    sched.step()
    return loss.detach(), (logits.argmax(1) == y).sum()
# --8<-- [end:step]


@torch.no_grad()
def predict_logits(model, images_u8, size: int, *, amp, tta: bool = False, batch: int = 500):
    """Logits (float32) for uint8 photos; ``tta`` averages each photo with its mirror image."""
    model.eval()
    out = []
    for i in range(0, images_u8.shape[0], batch):
        x = D.prepare_eval(images_u8[i:i + batch], size)
        with amp:
            logits = model(x).float()
            if tta:
                logits = 0.5 * (logits + model(torch.flip(x, dims=[3])).float())
        out.append(logits)
    model.train()
    return torch.cat(out) if out else torch.empty(0, 2)


def evaluate(model, store: D.Store, size: int, *, amp, tta: bool = False) -> dict:
    logits = predict_logits(model, store.images, size, amp=amp, tta=tta)
    loss = F.cross_entropy(logits, store.labels).item()
    pred = logits.argmax(1)
    confusion = torch.zeros(2, 2, dtype=torch.int64, device=pred.device)
    confusion.index_put_((store.labels, pred), torch.ones_like(pred), accumulate=True)
    right = (pred == store.labels)
    return {"loss": loss, "acc": right.float().mean().item(), "confusion": confusion.cpu().tolist(),
            "right": right.cpu().tolist()}


class EMA:
    """An exponential moving average of a model's weights (and BatchNorm statistics).

    Averaging the weights over the last few hundred steps evens out the noise of the final
    steps of SGD; the average is evaluated, checkpointed and used for prediction.
    """

    def __init__(self, model: nn.Module, decay: float):
        import copy
        if not 0 < decay < 1:
            raise ValueError(f"the weight average's decay must be between 0 and 1, not {decay}")
        self.decay, self.updates = decay, 0
        self.model = copy.deepcopy(model).eval().requires_grad_(False)
        self._pairs = None

    def _lookup(self, model: nn.Module):
        if self._pairs is None:  # the same tensors every step: look them up once
            src, dst = model.state_dict(), self.model.state_dict()
            self._pairs = ([dst[k] for k in dst if dst[k].is_floating_point()],
                           [src[k] for k in dst if dst[k].is_floating_point()],
                           [(dst[k], src[k]) for k in dst if not dst[k].is_floating_point()])
        return self._pairs

    @torch.no_grad()
    def update(self, model: nn.Module):
        self.updates += 1
        d = min(self.decay, (1 + self.updates) / (10 + self.updates))  # short memory at the start
        averaged, current, _ = self._lookup(model)
        torch._foreach_lerp_(averaged, current, 1 - d)  # one launch for all the weights

    @torch.no_grad()
    def sync_counters(self, model: nn.Module) -> nn.Module:
        """Copy the integer buffers (BatchNorm's step counters); returns the averaged model."""
        for a, b in self._lookup(model)[2]:
            a.copy_(b)
        return self.model

    def state_dict(self) -> dict:
        return {"model": self.model.state_dict(), "updates": self.updates}

    def load_state_dict(self, state: dict):
        self.model.load_state_dict(state["model"])
        self.updates = int(state["updates"])


# --------------------------------------------------------------------- batches

# --8<-- [start:batches]
def memory_batches(train: D.Store, order: torch.Tensor, first: int, steps: int, per_rank: int,
                   chunk: int = 1):
    """Chunks of ``chunk`` batches from the photos kept on the device: a gather of uint8 rows."""
    for step in range(first, steps, chunk):
        idx = order[step * per_rank:min(steps, step + chunk) * per_rank]
        yield train.images[idx], train.labels[idx]


def stream_batches(split: D.Split, order: torch.Tensor, first: int, steps: int, per_rank: int,
                   cfg: "TrainConfig", dev: torch.device, skipped: list):
    """Batches decoded by loader processes in this epoch's order, copied in from pinned memory."""
    loader = D.stream_loader(split, cfg.store_size, per_rank, workers=cfg.workers or min(8, os.cpu_count() or 1),
                             seed=cfg.seed, sampler=order[first * per_rank:steps * per_rank].tolist())
    for images, labels, bad in loader:
        skipped.append(bad)
        if images is not None:
            yield images.to(dev, non_blocking=True), labels.to(dev, non_blocking=True)
# --8<-- [end:batches]


# --8<-- [start:prefetch]
def prefetched(batches, prepare, dev: torch.device):
    """``prepare(images, labels)`` for each item (a batch or a chunk of batches), one item
    ahead on a second CUDA stream.

    While the GPU runs the training steps of item k on the default stream, the gather and
    augmentation of item k + 1 run on a side stream, in the gaps between the steps' kernels.
    On the CPU this is a plain loop.
    """
    if dev.type != "cuda":
        for images, labels in batches:
            yield prepare(images, labels)
        return
    main, side = torch.cuda.current_stream(dev), torch.cuda.Stream(dev)

    def produce():
        side.wait_stream(main)  # inputs made on the default stream (this epoch's order) are ready
        with torch.cuda.stream(side):
            item = next(batches, None)
            return None if item is None else prepare(*item)

    ready = produce()
    while ready is not None:
        main.wait_stream(side)
        for t in ready:
            t.record_stream(main)  # memory made on the side stream, used on the default one
        current, ready = ready, produce()
        yield current
# --8<-- [end:prefetch]


def split_batches(chunks, per_rank: int):
    """Training batches (views, no copy) out of augmented chunks of several batches."""
    for xs, ys in chunks:
        yield from zip(xs.split(per_rank), ys.split(per_rank))


# --------------------------------------------------------------------- the loop

# --8<-- [start:core_loop]
class Hooks:
    """What happens around the steps of :func:`train_epochs`; each does nothing here.

    :class:`~gpukit.cats_vs_dogs.run.Run` fills them in: a progress bar, a checkpoint after
    every epoch, Ctrl-C, BatchNorm statistics shared by the processes of a data-parallel run.
    """

    def after_step(self, epoch: int, step: int, started: float) -> None:
        """``step`` steps of epoch ``epoch`` (counted from 0) are done; the epoch's steps began
        at ``started`` (``time.perf_counter()``). Raising here stops training."""

    def steps_done(self, epoch: int) -> None:
        """The epoch's steps are done; its evaluation comes next."""

    def after_epoch(self, epoch: int, row: dict) -> None:
        """Epoch ``epoch`` is done; ``row`` is its line of the history. Raising here stops training."""


@dataclass
class Training:
    """What the epoch loop works on, and where it starts."""

    model: nn.Module             # the network: its weights are evaluated and checkpointed
    net: nn.Module               # what the steps call: the model, or the model compiled
    opt: NesterovSGD             # or any torch.optim optimizer, or one averaging over processes
    sched: Schedule              # stepped once per step, by train_step (or a torch LR scheduler)
    criterion: nn.Module
    amp: object                  # autocast(device, precision)
    ema: EMA | None              # the weight average (None: evaluate the model itself)
    val: D.Store                 # the validation photos, on the device
    device: torch.device
    epochs: int
    eval_size: int
    eval_every: int = 1
    processes: int = 1           # images/s counts the photos of every process
    start_epoch: int = 0         # complete epochs before this call (a resumed run) ...
    start_step: int = 0          # ... and steps of the next one
    history: list = field(default_factory=list)  # one row per epoch
    trained_s: float = 0.0       # seconds spent in the steps, over all sessions
    phases: dict = field(default_factory=dict)   # seconds of this session: "first step", "evaluation"

    def kept_model(self) -> nn.Module:
        """The network that is evaluated and kept: the weight average when there is one."""
        return self.ema.sync_counters(self.model) if self.ema is not None else self.model


def train_epochs(t: Training, batches, hooks: Hooks = Hooks()) -> list[dict]:
    """Train from where ``t`` stands to ``t.epochs`` epochs; returns the history.

    ``batches(epoch, first)`` gives the epoch's augmented ``(images, labels)`` batches from step
    ``first`` on. Inside an epoch nothing is read back from the GPU: losses and right answers
    are summed on the device and read once, at the end of the epoch.
    """
    for epoch in range(t.start_epoch, t.epochs):
        first = t.start_step if epoch == t.start_epoch else 0  # a resumed run may start mid-epoch
        feed = batches(epoch, first)
        loss_sum = torch.zeros((), device=t.device)
        correct = torch.zeros((), device=t.device, dtype=torch.int64)
        seen = 0
        sync(t.device)
        started = time.perf_counter()
        for step, (x, y) in enumerate(feed, start=first):
            loss, right = train_step(t.net, t.opt, t.sched, x, y, criterion=t.criterion, amp=t.amp)
            if "first step" not in t.phases:  # the first step loads kernels (and lets cuDNN choose)
                sync(t.device)
                t.phases["first step"] = time.perf_counter() - started
            if t.ema is not None:
                t.ema.update(t.model)
            loss_sum += loss * len(y)  # summed on the device: no waiting for the GPU here
            correct += right
            seen += len(y)
            hooks.after_step(epoch, step + 1, started)  # progress bar; Ctrl-C saves and stops
        sync(t.device)
        seconds = time.perf_counter() - started
        t.trained_s += seconds
        hooks.steps_done(epoch)  # with N processes: process 0's BatchNorm statistics everywhere
        row = {"epoch": epoch + 1, "train_loss": loss_sum.item() / max(1, seen),
               "train_acc": correct.item() / max(1, seen), "seconds": seconds,
               "images_per_s": seen * t.processes / seconds, "lr": t.opt.param_groups[0]["lr"],
               "partial": first > 0}
        if (epoch + 1) % t.eval_every == 0 or epoch + 1 == t.epochs:
            t0 = time.perf_counter()
            ev = evaluate(t.kept_model(), t.val, t.eval_size, amp=t.amp)
            row.update(val_loss=ev["loss"], val_acc=ev["acc"])
            t.phases["evaluation"] = t.phases.get("evaluation", 0.0) + time.perf_counter() - t0
        t.history.append(row)
        hooks.after_epoch(epoch, row)  # checkpoint, a line of output; Ctrl-C stops here
    return t.history
# --8<-- [end:core_loop]


def fit(cfg: TrainConfig, *, log=print, stores=None, before: dict | None = None) -> dict:
    """Train, checkpoint every ``eval_every`` epochs, evaluate; returns the final report (a dict).

    ``stores`` may pass already-decoded ``(train, val, skipped)`` stores (the benchmark
    decodes once for several seeds), or photos being decoded since before torch was imported
    (:class:`~gpukit.cats_vs_dogs.photos.Prepared`, what ``gpukit train`` does); ``before`` adds
    the seconds of what came before this call to the report's ``phases``. Raises :class:`~gpukit.cats_vs_dogs.run.Interrupted`
    after saving a checkpoint when Ctrl-C (SIGINT) arrives.
    """
    t_start = time.perf_counter()
    from .run import Run
    run = Run(cfg, log=log)  # under torchrun: this process's place in the job
    try:
        t = run.setup(stores)  # data, model, optimiser, schedule; --resume
        with run.guard():  # Ctrl-C and SIGTERM; checkpoints written in the background
            train_epochs(t, run.batches, run)
        return run.report(t, t_start, before)  # the final evaluation
    finally:
        run.close()
