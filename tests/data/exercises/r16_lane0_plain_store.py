# puzzle: 13
# expect: fail: race on hist
# class: 3 (lane 0 of each warp adds with a plain store, the other lanes atomically)
from numba import cuda


@cuda.jit
def histogram(hist, values):
    i = cuda.grid(1)
    if i < values.shape[0]:
        v = values[i]
        if cuda.threadIdx.x % 32 == 0:
            hist[v] = hist[v] + 1
        else:
            cuda.atomic.add(hist, v, 1)
