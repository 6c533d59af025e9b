"""Puzzle 15, tiled matmul: c = a @ b, one TILE x TILE tile of c per block.

Write the kernel's body, then check it: gpukit exercises check 15 p15_matmul.py
"""
import numba
from numba import cuda

# the tile's side: the checker sets it
TILE = 4


@cuda.jit
def matmul(c, a, b):
    """Walk along K one tile at a time; each loaded element is used TILE times."""
    # your code here
    pass
