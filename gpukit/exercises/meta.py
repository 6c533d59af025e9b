"""The words of the twenty puzzles, importable without numba: what the page, the checker and the
command show of each (its title, task, rules, hints, kernel and arguments, what it teaches and
the roof its speed is measured against). :mod:`.puzzles` adds the launch, the data and the
answer to each."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class Text:
    """What a reader sees of a puzzle."""
    num: int
    slug: str
    title: str
    kernel: str
    task: str
    rules: list[str]
    hints: tuple[str, str]
    #: kernel arguments, in order: names of outputs, inputs or scalars
    args: tuple[str, ...]
    #: one line for the page's table: what the puzzle teaches
    teaches: str
    #: "copy" (memory-bound), "fp32" (compute-bound) or None (one block: no roof)
    roof: str | None

    @property
    def file(self) -> str:
        return f"p{self.num:02d}_{self.slug}.py"


_P01 = Text(
    1, "map", "Map", "map_add_ten",
    task="Add 10 to every element of `a` and write the result to `out`. There is exactly one "
         "thread for each element, in one block.",
    rules=["one block of as many threads as `a` has elements", "global memory only"],
    hints=("`cuda.threadIdx.x` is the number of this thread inside its block, from 0.",
           "Each thread handles the element whose index is its own thread number: one line."),
    args=("out", "a"),
    teaches="one thread per element",
    roof=None)


_P02 = Text(
    2, "zip", "Zip", "zip_add",
    task="Add `a` and `b` element by element into `out`: `out[i] = a[i] + b[i]`. One thread per "
         "element, one block.",
    rules=["one block of as many threads as there are elements", "global memory only"],
    hints=("The same index picks the element of `a`, of `b` and of `out`.",
           "`i = cuda.threadIdx.x`, then one addition."),
    args=("out", "a", "b"),
    teaches="several inputs, one index",
    roof=None)


_P03 = Text(
    3, "guard", "Guard", "guard_add_ten",
    task="Add 10 to every element of `a`, as in puzzle 1, but the block now has more threads than "
         "`a` has elements. Threads past the end must touch nothing.",
    rules=["one block of 32 to 64 threads on the simulator (1024 on a GPU), more than the elements",
           "a thread may not read or write outside an array"],
    hints=("`a.shape[0]` (or `a.size`) is the number of elements.",
           "Wrap the body in `if i < a.shape[0]:`."),
    args=("out", "a"),
    teaches="a guard against extra threads",
    roof=None)


_P04 = Text(
    4, "map2d", "2-D map", "map2d_add_ten",
    task="`a` is a matrix. Add 10 to every element into `out`. The block is a square of "
         "threads, larger than the matrix; `x` runs along a row (over columns), `y` down the rows.",
    rules=["one block of 8 to 16 threads a side on the simulator (32 x 32 on a GPU)",
           "threadIdx.x picks the column, threadIdx.y the row", "a thread may not touch anything outside"],
    hints=("`a.shape` is `(rows, cols)`; index a matrix as `a[row, col]`.",
           "`col = cuda.threadIdx.x`, `row = cuda.threadIdx.y`, and guard both."),
    args=("out", "a"),
    teaches="two-dimensional threads",
    roof=None)


_P05 = Text(
    5, "broadcast", "Broadcast", "broadcast_add",
    task="`col` has one value per row and `row` one value per column. Write "
         "`out[r, c] = col[r] + row[c]`: every pair, as NumPy's broadcasting would.",
    rules=["one block of 8 to 16 threads a side on the simulator (32 x 32 on a GPU), larger than `out`",
           "threadIdx.x picks the column, threadIdx.y the row"],
    hints=("`out.shape` gives the number of rows and columns; `col` and `row` are 1-D.",
           "Each thread reads one element of each vector: `col[r]` and `row[c]`."),
    args=("out", "col", "row"),
    teaches="reusing inputs across threads",
    roof=None)


_P06 = Text(
    6, "blocks", "Blocks", "blocks_add_ten",
    task="Add 10 to every element of a long `a`. One block is too small now: the grid has several "
         "blocks, each of `cuda.blockDim.x` threads, and the last block sticks out past the end.",
    rules=["blocks of 8, 16 or 32 threads on the simulator (256 on a GPU), as many as needed",
           "do not assume a block size: read cuda.blockDim.x"],
    hints=("A thread's global index is `cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x`.",
           "`cuda.grid(1)` computes that index for you; keep the guard."),
    args=("out", "a"),
    teaches="a grid of blocks",
    roof="copy")


_P07 = Text(
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
    args=("out", "a"),
    teaches="shared memory and syncthreads",
    roof="copy")


_P08 = Text(
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
    args=("out", "a"),
    teaches="a halo in shared memory",
    roof="copy")


_P09 = Text(
    9, "dot", "Dot product", "dot",
    task="Compute `out[0] = sum(a[i] * b[i])` with ONE block of `TPB` threads, while `a` is longer "
         "than the block: each thread sums a strided part of the products, the partial sums meet in "
         "shared memory, and thread 0 adds them up.",
    rules=["one block of `TPB` threads (8, 16 or 32 on the simulator, 1024 on a GPU)",
           "each element of `a` and `b` is read once", "must use shared memory; thread 0 writes `out[0]`"],
    hints=("Thread `l` handles elements `l`, `l + TPB`, `l + 2 TPB`... (`for i in range(l, n, TPB)`), "
           "summing into a local variable; then it stores that sum at `s[l]`.",
           "After `cuda.syncthreads()`, thread 0 loops over the `TPB` partial sums and writes the total."),
    args=("out", "a", "b"),
    teaches="a loop per thread; one block is one SM",
    roof="copy")


_P10 = Text(
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
    args=("out", "a"),
    teaches="a tree reduction with barriers",
    roof="copy")


_P11 = Text(
    11, "reduce", "Full reduction", "total_sum",
    task="Sum all of `a` into `out[0]`. Reduce inside each block as in puzzle 10, then let thread 0 "
         "of every block add its block's sum to `out[0]` with an atomic addition. The checker sets "
         "`out[0]` to 0 before the launch.",
    rules=["blocks of `TPB` threads, a power of two (8, 16 or 32 on the simulator, 256 on a GPU)",
           "each element of `a` is read once; one atomic per block", "must use shared memory"],
    hints=("Blocks cannot wait for each other; `cuda.atomic.add(out, 0, v)` adds `v` to `out[0]` "
           "without losing another block's addition.",
           "Copy your puzzle 10 kernel and replace its final write with the atomic addition."),
    args=("out", "a"),
    teaches="atomics join the blocks",
    roof="copy")


_P12 = Text(
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
    args=("out", "a"),
    teaches="a scan and its two barriers",
    roof="copy")


_P13 = Text(
    13, "histogram", "Histogram", "histogram",
    task="Count how often each value occurs: `values` holds whole numbers from 0 to `bins - 1`, and "
         "`hist[v]` must end as the number of elements equal to `v`. Many threads hit the same bin "
         "at once. The checker sets `hist` to 0 before the launch.",
    rules=["blocks of `TPB` threads (8, 16 or 32 on the simulator, 256 on a GPU), one thread per element",
           "each element of `values` is read once"],
    hints=("`hist[v] += 1` from two threads at once can lose one of the two additions.",
           "`cuda.atomic.add(hist, v, 1)` does the read, the addition and the write as one."),
    args=("hist", "values"),
    teaches="atomic operations",
    roof="copy")


_P14 = Text(
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
    args=("out", "a"),
    teaches="coalescing and bank conflicts",
    roof="copy")


_P15 = Text(
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
    args=("c", "a", "b"),
    teaches="data reuse through shared tiles",
    roof="fp32")


_P16 = Text(
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
    args=("out", "a"),
    teaches="two reductions in one pass",
    roof="copy")


_P17 = Text(
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
    args=("out", "a"),
    teaches="a 2-D halo",
    roof="copy")


_P18 = Text(
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
    teaches="memory coalescing",
    roof="copy")


_P19 = Text(
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
    teaches="grid-stride loops and occupancy",
    roof="copy")


_P20 = Text(
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
    args=("out", "a"),
    teaches="warp shuffles",
    roof="copy")


#: the puzzles in order of difficulty
TEXTS: tuple[Text, ...] = (
    _P01, _P02, _P03, _P04, _P05, _P06, _P07, _P08, _P09, _P10,
    _P11, _P12, _P13, _P14, _P15, _P16, _P17, _P18, _P19, _P20)


def text(num: int) -> Text:
    """Puzzle ``num``'s words (LookupError for a number that is not a puzzle)."""
    for t in TEXTS:
        if t.num == num:
            return t
    raise LookupError(f"no puzzle {num}")


def words(num: int) -> dict:
    """Puzzle ``num``'s words as :class:`~.spec.Puzzle`'s fields."""
    return asdict(text(num))
