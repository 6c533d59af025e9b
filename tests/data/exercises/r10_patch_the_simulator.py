# puzzle: 10
# expect: fail: assigning to an attribute
# class: 1 (replaces the simulator's barrier with one that counts nothing)
import numba
from numba import cuda

numba.cuda.syncthreads = print


@cuda.jit
def block_sum(out, a):
    pass
