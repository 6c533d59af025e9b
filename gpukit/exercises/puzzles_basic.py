"""Puzzles 1 to 10: threads, guards, blocks, shared memory and the first reductions."""

from __future__ import annotations

import numpy as np

from .spec import Puzzle, cdiv, log2, odd_size, poisoned, rand

F = np.float32


def _one_block_1d(full_n):
    return lambda rng, c, full: {"n": full_n if full else odd_size(rng, 9, 40, 8)}


P01 = Puzzle(
    1, "map", "Map", "map_add_ten",
    task="Add 10 to every element of `a` and write the result to `out`. There is exactly one "
         "thread for each element, in one block.",
    rules=["one block of as many threads as `a` has elements", "global memory only"],
    hints=("`cuda.threadIdx.x` is the number of this thread inside its block, from 0.",
           "Each thread handles the element whose index is its own thread number: one line."),
    args=("out", "a"), sizes=_one_block_1d(1024),
    make=lambda rng, p: {"a": rand(rng, p["n"])},
    outs=lambda p: {"out": poisoned(p["n"])},
    ref=lambda i, p: {"out": i["a"].astype(np.float64) + 10},
    launch=lambda p, c, m: (1, p["n"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 0}, caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="forbidden", roof=None, teaches="one thread per element")

P02 = Puzzle(
    2, "zip", "Zip", "zip_add",
    task="Add `a` and `b` element by element into `out`: `out[i] = a[i] + b[i]`. One thread per "
         "element, one block.",
    rules=["one block of as many threads as there are elements", "global memory only"],
    hints=("The same index picks the element of `a`, of `b` and of `out`.",
           "`i = cuda.threadIdx.x`, then one addition."),
    args=("out", "a", "b"), sizes=_one_block_1d(1024),
    make=lambda rng, p: {"a": rand(rng, p["n"]), "b": rand(rng, p["n"])},
    outs=lambda p: {"out": poisoned(p["n"])},
    ref=lambda i, p: {"out": i["a"].astype(np.float64) + i["b"]},
    launch=lambda p, c, m: (1, p["n"]),
    minimum=lambda p, c: {"gr": 2, "gw": 1, "sh": 0}, caps=lambda p, c: {"gr": 2, "gw": 1},
    shared="forbidden", roof=None, teaches="several inputs, one index")

P03 = Puzzle(
    3, "guard", "Guard", "guard_add_ten",
    task="Add 10 to every element of `a`, as in puzzle 1, but the block now has more threads than "
         "`a` has elements. Threads past the end must touch nothing.",
    rules=["one block of 32 to 64 threads on the simulator (1024 on a GPU), more than the elements",
           "a thread may not read or write outside an array"],
    hints=("`a.shape[0]` (or `a.size`) is the number of elements.",
           "Wrap the body in `if i < a.shape[0]:`."),
    args=("out", "a"),
    sizes=lambda rng, c, full: ({"n": 1000, "threads": 1024} if full else
                                _more_threads(rng, (32, 48, 64))),
    make=lambda rng, p: {"a": rand(rng, p["n"])},
    outs=lambda p: {"out": poisoned(p["n"])},
    ref=lambda i, p: {"out": i["a"].astype(np.float64) + 10},
    launch=lambda p, c, m: (1, p["threads"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 0}, caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="forbidden", roof=None, teaches="a guard against extra threads")


def _more_threads(rng, choices):
    threads = int(rng.choice(choices))
    return {"n": int(rng.integers(5, threads)), "threads": threads}


def _small_2d(full):
    return lambda rng, c, f: ({"rows": full[0], "cols": full[1], "bx": 32, "by": 32} if f else
                              {"rows": int(rng.integers(3, 8)), "cols": int(rng.integers(3, 8)),
                               "bx": int(rng.choice((8, 12, 16))),
                               "by": int(rng.choice((8, 12, 16)))})


P04 = Puzzle(
    4, "map2d", "2-D map", "map2d_add_ten",
    task="`a` is a matrix. Add 10 to every element into `out`. The block is a square of "
         "threads, larger than the matrix; `x` runs along a row (over columns), `y` down the rows.",
    rules=["one block of 8 to 16 threads a side on the simulator (32 x 32 on a GPU)",
           "threadIdx.x picks the column, threadIdx.y the row", "a thread may not touch anything outside"],
    hints=("`a.shape` is `(rows, cols)`; index a matrix as `a[row, col]`.",
           "`col = cuda.threadIdx.x`, `row = cuda.threadIdx.y`, and guard both."),
    args=("out", "a"), sizes=_small_2d((30, 31)),
    make=lambda rng, p: {"a": rand(rng, (p["rows"], p["cols"]))},
    outs=lambda p: {"out": poisoned((p["rows"], p["cols"]))},
    ref=lambda i, p: {"out": i["a"].astype(np.float64) + 10},
    launch=lambda p, c, m: (1, (p["bx"], p["by"])),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 0}, caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="forbidden", roof=None, x_picks=("out", "a"), teaches="two-dimensional threads")

P05 = Puzzle(
    5, "broadcast", "Broadcast", "broadcast_add",
    task="`col` has one value per row and `row` one value per column. Write "
         "`out[r, c] = col[r] + row[c]`: every pair, as NumPy's broadcasting would.",
    rules=["one block of 8 to 16 threads a side on the simulator (32 x 32 on a GPU), larger than `out`",
           "threadIdx.x picks the column, threadIdx.y the row"],
    hints=("`out.shape` gives the number of rows and columns; `col` and `row` are 1-D.",
           "Each thread reads one element of each vector: `col[r]` and `row[c]`."),
    args=("out", "col", "row"), sizes=_small_2d((30, 31)),
    make=lambda rng, p: {"col": rand(rng, p["rows"]), "row": rand(rng, p["cols"])},
    outs=lambda p: {"out": poisoned((p["rows"], p["cols"]))},
    ref=lambda i, p: {"out": i["col"].astype(np.float64)[:, None] + i["row"][None, :]},
    launch=lambda p, c, m: (1, (p["bx"], p["by"])),
    minimum=lambda p, c: {"gr": 2, "gw": 1, "sh": 0}, caps=lambda p, c: {"gr": 2, "gw": 1},
    shared="forbidden", roof=None, x_picks=("out",), teaches="reusing inputs across threads")


def _blocks(full_n):
    return lambda rng, c, full: {"n": full_n if full else odd_size(rng, 20, 70, c["TPB"])}


P06 = Puzzle(
    6, "blocks", "Blocks", "blocks_add_ten",
    task="Add 10 to every element of a long `a`. One block is too small now: the grid has several "
         "blocks, each of `cuda.blockDim.x` threads, and the last block sticks out past the end.",
    rules=["blocks of 8, 16 or 32 threads on the simulator (256 on a GPU), as many as needed",
           "do not assume a block size: read cuda.blockDim.x"],
    hints=("A thread's global index is `cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x`.",
           "`cuda.grid(1)` computes that index for you; keep the guard."),
    args=("out", "a"), sizes=_blocks(2**26 + 3), consts={"TPB": ((8, 16, 32), 256)},
    make=lambda rng, p: {"a": rand(rng, p["n"])},
    outs=lambda p: {"out": poisoned(p["n"])},
    ref=lambda i, p: {"out": i["a"].astype(np.float64) + 10},
    launch=lambda p, c, m: (cdiv(p["n"], c["TPB"]), c["TPB"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 0}, caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="forbidden", work=lambda p: 8 * p["n"], teaches="a grid of blocks")

_TPB = {"TPB": ((8, 16, 32), 256)}


def _tpb(full_n, lo=20, hi=60):
    return lambda rng, c, full: {"n": full_n if full else odd_size(rng, lo, hi, c["TPB"])}


P07 = Puzzle(
    7, "shared", "Shared memory", "swap_pairs",
    task="Swap neighbours: `out[i] = a[i ^ 1]` (0 takes 1's value, 1 takes 0's, 2 takes 3's...). "
         "When `i ^ 1` is past the end, `out[i] = a[i]`. Each thread may read only its own element "
         "of `a`, so it must get its partner's value from shared memory.",
    rules=["blocks of `TPB` threads (8, 16 or 32 on the simulator, 256 on a GPU)",
           "each thread reads at most one element of `a`", "must use shared memory"],
    hints=("`s = cuda.shared.array(TPB, numba.float32)` is one array per block, seen by all its "
           "threads. Store your element at `s[cuda.threadIdx.x]`.",
           "Call `cuda.syncthreads()` after the store, so that your partner has stored its element "
           "before you read `s[cuda.threadIdx.x ^ 1]`; mind the partner that does not exist."),
    args=("out", "a"), consts=_TPB, sizes=_tpb(2**26 + 3),
    make=lambda rng, p: {"a": rand(rng, p["n"])},
    outs=lambda p: {"out": poisoned(p["n"])},
    ref=lambda i, p: {"out": _swap(i["a"])},
    launch=lambda p, c, m: (cdiv(p["n"], c["TPB"]), c["TPB"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 2}, caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="required", ulps=0, work=lambda p: 8 * p["n"], teaches="shared memory and syncthreads")


def _pool(a, n):
    return np.convolve(a.astype(np.float64), np.ones(3))[:n]


def _swap(a):
    idx = np.arange(a.size) ^ 1
    idx[idx >= a.size] = a.size - 1
    return a[idx].astype(np.float64)


P08 = Puzzle(
    8, "pooling", "Pooling", "pool3",
    task="A sliding window of three: `out[i] = a[i - 2] + a[i - 1] + a[i]`, where a missing "
         "element (before the start) counts as 0. Load each block's part of `a` once into shared "
         "memory, with the two elements before it (the halo).",
    rules=["blocks of `TPB` threads (8, 16 or 32 on the simulator, 256 on a GPU)",
           "each thread reads at most 2 elements of `a`", "must use shared memory"],
    hints=("A shared array of `TPB + 2` elements: slot `l + 2` holds `a[i]`, slots 0 and 1 the "
           "two elements before the block's first.",
           "Let the threads with `threadIdx.x < 2` load the halo (0 when before the start); "
           "`cuda.syncthreads()`; then add slots `l`, `l + 1` and `l + 2`."),
    args=("out", "a"), consts=_TPB, sizes=_tpb(2**26 + 3),
    make=lambda rng, p: {"a": rand(rng, p["n"])},
    outs=lambda p: {"out": poisoned(p["n"])},
    ref=lambda i, p: {"out": _pool(i["a"], p["n"])},
    launch=lambda p, c, m: (cdiv(p["n"], c["TPB"]), c["TPB"]),
    minimum=lambda p, c: {"gr": 2, "gw": 1, "sh": 5}, caps=lambda p, c: {"gr": 2, "gw": 1},
    shared="required", ulps=3, scale=lambda i, p: {"out": _pool(np.abs(i["a"]), p["n"])},
    work=lambda p: 8 * p["n"], teaches="a halo in shared memory")

P09 = Puzzle(
    9, "dot", "Dot product", "dot",
    task="Compute `out[0] = sum(a[i] * b[i])` with ONE block of `TPB` threads, while `a` is longer "
         "than the block: each thread sums a strided part of the products, the partial sums meet in "
         "shared memory, and thread 0 adds them up.",
    rules=["one block of `TPB` threads (8, 16 or 32 on the simulator, 1024 on a GPU)",
           "each element of `a` and `b` is read once", "must use shared memory; thread 0 writes `out[0]`"],
    hints=("Thread `l` handles elements `l`, `l + TPB`, `l + 2 TPB`... (`for i in range(l, n, TPB)`), "
           "summing into a local variable; then it stores that sum at `s[l]`.",
           "After `cuda.syncthreads()`, thread 0 loops over the `TPB` partial sums and writes the total."),
    args=("out", "a", "b"), consts={"TPB": ((8, 16, 32), 1024)}, sizes=_tpb(2**24 + 3),
    make=lambda rng, p: {"a": rand(rng, p["n"], 0, 1), "b": rand(rng, p["n"], 0, 1)},
    outs=lambda p: {"out": poisoned(1)},
    ref=lambda i, p: {"out": np.array([np.dot(i["a"].astype(np.float64), i["b"])])},
    launch=lambda p, c, m: (1, c["TPB"]),
    minimum=lambda p, c: {"gr": 2 * cdiv(p["n"], c["TPB"]), "gw": 1, "sh": c["TPB"] + 1},
    caps=lambda p, c: {"gr": 2 * cdiv(p["n"], c["TPB"]), "gw": 1},
    shared="required", ulps=lambda p: p["n"] + 2, work=lambda p: 8 * p["n"],
    floor=lambda p, c: {"gr": 2 * cdiv(p["n"], c["TPB"]), "gw": 1},
    teaches="a loop per thread; one block is one SM")

P10 = Puzzle(
    10, "block_reduce", "Block reduction", "block_sum",
    task="Each block sums its own `TPB` elements of `a` and writes the sum to `out[block]`. Use a "
         "tree in shared memory: half the threads add a partner's value, then a quarter, and so on.",
    rules=["blocks of `TPB` threads, a power of two (8, 16 or 32 on the simulator, 256 on a GPU)",
           "each element of `a` is read once", "must use shared memory"],
    hints=("Keep your running sum in a local variable `v` (0 past the end of `a`) and store it at "
           "`s[l]`; with `stride` going `TPB // 2, TPB // 4, ..., 1`, threads `l < stride` add "
           "`s[l + stride]` to `v` and store it back.",
           "Put `cuda.syncthreads()` after the first store and after each step, outside the `if`, "
           "so that every thread of the block reaches it. Thread 0 writes `v` at the end."),
    args=("out", "a"), consts=_TPB, sizes=_tpb(2**26 + 3),
    make=lambda rng, p: {"a": rand(rng, p["n"], 0, 1)},
    outs=lambda p: {"out": poisoned(cdiv(p["n"], p["tpb"]))},
    ref=lambda i, p: {"out": _block_sums(i["a"], p["tpb"])},
    launch=lambda p, c, m: (cdiv(p["n"], c["TPB"]), c["TPB"]),
    minimum=lambda p, c: {"gr": 1, "gw": 1, "sh": 1 + 2 * log2(c["TPB"])},
    caps=lambda p, c: {"gr": 1, "gw": 1},
    shared="required", ulps=lambda p: p["tpb"] + 1,
    work=lambda p: 4 * p["n"] + 4 * cdiv(p["n"], p["tpb"]),
    teaches="a tree reduction with barriers")


def _block_sums(a, tpb):
    pad = np.zeros(cdiv(a.size, tpb) * tpb)
    pad[:a.size] = a
    return pad.reshape(-1, tpb).sum(axis=1)


PUZZLES = [P01, P02, P03, P04, P05, P06, P07, P08, P09, P10]
