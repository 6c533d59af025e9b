# puzzle: 19
# expect: fail: it may use `math` but not `np`
# class: 1 (the host launch() is the one place that runs as Python: it may not use NumPy)
import numpy as np
from numba import cuda


@cuda.jit
def saxpy(out, x, y, alpha):
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        out[i] = alpha * x[i] + y[i]


def launch(n, sms, max_threads_per_sm, max_threads_per_block):
    threads = int(np.minimum(256, max_threads_per_block))
    return min((n + threads - 1) // threads, sms * (max_threads_per_sm // threads)), threads
