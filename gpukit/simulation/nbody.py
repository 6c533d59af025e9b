"""Gravity: all-pairs n-body with softening, leapfrog (kick-drift-kick) integration, float32.

Every body pulls on every other: the acceleration of body i is

    a_i = sum_j m_j (r_j - r_i) / (|r_j - r_i|^2 + eps^2)^(3/2)      (G = 1)

N^2 interactions of about 20 floating-point operations each (the count NVIDIA's CUDA sample
`nbody` uses, from GPU Gems 3, chapter 31): compute-bound, the opposite of the fluid and heat
simulations. The state is structure of arrays: ``pos[4, n]`` holds x, y, z and mass, ``vel[3, n]``.

The GPU kernels follow GPU Gems 3: a block loads a tile of bodies into shared memory, every
thread of the block reads them from there (one global read serves a whole block). The
straightforward kernel computes one body per thread with IEEE-exact ``1/sqrt``; the next ones
add fast math, the hardware's approximate reciprocal square root and several bodies per thread;
the last two split the sum over bodies across four rows of threads per block (more warps per
SM) and unroll the inner loop (fewer instructions per interaction).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import cuda, float32, uint64

from .. import device
from .meta import NBODY_TUNED, TILE, VARIANTS, backend_ok, whole  # noqa: F401

f32 = np.float32
TUNED = NBODY_TUNED

if device.simulator_enabled():                         # the simulator has no libdevice
    def rsqrt_hw(x):
        return float32(1) / math.sqrt(x)
else:
    from numba.cuda.libdevice import rsqrtf as rsqrt_hw   # one rsqrt.approx instruction


@cuda.jit(device=True, inline=True)
def rsqrt_exact(x):
    return float32(1) / math.sqrt(x)


# --8<-- [start:gpu]
def make_accel_kernel(bodies_per_thread: int, fastmath: bool, hw_rsqrt: bool):
    """The tiled acceleration kernel; each thread computes ``bodies_per_thread``
    bodies."""
    B = bodies_per_thread
    rsqrt = rsqrt_hw if hw_rsqrt else rsqrt_exact

    @cuda.jit(fastmath=fastmath)
    def accel(pos, acc, eps2):
        # a tile of bodies, shared by the block
        sx = cuda.shared.array(TILE, float32)
        sy = cuda.shared.array(TILE, float32)
        sz = cuda.shared.array(TILE, float32)
        sm = cuda.shared.array(TILE, float32)
        # B bodies per thread, kept in registers
        px = cuda.local.array(B, float32)
        py = cuda.local.array(B, float32)
        pz = cuda.local.array(B, float32)
        ax = cuda.local.array(B, float32)
        ay = cuda.local.array(B, float32)
        az = cuda.local.array(B, float32)
        n = pos.shape[1]
        t = cuda.threadIdx.x
        first = cuda.blockIdx.x * (TILE * B) + t
        for b in range(B):                              # constant trip count: unrolled
            i = min(first + b * TILE, n - 1)
            px[b], py[b], pz[b] = pos[0, i], pos[1, i], pos[2, i]
            ax[b], ay[b], az[b] = float32(0), float32(0), float32(0)
        for start in range(0, n, TILE):
            j = start + t
            # each thread loads one body of the tile
            if j < n:
                sx[t], sy[t], sz[t], sm[t] = pos[0, j], pos[1, j], pos[2, j], pos[3, j]
            else:                                       # past the end: a massless body
                sx[t], sy[t], sz[t], sm[t] = (float32(0), float32(0), float32(0),
                                              float32(0))
            cuda.syncthreads()
            for k in range(TILE):
                # one shared read serves B bodies
                xj, yj, zj, mj = sx[k], sy[k], sz[k], sm[k]
                for b in range(B):
                    dx, dy, dz = xj - px[b], yj - py[b], zj - pz[b]
                    inv = rsqrt(dx * dx + dy * dy + dz * dz + eps2)
                    s = mj * (inv * inv * inv)
                    ax[b] += dx * s
                    ay[b] += dy * s
                    az[b] += dz * s
            cuda.syncthreads()
        for b in range(B):
            i = first + b * TILE
            if i < n:
                acc[0, i], acc[1, i], acc[2, i] = ax[b], ay[b], az[b]
    return accel
# --8<-- [end:gpu]


# --8<-- [start:split]
def make_split_kernel(bodies_per_thread: int, split: int, fastmath=True,
                      unroll: int = 1):
    """The tuned kernel with the sum over bodies j cut into ``split`` parts: a block
    has ``split`` rows of TILE threads, each row sums one part for the same bodies,
    and the rows' partial sums are added in shared memory at the end. ``unroll``
    bodies of a tile are taken per pass of the inner loop."""
    B, S, BT, UNROLL = bodies_per_thread, split, bodies_per_thread * TILE, unroll
    ST, SBT = split * TILE, split * bodies_per_thread * TILE

    @cuda.jit(fastmath=fastmath)
    def accel_split(pos, acc, eps2):
        sx = cuda.shared.array(ST, float32)             # a tile for each row
        sy = cuda.shared.array(ST, float32)
        sz = cuda.shared.array(ST, float32)
        sm = cuda.shared.array(ST, float32)
        rx = cuda.shared.array(SBT, float32)            # the rows' partial sums
        ry = cuda.shared.array(SBT, float32)
        rz = cuda.shared.array(SBT, float32)
        px = cuda.local.array(B, float32)
        py = cuda.local.array(B, float32)
        pz = cuda.local.array(B, float32)
        ax = cuda.local.array(B, float32)
        ay = cuda.local.array(B, float32)
        az = cuda.local.array(B, float32)
        n = pos.shape[1]
        t, s = cuda.threadIdx.x, cuda.threadIdx.y
        first = cuda.blockIdx.x * BT + t
        for b in range(B):
            i = min(first + b * TILE, n - 1)
            px[b], py[b], pz[b] = pos[0, i], pos[1, i], pos[2, i]
            ax[b], ay[b], az[b] = float32(0), float32(0), float32(0)
        # unsigned indices: numba adds no wrap-around of negative ones
        row, mine = uint64(s * TILE), uint64(s * TILE + t)
        tiles = (n + TILE - 1) // TILE
        part = (tiles + S - 1) // S                     # tiles per row, same for all
        for start in range(s * part * TILE, (s + 1) * part * TILE, TILE):
            j = start + t
            if j < n:
                sx[mine], sy[mine], sz[mine], sm[mine] = (pos[0, j], pos[1, j],
                                                          pos[2, j], pos[3, j])
            else:                                       # past the end: a massless body
                sx[mine], sy[mine], sz[mine], sm[mine] = (float32(0), float32(0),
                                                          float32(0), float32(0))
            cuda.syncthreads()
            for k0 in range(0, TILE, UNROLL):
                for u in range(UNROLL):                 # constant trip count: unrolled
                    q = row + uint64(k0 + u)
                    xj, yj, zj, mj = sx[q], sy[q], sz[q], sm[q]
                    for b in range(B):
                        dx, dy, dz = xj - px[b], yj - py[b], zj - pz[b]
                        # eps2 first: three multiply-adds, no separate add
                        inv = rsqrt_hw(dx * dx + (dy * dy + (dz * dz + eps2)))
                        f = mj * (inv * inv * inv)
                        ax[b] += dx * f
                        ay[b] += dy * f
                        az[b] += dz * f
            cuda.syncthreads()
        for b in range(B):
            q = uint64((s * B + b) * TILE + t)
            rx[q], ry[q], rz[q] = ax[b], ay[b], az[b]
        cuda.syncthreads()
        if s == 0:                                      # row 0 adds the parts, in order
            for b in range(B):
                i = first + b * TILE
                if i < n:
                    gx, gy, gz = ax[b], ay[b], az[b]
                    for r in range(1, S):
                        q = uint64((r * B + b) * TILE + t)
                        gx += rx[q]
                        gy += ry[q]
                        gz += rz[q]
                    acc[0, i], acc[1, i], acc[2, i] = gx, gy, gz
    return accel_split
# --8<-- [end:split]


_KERNELS: dict = {}


def accel_kernel(variant: str):
    """The compiled kernel of one of :data:`VARIANTS` (made once per process)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown kernel {variant!r}; choose one of {', '.join(VARIANTS)}")
    if variant not in _KERNELS:
        bpt, fast, hw, split, unroll = VARIANTS[variant]
        _KERNELS[variant] = (make_accel_kernel(bpt, fast, hw) if split == 1
                             else make_split_kernel(bpt, split, fast, unroll))
    return _KERNELS[variant]


