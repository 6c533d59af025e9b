"""Puzzle 14, transpose through a padded shared tile: both global accesses coalesced.

Write the kernel's body, then check it: gpukit exercises check 14 p14_transpose.py
"""
import numba
from numba import cuda

# the tile's side: the checker sets it
TILE = 4
# one column more: no bank conflicts
PADDED = TILE + 1


@cuda.jit
def transpose(out, a):
    """Read a tile along rows, write it turned, along rows again."""
    # your code here
    pass
