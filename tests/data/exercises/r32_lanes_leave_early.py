# puzzle: 20
# expect: fail: returned before the cuda.shfl_down_sync
# class: 6 (careless: lanes past the end return before the shuffles)
import numba
from numba import cuda


@cuda.jit
def warp_sum(out, a):
    i = cuda.grid(1)
    if i >= a.shape[0]:
        return
    v = a[i]
    k = 16
    while k > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, k)
        k //= 2
    if cuda.threadIdx.x % 32 == 0:
        out[i // 32] = v
