# puzzle: 1
# expect: fail: does not compile for a GPU
# class: 2 (NumPy on the raw arrays inside the kernel)
import numpy as np
from numba import cuda


@cuda.jit
def map_add_ten(out, a):
    if cuda.threadIdx.x == 0:
        np.add(a, np.float32(10), out)
