"""Puzzle 18, coalescing: out[r, c] = a[r, c] + bias[c],
neighbouring threads on neighbouring columns.
"""
from numba import cuda


@cuda.jit
def add_bias(out, a, bias):
    """x picks the column: threads with neighbouring x touch neighbouring addresses."""
    c, r = cuda.grid(2)
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] + bias[c]
