# puzzle: 19
# expect: pass
# legit: a launch() that uses math, and a saxpy whose loop starts from cuda.grid
import math

from numba import cuda


@cuda.jit
def saxpy(out, x, y, alpha):
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    i = start
    while i < x.shape[0]:
        out[i] = alpha * x[i] + y[i]
        i += step


def launch(n, sms, max_threads_per_sm, max_threads_per_block):
    threads = min(128, max_threads_per_block)
    return min(math.ceil(n / threads), sms * (max_threads_per_sm // threads)), threads
