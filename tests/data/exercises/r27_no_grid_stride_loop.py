# puzzle: 19
# expect: fail: never written
# class: 6 (one element per thread; its launch always covers n)
from numba import cuda


@cuda.jit
def saxpy(out, x, y, alpha):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = alpha * x[i] + y[i]


def launch(n, sms, max_threads_per_sm, max_threads_per_block):
    threads = min(256, max_threads_per_block)
    blocks = min((n + threads - 1) // threads, sms * (max_threads_per_sm // threads))
    return max(blocks, (n + threads - 1) // threads), threads
