# puzzle: 19
# expect: fail: leads out of the modules a kernel needs
# class: 7 (a host function writes the progress file with NumPy)
import numpy as np
from numba import cuda


@cuda.jit
def saxpy(out, x, y, alpha):
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        out[i] = alpha * x[i] + y[i]


def launch(n, sms, max_threads_per_sm, max_threads_per_block):
    np.savetxt("exercises.json", [0])
    threads = min(256, max_threads_per_block)
    return min((n + threads - 1) // threads, sms * (max_threads_per_sm // threads)), threads
