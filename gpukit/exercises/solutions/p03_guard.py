"""Puzzle 3, guard: out[i] = a[i] + 10 with more threads than elements."""
from numba import cuda


@cuda.jit
def guard_add_ten(out, a):
    """Threads past the end of `a` do nothing."""
    i = cuda.threadIdx.x
    if i < a.shape[0]:
        out[i] = a[i] + 10
