# puzzle: 3
# expect: fail: `getattr` is not allowed
# class: 1/2 (reaches the raw array through getattr)
from numba import cuda


@cuda.jit
def guard_add_ten(out, a):
    raw = getattr(a, "_" + "a")
    raw += 10
