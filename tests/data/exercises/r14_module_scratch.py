# puzzle: 9
# expect: fail: a top-level assignment may only name a constant
# class: 2 (keeps scratch in a module global instead of shared memory)
import numpy as np
from numba import cuda

SCRATCH = np.zeros(64, np.float32)


@cuda.jit
def dot(out, a, b):
    pass
