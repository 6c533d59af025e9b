"""Puzzle 17, 2-D stencil: the sum of each element and its four neighbours,
via a shared tile.

Write the kernel's body, then check it: gpukit exercises check 17 p17_stencil.py
"""
import numba
from numba import cuda

# the tile's side: the checker sets it
TILE = 4
# the tile with its border: a constant shape, computed out here
SIDE = TILE + 2


@cuda.jit
def stencil5(out, a):
    """Load the tile with a one-element border, then add five neighbours."""
    # your code here
    pass
