"""What a puzzle is: its text, its launch, its data, its answer and its scores.

A :class:`Puzzle` says everything the checker, the command and the page need: the task, the
rules, two hints, the kernel's name and argument order, the launch configuration (the checker
launches; the reader writes only the kernel body), how to make random inputs at a size, the
reference answer computed with NumPy in float64, the minimum score (the most global reads,
global writes and shared-memory accesses any one thread needs) and the roof its speed is
measured against on a GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .meta import Text

#: the names of the three score counts
SCORES = {"gr": "global reads", "gw": "global writes", "sh": "shared accesses"}


@dataclass(kw_only=True)
class Puzzle(Text):
    """A puzzle's words (:class:`~.meta.Text`: title, task, rules, hints, kernel and arguments,
    what it teaches, its roof) and what the checker runs."""
    #: sizes of one trial: (rng, consts, full) -> dict
    sizes: Callable
    #: inputs: (rng, p) -> dict of arrays and scalars
    make: Callable
    #: outputs: p -> {name: (shape, dtype, initial value or None for poison)}
    outs: Callable
    #: the answer: (inputs, p) -> {name: array}
    ref: Callable
    #: (p, consts, module) -> (grid, block)
    launch: Callable
    #: (p, consts) -> {"gr", "gw", "sh"}: the reference solution's score
    minimum: Callable
    #: module constants the checker sets: name -> (simulator choices, full-size value); each
    #: trial takes a different choice
    consts: dict = field(default_factory=dict)
    #: (p, consts) -> hard limits a solution may not pass (rules, not scores)
    caps: Callable = lambda p, c: {}
    #: "required", "forbidden" or None
    shared: str | None = None
    #: arrays whose accesses must be coalesced
    coalesced: tuple[str, ...] = ()
    #: the number of shared-memory banks the bank check models (a constant's name), or None
    banks: str | None = None
    #: the tolerance in float32 ulps of ``scale`` (a number, or (p) -> number)
    ulps: float | Callable = 2
    #: (inputs, p) -> {output: array} the size the rounding error scales with (|answer| if None)
    scale: Callable | None = None
    #: (p, consts) -> the fewest accesses a correct kernel's busiest thread can make; fewer
    #: is suspect ({"gr": 1, "gw": 1} if None)
    floor: Callable | None = None
    #: arrays where threadIdx.x must pick the column (the index rule)
    x_picks: tuple[str, ...] = ()
    #: the virtual GPU (SMs, threads per SM, threads per block) of a launch the kernel's
    #: module computes, or None
    gpu: tuple | None = None
    #: (rng, p) -> (grid, block) the checker imposes in the second trial, or None
    fixed_grid: Callable | None = None
    #: the calls of the module's launch() the checker makes: [n, sms, per_sm, per_block]
    probe: list | None = None
    #: (p) -> bytes moved (roof "copy") or FLOPs (roof "fp32") at the ideal
    work: Callable = lambda p: 0
    #: extra rule: (answers to ``probe``) -> error message or None
    extra_rule: Callable | None = None


# ----------------------------------------------------------------- helpers for the definitions

def rand(rng, shape, low=-1.0, high=1.0) -> np.ndarray:
    return rng.uniform(low, high, size=shape).astype(np.float32)


def odd_size(rng, lo: int, hi: int, block: int) -> int:
    """A whole number in [lo, hi] that is not a multiple of ``block``."""
    while True:
        n = int(rng.integers(lo, hi + 1))
        if n % block:
            return n


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def log2(n: int) -> int:
    return int(math.log2(n))


def poisoned(n_or_shape, dtype=np.float32) -> dict:
    return (n_or_shape if isinstance(n_or_shape, tuple) else (n_or_shape,), dtype, None)
