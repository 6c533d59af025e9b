"""The training loop: GPU-resident data, bf16 autocast, atomic checkpoints, resume, DDP.

:func:`fit` is what ``gpukit train cats-vs-dogs`` runs. The same code runs on one GPU,
on the CPU, and on N GPUs under ``torchrun --nproc_per_node=N`` (DistributedDataParallel:
every process holds the decoded photos, takes its share of each epoch's shuffled
indices, and gradients are averaged across processes after every backward pass).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from . import data as D
from .model import build_from_config, build_model, count_params


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
    crop_scale: float = 0.25     # smallest crop area of the random resized crop
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
    eval_every: int = 1
    chunk_images: int = 1024     # photos augmented per call, one chunk ahead on a side stream
    progress: bool = True

    def resolved(self) -> "TrainConfig":
        c = dataclasses.replace(self)
        c.store_size = c.store_size or int(round(c.img_size * 1.25 / 8) * 8)
        c.eval_size = c.eval_size or c.store_size
        return c


class Interrupted(Exception):
    """Ctrl-C: a checkpoint was saved; the run can continue with ``--resume``."""

    def __init__(self, path: str, epoch: int, step: int):
        super().__init__(f"interrupted: checkpoint saved to {path} after {epoch} complete epoch(s)"
                         f"{f' and {step} step(s) of the next' if step else ''}; "
                         "continue with --resume")
        self.path, self.epoch, self.step = path, epoch, step


# --------------------------------------------------------------------- devices, processes

def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda was asked for but torch sees no CUDA GPU")
    return dev


class Dist:
    """This process's place in a torchrun job (rank 0 of 1 when not under torchrun)."""

    def __init__(self, device_name: str):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.device = pick_device(device_name)
        if self.world > 1:
            import torch.distributed as dist
            if self.device.type == "cuda":
                self.device = torch.device("cuda", self.local_rank)
                torch.cuda.set_device(self.device)
            dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")
        elif self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())

    @property
    def main(self) -> bool:
        return self.rank == 0

    def barrier(self):
        if self.world > 1:
            import torch.distributed as dist
            dist.barrier()

    def any(self, flag: bool) -> bool:
        """True on every process when ``flag`` is true on any of them."""
        if self.world == 1:
            return flag
        import torch.distributed as dist
        t = torch.tensor([int(flag)], device=self.device if self.device.type == "cuda" else "cpu")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item())

    def close(self):
        if self.world > 1:
            import torch.distributed as dist
            if dist.is_initialized():
                dist.destroy_process_group()


