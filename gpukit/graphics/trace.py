"""One path tracer, compiled twice: for the CPU (numba ``njit``) and for the GPU (``cuda.jit``).

The per-pixel code is written once as plain Python and handed to a compiler by
:func:`build`: ``build(numba.njit)`` gives the CPU functions, ``build(cuda.jit(device=True))``
the GPU device functions, so both backends run the same arithmetic in the same order and the same
random numbers. Everything is float32: constants are ``float32`` globals, never Python literals
(a ``0.5 *`` next to a float32 promotes the whole expression to float64).

Random numbers: a PCG hash (Jarzynski and Olano, "Hash Functions for GPU Rendering", JCGT 2020,
https://jcgt.org/published/0009/03/02/) of the seed, the sample number and the pixel index starts
each path; each draw hashes the state again. The 32-bit arithmetic is done in int64 and masked,
which numba and the simulator compute identically.
"""

from __future__ import annotations

import math
import re

import numba
import numpy as np

f32 = numba.float32
i32 = numba.int32
i64 = numba.int64
ZERO, HALF, ONE, TWO = (np.float32(v) for v in (0.0, 0.5, 1.0, 2.0))
TMIN = np.float32(1e-3)                 # ignore hits closer than this (the surface just left)
INF = np.float32(3.0e38)
INV24 = np.float32(1.0 / 16777216.0)    # 2**-24: 24 random bits -> [0, 1)
TWO_PI = np.float32(2.0 * math.pi)
THIRD = np.float32(1.0 / 3.0)
SKY_G, SKY_R = np.float32(0.7), np.float32(0.5)
TINY = np.float32(1e-8)
BIG = np.float32(1e30)                  # stands in for 1/0 in the slab test
MASK = 0xFFFFFFFF
DIFFUSE, METAL, GLASS = 0, 1, 2


