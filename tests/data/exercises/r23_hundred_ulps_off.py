# puzzle: 2
# expect: fail: ulps off
# class: 6 (an answer about 100 float32 ulps off)
import numba
from numba import cuda


@cuda.jit
def zip_add(out, a, b):
    i = cuda.threadIdx.x
    out[i] = (a[i] + b[i]) * numba.float32(1.0000119)
