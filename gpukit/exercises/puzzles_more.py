"""Puzzles 11 to 20: whole reductions, scans, atomics, tiles, and tuning for the hardware."""

from __future__ import annotations

import numpy as np

from .puzzles_basic import _block_sums, _tpb
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
    11, "reduce", "Full reduction", "total_sum",
    task="Sum all of `a` into `out[0]`. Reduce inside each block as in puzzle 10, then let thread 0 "
         "of every block add its block's sum to `out[0]` with an atomic addition. The checker sets "
         "`out[0]` to 0 before the launch.",
    rules=["blocks of `TPB` threads, a power of two (8, 16 or 32 on the simulator, 256 on a GPU)",
           "each element of `a` is read once; one atomic per block", "must use shared memory"],
    hints=("Blocks cannot wait for each other; `cuda.atomic.add(out, 0, v)` adds `v` to `out[0]` "
           "without losing another block's addition.",
           "Copy your puzzle 10 kernel and replace its final write with the atomic addition."),
    args=("out", "a"), consts=_TPB, sizes=_tpb(2**26 + 3),
    make=lambda rng, p: {"a": rand(rng, p["n"], 0, 1)},
    outs=lambda p: {"out": ((1,), np.float32, 0)},
    ref=lambda i, p: {"out": np.array([i["a"].astype(np.float64).sum()])},
    launch=lambda p, c, m: (cdiv(p["n"], c["TPB"]), c["TPB"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 1 + 2 * log2(c["TPB"])},
    caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="required", ulps=lambda p: p["n"] + 2, work=lambda p: 4 * p["n"],
    teaches="atomics join the blocks")

