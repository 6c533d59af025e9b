"""Puzzle 12, prefix scan: an inclusive scan inside each block (Hillis-Steele)."""
import numba
from numba import cuda

# threads per block, a power of two: the checker sets it
TPB = 8


@cuda.jit
def block_scan(out, a):
    """At step d, thread l adds the value d places to its left."""
    s = cuda.shared.array(TPB, numba.float32)
    i = cuda.grid(1)
    l = cuda.threadIdx.x
    v = numba.float32(0)
    if i < a.shape[0]:
        v = a[i]
    s[l] = v
    cuda.syncthreads()
    d = 1
    while d < TPB:
        if l >= d:
            v += s[l - d]
        # everyone has read before anyone overwrites
        cuda.syncthreads()
        if l >= d:
            s[l] = v
        # everyone has written before the next read
        cuda.syncthreads()
        d *= 2
    if i < a.shape[0]:
        out[i] = v
