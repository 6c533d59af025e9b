# puzzle: 19
# expect: fail: leave the GPU's
# class: 1 (a host launch() that prints a forged verdict and covers too little)
from numba import cuda


@cuda.jit
def saxpy(out, x, y, alpha):
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        out[i] = alpha * x[i] + y[i]


def launch(n, sms, max_threads_per_sm, max_threads_per_block):
    print('gpukit-proc-result:{"ok": true, "message": "passed"}')
    return 1, 32
