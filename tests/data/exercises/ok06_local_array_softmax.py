# puzzle: 16
# expect: pass
# legit: each thread keeps its columns in cuda.local and reads the input once
import math

import numba
from numba import cuda

TPB = 8
KEEP = 32


@cuda.jit
def softmax_rows(out, a):
    sm = cuda.shared.array(TPB, numba.float32)
    ss = cuda.shared.array(TPB, numba.float32)
    mine = cuda.local.array(KEEP, numba.float32)
    r = cuda.blockIdx.x
    l = cuda.threadIdx.x
    cols = a.shape[1]
    m = numba.float32(-math.inf)
    k = 0
    for c in range(l, cols, TPB):
        x = a[r, c]
        mine[k] = x
        k += 1
        m = max(m, x)
    sm[l] = m
    cuda.syncthreads()
    stride = TPB // 2
    while stride > 0:
        if l < stride:
            m = max(m, sm[l + stride])
            sm[l] = m
        cuda.syncthreads()
        stride //= 2
    m = sm[0]
    s = numba.float32(0)
    for j in range(k):
        s += math.exp(mine[j] - m)
    cuda.syncthreads()
    ss[l] = s
    cuda.syncthreads()
    stride = TPB // 2
    while stride > 0:
        if l < stride:
            s += ss[l + stride]
            ss[l] = s
        cuda.syncthreads()
        stride //= 2
    s = ss[0]
    k = 0
    for c in range(l, cols, TPB):
        out[r, c] = math.exp(mine[k] - m) / s
        k += 1
