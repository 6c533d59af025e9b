# puzzle: 19
# expect: fail: leads out of the modules a kernel needs
# class: 1 (a host function reaches `os` through an attribute of numba.cuda)
from numba import cuda


@cuda.jit
def saxpy(out, x, y, alpha):
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        out[i] = alpha * x[i] + y[i]


def launch(n, sms, max_threads_per_sm, max_threads_per_block):
    cuda.os.system("true")
    threads = min(256, max_threads_per_block)
    return min((n + threads - 1) // threads, sms * (max_threads_per_sm // threads)), threads
