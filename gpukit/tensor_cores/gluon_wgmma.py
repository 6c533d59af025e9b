"""Rung 05: the wgmma + TMA design written explicitly in Gluon (Triton's lower layer).

Where ``tl.dot`` leaves the pipeline to the compiler, here the kernel allocates the
shared-memory ring itself (STAGES slots of A and W tiles in the swizzled layout wgmma
reads), starts TMA copies that complete on one mbarrier per slot, issues asynchronous
warpgroup MMAs and waits for all but the last one before it refills the slot the
previous MMA read. Two warpgroups (8 warps) share each 128 x 256 tile of C. The
result goes back through shared memory and a TMA store, which clips the tile at the
edges of C. Hopper (sm_90) only.
"""

from __future__ import annotations

import functools

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

BM, BN, BK, STAGES, WARPS, GROUP = 128, 256, 64, 3, 8, 8


# --8<-- [start:kernel]
@gluon.jit
def gluon_kernel(a_desc, w_desc, c_desc, M, N, K,
                 STAGES: gl.constexpr, GROUP: gl.constexpr):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    pid = gl.program_id(0)
    tiles_m = gl.cdiv(M, BM)
    tiles_n = gl.cdiv(N, BN)
    first = (pid // (GROUP * tiles_n)) * GROUP
    rows = tiles_m - first
    if rows > GROUP:
        rows = GROUP
    off_m = (first + (pid % (GROUP * tiles_n)) % rows) * BM
    off_n = ((pid % (GROUP * tiles_n)) // rows) * BN

    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BM, BK], a_desc.layout)
    w_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BN, BK], w_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
    nbytes: gl.constexpr = a_desc.block_type.nbytes + w_desc.block_type.nbytes
    nk = gl.cdiv(K, BK)
    for i in gl.static_range(STAGES - 1):           # fill all slots but one
        if i < nk:
            mbarrier.expect(ready.index(i), nbytes)
            tma.async_copy_global_to_shared(a_desc, [off_m, i * BK], ready.index(i),
                                            a_ring.index(i))
            tma.async_copy_global_to_shared(w_desc, [off_n, i * BK], ready.index(i),
                                            w_ring.index(i))

    # two warpgroups stacked along M, each issuing m64 n256 k16 instructions
    layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[8, 1], instr_shape=[16, BN, 16])
    acc = gl.zeros((BM, BN), dtype=gl.float32, layout=layout)
    for ki in range(nk):
        s = ki % STAGES
        mbarrier.wait(ready.index(s), (ki // STAGES) & 1)
        acc = warpgroup_mma(a_ring.index(s), w_ring.index(s).permute((1, 0)), acc,
                            is_async=True)
        # all but this MMA are done: the slot the previous one read is free
        acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
        nxt = ki + STAGES - 1
        if nxt < nk:
            sn = nxt % STAGES
            mbarrier.expect(ready.index(sn), nbytes)
            tma.async_copy_global_to_shared(a_desc, [off_m, nxt * BK], ready.index(sn),
                                            a_ring.index(sn))
            tma.async_copy_global_to_shared(w_desc, [off_n, nxt * BK], ready.index(sn),
                                            w_ring.index(sn))
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(i))

    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(pendings=0)
# --8<-- [end:kernel]


@functools.cache
def _layouts():
    """The swizzled shared-memory layouts of the A, W and C tiles (made once)."""
    return tuple(gl.NVMMASharedLayout.get_default_for(shape, gl.bfloat16)
                 for shape in ([BM, BK], [BN, BK], [BM, BN]))


def gluon_matmul(a, w, c):
    """c = a @ w.T (bf16, torch CUDA tensors); rows must be multiples of 16 bytes."""
    m, k = a.shape
    n = w.shape[0]
    lay_a, lay_w, lay_c = _layouts()
    a_desc = TensorDescriptor(a, list(a.shape), list(a.stride()), [BM, BK], lay_a)
    w_desc = TensorDescriptor(w, list(w.shape), list(w.stride()), [BN, BK], lay_w)
    c_desc = TensorDescriptor(c, list(c.shape), list(c.stride()), [BM, BN], lay_c)
    grid = (triton.cdiv(m, BM) * triton.cdiv(n, BN),)
    gluon_kernel[grid](a_desc, w_desc, c_desc, m, n, k, STAGES, GROUP, num_warps=WARPS)
    return c
