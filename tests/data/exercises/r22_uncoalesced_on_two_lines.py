# puzzle: 18
# expect: fail: is not coalesced
# class: 5 (the row-from-x mapping, even and odd threads on different lines)
from numba import cuda


@cuda.jit
def add_bias(out, a, bias):
    r, c = cuda.grid(2)
    if r < a.shape[0] and c < a.shape[1]:
        if cuda.threadIdx.x % 2 == 0:
            out[r, c] = a[r, c] + bias[c]
        else:
            out[r, c] = a[r, c] + bias[c]
