# puzzle: 4
# expect: fail: threadIdx.x picks the column
# class: 6 (the right answer with x picking the row)
from numba import cuda


@cuda.jit
def map2d_add_ten(out, a):
    r = cuda.threadIdx.x
    c = cuda.threadIdx.y
    if r < a.shape[0] and c < a.shape[1]:
        out[r, c] = a[r, c] + 10
