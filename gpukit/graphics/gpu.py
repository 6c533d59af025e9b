"""The GPU kernels: one thread per pixel, the tracer of :mod:`.trace` compiled for CUDA.

Three kernels share the per-pixel code: the plain one (spheres read from global memory, where
every thread of a warp reads the same sphere at once), one that first stages the spheres in
shared memory, and one compiled from the leaky hit test (float64 creeping in).
"""

from __future__ import annotations

import numba
from numba import cuda

from .meta import MAX_SHARED
from .trace import build

#: threads per block (x, y): 16 x 8 pixels, neighbours trace similar paths
BLOCK = (16, 8)

_shade, _nearest, _, _first_material = build(cuda.jit(device=True))
_shade_leaky, _nearest_leaky, _, _ = build(cuda.jit(device=True), leak=True)
_shade_bvh, _nearest_bvh, _, _ = build(cuda.jit(device=True), bvh=True)


# --8<-- [start:kernel]
@cuda.jit
def render_kernel(out, segs, spp, seed, cam, sx, sy, sz, sr, mat, ar, ag, ab, fz, nodes,
                  max_depth):
    px, py = cuda.grid(2)                            # one thread per pixel
    height, width = out.shape[0], out.shape[1]
    if px < width and py < height:
        r, g, b, n = _shade(px, py, spp, seed, width, height, cam, sx, sy, sz, sr, mat,
                            ar, ag, ab, fz, nodes, max_depth)
        out[py, px, 0], out[py, px, 1], out[py, px, 2] = r, g, b
        segs[py, px] = n
# --8<-- [end:kernel]


# --8<-- [start:shared]
@cuda.jit
def render_kernel_shared(out, segs, spp, seed, cam, sx, sy, sz, sr, mat, ar, ag, ab, fz, nodes, max_depth):
    # the block copies the spheres' geometry into shared memory once, then every hit test
    # reads it from there instead of through the L1 cache
    bx = cuda.shared.array(MAX_SHARED, numba.float32)
    by = cuda.shared.array(MAX_SHARED, numba.float32)
    bz = cuda.shared.array(MAX_SHARED, numba.float32)
    br = cuda.shared.array(MAX_SHARED, numba.float32)
    n = sx.shape[0]
    tid = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    for i in range(tid, n, cuda.blockDim.x * cuda.blockDim.y):
        bx[i], by[i], bz[i], br[i] = sx[i], sy[i], sz[i], sr[i]
    cuda.syncthreads()                               # every thread, before any returns
    px, py = cuda.grid(2)
    height, width = out.shape[0], out.shape[1]
    if px < width and py < height:
        r, g, b, k = _shade(px, py, spp, seed, width, height, cam, bx[:n], by[:n], bz[:n], br[:n],
                            mat, ar, ag, ab, fz, nodes, max_depth)
        out[py, px, 0], out[py, px, 1], out[py, px, 2] = r, g, b
        segs[py, px] = k
# --8<-- [end:shared]


@cuda.jit
def render_kernel_leaky(out, segs, spp, seed, cam, sx, sy, sz, sr, mat, ar, ag, ab, fz, nodes, max_depth):
    px, py = cuda.grid(2)
    height, width = out.shape[0], out.shape[1]
    if px < width and py < height:
        r, g, b, n = _shade_leaky(px, py, spp, seed, width, height, cam, sx, sy, sz, sr, mat,
                                  ar, ag, ab, fz, nodes, max_depth)
        out[py, px, 0], out[py, px, 1], out[py, px, 2] = r, g, b
        segs[py, px] = n


@cuda.jit
def render_kernel_bvh(out, segs, spp, seed, cam, sx, sy, sz, sr, mat, ar, ag, ab, fz, nodes, max_depth):
    px, py = cuda.grid(2)
    height, width = out.shape[0], out.shape[1]
    if px < width and py < height:
        r, g, b, n = _shade_bvh(px, py, spp, seed, width, height, cam, sx, sy, sz, sr, mat,
                                ar, ag, ab, fz, nodes, max_depth)
        out[py, px, 0], out[py, px, 1], out[py, px, 2] = r, g, b
        segs[py, px] = n


