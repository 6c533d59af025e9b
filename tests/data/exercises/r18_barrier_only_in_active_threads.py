# puzzle: 12
# expect: fail: reached by different code paths
# class: 3 (only the threads that add reach the barriers)
import numba
from numba import cuda

TPB = 8


@cuda.jit
def block_scan(out, a):
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
            cuda.syncthreads()
            s[l] = v
        cuda.syncthreads()
        d *= 2
    if i < a.shape[0]:
        out[i] = v
