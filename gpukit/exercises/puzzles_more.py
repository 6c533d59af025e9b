"""Puzzles 11 to 20: whole reductions, scans, atomics, tiles, and tuning for the hardware."""

from __future__ import annotations

import numpy as np

from .puzzles_basic import _block_sums, _tpb
from .meta import words
from .spec import Puzzle, cdiv, log2, odd_size, poisoned, rand

_TPB = {"TPB": ((8, 16, 32), 256)}
_TILE = {"TILE": ((4, 8), 32)}


def _tiles_2d(full):
    return lambda rng, c, f: ({"rows": full[0], "cols": full[1]} if f else
                              {"rows": odd_size(rng, 5, 11, c["TILE"]), "cols": odd_size(rng, 5, 11, c["TILE"])})


def _grid_2d(p, c, rows, cols):
    t = c["TILE"]
    return (cdiv(cols, t), cdiv(rows, t)), (t, t)


P11 = Puzzle(
    **words(11),
    consts=_TPB,
    sizes=_tpb(2**26 + 3),
    make=lambda rng, p: {"a": rand(rng, p["n"], 0, 1)},
    outs=lambda p: {"out": ((1,), np.float32, 0)},
    ref=lambda i, p: {"out": np.array([i["a"].astype(np.float64).sum()])},
    launch=lambda p, c, m: (cdiv(p["n"], c["TPB"]), c["TPB"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 1 + 2 * log2(c["TPB"])},
    caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="required",
    ulps=lambda p: p["n"] + 2,
    work=lambda p: 4 * p["n"])

P12 = Puzzle(
    **words(12),
    consts=_TPB,
    sizes=_tpb(2**26 + 3),
    make=lambda rng, p: {"a": rand(rng, p["n"], 0, 1)},
    outs=lambda p: {"out": poisoned(p["n"])},
    ref=lambda i, p: {"out": _block_scan(i["a"], p["tpb"])},
    launch=lambda p, c, m: (cdiv(p["n"], c["TPB"]), c["TPB"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 1 + 2 * log2(c["TPB"])},
    caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="required",
    ulps=lambda p: p["tpb"] + 1,
    work=lambda p: 8 * p["n"])


def _block_scan(a, tpb):
    pad = np.zeros(cdiv(a.size, tpb) * tpb)
    pad[:a.size] = a
    return np.cumsum(pad.reshape(-1, tpb), axis=1).reshape(-1)[:a.size]


P13 = Puzzle(
    **words(13),
    consts=_TPB,
    sizes=lambda rng, c, full: ({"n": 2**26 + 3, "bins": 256} if full else
                                {"n": odd_size(rng, 30, 80, c["TPB"]), "bins": int(rng.integers(3, 9))}),
    make=lambda rng, p: {"values": rng.integers(0, p["bins"], p["n"]).astype(np.int32)},
    outs=lambda p: {"hist": ((p["bins"],), np.int32, 0)},
    ref=lambda i, p: {"hist": np.bincount(i["values"], minlength=p["bins"])},
    launch=lambda p, c, m: (cdiv(p["n"], c["TPB"]), c["TPB"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 0},
    caps=lambda p, c: {"gr": 1, "gw": 1},
    ulps=0,
    work=lambda p: 4 * p["n"])

P14 = Puzzle(
    **words(14),
    consts=_TILE,
    sizes=_tiles_2d((8190, 8194)),
    make=lambda rng, p: {"a": rand(rng, (p["rows"], p["cols"]))},
    outs=lambda p: {"out": poisoned((p["cols"], p["rows"]))},
    ref=lambda i, p: {"out": i["a"].T.astype(np.float64)},
    launch=lambda p, c, m: _grid_2d(p, c, p["rows"], p["cols"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 2},
    caps=lambda p, c: {"gr": 1, "gw": 1, "sh": 2},
    ulps=0,
    shared="required",
    coalesced=("a", "out"),
    banks="TILE",
    work=lambda p: 8 * p["rows"] * p["cols"])

P15 = Puzzle(
    **words(15),
    consts={"TILE": ((4, 8), 16)},
    sizes=lambda rng, c, full: ({"m": 4099, "k": 4099, "n": 4099} if full else
                                {k: odd_size(rng, 5, 11, c["TILE"]) for k in ("m", "k", "n")}),
    make=lambda rng, p: {"a": rand(rng, (p["m"], p["k"])), "b": rand(rng, (p["k"], p["n"]))},
    outs=lambda p: {"c": poisoned((p["m"], p["n"]))},
    ref=lambda i, p: {"c": i["a"].astype(np.float64) @ i["b"]},
    launch=lambda p, c, m: _grid_2d(p, c, p["m"], p["n"]),
    minimum=lambda p, c: {"gr": 2 * cdiv(p["k"], c["TILE"]), "gw": 1,
                          "sh": cdiv(p["k"], c["TILE"]) * (2 + 2 * c["TILE"])},
    caps=lambda p, c: {"gr": 2 * cdiv(p["k"], c["TILE"]), "gw": 1},
    shared="required",
    ulps=lambda p: p["k"] + 2,
    scale=lambda i, p: {"c": np.abs(i["a"]).astype(np.float64) @ np.abs(i["b"])},
    floor=lambda p, c: {"gr": cdiv(2 * p["k"], c["TILE"]), "gw": 1},
    work=lambda p: 2.0 * p["m"] * p["n"] * p["k"])

P16 = Puzzle(
    **words(16),
    consts=_TPB,
    sizes=lambda rng, c, full: ({"rows": 8192, "cols": 8191} if full else
                                {"rows": int(rng.integers(2, 5)), "cols": odd_size(rng, 3, 30, c["TPB"]),
                                 "span": int(rng.integers(20, 80)),
                                 "offset": int(rng.choice((-1, 1)) * rng.integers(100, 300))}),
    make=lambda rng, p: {"a": rand(rng, (p["rows"], p["cols"]), -p.get("span", 8) / 2,
                                   p.get("span", 8) / 2) + np.float32(p.get("offset", 0))},
    outs=lambda p: {"out": poisoned((p["rows"], p["cols"]))},
    ref=lambda i, p: {"out": _softmax(i["a"])},
    launch=lambda p, c, m: (p["rows"], c["TPB"]),
    minimum=lambda p, c: {"gr": 2 * cdiv(p["cols"], c["TPB"]), "gw": cdiv(p["cols"], c["TPB"]),
                          "sh": 4 + 4 * log2(c["TPB"])},
    caps=lambda p, c: {"gr": 2 * cdiv(p["cols"], c["TPB"]), "gw": cdiv(p["cols"], c["TPB"])},
    shared="required",
    ulps=lambda p: p["cols"] + p.get("span", 8) + 8,
    floor=lambda p, c: {"gr": cdiv(p["cols"], c["TPB"]), "gw": cdiv(p["cols"], c["TPB"])},
    work=lambda p: 8 * p["rows"] * p["cols"])


def _softmax(a):
    e = np.exp(a.astype(np.float64) - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _stencil_ref(a):
    a = a.astype(np.float64)
    p = np.pad(a, 1)
    return p[1:-1, 1:-1] + p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]


def _stencil_min(p, c):
    t, rows, cols = c["TILE"], p["rows"], p["cols"]
    w = t + 2
    gr = sh = 0
    for by in range(cdiv(rows, t)):
        for bx in range(cdiv(cols, t)):
            for k in range(t * t):
                spots = range(k, w * w, t * t)
                reads = sum(1 for s in spots if 0 <= by * t - 1 + s // w < rows and 0 <= bx * t - 1 + s % w < cols)
                valid = by * t + k // t < rows and bx * t + k % t < cols
                gr, sh = max(gr, reads), max(sh, len(spots) + 5 * valid)
    return {"gr": gr, "gw": 1, "sh": sh}


P17 = Puzzle(
    **words(17),
    consts={"TILE": ((4, 8), 16)},
    sizes=_tiles_2d((8190, 8194)),
    make=lambda rng, p: {"a": rand(rng, (p["rows"], p["cols"]))},
    outs=lambda p: {"out": poisoned((p["rows"], p["cols"]))},
    ref=lambda i, p: {"out": _stencil_ref(i["a"])},
    launch=lambda p, c, m: _grid_2d(p, c, p["rows"], p["cols"]),
    minimum=_stencil_min,
    caps=lambda p, c: {"gr": cdiv((c["TILE"] + 2) ** 2, c["TILE"] ** 2), "gw": 1},
    shared="required",
    ulps=5,
    scale=lambda i, p: {"out": _stencil_ref(np.abs(i["a"]))},
    work=lambda p: 8 * p["rows"] * p["cols"])

P18 = Puzzle(
    **words(18),
    sizes=lambda rng, c, full: ({"rows": 8190, "cols": 8194, "bx": 32, "by": 8} if full else
                                {"rows": int(rng.integers(3, 8)), "cols": int(rng.integers(3, 8)),
                                 "bx": int(rng.choice((8, 16))), "by": int(rng.choice((4, 8)))}),
    make=lambda rng, p: {"a": rand(rng, (p["rows"], p["cols"])), "bias": rand(rng, p["cols"])},
    outs=lambda p: {"out": poisoned((p["rows"], p["cols"]))},
    ref=lambda i, p: {"out": i["a"].astype(np.float64) + i["bias"][None, :]},
    launch=lambda p, c, m: ((cdiv(max(p["rows"], p["cols"]), p["bx"]), cdiv(max(p["rows"], p["cols"]), p["by"])),
                            (p["bx"], p["by"])),
    minimum=lambda p, c: {"gr": 2, "gw": 1, "sh": 0},
    caps=lambda p, c: {"gr": 2, "gw": 1},
    coalesced=("a", "out"),
    work=lambda p: 8 * p["rows"] * p["cols"] + 4 * p["cols"],
    floor=lambda p, c: {"gr": 1, "gw": 1})

#: GPUs the launch of puzzle 19 must fill: (multiprocessors, threads per SM, threads per block)
VIRTUAL_GPUS = [(132, 2048, 1024), (46, 1536, 1024), (2, 32, 32)]


def _occupancy_rule(answers) -> str | None:
    """Judge the answers of the module's launch() to the probe's calls (made in the child)."""
    calls = [[n, *g] for g in VIRTUAL_GPUS for n in (2**26 + 3, 1000, 100)]
    if not isinstance(answers, list) or len(answers) != len(calls):
        return "puzzle 19 needs a function launch(n, sms, max_threads_per_sm, max_threads_per_block)"
    for (n, sms, per_sm, per_block), got in zip(calls, answers):
        if isinstance(got, str):
            return f"launch({n}, {sms}, {per_sm}, {per_block}) {got}"
        try:
            blocks, threads = (int(v) for v in got)
        except (TypeError, ValueError):
            return f"launch({n}, {sms}, {per_sm}, {per_block}) did not give (blocks, threads)"
        where = f"launch({n}, {sms}, {per_sm}, {per_block}) = ({blocks}, {threads})"
        if threads <= 0 or threads % 32 or threads > per_block or per_sm % threads:
            return (f"{where}: threads per block must be a multiple of 32, at most {per_block}, "
                    f"and divide {per_sm} (so that whole blocks fill an SM)")
        if blocks * threads < min(n, sms * per_sm):
            return f"{where}: {blocks * threads} threads leave the GPU's {sms * per_sm} thread slots part empty"
        if blocks < 1 or (blocks - 1) * threads >= n:
            return f"{where}: the last block would have no element to work on"
    return None


P19 = Puzzle(
    **words(19),
    sizes=lambda rng, c, full: {"n": 2**26 + 3 if full else int(rng.integers(100, 200))},
    make=lambda rng, p: {"x": rand(rng, p["n"]), "y": rand(rng, p["n"]),
                         "alpha": np.float32(rng.uniform(0.5, 2))},
    outs=lambda p: {"out": poisoned(p["n"])},
    ref=lambda i, p: {"out": float(i["alpha"]) * i["x"].astype(np.float64) + i["y"]},
    launch=lambda p, c, m: p.get("fixed") or (m and tuple(int(v) for v in m.launch(p["n"], *p["gpu"]))),
    minimum=lambda p, c: {"gr": 2 * cdiv(p["n"], p["threads_total"]), "gw": cdiv(p["n"], p["threads_total"]),
                          "sh": 0},
    caps=lambda p, c: {"gr": 2 * cdiv(p["n"], p["threads_total"]), "gw": cdiv(p["n"], p["threads_total"])},
    shared="forbidden",
    ulps=3,
    work=lambda p: 12 * p["n"],
    extra_rule=_occupancy_rule,
    scale=lambda i, p: {"out": np.abs(np.float64(i["alpha"]) * i["x"]) + np.abs(i["y"])},
    floor=lambda p, c: {"gr": cdiv(2 * p["n"], p["threads_total"]),
                        "gw": cdiv(p["n"], p["threads_total"])},
    gpu=(2, 32, 32),
    probe=[[n, *g] for g in VIRTUAL_GPUS for n in (2**26 + 3, 1000, 100)],
    fixed_grid=lambda rng, p: (int(rng.integers(1, 3)), 32))

P20 = Puzzle(
    **words(20),
    consts={"TPB": ((64, 96, 128), 256)},
    sizes=lambda rng, c, full: {"n": 2**26 + 3 if full else odd_size(rng, 40, 120, 32)},
    make=lambda rng, p: {"a": rand(rng, p["n"], 0, 1)},
    outs=lambda p: {"out": poisoned(cdiv(p["n"], 32))},
    ref=lambda i, p: {"out": _block_sums(i["a"], 32)},
    launch=lambda p, c, m: (cdiv(p["n"], c["TPB"]), c["TPB"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 0},
    caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="forbidden",
    ulps=33,
    work=lambda p: 4 * p["n"] + 4 * cdiv(p["n"], 32))

PUZZLES = [P11, P12, P13, P14, P15, P16, P17, P18, P19, P20]
