"""Puzzle 16, row softmax: one block per row, the maximum and the sum in one pass."""
import math

import numba
from numba import cuda

# threads per block, a power of two: the checker sets it
TPB = 8


@cuda.jit
def softmax_rows(out, a):
    """An online (max, sum) per thread, a tree over the block,
    then one pass to write."""
    sm = cuda.shared.array(TPB, numba.float32)
    ss = cuda.shared.array(TPB, numba.float32)
    r = cuda.blockIdx.x
    l = cuda.threadIdx.x
    cols = a.shape[1]
    m = numba.float32(-math.inf)
    s = numba.float32(0)
    for c in range(l, cols, TPB):
        x = a[r, c]
        if x > m:
            s = s * math.exp(m - x) + numba.float32(1)
            m = x
        else:
            s += math.exp(x - m)
    sm[l] = m
    ss[l] = s
    cuda.syncthreads()
    stride = TPB // 2
    while stride > 0:
        if l < stride:
            m2 = sm[l + stride]
            s2 = ss[l + stride]
            if m2 > m:
                s = s * math.exp(m - m2) + s2
                m = m2
            elif m2 > -math.inf:
                s += s2 * math.exp(m2 - m)
            sm[l] = m
            ss[l] = s
        cuda.syncthreads()
        stride //= 2
    m = sm[0]
    s = ss[0]
    for c in range(l, cols, TPB):
        out[r, c] = math.exp(a[r, c] - m) / s
