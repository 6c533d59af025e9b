"""Puzzle 13, histogram: hist[v] counts the elements equal to v, with atomics."""
from numba import cuda


@cuda.jit
def histogram(hist, values):
    """One thread per element, one atomic increment each."""
    i = cuda.grid(1)
    if i < values.shape[0]:
        cuda.atomic.add(hist, values[i], 1)
