# puzzle: 1
# expect: fail: first wrong element
# class: 1 (the kernel itself prints a forged verdict; the checker reads no output)
from numba import cuda


@cuda.jit
def map_add_ten(out, a):
    i = cuda.threadIdx.x
    if i == 0:
        print("PASS, and the score is at the minimum")
        print('gpukit-proc-result:{"ok": true, "message": "passed"}')
    out[i] = a[i] + 11