P12 = Puzzle(
    12, "scan", "Prefix scan", "block_scan",
    task="Inclusive prefix sum inside each block: `out[i]` is the sum of the block's elements of "
         "`a` up to and including `i`. Each block starts again from 0.",
    rules=["blocks of `TPB` threads, a power of two (8, 16 or 32 on the simulator, 256 on a GPU)",
           "each element of `a` is read once", "must use shared memory"],
    hints=("With `d = 1, 2, 4, ...` below `TPB`, thread `l >= d` adds `s[l - d]` to its running "
           "value `v` (a Hillis-Steele scan).",
           "Two barriers per step: one after everyone has read `s[l - d]`, one after everyone has "
           "stored the new `v` in `s[l]`. Without the first, a thread overwrites a value its "
           "neighbour has not read yet."),
    args=("out", "a"), consts=_TPB, sizes=_tpb(2**26 + 3),
    make=lambda rng, p: {"a": rand(rng, p["n"], 0, 1)},
    outs=lambda p: {"out": poisoned(p["n"])},
    ref=lambda i, p: {"out": _block_scan(i["a"], p["tpb"])},
    launch=lambda p, c, m: (cdiv(p["n"], c["TPB"]), c["TPB"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 1 + 2 * log2(c["TPB"])},
    caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="required", ulps=lambda p: p["tpb"] + 1, work=lambda p: 8 * p["n"],
    teaches="a scan and its two barriers")


def _block_scan(a, tpb):
    pad = np.zeros(cdiv(a.size, tpb) * tpb)
    pad[:a.size] = a
    return np.cumsum(pad.reshape(-1, tpb), axis=1).reshape(-1)[:a.size]


P13 = Puzzle(
    13, "histogram", "Histogram", "histogram",
    task="Count how often each value occurs: `values` holds whole numbers from 0 to `bins - 1`, and "
         "`hist[v]` must end as the number of elements equal to `v`. Many threads hit the same bin "
         "at once. The checker sets `hist` to 0 before the launch.",
    rules=["blocks of `TPB` threads (8, 16 or 32 on the simulator, 256 on a GPU), one thread per element",
           "each element of `values` is read once"],
    hints=("`hist[v] += 1` from two threads at once can lose one of the two additions.",
           "`cuda.atomic.add(hist, v, 1)` does the read, the addition and the write as one."),
    args=("hist", "values"), consts=_TPB,
    sizes=lambda rng, c, full: ({"n": 2**26 + 3, "bins": 256} if full else
                                {"n": odd_size(rng, 30, 80, c["TPB"]), "bins": int(rng.integers(3, 9))}),
    make=lambda rng, p: {"values": rng.integers(0, p["bins"], p["n"]).astype(np.int32)},
    outs=lambda p: {"hist": ((p["bins"],), np.int32, 0)},
    ref=lambda i, p: {"hist": np.bincount(i["values"], minlength=p["bins"])},
    launch=lambda p, c, m: (cdiv(p["n"], c["TPB"]), c["TPB"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 0}, caps=lambda p, c: {"gr": 1, "gw": 1},
    ulps=0, work=lambda p: 4 * p["n"], teaches="atomic operations")

P14 = Puzzle(
    14, "transpose", "Transpose", "transpose",
    task="Write the transpose of `a` (`rows` x `cols`) into `out` (`cols` x `rows`). Reading `a` "
         "along rows and writing `out` along rows both need neighbouring threads on neighbouring "
         "addresses, so a block reads a `TILE` x `TILE` tile into shared memory and writes it out "
         "turned. Pad the tile so that reading down a column hits different banks.",
    rules=["blocks of `TILE` x `TILE` threads (4 or 8 on the simulator, 32 on a GPU)",
           "accesses to `a` and `out` coalesced: threads with neighbouring threadIdx.x touch "
           "neighbouring addresses", "must use shared memory, without bank conflicts (the checker "
           "models `TILE` banks)"],
    hints=("Read `a[by * TILE + ty, bx * TILE + tx]` into `tile[ty, tx]`, synchronise, and write "
           "`out[bx * TILE + ty, by * TILE + tx]` from `tile[tx, ty]`.",
           "A tile of `(TILE, TILE + 1)`: reading `tile[tx, ty]` for neighbouring `tx` then steps "
           "`TILE + 1` elements, which lands in a different bank each time."),
    args=("out", "a"), consts=_TILE, sizes=_tiles_2d((8190, 8194)),
    make=lambda rng, p: {"a": rand(rng, (p["rows"], p["cols"]))},
    outs=lambda p: {"out": poisoned((p["cols"], p["rows"]))},
    ref=lambda i, p: {"out": i["a"].T.astype(np.float64)},
    launch=lambda p, c, m: _grid_2d(p, c, p["rows"], p["cols"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 2},
    caps=lambda p, c: {"gr": 1, "gw": 1, "sh": 2}, ulps=0,
    shared="required", coalesced=("a", "out"), banks="TILE",
    work=lambda p: 8 * p["rows"] * p["cols"], teaches="coalescing and bank conflicts")

P15 = Puzzle(
    15, "matmul", "Tiled matmul", "matmul",
    task="`c = a @ b` for `a` (`M` x `K`) and `b` (`K` x `N`). Each block computes a `TILE` x `TILE` "
         "tile of `c`, walking along `K` one tile at a time: each thread loads one element of `a` "
         "and one of `b` into shared tiles, and every thread then reads a whole row and column "
         "of the tiles.",
    rules=["blocks of `TILE` x `TILE` threads (4 or 8 on the simulator, 16 on a GPU)",
           "each element of a tile is loaded once per block", "must use shared memory"],
    hints=("For tile `t`, thread `(ty, tx)` loads `a[row, t * TILE + tx]` and "
           "`b[t * TILE + ty, col]`, or 0 past an edge; synchronise; add "
           "`sa[ty, k] * sb[k, tx]` for `k < TILE`; synchronise again before the next load.",
           "The number of tiles along `K` is `(K + TILE - 1) // TILE`; guard the write of `c`, not "
           "the loop, so every thread reaches both barriers."),
    args=("c", "a", "b"), consts={"TILE": ((4, 8), 16)},
    sizes=lambda rng, c, full: ({"m": 4099, "k": 4099, "n": 4099} if full else
                                {k: odd_size(rng, 5, 11, c["TILE"]) for k in ("m", "k", "n")}),
    make=lambda rng, p: {"a": rand(rng, (p["m"], p["k"])), "b": rand(rng, (p["k"], p["n"]))},
    outs=lambda p: {"c": poisoned((p["m"], p["n"]))},
    ref=lambda i, p: {"c": i["a"].astype(np.float64) @ i["b"]},
    launch=lambda p, c, m: _grid_2d(p, c, p["m"], p["n"]),
    minimum=lambda p, c: {"gr": 2 * cdiv(p["k"], c["TILE"]), "gw": 1,
                          "sh": cdiv(p["k"], c["TILE"]) * (2 + 2 * c["TILE"])},
    caps=lambda p, c: {"gr": 2 * cdiv(p["k"], c["TILE"]), "gw": 1},
    shared="required", ulps=lambda p: p["k"] + 2, roof="fp32",
    scale=lambda i, p: {"c": np.abs(i["a"]).astype(np.float64) @ np.abs(i["b"])},
    floor=lambda p, c: {"gr": cdiv(2 * p["k"], c["TILE"]), "gw": 1},
    work=lambda p: 2.0 * p["m"] * p["n"] * p["k"], teaches="data reuse through shared tiles")

P16 = Puzzle(
    16, "softmax", "Row softmax", "softmax_rows",
    task="For each row of `a`, `out[r, c] = exp(a[r, c] - m) / s`, where `m` is the row's maximum "
         "and `s` the sum of `exp(a[r, c] - m)`. One block per row; a row can be longer or shorter "
         "than the block.",
    rules=["one block of `TPB` threads per row (8, 16 or 32 on the simulator, 256 on a GPU)",
           "each element of `a` is read at most twice", "must use shared memory"],
    hints=("First pass: each thread keeps a running maximum `m` and a running sum `s` over its "
           "columns `l, l + TPB, ...`; when a new maximum `x` arrives, `s = s * exp(m - x) + 1`.",
           "Combine the threads' `(m, s)` pairs with the tree of puzzle 10 (two shared arrays); "
           "a thread with no columns has `m = -inf`, `s = 0`: do not compute `exp(-inf - -inf)`. "
           "Second pass: write `exp(a - m) / s`."),
    args=("out", "a"), consts=_TPB,
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
    shared="required", ulps=lambda p: p["cols"] + p.get("span", 8) + 8,
    floor=lambda p, c: {"gr": cdiv(p["cols"], c["TPB"]), "gw": cdiv(p["cols"], c["TPB"])},
    work=lambda p: 8 * p["rows"] * p["cols"], teaches="two reductions in one pass")


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
    17, "stencil", "2-D stencil", "stencil5",
    task="A five-point stencil: `out[r, c]` is the sum of `a[r, c]` and its four neighbours (up, "
         "down, left, right), a neighbour outside the matrix counting as 0. Each block loads its "
         "tile with a one-element border into shared memory, then every thread adds five values.",
    rules=["blocks of `TILE` x `TILE` threads (4 or 8 on the simulator, 16 on a GPU)",
           "each element of the bordered tile is loaded once per block", "must use shared memory"],
    hints=("A shared array of `(TILE + 2, TILE + 2)`; its element `[y, x]` is "
           "`a[by * TILE - 1 + y, bx * TILE - 1 + x]` (0 outside).",
           "Number the threads `k = ty * TILE + tx` and let each load the spots `k, k + TILE * TILE, "
           "...` of the bordered tile, read row by row; synchronise; then add five neighbours."),
    args=("out", "a"), consts={"TILE": ((4, 8), 16)}, sizes=_tiles_2d((8190, 8194)),
    make=lambda rng, p: {"a": rand(rng, (p["rows"], p["cols"]))},
    outs=lambda p: {"out": poisoned((p["rows"], p["cols"]))},
    ref=lambda i, p: {"out": _stencil_ref(i["a"])},
    launch=lambda p, c, m: _grid_2d(p, c, p["rows"], p["cols"]),
    minimum=_stencil_min, caps=lambda p, c: {"gr": cdiv((c["TILE"] + 2) ** 2, c["TILE"] ** 2), "gw": 1},
    shared="required", ulps=5, scale=lambda i, p: {"out": _stencil_ref(np.abs(i["a"]))},
    work=lambda p: 8 * p["rows"] * p["cols"], teaches="a 2-D halo")

P18 = Puzzle(
    18, "coalesce", "Fix an uncoalesced kernel", "add_bias",
    task="The starter works: `out[r, c] = a[r, c] + bias[c]`, one thread per element. But it takes "
         "its row from `x` of `cuda.grid(2)` and its column from `y`, so neighbouring threads (which "
         "differ in `x`) touch addresses a whole row apart. Make neighbouring threads touch "
         "neighbouring addresses. The grid is square and covers the larger side in both directions, "
         "so either mapping covers the matrix.",
    rules=["blocks of 8 or 16 x 4 or 8 threads on the simulator (32 x 8 on a GPU), a square grid over "
           "`max(rows, cols)`", "accesses to `a` and `out` coalesced"],
    hints=("A matrix is stored row after row: `a[r, c]` and `a[r, c + 1]` are neighbours in memory, "
           "`a[r, c]` and `a[r + 1, c]` are `cols` elements apart.",
           "`c, r = cuda.grid(2)`: `x` picks the column."),
    args=("out", "a", "bias"),
    sizes=lambda rng, c, full: ({"rows": 8190, "cols": 8194, "bx": 32, "by": 8} if full else
                                {"rows": int(rng.integers(3, 8)), "cols": int(rng.integers(3, 8)),
                                 "bx": int(rng.choice((8, 16))), "by": int(rng.choice((4, 8)))}),
    make=lambda rng, p: {"a": rand(rng, (p["rows"], p["cols"])), "bias": rand(rng, p["cols"])},
    outs=lambda p: {"out": poisoned((p["rows"], p["cols"]))},
    ref=lambda i, p: {"out": i["a"].astype(np.float64) + i["bias"][None, :]},
    launch=lambda p, c, m: ((cdiv(max(p["rows"], p["cols"]), p["bx"]), cdiv(max(p["rows"], p["cols"]), p["by"])),
                            (p["bx"], p["by"])),
    minimum=lambda p, c: {"gr": 2, "gw": 1, "sh": 0}, caps=lambda p, c: {"gr": 2, "gw": 1},
    coalesced=("a", "out"), work=lambda p: 8 * p["rows"] * p["cols"] + 4 * p["cols"],
    floor=lambda p, c: {"gr": 1, "gw": 1},
    teaches="memory coalescing")

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
    19, "occupancy", "Tune a launch for occupancy", "saxpy",
    task="Two parts. The kernel: `out[i] = alpha * x[i] + y[i]` for every `i`, with a grid-stride "
         "loop, so that any number of threads covers any `n`. The launch: write "
         "`launch(n, sms, max_threads_per_sm, max_threads_per_block)` returning `(blocks, threads)` "
         "that fills every thread slot of every multiprocessor, without blocks that have nothing "
         "to do.",
    rules=["the checker launches with YOUR `launch` on a small simulated GPU (2 SMs of 32 threads) "
           "and checks it on an H200-like and a smaller GPU",
           "threads per block: a multiple of 32 that divides `max_threads_per_sm`"],
    hints=("Grid-stride loop: `for i in range(cuda.grid(1), n, cuda.gridsize(1)):`.",
           "`threads = min(256, max_threads_per_block)`; `blocks = min(ceil(n / threads), "
           "sms * (max_threads_per_sm // threads))`."),
    args=("out", "x", "y", "alpha"),
    sizes=lambda rng, c, full: {"n": 2**26 + 3 if full else int(rng.integers(100, 200))},
    make=lambda rng, p: {"x": rand(rng, p["n"]), "y": rand(rng, p["n"]),
                         "alpha": np.float32(rng.uniform(0.5, 2))},
    outs=lambda p: {"out": poisoned(p["n"])},
    ref=lambda i, p: {"out": float(i["alpha"]) * i["x"].astype(np.float64) + i["y"]},
    launch=lambda p, c, m: p.get("fixed") or (m and tuple(int(v) for v in m.launch(p["n"], *p["gpu"]))),
    minimum=lambda p, c: {"gr": 2 * cdiv(p["n"], p["threads_total"]), "gw": cdiv(p["n"], p["threads_total"]),
                          "sh": 0},
    caps=lambda p, c: {"gr": 2 * cdiv(p["n"], p["threads_total"]), "gw": cdiv(p["n"], p["threads_total"])},
    shared="forbidden", ulps=3, work=lambda p: 12 * p["n"], extra_rule=_occupancy_rule,
    scale=lambda i, p: {"out": np.abs(np.float64(i["alpha"]) * i["x"]) + np.abs(i["y"])},
    floor=lambda p, c: {"gr": cdiv(2 * p["n"], p["threads_total"]),
                        "gw": cdiv(p["n"], p["threads_total"])},
    gpu=(2, 32, 32), probe=[[n, *g] for g in VIRTUAL_GPUS for n in (2**26 + 3, 1000, 100)],
    fixed_grid=lambda rng, p: (int(rng.integers(1, 3)), 32),
    teaches="grid-stride loops and occupancy")

P20 = Puzzle(
    20, "warp_reduce", "Warp-shuffle reduction", "warp_sum",
    task="Sum each warp's 32 elements without shared memory: `out[w]` is the sum of "
         "`a[32 w : 32 w + 32]` (fewer at the end). The 32 threads of a warp pass values to each "
         "other with `cuda.shfl_down_sync`.",
    rules=["blocks of 64, 96 or 128 threads on the simulator (256 on a GPU): two warps or more",
           "no shared memory; each element of `a` is read once",
           "every lane of a warp takes part in each shuffle, even past the end of `a`"],
    hints=("`cuda.shfl_down_sync(0xFFFFFFFF, v, k)` returns `v` of the lane `k` places higher "
           "(or your own `v` when there is none).",
           "With `k = 16, 8, 4, 2, 1`: `v += cuda.shfl_down_sync(0xFFFFFFFF, v, k)`; lane 0 "
           "(`cuda.threadIdx.x % 32 == 0`) then holds the warp's sum. Use 0 for elements past the end."),
    args=("out", "a"), consts={"TPB": ((64, 96, 128), 256)},
    sizes=lambda rng, c, full: {"n": 2**26 + 3 if full else odd_size(rng, 40, 120, 32)},
    make=lambda rng, p: {"a": rand(rng, p["n"], 0, 1)},
    outs=lambda p: {"out": poisoned(cdiv(p["n"], 32))},
    ref=lambda i, p: {"out": _block_sums(i["a"], 32)},
    launch=lambda p, c, m: (cdiv(p["n"], c["TPB"]), c["TPB"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 0}, caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="forbidden", ulps=33, work=lambda p: 4 * p["n"] + 4 * cdiv(p["n"], 32),
    teaches="warp shuffles")

PUZZLES = [P11, P12, P13, P14, P15, P16, P17, P18, P19, P20]
