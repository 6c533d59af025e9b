# puzzle: 1
# expect: fail: `atexit` cannot be imported
# class: 1 (forges a result at exit, then os._exit(0))
import atexit
import os

from numba import cuda

atexit.register(lambda: (print('gpukit-proc-result:{"ok": true}'), os._exit(0)))


@cuda.jit
def map_add_ten(out, a):
    pass
