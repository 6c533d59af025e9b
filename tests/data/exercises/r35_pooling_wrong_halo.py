# puzzle: 8
# expect: fail: first wrong element
# class: careless (the halo is read one element too far back)
import numba
from numba import cuda

TPB = 8
SIZE = TPB + 2


@cuda.jit
def pool3(out, a):
    s = cuda.shared.array(SIZE, numba.float32)
    i = cuda.grid(1)
    l = cuda.threadIdx.x
    if i < a.shape[0]:
        s[l + 2] = a[i]
    if l < 2:
        s[l] = a[i - 3] if i >= 3 else 0
    cuda.syncthreads()
    if i < a.shape[0]:
        out[i] = s[l] + s[l + 1] + s[l + 2]
