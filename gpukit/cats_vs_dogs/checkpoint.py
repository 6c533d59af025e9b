"""Checkpoints: what one holds, written atomically (in a background thread), read back safely.

A checkpoint is a plain dict of tensors and plain data: the model, the weight average, the
optimiser and schedule state, how far training got (complete epochs and steps of the next),
the history of metrics, the configuration, the class names and the random-number state.
:func:`snapshot` makes one from a :class:`~gpukit.cats_vs_dogs.loop.Training`, :func:`restore`
puts one back (``--resume``), :func:`load_for_inference` gives the network to predict with.
"""

from __future__ import annotations

import dataclasses
import os

import torch

from . import data as D
from .model import build_from_config


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
            # the safe unpickler's notes about pickle protocols
            warnings.simplefilter("ignore")
            state = torch.load(path, map_location=map_location,
                               weights_only=True)
    except pickle.UnpicklingError:
        raise ValueError("not a checkpoint file (or one that holds more than "
                         "tensors and plain data)") from None
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


def snapshot(t, cfg, epoch: int, step: int, world: int) -> dict:
    """The checkpoint of training ``t`` (a :class:`~gpukit.cats_vs_dogs.loop.Training`) run
    with ``cfg`` by ``world`` processes, after ``epoch`` complete epochs and ``step`` steps of
    the next. Its tensors are still those of the run: :class:`CheckpointWriter` copies them."""
    if t.ema is not None:
        t.ema.sync_counters(t.model)
    return {"model": t.model.state_dict(), "ema": t.ema.state_dict() if t.ema else None,
            "optimizer": t.opt.state_dict(),
            "scheduler": t.sched.state_dict(), "scaler": None, "epoch": epoch,
            "step_in_epoch": step, "history": t.history, "train_seconds": t.trained_s,
            "config": dataclasses.asdict(cfg), "classes": list(D.CLASSES),
            "rng": {"torch": torch.get_rng_state()}, "world_size": world}


def check_resumable(state: dict, cfg) -> None:
    """Raise ValueError when ``cfg`` asks for a network other than the one checkpointed."""
    for key in ("img_size", "width", "pretrained", "store_size"):
        if state["config"].get(key) != getattr(cfg, key):
            raise ValueError(f"--resume: the checkpoint was trained with {key}="
                             f"{state['config'].get(key)}, this run asks for {getattr(cfg, key)}")


def restore(t, state: dict) -> None:
    """Put a checkpoint back into training ``t``: weights, optimiser, schedule, weight average,
    where training stopped, its history and time, and the random-number state."""
    t.model.load_state_dict(state["model"])
    t.opt.load_state_dict(state["optimizer"])
    t.sched.load_state_dict(state["scheduler"])
    if t.ema is not None:
        if state.get("ema") is None:
            raise ValueError("--resume: the checkpoint has no weight average (trained without --ema)")
        t.ema.load_state_dict(state["ema"])
    t.start_epoch, t.start_step = int(state["epoch"]), int(state.get("step_in_epoch", 0))
    t.history = list(state.get("history", []))
    t.trained_s = float(state.get("train_seconds", 0.0))
    torch.set_rng_state(state["rng"]["torch"])


def load_for_inference(path: str, device: torch.device):
    """(model, config) from a checkpoint, ready to predict."""
    state = load_checkpoint(path, map_location="cpu")
    cfg = state["config"]
    model = build_from_config(cfg)
    model.load_state_dict(state["ema"]["model"] if state.get("ema") else state["model"])
    return model.to(device, memory_format=torch.channels_last).eval(), cfg
