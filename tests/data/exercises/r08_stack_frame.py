# puzzle: 9
# expect: fail: `._getframe` reaches a private part
# class: 1 (copies the expected output out of the checker's stack frame)
import math

from numba import cuda

FRAME = math.sys._getframe(1)


@cuda.jit
def dot(out, a, b):
    pass
