# puzzle: 19
# expect: fail: reaches the running program's frames
# class: 1 (climbs from a generator's frame to the frames that called it)
from numba import cuda


@cuda.jit
def saxpy(out, x, y, alpha):
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        out[i] = alpha * x[i] + y[i]


def launch(n, sms, max_threads_per_sm, max_threads_per_block):
    gen = (k for k in range(1))
    caller = gen.gi_frame.f_back
    threads = min(256, max_threads_per_block)
    return min((n + threads - 1) // threads, sms * (max_threads_per_sm // threads)), threads