def launch_accel(variant, pos, acc, eps2) -> None:
    bpt, split = VARIANTS[variant][0], VARIANTS[variant][3]
    n = pos.shape[1]
    blocks = max(1, (n + TILE * bpt - 1) // (TILE * bpt))
    accel_kernel(variant)[blocks, (TILE, split)](pos, acc, f32(eps2))


@cuda.jit
def kick_drift_gpu(pos, vel, acc, half_dt, dt):
    i = cuda.grid(1)
    if i < pos.shape[1]:
        for d in range(3):
            vel[d, i] += half_dt * acc[d, i]
            pos[d, i] += dt * vel[d, i]


@cuda.jit
def kick_gpu(vel, acc, half_dt):
    i = cuda.grid(1)
    if i < vel.shape[1]:
        for d in range(3):
            vel[d, i] += half_dt * acc[d, i]


# --8<-- [start:cpu]
@numba.njit(parallel=True, fastmath=True, cache=True)
def accel_cpu(pos, acc, eps2):
    n = pos.shape[1]
    x, y, z, m = pos[0], pos[1], pos[2], pos[3]
    for i in numba.prange(n):                           # bodies spread over all cores
        xi, yi, zi = x[i], y[i], z[i]
        ax, ay, az = float32(0), float32(0), float32(0)
        # contiguous j: SIMD lanes over j
        for j in range(n):
            dx, dy, dz = x[j] - xi, y[j] - yi, z[j] - zi
            inv = float32(1) / math.sqrt(dx * dx + dy * dy + dz * dz + eps2)
            s = m[j] * (inv * inv * inv)
            ax += dx * s
            ay += dy * s
            az += dz * s
        acc[0, i], acc[1, i], acc[2, i] = ax, ay, az
# --8<-- [end:cpu]


@numba.njit(parallel=True, cache=True)
def kick_drift_cpu(pos, vel, acc, half_dt, dt):
    for i in numba.prange(pos.shape[1]):
        for d in range(3):
            vel[d, i] += half_dt * acc[d, i]
            pos[d, i] += dt * vel[d, i]


@numba.njit(parallel=True, cache=True)
def kick_cpu(vel, acc, half_dt):
    for i in numba.prange(vel.shape[1]):
        for d in range(3):
            vel[d, i] += half_dt * acc[d, i]


def accel_reference(pos, eps: float, rows=None) -> np.ndarray:
    """Accelerations in float64 with NumPy (of the bodies ``rows``, all by default)."""
    p = np.asarray(pos, dtype=np.float64)
    rows = np.arange(p.shape[1]) if rows is None else np.asarray(rows)
    out = np.empty((3, len(rows)))
    chunk = max(1, 2**21 // p.shape[1])                       # rows per pass: ~50 MB of temporaries
    for k in range(0, len(rows), chunk):
        r = rows[k:k + chunk]
        d = p[:3, None, :] - p[:3, r, None]                   # (3, rows, n): r_j - r_i
        inv = (np.einsum("kij,kij->ij", d, d) + eps * eps) ** -1.5
        out[:, k:k + chunk] = np.einsum("kij,ij,j->ki", d, inv, p[3])
    return out


def plummer(n: int, seed: int = 0):
    """``n`` equal masses (total 1) in a Plummer sphere in equilibrium (G = 1, scale 1):
    positions and masses ``pos[4, n]``, velocities ``vel[3, n]``, float32 (Aarseth et al. 1974)."""
    n = whole("n", n)
    rng = np.random.default_rng(seed)
    r = 1 / np.sqrt(rng.uniform(1e-3, 0.99, n) ** (-2 / 3) - 1)    # radius from the mass profile

    def directions():
        v = rng.normal(size=(3, n))
        return v / np.linalg.norm(v, axis=0)
    q = np.empty(n)                                     # speed as a fraction of escape speed
    todo = np.arange(n)
    while todo.size:                                    # rejection sampling of q^2 (1 - q^2)^3.5
        x, y = rng.uniform(0, 1, todo.size), rng.uniform(0, 0.1, todo.size)
        ok = y < x * x * (1 - x * x) ** 3.5
        q[todo[ok]] = x[ok]
        todo = todo[~ok]
    speed = q * np.sqrt(2) * (1 + r * r) ** -0.25
    pos = np.empty((4, n), np.float32)
    pos[:3] = r * directions()
    pos[3] = 1 / n
    vel = (speed * directions()).astype(np.float32)
    pos[:3] -= (pos[:3] * pos[3]).sum(axis=1, keepdims=True) / pos[3].sum()   # centre of mass at 0
    vel -= (vel * pos[3]).sum(axis=1, keepdims=True) / pos[3].sum()          # total momentum 0
    return pos, vel


class NBody:
    """Bodies on one backend; ``step(n)`` advances them by leapfrog (kick-drift-kick).

    ``kernel`` picks a GPU kernel of :data:`VARIANTS` (the CPU has one).
    """

    def __init__(self, pos, vel, *, dt: float = 1e-3, eps: float = 0.05, backend: str = "numba-cuda",
                 kernel: str = TUNED):
        pos, vel = np.ascontiguousarray(pos, np.float32), np.ascontiguousarray(vel, np.float32)
        if pos.ndim != 2 or pos.shape[0] != 4 or vel.shape != (3, pos.shape[1]) or pos.shape[1] < 1:
            raise ValueError(f"need pos[4, n] and vel[3, n] with n >= 1, got {pos.shape} and {vel.shape}")
        if not (dt > 0 and eps > 0 and np.isfinite(dt) and np.isfinite(eps)):
            raise ValueError(f"dt and eps must be > 0, got dt={dt}, eps={eps}")
        self.backend, self.dt, self.eps = backend_ok(backend), f32(dt), f32(eps)
        self.kernel = kernel if backend == "numba-cuda" else "cpu"
        if backend == "numba-cuda":
            accel_kernel(kernel)
            self._pos, self._vel = cuda.to_device(pos), cuda.to_device(vel)
            self._acc = cuda.device_array((3, pos.shape[1]), np.float32)
        else:
            self._pos, self._vel, self._acc = pos.copy(), vel.copy(), np.empty((3, pos.shape[1]), np.float32)
        self.accelerate()
        self.steps = 0

    @property
    def n(self) -> int:
        return self._pos.shape[1]

    def accelerate(self) -> None:
        """Compute every body's acceleration from the current positions."""
        eps2 = self.eps * self.eps
        if self.backend == "numba-cuda":
            launch_accel(self.kernel, self._pos, self._acc, eps2)
        else:
            accel_cpu(self._pos, self._acc, eps2)

    def step(self, n: int = 1) -> "NBody":
        half, dt = f32(self.dt / 2), self.dt
        for _ in range(whole("steps", n, 0)):
            if self.backend == "numba-cuda":
                blocks = (self.n + 255) // 256
                kick_drift_gpu[blocks, 256](self._pos, self._vel, self._acc, half, dt)
                self.accelerate()
                kick_gpu[blocks, 256](self._vel, self._acc, half)
            else:
                kick_drift_cpu(self._pos, self._vel, self._acc, half, dt)
                self.accelerate()
                kick_cpu(self._vel, self._acc, half)
        self.steps += n
        return self

    def state(self):
        """``(pos[4, n], vel[3, n], acc[3, n])`` on the host."""
        get = (lambda a: a.copy_to_host()) if self.backend == "numba-cuda" else (lambda a: a.copy())
        return get(self._pos), get(self._vel), get(self._acc)

    def energy(self) -> float:
        """Kinetic + potential energy of the softened potential, in float64 (O(n^2) on the host)."""
        pos, vel, _ = self.state()
        p, v = pos.astype(np.float64), vel.astype(np.float64)
        kinetic = 0.5 * float((p[3] * (v * v).sum(axis=0)).sum())
        potential = 0.0
        for k in range(0, self.n, 512):
            d = p[:3, k:k + 512, None] - p[:3, None, :]
            r = np.sqrt((d * d).sum(axis=0) + float(self.eps) ** 2)
            mm = p[3, k:k + 512, None] * p[3, None, :]
            potential -= 0.5 * float((mm / r).sum() - (p[3, k:k + 512] ** 2 / float(self.eps)).sum())
        return kinetic + potential

    def momentum(self) -> np.ndarray:
        pos, vel, _ = self.state()
        return (vel.astype(np.float64) * pos[3].astype(np.float64)).sum(axis=1)


def nbody(n: int = 1024, steps: int = 10, *, backend: str = "numba-cuda", dt: float = 1e-3,
          eps: float = 0.05, kernel: str = TUNED, seed: int = 0) -> NBody:
    """A Plummer sphere of ``n`` bodies advanced ``steps`` leapfrog steps."""
    pos, vel = plummer(n, seed)
    return NBody(pos, vel, dt=dt, eps=eps, backend=backend, kernel=kernel).step(whole("steps", steps, 0))
