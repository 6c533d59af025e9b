"""Puzzle 5, broadcast: out[r, c] = col[r] + row[c].

Write the kernel's body, then check it: gpukit exercises check 5 p05_broadcast.py
"""
from numba import cuda


@cuda.jit
def broadcast_add(out, col, row):
    """x runs over columns, y over rows."""
    # your code here
    pass
