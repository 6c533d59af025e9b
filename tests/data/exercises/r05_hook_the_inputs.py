# puzzle: 6
# expect: fail: `__import__` is not allowed
# class: 1 (hooks the input maker and answers with NumPy on the host)
from numba import cuda

spec = __import__("gpukit.exercises.spec", fromlist=["rand"])


@cuda.jit
def blocks_add_ten(out, a):
    pass
