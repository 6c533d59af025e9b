"""Puzzle 20, warp shuffles: out[w] = the sum of warp w's 32 elements,
without shared memory.
"""
import numba
from numba import cuda


@cuda.jit
def warp_sum(out, a):
    """Halve the distance at each step; lane 0 ends with the warp's sum."""
    i = cuda.grid(1)
    v = numba.float32(0)
    if i < a.shape[0]:
        v = a[i]
    k = 16
    # every lane shuffles, even past the end of a
    while k > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, k)
        k //= 2
    if cuda.threadIdx.x % 32 == 0 and i < a.shape[0]:
        out[i // 32] = v
