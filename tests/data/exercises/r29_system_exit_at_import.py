# puzzle: 3
# expect: fail: `Raise` statement is not allowed at the top level
# class: 8 (SystemExit(0) at import: refused with the reason)
from numba import cuda

raise SystemExit(0)


@cuda.jit
def guard_add_ten(out, a):
    pass
