# puzzle: 12
# expect: pass
# legit: a double-buffered Hillis-Steele scan (one barrier per step)
import numba
from numba import cuda

TPB = 8
TWO = 2 * TPB


@cuda.jit
def block_scan(out, a):
    s = cuda.shared.array(TWO, numba.float32)
    i = cuda.grid(1)
    l = cuda.threadIdx.x
    v = numba.float32(0)
    if i < a.shape[0]:
        v = a[i]
    src = 0
    s[l] = v
    cuda.syncthreads()
    d = 1
    while d < TPB:
        dst = TPB - src
        if l >= d:
            v = s[src + l] + s[src + l - d]
        else:
            v = s[src + l]
        s[dst + l] = v
        cuda.syncthreads()
        src = dst
        d *= 2
    if i < a.shape[0]:
        out[i] = v
