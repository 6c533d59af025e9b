# puzzle: 1
# expect: fail: `open` is not allowed
# class: 7 (writes "20 of 20 solved" into the progress file at import)
from numba import cuda

open("/tmp/progress.json", "w").write('{"version": 1, "puzzles": {}}')


@cuda.jit
def map_add_ten(out, a):
    pass
