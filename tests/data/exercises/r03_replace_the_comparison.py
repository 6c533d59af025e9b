# puzzle: 2
# expect: fail: `gpukit.exercises.grader` cannot be imported
# class: 1 (replaces the checker's comparison)
import gpukit.exercises.grader as g
from numba import cuda

g.first_wrong = lambda *args: None


@cuda.jit
def zip_add(out, a, b):
    pass