def sync(device: torch.device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# --------------------------------------------------------------------- schedule, checkpoints
# --8<-- [start:schedule]
def lr_factor(step: int, total: int, warmup: int) -> float:
    """Linear warm-up to the peak, then a cosine decay to zero."""
    if step < warmup:
        return (step + 1) / warmup
    t = min(1.0, (step - warmup) / max(1, total - warmup))
    return 0.5 * (1 + math.cos(math.pi * t))
# --8<-- [end:schedule]


# --8<-- [start:checkpoint]
def save_checkpoint(path: str | os.PathLike, state: dict) -> None:
    """Write a checkpoint atomically: a temp file in the same folder, then a rename.

    A crash or Ctrl-C while writing leaves the previous checkpoint intact.
    """
    from ..files import atomic_write
    atomic_write(path, lambda fh: torch.save(state, fh), binary=True)


def load_checkpoint(path: str | os.PathLike, map_location="cpu") -> dict:
    """Load a checkpoint written by :func:`save_checkpoint` without unpickling code."""
    import pickle
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pickle-protocol notes from the safe unpickler
            state = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError:
        raise ValueError("not a checkpoint file (or one that holds more than tensors and "
                         "plain data)") from None
    if not isinstance(state, dict) or "model" not in state or "config" not in state:
        raise ValueError("not a gpukit cats-vs-dogs checkpoint")
    return state
# --8<-- [end:checkpoint]


def to_cpu(obj):
    """A copy of a (nested) state dict with every tensor copied to host memory."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        return {k: to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_cpu(v) for v in obj)
    return obj


class CheckpointWriter:
    """Writes checkpoints in a background thread, one at a time, each atomically.

    ``submit`` copies the state to host memory first (training then goes on changing the
    weights on the device), waits for the previous write to finish, and starts the next.
    ``close`` waits for the last one: a run never ends with a checkpoint half written.
    """

    def __init__(self, path: str | os.PathLike, background: bool = True):
        self.path, self.background, self._thread, self._error = path, background, None, None

    def _write(self, state):
        try:
            save_checkpoint(self.path, state)
        except BaseException as exc:  # reported by the next submit() or close()
            self._error = exc

    def wait(self):
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def submit(self, state: dict):
        state = to_cpu(state)
        self.wait()
        if not self.background:
            save_checkpoint(self.path, state)
            return
        import threading
        self._thread = threading.Thread(target=self._write, args=(state,), daemon=True)
        self._thread.start()

    close = wait


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


def weights_digest(model: nn.Module) -> str:
    """sha256 of every parameter and buffer: equal on all processes of a healthy DDP run."""
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().reshape(-1).contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


# --------------------------------------------------------------------- steps

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


# --8<-- [start:step]
def train_step(model, opt, sched, x, y, *, criterion, amp):
    """One optimisation step; returns the loss and the number of right answers, on the device."""
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
    return {"loss": loss, "acc": (pred == store.labels).float().mean().item(),
            "confusion": confusion.cpu().tolist()}


class Progress:
    """A one-line progress bar on a terminal; nothing per step when output is a file."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()

    def update(self, epoch: int, epochs: int, step: int, steps: int):
        if self.enabled:
            done = int(20 * step / steps)
            sys.stderr.write(f"\repoch {epoch}/{epochs} [{'#' * done}{'.' * (20 - done)}] "
                             f"{step}/{steps}")
            sys.stderr.flush()

    def clear(self):
        if self.enabled:
            sys.stderr.write("\r" + " " * 60 + "\r")
            sys.stderr.flush()


# --------------------------------------------------------------------- the run

#: Above this many bytes of decoded training photos, ``data_mode="auto"`` streams them.
STREAM_ABOVE = 8 * 2**30


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

def _seed_for(*parts: int) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:7], "little")


def fit(cfg: TrainConfig, *, log=print, stores=None) -> dict:
    """Train, checkpoint every epoch, evaluate; returns the final report (a plain dict).

    ``stores`` may pass already-decoded ``(train, val, skipped)`` stores (the benchmark
    decodes once for several seeds). Raises :class:`Interrupted` after saving a
    checkpoint when Ctrl-C (SIGINT) arrives.
    """
    t_start = time.perf_counter()
    cfg = cfg.resolved()
    dist = Dist(cfg.device)
    dev = dist.device
    say = log if dist.main else (lambda *a, **k: None)
    try:
        return _fit(cfg, dist, dev, say, stores, t_start)
    finally:
        dist.close()


