# puzzle: 15
# expect: fail: cannot be imported
# class: 1 (patches the access counters to report no reads)
from gpukit.exercises import sim
from numba import cuda

sim.Stats.max = lambda self: {"gr": 0, "gw": 1, "sh": 0}


@cuda.jit
def matmul(c, a, b):
    pass
