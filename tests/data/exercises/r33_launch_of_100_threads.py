# puzzle: 19
# expect: fail: multiple of 32
# class: 6 (a launch whose blocks do not fill an SM)
from numba import cuda


@cuda.jit
def saxpy(out, x, y, alpha):
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        out[i] = alpha * x[i] + y[i]


def launch(n, sms, max_threads_per_sm, max_threads_per_block):
    return (n + 99) // 100, 100
