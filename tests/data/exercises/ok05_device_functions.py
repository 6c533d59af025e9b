# puzzle: 10
# expect: pass
# legit: the tree step in a device function, with the barrier inside it
import numba
from numba import cuda

TPB = 8


@cuda.jit(device=True)
def step(s, l, v, stride):
    if l < stride:
        v += s[l + stride]
        s[l] = v
    cuda.syncthreads()
    return v


@cuda.jit
def block_sum(out, a):
    s = cuda.shared.array(TPB, numba.float32)
    i = cuda.grid(1)
    l = cuda.threadIdx.x
    v = numba.float32(0)
    if i < a.shape[0]:
        v = a[i]
    s[l] = v
    cuda.syncthreads()
    stride = TPB // 2
    while stride > 0:
        v = step(s, l, v, stride)
        stride //= 2
    if l == 0:
        out[cuda.blockIdx.x] = v
