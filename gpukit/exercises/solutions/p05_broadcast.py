"""Puzzle 5, broadcast: out[r, c] = col[r] + row[c]."""
from numba import cuda


@cuda.jit
def broadcast_add(out, col, row):
    """x runs over columns, y over rows."""
    c = cuda.threadIdx.x
    r = cuda.threadIdx.y
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = col[r] + row[c]
