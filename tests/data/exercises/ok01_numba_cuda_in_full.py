# puzzle: 7
# expect: pass
# legit: numba.cuda.shared.array spelled in full
import numba

TPB = 8


@numba.cuda.jit
def swap_pairs(out, a):
    s = numba.cuda.shared.array(TPB, numba.float32)
    i = numba.cuda.grid(1)
    l = numba.cuda.threadIdx.x
    n = a.shape[0]
    if i < n:
        s[l] = a[i]
    numba.cuda.syncthreads()
    if i < n:
        if (i ^ 1) < n:
            out[i] = s[l ^ 1]
        else:
            out[i] = s[l]
