# puzzle: 16
# expect: fail: first wrong element
# class: 6 (exp of the raw values: overflows for large inputs)
import math

import numba
from numba import cuda

TPB = 8


@cuda.jit
def softmax_rows(out, a):
    ss = cuda.shared.array(TPB, numba.float32)
    r = cuda.blockIdx.x
    l = cuda.threadIdx.x
    cols = a.shape[1]
    s = numba.float32(0)
    for c in range(l, cols, TPB):
        s += math.exp(a[r, c])
    ss[l] = s
    cuda.syncthreads()
    total = numba.float32(0)
    for k in range(TPB):
        total += ss[k]
    for c in range(l, cols, TPB):
        out[r, c] = math.exp(a[r, c]) / total