def build(jit, leak: bool = False, bvh: bool = False):
    """Compile the tracer with ``jit``; return ``shade_pixel``, the hit test, ``pcg`` and
    ``first_material``.

    ``leak=True`` swaps in the textbook quadratic with Python literals (``2.0 * a``), which
    silently promotes the hit test, and everything computed from its distance, to float64.
    ``bvh=True`` walks the bounding volume hierarchy of :mod:`.bvh` instead of testing every sphere.
    """

    @jit
    def pcg(x):
        s = (x * 747796405 + 2891336453) & MASK
        w = (((s >> ((s >> 28) + 4)) ^ s) * 277803737) & MASK
        return (w >> 22) ^ w

    @jit
    def uniform(state):
        s = pcg(state)
        return f32(s >> 8) * INV24, s            # 24 bits: exact in float32, in [0, 1)

    @jit
    def unit_vector(state):
        a, state = uniform(state)
        b, state = uniform(state)
        z = TWO * a - ONE                        # uniform on the sphere: z uniform, angle uniform
        r = math.sqrt(max(ONE - z * z, ZERO))
        phi = TWO_PI * b
        return r * math.cos(phi), r * math.sin(phi), z, state

    # --8<-- [start:nearest]
    @jit
    def nearest(ox, oy, oz, dx, dy, dz, sx, sy, sz, sr, nodes, last):
        """The closest sphere hit by the ray o + t d (d of length 1), brute force over
        all (``nodes``, the BVH, is not used); ``last``: the sphere o lies on, or -1."""
        best, hit = INF, -1
        for i in range(i32(sx.shape[0])):
            cx, cy, cz = sx[i] - ox, sy[i] - oy, sz[i] - oz
            # 17 FLOPs a test: 3 subtractions, 2 dot products (5 each), r*r and its
            # subtraction, the discriminant (2)
            b = cx * dx + cy * dy + cz * dz
            c = cx * cx + cy * cy + cz * cz - sr[i] * sr[i]
            disc = b * b - c
            if i == last:                            # o is on it: c is 0 exactly
                disc = b * b
            if disc > ZERO:
                root = math.sqrt(disc)
                t = b - root
                if t < TMIN:
                    # inside the sphere (glass): the far side
                    t = b + root
                if t > TMIN and t < best:
                    best, hit = t, i
        return best, hit
    # --8<-- [end:nearest]

    # --8<-- [start:leak]
    @jit
    def nearest_leaky(ox, oy, oz, dx, dy, dz, sx, sy, sz, sr, nodes, last):
        """The same test as the textbook writes it: a t^2 + b t + c = 0. Two Python
        float literals (4.0 and 2.0) make disc, t and best float64, with no warning."""
        best, hit = INF, -1
        for i in range(i32(sx.shape[0])):
            cx, cy, cz = ox - sx[i], oy - sy[i], oz - sz[i]
            a = dx * dx + dy * dy + dz * dz
            b = TWO * (cx * dx + cy * dy + cz * dz)
            c = cx * cx + cy * cy + cz * cz - sr[i] * sr[i]
            disc = b * b - 4.0 * a * c
            if i == last:
                disc = b * b
            if disc > 0:
                t = (-b - math.sqrt(disc)) / (2.0 * a)
                if t < TMIN:
                    t = (-b + math.sqrt(disc)) / (2.0 * a)
                if t > TMIN and t < best:
                    best, hit = t, i
        return best, hit
    # --8<-- [end:leak]

    # --8<-- [start:bvh]
    @jit
    def nearest_bvh(ox, oy, oz, dx, dy, dz, sx, sy, sz, sr, nodes, last):
        """The same answer as ``nearest``, visiting only the boxes the ray enters.
        Nodes are in depth-first order; a node's column 8 is where to go next when the
        ray misses its box or after its spheres are tested (a "skip" pointer), so the
        walk needs no stack."""
        # inverse direction for the slab test
        ix = ONE / dx if dx != ZERO else BIG
        iy = ONE / dy if dy != ZERO else BIG
        iz = ONE / dz if dz != ZERO else BIG
        best, hit = INF, -1
        node, n = 0, i32(nodes.shape[0])
        while node < n:
            ax, bx = (nodes[node, 0] - ox) * ix, (nodes[node, 3] - ox) * ix
            ay, by = (nodes[node, 1] - oy) * iy, (nodes[node, 4] - oy) * iy
            az, bz = (nodes[node, 2] - oz) * iz, (nodes[node, 5] - oz) * iz
            near = max(max(min(ax, bx), min(ay, by)), max(min(az, bz), TMIN))
            far = min(min(max(ax, bx), max(ay, by)), min(max(az, bz), best))
            count = i32(nodes[node, 7])
            # a leaf the ray enters: test its spheres
            if near <= far and count > 0:
                first = i32(nodes[node, 6])
                for i in range(first, first + count):
                    cx, cy, cz = sx[i] - ox, sy[i] - oy, sz[i] - oz
                    b = cx * dx + cy * dy + cz * dz
                    c = cx * cx + cy * cy + cz * cz - sr[i] * sr[i]
                    disc = b * b - c
                    if i == last:
                        disc = b * b
                    if disc > ZERO:
                        root = math.sqrt(disc)
                        t = b - root
                        if t < TMIN:
                            t = b + root
                        if t > TMIN and t < best:
                            best, hit = t, i
                node = i32(nodes[node, 8])
            elif near <= far:
                # an inner box the ray enters: go down
                node += 1
            else:
                # missed the box: skip its subtree
                node = i32(nodes[node, 8])
        return best, hit
    # --8<-- [end:bvh]

    hit_test = nearest_bvh if bvh else (nearest_leaky if leak else nearest)

    @jit
    def camera_ray(px, py, s, seed, width, height, cam):
        """The ray of sample s of pixel (px, py): jittered in the pixel, from a point on the lens
        (defocus blur), direction of length 1; and the random state that follows."""
        state = pcg(pcg(pcg(i64(seed) & MASK) ^ s) ^ (i64(py) * width + px))
        r1, state = uniform(state)
        r2, state = uniform(state)
        r3, state = uniform(state)
        r4, state = uniform(state)
        u = (f32(px) + r1) / f32(width)                  # where in the pixel, jittered
        v = (f32(height - 1 - py) + r2) / f32(height)    # row 0 is the top of the image
        rad = cam[18] * math.sqrt(r3)                    # a point on the lens
        lx, ly = rad * math.cos(TWO_PI * r4), rad * math.sin(TWO_PI * r4)
        ox = cam[0] + lx * cam[12] + ly * cam[15]
        oy = cam[1] + lx * cam[13] + ly * cam[16]
        oz = cam[2] + lx * cam[14] + ly * cam[17]
        dx = cam[3] + u * cam[6] + v * cam[9] - ox
        dy = cam[4] + u * cam[7] + v * cam[10] - oy
        dz = cam[5] + u * cam[8] + v * cam[11] - oz
        k = ONE / math.sqrt(dx * dx + dy * dy + dz * dz)
        return ox, oy, oz, dx * k, dy * k, dz * k, state

    @jit
    def first_material(px, py, seed, width, height, cam, sx, sy, sz, sr, mat, nodes):
        """What the first sample of a pixel sees first: a material code, or 3 for the sky."""
        ox, oy, oz, dx, dy, dz, state = camera_ray(px, py, 0, seed, width, height, cam)
        t, i = hit_test(ox, oy, oz, dx, dy, dz, sx, sy, sz, sr, nodes, -1)
        return 3 if i < 0 else mat[i]

    # --8<-- [start:path]
    @jit
    def trace_path(px, py, s, seed, width, height, cam,
                   sx, sy, sz, sr, mat, ar, ag, ab, fz, nodes, max_depth):
        """One sample of one pixel: follow a path of up to max_depth segments.
        Returns the radiance it carries back (r, g, b) and the segments traced."""
        ox, oy, oz, dx, dy, dz, state = camera_ray(px, py, s, seed, width, height, cam)
        # what the path still lets through
        tr, tg, tb = ONE, ONE, ONE
        segments = 0
        last = -1                                        # the sphere the ray starts on
        # bounces as a loop, no recursion
        for _ in range(max_depth):
            t, i = hit_test(ox, oy, oz, dx, dy, dz, sx, sy, sz, sr, nodes, last)
            segments += 1
            last = i
            # the sky: a white-to-blue gradient
            if i < 0:
                w = HALF * (dy + ONE)
                return (tr * (ONE - w + w * SKY_R), tg * (ONE - w + w * SKY_G), tb,
                        segments)
            ox, oy, oz = ox + t * dx, oy + t * dy, oz + t * dz
            k = ONE / sr[i]
            nx, ny, nz = (ox - sx[i]) * k, (oy - sy[i]) * k, (oz - sz[i]) * k
            m = mat[i]
            # Lambertian: normal + random unit vector
            if m == DIFFUSE:
                ux, uy, uz, state = unit_vector(state)
                dx, dy, dz = nx + ux, ny + uy, nz + uz
                if dx * dx + dy * dy + dz * dz < TINY:
                    dx, dy, dz = nx, ny, nz
                tr, tg, tb = tr * ar[i], tg * ag[i], tb * ab[i]
            elif m == METAL:
                # mirror, blurred by a random offset
                dn = TWO * (dx * nx + dy * ny + dz * nz)
                ux, uy, uz, state = unit_vector(state)
                r5, state = uniform(state)
                f = fz[i] * r5 ** THIRD
                dx, dy, dz = (dx - dn * nx + f * ux, dy - dn * ny + f * uy,
                              dz - dn * nz + f * uz)
                if dx * nx + dy * ny + dz * nz <= ZERO:
                    # scattered into the surface: absorbed
                    return ZERO, ZERO, ZERO, segments
                tr, tg, tb = tr * ar[i], tg * ag[i], tb * ab[i]
            else:
                # glass: refract or reflect (Schlick)
                cos_i = -(dx * nx + dy * ny + dz * nz)
                eta = ONE / fz[i]
                if cos_i < ZERO:                         # leaving the sphere
                    nx, ny, nz, cos_i, eta = -nx, -ny, -nz, -cos_i, fz[i]
                cos_i = min(cos_i, ONE)
                sin_t2 = eta * eta * (ONE - cos_i * cos_i)
                r0 = (ONE - eta) / (ONE + eta)
                r0 = r0 * r0
                c5 = ONE - cos_i
                reflect = r0 + (ONE - r0) * c5 * c5 * c5 * c5 * c5
                r5, state = uniform(state)
                if sin_t2 > ONE or reflect > r5:
                    dn = TWO * (dx * nx + dy * ny + dz * nz)
                    dx, dy, dz = dx - dn * nx, dy - dn * ny, dz - dn * nz
                else:
                    c = eta * cos_i - math.sqrt(ONE - sin_t2)
                    dx, dy, dz = eta * dx + c * nx, eta * dy + c * ny, eta * dz + c * nz
            k = ONE / math.sqrt(dx * dx + dy * dy + dz * dz)
            dx, dy, dz = dx * k, dy * k, dz * k
        return ZERO, ZERO, ZERO, segments                # out of bounces: no light
    # --8<-- [end:path]

    @jit
    def shade_pixel(px, py, spp, seed, width, height, cam, sx, sy, sz, sr, mat, ar, ag, ab, fz, nodes, max_depth):
        """The mean of ``spp`` samples of one pixel (linear radiance) and the segments traced."""
        r, g, b = ZERO, ZERO, ZERO
        segments = 0
        for s in range(spp):
            cr, cg, cb, n = trace_path(px, py, s, seed, width, height, cam, sx, sy, sz, sr, mat,
                                       ar, ag, ab, fz, nodes, max_depth)
            r, g, b = r + cr, g + cg, b + cb
            segments += n
        k = ONE / f32(spp)
        return r * k, g * k, b * k, segments

    return shade_pixel, hit_test, pcg, first_material


