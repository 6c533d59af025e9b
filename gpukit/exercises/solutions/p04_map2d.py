"""Puzzle 4, 2-D map: out[r, c] = a[r, c] + 10, one block larger than the matrix."""
from numba import cuda


@cuda.jit
def map2d_add_ten(out, a):
    """x runs over columns, y over rows."""
    c = cuda.threadIdx.x
    r = cuda.threadIdx.y
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] + 10
