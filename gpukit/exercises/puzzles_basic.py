"""Puzzles 1 to 10: threads, guards, blocks, shared memory and the first reductions."""

from __future__ import annotations

import numpy as np

from .meta import words
from .spec import Puzzle, cdiv, log2, odd_size, poisoned, rand

F = np.float32


def _one_block_1d(full_n):
    return lambda rng, c, full: {"n": full_n if full else odd_size(rng, 9, 40, 8)}


P01 = Puzzle(
    **words(1),
    sizes=_one_block_1d(1024),
    make=lambda rng, p: {"a": rand(rng, p["n"])},
    outs=lambda p: {"out": poisoned(p["n"])},
    ref=lambda i, p: {"out": i["a"].astype(np.float64) + 10},
    launch=lambda p, c, m: (1, p["n"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 0},
    caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="forbidden")

P02 = Puzzle(
    **words(2),
    sizes=_one_block_1d(1024),
    make=lambda rng, p: {"a": rand(rng, p["n"]), "b": rand(rng, p["n"])},
    outs=lambda p: {"out": poisoned(p["n"])},
    ref=lambda i, p: {"out": i["a"].astype(np.float64) + i["b"]},
    launch=lambda p, c, m: (1, p["n"]),
    minimum=lambda p, c: {"gr": 2, "gw": 1, "sh": 0},
    caps=lambda p, c: {"gr": 2, "gw": 1},
    shared="forbidden")

P03 = Puzzle(
    **words(3),
    sizes=lambda rng, c, full: ({"n": 1000, "threads": 1024} if full else
                                _more_threads(rng, (32, 48, 64))),
    make=lambda rng, p: {"a": rand(rng, p["n"])},
    outs=lambda p: {"out": poisoned(p["n"])},
    ref=lambda i, p: {"out": i["a"].astype(np.float64) + 10},
    launch=lambda p, c, m: (1, p["threads"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 0},
    caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="forbidden")


def _more_threads(rng, choices):
    threads = int(rng.choice(choices))
    return {"n": int(rng.integers(5, threads)), "threads": threads}


def _small_2d(full):
    return lambda rng, c, f: ({"rows": full[0], "cols": full[1], "bx": 32, "by": 32} if f else
                              {"rows": int(rng.integers(3, 8)), "cols": int(rng.integers(3, 8)),
                               "bx": int(rng.choice((8, 12, 16))),
                               "by": int(rng.choice((8, 12, 16)))})


P04 = Puzzle(
    **words(4),
    sizes=_small_2d((30, 31)),
    make=lambda rng, p: {"a": rand(rng, (p["rows"], p["cols"]))},
    outs=lambda p: {"out": poisoned((p["rows"], p["cols"]))},
    ref=lambda i, p: {"out": i["a"].astype(np.float64) + 10},
    launch=lambda p, c, m: (1, (p["bx"], p["by"])),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 0},
    caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="forbidden",
    x_picks=("out", "a"))

P05 = Puzzle(
    **words(5),
    sizes=_small_2d((30, 31)),
    make=lambda rng, p: {"col": rand(rng, p["rows"]), "row": rand(rng, p["cols"])},
    outs=lambda p: {"out": poisoned((p["rows"], p["cols"]))},
    ref=lambda i, p: {"out": i["col"].astype(np.float64)[:, None] + i["row"][None, :]},
    launch=lambda p, c, m: (1, (p["bx"], p["by"])),
    minimum=lambda p, c: {"gr": 2, "gw": 1, "sh": 0},
    caps=lambda p, c: {"gr": 2, "gw": 1},
    shared="forbidden",
    x_picks=("out",))


def _blocks(full_n):
    return lambda rng, c, full: {"n": full_n if full else odd_size(rng, 20, 70, c["TPB"])}


P06 = Puzzle(
    **words(6),
    sizes=_blocks(2**26 + 3),
    consts={"TPB": ((8, 16, 32), 256)},
    make=lambda rng, p: {"a": rand(rng, p["n"])},
    outs=lambda p: {"out": poisoned(p["n"])},
    ref=lambda i, p: {"out": i["a"].astype(np.float64) + 10},
    launch=lambda p, c, m: (cdiv(p["n"], c["TPB"]), c["TPB"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 0},
    caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="forbidden",
    work=lambda p: 8 * p["n"])

_TPB = {"TPB": ((8, 16, 32), 256)}


def _tpb(full_n, lo=20, hi=60):
    return lambda rng, c, full: {"n": full_n if full else odd_size(rng, lo, hi, c["TPB"])}


P07 = Puzzle(
    **words(7),
    consts=_TPB,
    sizes=_tpb(2**26 + 3),
    make=lambda rng, p: {"a": rand(rng, p["n"])},
    outs=lambda p: {"out": poisoned(p["n"])},
    ref=lambda i, p: {"out": _swap(i["a"])},
    launch=lambda p, c, m: (cdiv(p["n"], c["TPB"]), c["TPB"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 2},
    caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="required",
    ulps=0,
    work=lambda p: 8 * p["n"])


def _pool(a, n):
    return np.convolve(a.astype(np.float64), np.ones(3))[:n]


def _swap(a):
    idx = np.arange(a.size) ^ 1
    idx[idx >= a.size] = a.size - 1
    return a[idx].astype(np.float64)


P08 = Puzzle(
    **words(8),
    consts=_TPB,
    sizes=_tpb(2**26 + 3),
    make=lambda rng, p: {"a": rand(rng, p["n"])},
    outs=lambda p: {"out": poisoned(p["n"])},
    ref=lambda i, p: {"out": _pool(i["a"], p["n"])},
    launch=lambda p, c, m: (cdiv(p["n"], c["TPB"]), c["TPB"]),
    minimum=lambda p, c: {"gr": 2, "gw": 1, "sh": 5},
    caps=lambda p, c: {"gr": 2, "gw": 1},
    shared="required",
    ulps=3,
    scale=lambda i, p: {"out": _pool(np.abs(i["a"]), p["n"])},
    work=lambda p: 8 * p["n"])

P09 = Puzzle(
    **words(9),
    consts={"TPB": ((8, 16, 32), 1024)},
    sizes=_tpb(2**24 + 3),
    make=lambda rng, p: {"a": rand(rng, p["n"], 0, 1), "b": rand(rng, p["n"], 0, 1)},
    outs=lambda p: {"out": poisoned(1)},
    ref=lambda i, p: {"out": np.array([np.dot(i["a"].astype(np.float64), i["b"])])},
    launch=lambda p, c, m: (1, c["TPB"]),
    minimum=lambda p, c: {"gr": 2 * cdiv(p["n"], c["TPB"]), "gw": 1, "sh": c["TPB"] + 1},
    caps=lambda p, c: {"gr": 2 * cdiv(p["n"], c["TPB"]), "gw": 1},
    shared="required",
    ulps=lambda p: p["n"] + 2,
    work=lambda p: 8 * p["n"],
    floor=lambda p, c: {"gr": 2 * cdiv(p["n"], c["TPB"]), "gw": 1})

P10 = Puzzle(
    **words(10),
    consts=_TPB,
    sizes=_tpb(2**26 + 3),
    make=lambda rng, p: {"a": rand(rng, p["n"], 0, 1)},
    outs=lambda p: {"out": poisoned(cdiv(p["n"], p["tpb"]))},
    ref=lambda i, p: {"out": _block_sums(i["a"], p["tpb"])},
    launch=lambda p, c, m: (cdiv(p["n"], c["TPB"]), c["TPB"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 1 + 2 * log2(c["TPB"])},
    caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="required",
    ulps=lambda p: p["tpb"] + 1,
    work=lambda p: 4 * p["n"] + 4 * cdiv(p["n"], p["tpb"]))


def _block_sums(a, tpb):
    pad = np.zeros(cdiv(a.size, tpb) * tpb)
    pad[:a.size] = a
    return pad.reshape(-1, tpb).sum(axis=1)


PUZZLES = [P01, P02, P03, P04, P05, P06, P07, P08, P09, P10]