def _fit(cfg, dist, dev, say, stores, t_start):
    precision = resolve_precision(cfg.precision, dev)
    amp = autocast(dev, precision)
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    state = None
    if cfg.resume and not Path(cfg.out).exists():
        say(f"--resume: no checkpoint at {cfg.out} yet, starting from scratch")
    elif cfg.resume:
        state = load_checkpoint(cfg.out)
        for key in ("img_size", "width", "pretrained", "store_size"):
            if state["config"].get(key) != getattr(cfg, key):
                raise ValueError(f"--resume: the checkpoint was trained with {key}="
                                 f"{state['config'].get(key)}, this run asks for {getattr(cfg, key)}")

    # Data: decode once, keep uint8 on the device.
    t0 = time.perf_counter()
    stream_skipped: list[int] = []
    if stores is None:
        ds = D.find_dataset(cfg.data, val_fraction=cfg.val_fraction, seed=cfg.seed)
        train_split, val_split = D.limit(ds.train, cfg.limit, cfg.seed), D.limit(ds.val, cfg.limit, cfg.seed)
        if cfg.data_mode not in ("auto", "memory", "stream"):
            raise ValueError(f"data_mode must be auto, memory or stream, not {cfg.data_mode!r}")
        stream = cfg.data_mode == "stream" or (
            cfg.data_mode == "auto" and D.store_bytes(len(train_split), cfg.store_size) > STREAM_ABOVE)
        if stream:
            train, bad = None, []
        else:
            train, bad = D.build_store(train_split, cfg.store_size, dev, cfg.workers or None)
        val, bad_val = D.build_store(val_split, cfg.store_size, dev, cfg.workers or None)
        skipped = bad + bad_val
        layout = ds.layout + (", streamed" if stream else "")
    else:
        train, val, skipped = stores
        train_split, stream, layout = None, False, "given"
    n_train = len(train_split) if stream else len(train)
    sync(dev)
    load_s = time.perf_counter() - t0
    if skipped:
        say(D.skipped_warning(skipped))
    say(f"data: {n_train} training and {len(val)} validation photos ({layout}), decoded to "
        f"{cfg.store_size}x{cfg.store_size} in {load_s:.2f} s, kept on {dev}")

    # Model, optimiser, schedule.
    torch.manual_seed(cfg.seed)
    model = build_model(cfg.width, pretrained=cfg.pretrained).to(dev, memory_format=torch.channels_last)
    per_rank = max(1, cfg.batch_size // dist.world)
    shard = n_train // dist.world
    per_rank = min(per_rank, shard)
    steps = max(1, shard // per_rank)
    total_steps = cfg.epochs * steps
    warmup = max(1, int(cfg.warmup * total_steps))
    lr = cfg.lr * (per_rank * dist.world) / 256
    decay, no_decay = [], []
    for p in model.parameters():
        (no_decay if p.ndim <= 1 else decay).append(p)
    opt = torch.optim.SGD([{"params": decay, "weight_decay": cfg.weight_decay},
                           {"params": no_decay, "weight_decay": 0.0}],
                          lr=lr, momentum=cfg.momentum, nesterov=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, total_steps, warmup))
    criterion = nn.CrossEntropyLoss(label_smoothing=cfg.label_smoothing)
    ema = EMA(model, cfg.ema) if cfg.ema else None
    history: list[dict] = []
    start_epoch, start_step, trained_s = 0, 0, 0.0
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        if ema is not None:
            if state.get("ema") is None:
                raise ValueError("--resume: the checkpoint has no weight average (trained without --ema)")
            ema.load_state_dict(state["ema"])
        start_epoch, start_step = int(state["epoch"]), int(state.get("step_in_epoch", 0))
        history = list(state.get("history", []))
        trained_s = float(state.get("train_seconds", 0.0))
        torch.set_rng_state(state["rng"]["torch"])
        say(f"resumed from {cfg.out}: {start_epoch} complete epoch(s)"
            f"{f' + {start_step} step(s)' if start_step else ''}")
    net = model
    if dist.world > 1:
        net = nn.parallel.DistributedDataParallel(
            model, device_ids=[dev.index] if dev.type == "cuda" else None)
    if cfg.compile:
        net = torch.compile(net)
    gen = torch.Generator(device=dev)
    say(f"model: CatDogNet width {cfg.width}, {count_params(model) / 1e6:.2f} M parameters"
        if not cfg.pretrained else "model: ResNet-18, ImageNet weights")
    say(f"training {cfg.epochs} epochs x {steps} steps of {per_rank} x {dist.world} process(es), "
        f"{precision}, lr {lr:.3g}, on {dev}")

    def snapshot(epoch: int, step: int) -> dict:
        if ema is not None:
            ema.sync_counters(model)
        return {"model": model.state_dict(), "ema": ema.state_dict() if ema else None,
                "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict(), "scaler": None, "epoch": epoch,
                "step_in_epoch": step, "history": history, "train_seconds": trained_s,
                "config": dataclasses.asdict(cfg), "classes": list(D.CLASSES),
                "rng": {"torch": torch.get_rng_state()}, "world_size": dist.world}

    # Ctrl-C (SIGINT) or SIGTERM (what torchrun and batch schedulers send): finish the
    # current step, save, stop. A second Ctrl-C stops at once.
    stop = {"flag": False}

    def on_signal(signum, frame):
        if stop["flag"] and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop["flag"] = True

    old_handlers = ({s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
                    if _main_thread() else {})
    writer = CheckpointWriter(cfg.out)
    check_every = 1 if dist.world == 1 else 8  # under DDP the check is a collective: not every step
    progress = Progress(cfg.progress and dist.main)
    try:
        for epoch in range(start_epoch, cfg.epochs):
            first = start_step if epoch == start_epoch else 0
            g = torch.Generator().manual_seed(_seed_for(cfg.seed, epoch))
            perm = torch.randperm(n_train, generator=g)[dist.rank * shard:(dist.rank + 1) * shard]
            stream_skipped.clear()
            if stream:
                batches = stream_batches(train_split, perm, first, steps, per_rank, cfg, dev, stream_skipped)
            else:
                batches = memory_batches(train, perm.to(dev), first, steps, per_rank,
                                         chunk=max(1, cfg.chunk_images // per_rank))
            gen.manual_seed(_seed_for(cfg.seed, epoch, dist.rank, first))
            loss_sum = torch.zeros((), device=dev)
            correct = torch.zeros((), device=dev, dtype=torch.int64)
            sync(dev)
            t_epoch = time.perf_counter()
            n_seen = 0
            def prepare(images, y):
                return D.augment(images, cfg.img_size, gen, scale=(cfg.crop_scale, 1.0),
                                 jitter=cfg.jitter), y
            for step, (x, y) in enumerate(split_batches(prefetched(batches, prepare, dev), per_rank),
                                          start=first):
                # --8<-- [start:batch]
                loss, right = train_step(net, opt, sched, x, y, criterion=criterion, amp=amp)
                if ema is not None:
                    ema.update(model)
                loss_sum += loss * len(y)  # summed on the device: no waiting for the GPU here
                correct += right
                # --8<-- [end:batch]
                n_seen += len(y)
                progress.update(epoch + 1, cfg.epochs, step + 1, steps)
                if ((step + 1) % check_every == 0 and step + 1 < steps
                        and dist.any(stop["flag"])):
                    progress.clear()
                    sync(dev)
                    trained_s += time.perf_counter() - t_epoch
                    if dist.main:
                        writer.submit(snapshot(epoch, step + 1))
                        writer.close()
                    dist.barrier()
                    raise Interrupted(cfg.out, epoch, step + 1)
            sync(dev)
            epoch_s = time.perf_counter() - t_epoch
            trained_s += epoch_s
            progress.clear()
            if dist.world > 1:  # BatchNorm running statistics: take rank 0's everywhere
                import torch.distributed as tdist
                for b in model.buffers():
                    tdist.broadcast(b, 0)
            if epoch == start_epoch and sum(stream_skipped):
                say(f"warning: skipped {sum(stream_skipped)} unreadable training file(s)")
            row = {"epoch": epoch + 1, "train_loss": loss_sum.item() / max(1, n_seen),
                   "train_acc": correct.item() / max(1, n_seen), "seconds": epoch_s,
                   "images_per_s": n_seen * dist.world / epoch_s, "lr": opt.param_groups[0]["lr"],
                   "partial": first > 0}
            if (epoch + 1) % cfg.eval_every == 0 or epoch + 1 == cfg.epochs:
                ev = evaluate(ema.sync_counters(model) if ema else model, val, cfg.eval_size, amp=amp)
                row.update(val_loss=ev["loss"], val_acc=ev["acc"])
            history.append(row)
            if dist.main:
                writer.submit(snapshot(epoch + 1, 0))
                say(f"epoch {epoch + 1:>3}/{cfg.epochs}  loss {row['train_loss']:.4f}  "
                    f"train acc {row['train_acc']:.3f}  "
                    + (f"val loss {row['val_loss']:.4f}  val acc {row['val_acc']:.3f}  "
                       if "val_acc" in row else "")
                    + f"{row['images_per_s']:,.0f} img/s  {epoch_s:.2f} s")
            dist.barrier()
            if dist.any(stop["flag"]) and epoch + 1 < cfg.epochs:
                raise Interrupted(cfg.out, epoch + 1, 0)
    finally:
        progress.clear()
        writer.close()  # the last checkpoint is complete on disk before fit() returns or raises
        for sig, handler in old_handlers.items():
            signal.signal(sig, handler)

    # Final report.
    final_model = ema.sync_counters(model) if ema else model
    final = evaluate(final_model, val, cfg.eval_size, amp=amp, tta=cfg.tta)
    timed = [h for h in history if not h.get("partial")]
    steady = [h["images_per_s"] for h in timed[1:]] or [h["images_per_s"] for h in timed]
    report = {
        "val_acc": final["acc"], "val_loss": final["loss"], "confusion": final["confusion"],
        "tta": cfg.tta, "classes": list(D.CLASSES), "epochs": cfg.epochs,
        "wall_s": time.perf_counter() - t_start, "load_s": load_s, "train_s": trained_s,
        "images_per_s": sorted(steady)[len(steady) // 2] if steady else None,
        "n_train": n_train, "n_val": len(val), "skipped": len(skipped) + sum(stream_skipped),  # streamed: the last epoch's count
        "history": history, "precision": precision, "device": str(dev), "world_size": dist.world,
        "params": count_params(model), "config": dataclasses.asdict(cfg), "checkpoint": cfg.out,
        "digest": weights_digest(model), "resumed": state is not None,
    }
    if dist.world > 1:
        print(f"rank {dist.rank} weights sha256 {report['digest']}", flush=True)
    report["model"] = final_model
    report["val_store"] = val
    return report


def _main_thread() -> bool:
    import threading
    return threading.current_thread() is threading.main_thread()


def format_report(r: dict) -> str:
    c = r["confusion"]
    lines = [
        f"validation accuracy {100 * r['val_acc']:.2f} % on {r['n_val']} photos"
        f"{' (photo + mirror image averaged)' if r['tta'] else ''}",
        "confusion matrix (rows: true class, columns: predicted)",
        f"{'':>8}{'cat':>8}{'dog':>8}",
        f"{'cat':>8}{c[0][0]:>8}{c[0][1]:>8}",
        f"{'dog':>8}{c[1][0]:>8}{c[1][1]:>8}",
        f"wall time {r['wall_s']:.2f} s (data loading {r['load_s']:.2f} s, training {r['train_s']:.2f} s"
        f"{' over all sessions' if r.get('resumed') else ''}), "
        f"{(r['images_per_s'] or 0):,.0f} training images/s",
        f"checkpoint: {r['checkpoint']}",
    ]
    return "\n".join(lines)


def load_for_inference(path: str, device: torch.device):
    """(model, config) from a checkpoint, ready to predict."""
    state = load_checkpoint(path, map_location="cpu")
    cfg = state["config"]
    model = build_from_config(cfg)
    model.load_state_dict(state["ema"]["model"] if state.get("ema") else state["model"])
    return model.to(device, memory_format=torch.channels_last).eval(), cfg