# ---------------------------------------------------------------------- the CPU backends

def make_cpu_render(shade, parallel: bool):
    """A CPU renderer around ``shade``: rows dealt over all cores (``parallel``), or one."""
    loop = numba.prange if parallel else range

    # --8<-- [start:cpu]
    @numba.njit(parallel=parallel)
    def render_cpu(out, segs, spp, seed, cam,
                   sx, sy, sz, sr, mat, ar, ag, ab, fz, nodes, max_depth):
        height, width = out.shape[0], out.shape[1]
        # rows differ in work: deal them out like cards, thread k takes k, k + n, ...
        n = min(numba.get_num_threads(), height) if parallel else 1
        for k in loop(n):
            for py in range(k, height, n):
                for px in range(width):
                    r, g, b, m = shade(px, py, spp, seed, width, height, cam, sx, sy,
                                       sz, sr, mat, ar, ag, ab, fz, nodes, max_depth)
                    out[py, px, 0], out[py, px, 1], out[py, px, 2] = r, g, b
                    segs[py, px] = m
    # --8<-- [end:cpu]
    return render_cpu


def work_balance(segs: np.ndarray, threads: int) -> dict:
    """How evenly ``threads`` threads share an image's work, taking a pixel's work to be its ray
    segments: the most any thread gets over the mean, with rows dealt like cards (as
    ``render_cpu`` does) and in equal runs of consecutive rows (prange's own split). Its
    inverse caps the parallel efficiency."""
    rows = segs.sum(axis=1).astype(np.float64)
    n = max(1, min(threads, rows.size))
    dealt = np.array([rows[k::n].sum() for k in range(n)])
    runs = np.array([part.sum() for part in np.array_split(rows, n)])
    return {"threads": n, "dealt_max_over_mean": float(dealt.max() / dealt.mean()),
            "runs_max_over_mean": float(runs.max() / runs.mean())}


