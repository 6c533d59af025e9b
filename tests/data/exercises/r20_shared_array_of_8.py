# puzzle: 7
# expect: fail: trial
# class: 4 (a shared array of 8 elements whatever TPB is)
import numba
from numba import cuda


@cuda.jit
def swap_pairs(out, a):
    s = cuda.shared.array(8, numba.float32)
    i = cuda.grid(1)
    l = cuda.threadIdx.x
    n = a.shape[0]
    if i < n:
        s[l] = a[i]
    cuda.syncthreads()
    if i < n:
        if (i ^ 1) < n:
            out[i] = s[l ^ 1]
        else:
            out[i] = s[l]
