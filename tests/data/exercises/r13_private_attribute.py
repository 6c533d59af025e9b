# puzzle: 1
# expect: fail: assigning to an attribute
# class: 2 (reaches through the checker's wrapper to the NumPy array)
from numba import cuda


@cuda.jit
def map_add_ten(out, a):
    if cuda.threadIdx.x == 0:
        out._a[:] = a._a + 10