shade_cpu, nearest_cpu, pcg_cpu, _ = build(numba.njit)
render_cpu = make_cpu_render(shade_cpu, parallel=True)
render_cpu_1core = make_cpu_render(shade_cpu, parallel=False)


shade_cpu_bvh, _, _, _ = build(numba.njit, bvh=True)
render_cpu_bvh = make_cpu_render(shade_cpu_bvh, parallel=True)


def leaky_cpu():
    """The CPU renderer (one core) built from the leaky hit test, and its shade function."""
    shade, _, _, _ = build(numba.njit, leak=True)
    return make_cpu_render(shade, parallel=False), shade


def _compiled_bodies(llvm_ir: str) -> str:
    """The functions of numba's LLVM IR without its Python wrappers (which box results as doubles)."""
    parts = re.split(r"^define ", llvm_ir, flags=re.M)
    heads = [(p.split("\n", 1)[0], p) for p in parts[1:]]
    return "\n".join(p for head, p in heads if "cpython" not in head and "@cfunc." not in head)


def float64_ops(llvm_ir: str) -> int:
    """Floating-point instructions on doubles in LLVM IR (conversions to double included)."""
    return len(re.findall(r"= (?:fadd|fsub|fmul|fdiv|fneg|fcmp \w+|fpext)\b[^\n]*\bdouble\b"
                          r"|call [^\n]*double @llvm\.(?:sqrt|fma|fmuladd)\.f64", _compiled_bodies(llvm_ir)))


def vector_ops(llvm_ir: str) -> int:
    """Instructions on LLVM vector types of floats (``<4 x float>``, ``<8 x float>``, ...)."""
    return len(re.findall(r"= [a-z]+[^\n]*<\d+ x (?:float|double)>", _compiled_bodies(llvm_ir)))
