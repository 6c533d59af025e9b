# puzzle: 13
# expect: fail: race on hist
# class: 3 (careless: a plain read-modify-write of a shared bin)
from numba import cuda


@cuda.jit
def histogram(hist, values):
    i = cuda.grid(1)
    if i < values.shape[0]:
        hist[values[i]] += 1