# --8<-- [start:sorted]
@cuda.jit
def first_hit_kernel(mats, counts, seed, cam, sx, sy, sz, sr, mat, nodes,
                     width, height):
    # pass 1: what each pixel's camera ray hits
    i = cuda.grid(1)
    if i < width * height:
        m = _first_material(i % width, i // width, seed, width, height, cam,
                            sx, sy, sz, sr, mat, nodes)
        mats[i] = m
        cuda.atomic.add(counts, m, 1)


@cuda.jit
def bucket_kernel(order, cursor, mats, counts):
    # pass 2: pixels grouped by that material
    i = cuda.grid(1)
    if i < mats.shape[0]:
        m = mats[i]
        start = 0
        for k in range(m):
            start += counts[k]
        order[start + cuda.atomic.add(cursor, m, 1)] = i


@cuda.jit
def render_kernel_sorted(out, segs, order, spp, seed, cam,
                         sx, sy, sz, sr, mat, ar, ag, ab, fz, nodes, max_depth):
    # pass 3: neighbouring threads, same material
    t = cuda.grid(1)
    if t < order.shape[0]:
        height, width = out.shape[0], out.shape[1]
        i = order[t]
        px, py = i % width, i // width
        r, g, b, n = _shade(px, py, spp, seed, width, height, cam, sx, sy, sz, sr, mat,
                            ar, ag, ab, fz, nodes, max_depth)
        out[py, px, 0], out[py, px, 1], out[py, px, 2] = r, g, b
        segs[py, px] = n
# --8<-- [end:sorted]


#: the one-launch kernels by the names ``meta.VARIANTS`` gives them ("sorted" launches three)
KERNELS = {"plain": render_kernel, "shared": render_kernel_shared, "leaky": render_kernel_leaky,
           "bvh": render_kernel_bvh}


@cuda.jit
def zero_kernel(a, b):
    i = cuda.grid(1)
    if i < a.shape[0]:
        a[i] = 0
        b[i] = 0


def grid_for(width: int, height: int) -> tuple[int, int]:
    return (width + BLOCK[0] - 1) // BLOCK[0], (height + BLOCK[1] - 1) // BLOCK[1]


class DeviceScene:
    """A scene and camera copied to the GPU once, with output buffers for one image size."""

    def __init__(self, scene, width: int, height: int):
        import numpy as np

        from .scene import camera
        self.width, self.height, self.n = width, height, scene.n
        self.has_bvh = scene.nodes is not None
        self.arrays = [cuda.to_device(a) for a in scene.arrays()]
        self.cam = cuda.to_device(camera(scene, width, height))
        self.out = cuda.device_array((height, width, 3), dtype=np.float32)
        self.segs = cuda.device_array((height, width), dtype=np.int64)

    def launch(self, spp: int, max_depth: int, seed: int, variant: str = "plain") -> None:
        """Start the kernel (asynchronously); the image lands in ``self.out``."""
        if variant == "shared" and self.n > MAX_SHARED:
            raise ValueError(f"the shared-memory kernel holds at most {MAX_SHARED} spheres, not {self.n}")
        if variant == "bvh" and not self.has_bvh:
            raise ValueError("the BVH kernel needs a scene from bvh.build_bvh")
        if variant == "sorted":
            self._launch_sorted(spp, max_depth, seed)
            return
        KERNELS[variant][grid_for(self.width, self.height), BLOCK](
            self.out, self.segs, spp, seed, self.cam, *self.arrays, max_depth)

    def _launch_sorted(self, spp: int, max_depth: int, seed: int) -> None:
        """Three kernels: first hits, pixels grouped by material, then the paths in that order."""
        import numpy as np
        n = self.width * self.height
        if not hasattr(self, "order"):
            self.mats = cuda.device_array(n, dtype=np.int32)
            self.order = cuda.device_array(n, dtype=np.int32)
            self.counts = cuda.device_array(4, dtype=np.int32)
            self.cursor = cuda.device_array(4, dtype=np.int32)
        zero_kernel[1, 4](self.counts, self.cursor)
        blocks = (n + 127) // 128
        sx, sy, sz, sr, mat = self.arrays[:5]
        first_hit_kernel[blocks, 128](self.mats, self.counts, seed, self.cam, sx, sy, sz, sr, mat,
                                      self.arrays[9], self.width, self.height)
        bucket_kernel[blocks, 128](self.order, self.cursor, self.mats, self.counts)
        render_kernel_sorted[blocks, 128](self.out, self.segs, self.order, spp, seed, self.cam,
                                          *self.arrays, max_depth)
