# puzzle: 19
# expect: fail: may only be used as
# class: 1 (hands a module to a function, which could walk it anywhere)
import numba
from numba import cuda


@cuda.jit
def saxpy(out, x, y, alpha):
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        out[i] = alpha * x[i] + y[i]


def walk(m, name):
    return m


def launch(n, sms, max_threads_per_sm, max_threads_per_block):
    walk(numba, "core")
    threads = min(256, max_threads_per_block)
    return min((n + threads - 1) // threads, sms * (max_threads_per_sm // threads)), threads
