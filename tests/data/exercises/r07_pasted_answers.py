# puzzle: 1
# expect: fail: first wrong element
# class: 1 (answers pasted from a run with a chosen --seed)
from numba import cuda

ANSWER = (10.5, 9.25, 10.125, 9.875, 10.0, 10.75, 9.5, 10.25, 9.75, 10.5, 9.0, 10.0,
          10.5, 9.25, 10.125, 9.875, 10.0, 10.75, 9.5, 10.25, 9.75, 10.5, 9.0, 10.0,
          10.5, 9.25, 10.125, 9.875, 10.0, 10.75, 9.5, 10.25, 9.75, 10.5, 9.0, 10.0,
          10.5, 9.25, 10.125, 9.875)


@cuda.jit
def map_add_ten(out, a):
    i = cuda.threadIdx.x
    out[i] = ANSWER[i]
