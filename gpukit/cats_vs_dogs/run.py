"""A training run around the epoch loop: data, model, resume, N processes, Ctrl-C, checkpoints, report.

:func:`~gpukit.cats_vs_dogs.loop.fit` makes a :class:`Run` and hands the loop its batches and
its hooks. Under ``torchrun --nproc_per_node=N`` each process holds the decoded photos, takes
its share of each epoch's shuffled indices, and one all-reduce averages the gradients across
processes after every backward pass (:mod:`.allreduce`). Ctrl-C (SIGINT) or SIGTERM finishes the current
step, saves a checkpoint and raises :class:`Interrupted`; ``--resume`` continues from it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import signal
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn

from . import data as D
from .allreduce import AveragedGradients, OverlappedGradients, broadcast_flat, same_start
from .checkpoint import CheckpointWriter, check_resumable, load_checkpoint, restore, snapshot
from .loop import (EMA, NesterovSGD, Schedule, TrainConfig, Training, autocast, evaluate, lr_factor,
                   memory_batches, pick_device, prefetched, resolve_precision, split_batches,
                   stream_batches, sync)
from .model import build_model, count_params

from .photos import STREAM_ABOVE, Prepared, halves


class Interrupted(Exception):
    """Ctrl-C: a checkpoint was saved; the run can continue with ``--resume``."""

    def __init__(self, path: str, epoch: int, step: int):
        super().__init__(f"interrupted: checkpoint saved to {path} after {epoch} complete epoch(s)"
                         f"{f' and {step} step(s) of the next' if step else ''}; "
                         "continue with --resume")
        self.path, self.epoch, self.step = path, epoch, step


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

    def share_buffers(self, *models: nn.Module | None):
        """Every process takes process 0's floating-point buffers (BatchNorm's running statistics)
        of ``models``, flattened into one broadcast; the integer step counters advance alike
        everywhere."""
        if self.world > 1:
            broadcast_flat([b for m in models if m is not None for b in m.buffers()], 0)

    def close(self):
        if self.world > 1:
            import torch.distributed as dist
            if dist.is_initialized():
                dist.destroy_process_group()


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


def weights_digest(*models: nn.Module | None) -> str:
    """sha256 of every parameter and buffer of ``models`` (the trained network and its weight
    average, BatchNorm statistics included): equal on all processes of a healthy data-parallel
    run."""
    h = hashlib.sha256()
    for k, model in enumerate(m for m in models if m is not None):
        for name, t in sorted(model.state_dict().items()):
            h.update(f"{k}.{name}".encode())
            h.update(t.detach().cpu().reshape(-1).contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _seed_for(*parts: int) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:7], "little")


def _main_thread() -> bool:
    import threading
    return threading.current_thread() is threading.main_thread()


class Run:
    """One call of :func:`~gpukit.cats_vs_dogs.loop.fit`: everything around the epoch loop.

    :meth:`setup` loads the data, builds the model, optimiser and schedule (and resumes them
    from the checkpoint with ``--resume``); :meth:`batches` gives each epoch's batches;
    :meth:`guard` handles Ctrl-C and the checkpoint writer while the loop runs, and the hooks
    (:meth:`after_step`, :meth:`steps_done`, :meth:`after_epoch`) are what the loop calls;
    :meth:`report` is the final evaluation; :meth:`close` leaves the torchrun job.
    """

    def __init__(self, cfg: TrainConfig, *, log=print):
        self.cfg = cfg.resolved()
        self.dist = Dist(self.cfg.device)
        self.dev = self.dist.device
        self.say = log if self.dist.main else (lambda *a, **k: None)
        self.stop = False  # set by Ctrl-C or SIGTERM
        self.phases: dict[str, float] = {}  # seconds of each part of the run, in order

    def close(self):
        self.dist.close()

    # ----------------------------------------------------------------- before the loop

    def setup(self, stores=None) -> Training:
        """Data, model, optimiser, schedule, weight average; resumed from the checkpoint if asked."""
        cfg, dist, dev, say = self.cfg, self.dist, self.dev, self.say
        self.precision = resolve_precision(cfg.precision, dev)
        amp = autocast(dev, self.precision)
        if dev.type == "cuda":
            # cuDNN's own choice of algorithm, not a timed trial of each: measured in the chapter
            torch.backends.cudnn.benchmark = cfg.cudnn_benchmark
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
            t0 = time.perf_counter()
            torch.zeros(1, device=dev)
            sync(dev)
            self.phases["CUDA context"] = time.perf_counter() - t0
        state = None
        if cfg.resume and not Path(cfg.out).exists():
            say(f"--resume: no checkpoint at {cfg.out} yet, starting from scratch")
        elif cfg.resume:
            state = load_checkpoint(cfg.out)
            check_resumable(state, cfg)
        self.resumed = state is not None
        self._load_data(stores)

        # Model, optimiser, schedule.
        t0 = time.perf_counter()
        torch.manual_seed(cfg.seed)
        model = build_model(cfg.width, pretrained=cfg.pretrained).to(dev, memory_format=torch.channels_last)
        per_rank = max(1, cfg.batch_size // dist.world)
        self.shard = self.n_train // dist.world
        self.per_rank = per_rank = min(per_rank, self.shard)
        self.steps = steps = max(1, self.shard // per_rank)
        total_steps = cfg.epochs * steps
        warmup = max(1, int(cfg.warmup * total_steps))
        lr = cfg.lr * (per_rank * dist.world) / 256
        decay, no_decay = [], []
        for p in model.parameters():
            (no_decay if p.ndim <= 1 else decay).append(p)
        opt = NesterovSGD([{"params": decay, "weight_decay": cfg.weight_decay},
                           {"params": no_decay, "weight_decay": 0.0}], lr=lr, momentum=cfg.momentum)
        sched = Schedule(opt, lambda s: lr_factor(s, total_steps, warmup))
        t = Training(model=model, net=model, opt=opt, sched=sched,
                     criterion=nn.CrossEntropyLoss(label_smoothing=cfg.label_smoothing), amp=amp,
                     ema=EMA(model, cfg.ema) if cfg.ema else None, val=self.val, device=dev,
                     epochs=cfg.epochs, eval_size=cfg.eval_size, eval_every=cfg.eval_every,
                     processes=dist.world)
        if state is not None:
            restore(t, state)
            say(f"resumed from {cfg.out}: {t.start_epoch} complete epoch(s)"
                f"{f' + {t.start_step} step(s)' if t.start_step else ''}")
        self.trained_before = t.trained_s  # step time of earlier sessions (a resumed run)
        if dist.world > 1:
            # the gradients averaged by one all-reduce per step, not by DistributedDataParallel,
            # whose first construction costs seconds in each process (see the chapter)
            same_start(model)
            exchange = OverlappedGradients if cfg.exchange == "overlapped" else AveragedGradients
            t.opt = exchange(t.opt, model.parameters(), dist.world)
        if cfg.compile:
            t.net = torch.compile(t.net)
        self.gen = torch.Generator(device=dev)
        sync(dev)
        self.phases["model and optimiser"] = time.perf_counter() - t0
        say(f"model: CatDogNet width {cfg.width}, {count_params(model) / 1e6:.2f} M parameters"
            if not cfg.pretrained else "model: ResNet-18, ImageNet weights")
        say(f"training {cfg.epochs} epochs x {steps} steps of {per_rank} x {dist.world} process(es), "
            f"{self.precision}, lr {lr:.3g}, on {dev}"
            + (f", gradients exchanged {cfg.exchange}" if dist.world > 1 else ""))
        self.training = t
        return t

    def _load_data(self, stores):
        """Decode the photos once and keep them as uint8 on the device (or stream the training set)."""
        cfg, dev = self.cfg, self.dev
        t0 = time.perf_counter()
        self.stream_skipped: list[int] = []
        self.decoding = None
        if isinstance(stores, Prepared):  # found and decoding since before torch was imported
            p = stores
            if p.size != cfg.store_size:
                raise ValueError(f"the photos were decoded to {p.size} px, the run needs {cfg.store_size}")
            (arr, ok, bad), (varr, vok, vbad) = p.decoding.result()
            waited = time.perf_counter() - t0
            train, bad = D.build_store(p.train, p.size, dev, decoded=(arr, ok, bad))
            val, bad_val = D.build_store(p.val, p.size, dev, decoded=(varr, vok, vbad))
            skipped, train_split, stream, layout = bad + bad_val, p.train, False, p.layout
            self.decoding = {"how": p.decoding.how, "seconds": p.decoding.seconds, "waited_s": waited}
        elif stores is None:
            ds = D.find_dataset(cfg.data, val_fraction=cfg.val_fraction, seed=cfg.seed)
            train_split = D.limit(ds.train, cfg.limit, cfg.seed)
            val_split = D.limit(ds.val, cfg.limit, cfg.seed)
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
        # Training looks at the selection half of the validation photos only; the test half is
        # evaluated once, at the end (see the chapter's "honest test split").
        sel, test = halves(val.labels.tolist())
        if not (sel and test):      # too few photos to split: both halves are all of them
            sel = test = list(range(len(val)))
        self.halves = sel, test
        if sel is not test:
            self.val, self.test = val.subset(sel), val.subset(test)
        else:
            self.val = self.test = val
        self.val_all = val
        self.train, self.skipped = train, skipped
        self.train_split, self.stream = train_split, stream
        self.n_train = len(train_split) if stream else len(train)
        sync(dev)
        self.load_s = time.perf_counter() - t0
        self.phases["photos (decoding, to the device)"] = self.load_s
        if skipped:
            self.say(D.skipped_warning(skipped))
        how = (f"decoded by {self.decoding['how']} in {self.decoding['seconds']:.2f} s while torch "
               f"was imported, on {dev} {self.load_s:.2f} s later" if self.decoding else
               f"decoded in {self.load_s:.2f} s, kept on {dev}")
        self.say(f"data: {self.n_train} training and {len(val)} validation photos ({layout}, "
                 f"{len(self.val)} to select with, {len(self.test)} to test on), "
                 f"{cfg.store_size}x{cfg.store_size} px, {how}")

    def batches(self, epoch: int, first: int):
        """Epoch ``epoch``'s training batches from step ``first`` on, augmented a chunk ahead.

        The order is a seeded shuffle, the same on every process, which takes its own share.
        """
        cfg, dist, dev = self.cfg, self.dist, self.dev
        g = torch.Generator().manual_seed(_seed_for(cfg.seed, epoch))
        perm = torch.randperm(self.n_train, generator=g)[dist.rank * self.shard:(dist.rank + 1) * self.shard]
        self.stream_skipped.clear()
        if self.stream:
            chunks = stream_batches(self.train_split, perm, first, self.steps, self.per_rank, cfg, dev,
                                    self.stream_skipped)
        else:
            chunks = memory_batches(self.train, perm.to(dev), first, self.steps, self.per_rank,
                                    chunk=max(1, cfg.chunk_images // self.per_rank))
        self.gen.manual_seed(_seed_for(cfg.seed, epoch, dist.rank, first))

        def prepare(images, labels):
            return D.augment(images, cfg.img_size, self.gen, scale=(cfg.crop_scale, 1.0),
                             jitter=cfg.jitter), labels
        return split_batches(prefetched(chunks, prepare, dev), self.per_rank)

    # ----------------------------------------------------------------- while the loop runs

    @contextmanager
    def guard(self):
        """Ctrl-C (SIGINT) or SIGTERM (what torchrun and batch schedulers send) sets a flag: the
        hooks finish the current step, save and stop; a second Ctrl-C stops at once. On the way
        out, the last checkpoint is complete on disk and the signal handlers are put back."""
        def on_signal(signum, frame):
            if self.stop and signum == signal.SIGINT:
                raise KeyboardInterrupt
            self.stop = True

        old_handlers = ({s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
                        if _main_thread() else {})
        self.writer = CheckpointWriter(self.cfg.out)
        self.check_every = 1 if self.dist.world == 1 else 8  # with N processes the check is a collective
        self.progress = Progress(self.cfg.progress and self.dist.main)
        try:
            yield
        finally:
            self.progress.clear()
            t0 = time.perf_counter()
            self.writer.close()  # the last checkpoint is complete on disk before fit() returns or raises
            self.phases["last checkpoint to disk"] = time.perf_counter() - t0
            for sig, handler in old_handlers.items():
                signal.signal(sig, handler)

    def after_step(self, epoch: int, step: int, started: float):
        """The progress bar; after Ctrl-C, a checkpoint of this step and :class:`Interrupted`."""
        cfg, dist = self.cfg, self.dist
        self.progress.update(epoch + 1, cfg.epochs, step, self.steps)
        if step % self.check_every == 0 and step < self.steps and dist.any(self.stop):
            self.progress.clear()
            sync(self.dev)
            self.training.trained_s += time.perf_counter() - started
            if dist.main:
                self.writer.submit(snapshot(self.training, cfg, epoch, step, dist.world))
                self.writer.close()
            dist.barrier()
            raise Interrupted(cfg.out, epoch, step)

    def steps_done(self, epoch: int):
        self.progress.clear()
        # the same BatchNorm statistics everywhere, in the network and in its weight average
        t = self.training
        self.dist.share_buffers(t.model, t.ema and t.ema.model)
        if epoch == self.training.start_epoch and sum(self.stream_skipped):
            self.say(f"warning: skipped {sum(self.stream_skipped)} unreadable training file(s)")

    def after_epoch(self, epoch: int, row: dict):
        """Every ``eval_every`` epochs, at the end and after Ctrl-C: a checkpoint (written in the
        background) and a line of output; after Ctrl-C, stop."""
        cfg, dist = self.cfg, self.dist
        stopping = dist.any(self.stop) and epoch + 1 < cfg.epochs  # a collective: every process asks
        if dist.main and ("val_acc" in row or stopping):
            self.writer.submit(snapshot(self.training, cfg, epoch + 1, 0, dist.world))
            self.say(f"epoch {epoch + 1:>3}/{cfg.epochs}  loss {row['train_loss']:.4f}  "
                     f"train acc {row['train_acc']:.3f}  "
                     + (f"selection half: loss {row['val_loss']:.4f} acc {row['val_acc']:.3f}  "
                        if "val_acc" in row else "")
                     + f"{row['images_per_s']:,.0f} img/s")
        dist.barrier()
        if stopping:
            raise Interrupted(cfg.out, epoch + 1, 0)

    # ----------------------------------------------------------------- after the loop

    def report(self, t: Training, t_start: float, before: dict | None = None) -> dict:
        """The final evaluation (with mirror averaging unless ``tta`` is off), as a plain dict.

        It evaluates all validation photos once and reports the selection half and the test half
        apart, the test half with its 95 % interval. ``phases`` lists where the run's time went,
        starting with ``before`` (what the command did before :func:`fit`: start-up, imports).
        """
        cfg, dist = self.cfg, self.dist
        t0 = time.perf_counter()
        final_model = t.kept_model()
        final = evaluate(final_model, self.val_all, cfg.eval_size, amp=t.amp, tta=cfg.tta)
        right = final["right"]
        sel, test = self.halves
        k_test = sum(right[i] for i in test)
        self.phases["final evaluation"] = time.perf_counter() - t0
        timed = [h for h in t.history if not h.get("partial")]
        steady = [h["images_per_s"] for h in timed[1:]] or [h["images_per_s"] for h in timed]
        wall = time.perf_counter() - t_start
        phases = dict(before or {})
        for name in ("CUDA context", "photos (decoding, to the device)", "model and optimiser"):
            if name in self.phases:
                phases[name] = self.phases[name]
        first = t.phases.get("first step", 0.0)
        phases["first step (kernels loaded, algorithms chosen)"] = first
        phases["training steps"] = max(0.0, t.trained_s - self.trained_before - first)
        phases["evaluation during training"] = t.phases.get("evaluation", 0.0)
        for name in ("last checkpoint to disk", "final evaluation"):
            phases[name] = self.phases.get(name, 0.0)
        phases["other"] = max(0.0, wall + sum((before or {}).values()) - sum(phases.values()))
        report = {
            "val_acc": final["acc"], "val_loss": final["loss"], "confusion": final["confusion"],
            "selection_acc": sum(right[i] for i in sel) / len(sel), "n_selection": len(sel),
            "test_acc": k_test / len(test), "n_test": len(test), "test_ci": list(wilson(k_test, len(test))),
            "tta": cfg.tta, "classes": list(D.CLASSES), "epochs": cfg.epochs,
            "wall_s": wall, "load_s": self.load_s, "train_s": t.trained_s,
            "time_to_model_s": sum(phases.values()), "phases": phases, "decoding": self.decoding,
            "compiler_imported": "torch._dynamo" in sys.modules,
            "images_per_s": sorted(steady)[len(steady) // 2] if steady else None,
            "n_train": self.n_train, "n_val": len(self.val_all),
            "skipped": len(self.skipped) + sum(self.stream_skipped),  # streamed: the last epoch's count
            "history": t.history, "precision": self.precision, "device": str(self.dev),
            "world_size": dist.world, "params": count_params(t.model), "config": dataclasses.asdict(cfg),
            "checkpoint": cfg.out, "digest": weights_digest(t.model, t.ema and t.ema.model), "resumed": self.resumed,
        }
        if dist.world > 1:
            print(f"rank {dist.rank} weights sha256 {report['digest']}", flush=True)
        report["model"] = final_model
        report["val_store"] = self.val_all
        return report


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion k/n (Wilson, 1927)."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def format_report(r: dict) -> str:
    c = r["confusion"]
    lo, hi = r["test_ci"]
    tta = " (photo + mirror image averaged)" if r["tta"] else ""
    lines = [
        f"test accuracy {100 * r['test_acc']:.2f} % on {r['n_test']} validation photos never used to "
        f"choose anything (95 % interval {100 * lo:.1f}-{100 * hi:.1f} %){tta}",
        f"validation accuracy {100 * r['val_acc']:.2f} % on {r['n_val']} photos (selection half "
        f"{100 * r['selection_acc']:.2f} %)",
        "confusion matrix, all validation photos (rows: true class, columns: predicted)",
        f"{'':>8}{'cat':>8}{'dog':>8}",
        f"{'cat':>8}{c[0][0]:>8}{c[0][1]:>8}",
        f"{'dog':>8}{c[1][0]:>8}{c[1][1]:>8}",
        f"wall time {r['wall_s']:.2f} s (data loading {r['load_s']:.2f} s, training {r['train_s']:.2f} s"
        f"{' over all sessions' if r.get('resumed') else ''}), "
        f"{(r['images_per_s'] or 0):,.0f} training images/s",
        f"time to model {r['time_to_model_s']:.2f} s: "
        + ", ".join(f"{name} {sec:.2f}" for name, sec in r["phases"].items()),
        f"checkpoint: {r['checkpoint']}",
    ]
    return "\n".join(lines)
