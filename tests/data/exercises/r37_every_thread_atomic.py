# puzzle: 11
# expect: fail: use shared memory
# class: lazy (every thread adds its element atomically: no block reduction)
from numba import cuda


@cuda.jit
def total_sum(out, a):
    i = cuda.grid(1)
    if i < a.shape[0]:
        cuda.atomic.add(out, 0, a[i])
