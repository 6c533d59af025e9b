# puzzle: 1
# expect: fail: `exec` is not allowed
# class: 1 (runs hidden code)
from numba import cuda

exec("import os")


@cuda.jit
def map_add_ten(out, a):
    pass
