# puzzle: 2
# expect: pass
# legit: a device function, a constant, and a test of one's own under __main__
import numpy as np
from numba import cuda

ONE = 1.0


@cuda.jit(device=True)
def add(x, y):
    return x + y


@cuda.jit
def zip_add(out, a, b):
    i = cuda.threadIdx.x
    out[i] = add(a[i], b[i])


if __name__ == "__main__":
    a = np.ones(8, np.float32)
    out = np.zeros_like(a)
    zip_add[1, 8](out, a, a)
    print(out)
