# puzzle: 10
# expect: fail: reached by different code paths
# class: 3 (a barrier in each branch of a divergent if: two different barriers)
import numba
from numba import cuda

TPB = 8


@cuda.jit
def block_sum(out, a):
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
        else:
            cuda.syncthreads()
        stride //= 2
    if l == 0:
        out[cuda.blockIdx.x] = v
