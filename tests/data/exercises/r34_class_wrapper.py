# puzzle: 5
# expect: fail: classes are not allowed
# class: 1 (an object that pretends to be an array)
from numba import cuda


class Answer:
    pass


@cuda.jit
def broadcast_add(out, col, row):
    pass
