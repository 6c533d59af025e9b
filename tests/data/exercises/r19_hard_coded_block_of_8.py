# puzzle: 6
# expect: fail: trial
# class: 4 (assumes blocks of 8 threads)
from numba import cuda


@cuda.jit
def blocks_add_ten(out, a):
    i = cuda.blockIdx.x * 8 + cuda.threadIdx.x
    if i < a.shape[0]:
        out[i] = a[i] + 10
