# puzzle: 1
# expect: fail: `sys` cannot be imported
# class: 1 (reads the seed from the command line and replays the inputs)
import sys

from numba import cuda

SEED = int(sys.argv[-1])


@cuda.jit
def map_add_ten(out, a):
    pass
