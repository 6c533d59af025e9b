# puzzle: 11
# expect: fail: race on out[0]
# class: 3 (block 0 stores its sum, the other blocks add theirs atomically)
import numba
from numba import cuda

TPB = 8


@cuda.jit
def total_sum(out, a):
    s = cuda.shared.array(TPB, numba.float32)
    i = cuda.grid(1)
    l = cuda.threadIdx.x
    v = numba.float32(0)
    if i < a.shape[0]:
        v = a[i]
    s[l] = v
    cuda.syncthreads()
    stride = TPB // 2
    while stride > 0:
        if l < stride:
            v += s[l + stride]
            s[l] = v
        cuda.syncthreads()
        stride //= 2
    if l == 0:
        if cuda.blockIdx.x == 0:
            out[0] = v
        else:
            cuda.atomic.add(out, 0, v)
