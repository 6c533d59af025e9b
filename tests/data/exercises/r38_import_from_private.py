# puzzle: 7
# expect: fail: `numba.cuda.simulator` cannot be imported
# class: 1 (imports the simulator to change what a barrier does)
from numba import cuda
from numba.cuda.simulator import kernel

TPB = 8


@cuda.jit
def swap_pairs(out, a):
    pass
