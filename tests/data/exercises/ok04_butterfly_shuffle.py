# puzzle: 20
# expect: pass
# legit: a butterfly (XOR) shuffle: every lane ends with the warp's sum
import numba
from numba import cuda


@cuda.jit
def warp_sum(out, a):
    i = cuda.grid(1)
    v = numba.float32(0)
    if i < a.shape[0]:
        v = a[i]
    k = 16
    while k > 0:
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, k)
        k //= 2
    if cuda.threadIdx.x % 32 == 0 and i < a.shape[0]:
        out[i // 32] = v
