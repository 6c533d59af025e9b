"""The scene: spheres as flat float32 arrays (a struct of arrays) and a thin-lens camera.

``final_scene(seed)`` builds the final scene of Peter Shirley's *Ray Tracing in One Weekend*
(https://raytracing.github.io/books/RayTracingInOneWeekend.html, section "Where Next?"): a huge
grey ground sphere, a 22 x 22 grid of small spheres with random offsets and materials, and three
large spheres (glass, diffuse, metal), seen through a camera with defocus blur. The layout rules
are the book's; the code and its random numbers (NumPy's PCG64, seeded) are this project's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: material codes stored per sphere
DIFFUSE, METAL, GLASS = 0, 1, 2
MATERIALS = ("diffuse", "metal", "glass")


@dataclass(frozen=True)
class Scene:
    """Spheres and camera; every array is float32 (``material`` int32), one entry per sphere."""
    center: np.ndarray      # (n, 3) float32
    radius: np.ndarray      # (n,) float32
    material: np.ndarray    # (n,) int32: DIFFUSE, METAL or GLASS
    albedo: np.ndarray      # (n, 3) float32, each in [0, 1]
    fuzz: np.ndarray        # (n,) float32: metal roughness (0 = mirror); glass: refractive index
    lookfrom: tuple = (13.0, 2.0, 3.0)
    lookat: tuple = (0.0, 0.0, 0.0)
    vfov: float = 20.0                  # vertical field of view, degrees
    aperture: float = 0.1               # lens diameter (0: a pinhole, no defocus blur)
    focus_dist: float = 10.0
    nodes: np.ndarray | None = None     # (k, 9) float32: the BVH of .bvh, or None (brute force only)

    @property
    def n(self) -> int:
        return int(self.radius.shape[0])

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The flat arrays the kernels read: x, y, z, radius, material, r, g, b, fuzz, BVH nodes
        (an empty tree when there is none: only the BVH kernels read it)."""
        from .bvh import EMPTY
        c, a = self.center, self.albedo
        nodes = self.nodes if self.nodes is not None else EMPTY
        return tuple(np.ascontiguousarray(v) for v in (
            c[:, 0], c[:, 1], c[:, 2], self.radius, self.material, a[:, 0], a[:, 1], a[:, 2], self.fuzz, nodes))

    def counts(self) -> dict:
        return {name: int(np.count_nonzero(self.material == i)) for i, name in enumerate(MATERIALS)}


def _scene(spheres: list) -> Scene:
    if not spheres:
        z3, z1 = np.zeros((0, 3), np.float32), np.zeros(0, np.float32)
        return Scene(z3, z1, np.zeros(0, np.int32), z3.copy(), z1.copy())
    center, radius, material, albedo, fuzz = zip(*spheres)
    return Scene(np.array(center, np.float32), np.array(radius, np.float32), np.array(material, np.int32),
                 np.array(albedo, np.float32), np.array(fuzz, np.float32))


# --8<-- [start:scene]
def final_scene(seed: int = 0) -> Scene:
    """The book's final scene: ground, up to 484 small spheres, three large ones."""
    rng = np.random.default_rng(seed)
    # the ground
    spheres = [((0.0, -1000.0, 0.0), 1000.0, DIFFUSE, (0.5, 0.5, 0.5), 0.0)]
    for a in range(-11, 11):
        for b in range(-11, 11):
            choose = rng.random()
            center = (a + 0.9 * rng.random(), 0.2, b + 0.9 * rng.random())
            # keep clear of the metal sphere
            if math.dist(center, (4.0, 0.2, 0.0)) <= 0.9:
                continue
            if choose < 0.8:                                   # 80 % diffuse
                albedo = tuple(rng.random(3) * rng.random(3))
                spheres.append((center, 0.2, DIFFUSE, albedo, 0.0))
            elif choose < 0.95:                                # 15 % metal
                albedo = tuple(rng.uniform(0.5, 1.0, 3))
                spheres.append((center, 0.2, METAL, albedo, rng.uniform(0, 0.5)))
            else:                                              # 5 % glass
                spheres.append((center, 0.2, GLASS, (1.0, 1.0, 1.0), 1.5))
    spheres += [((0.0, 1.0, 0.0), 1.0, GLASS, (1.0, 1.0, 1.0), 1.5),
                ((-4.0, 1.0, 0.0), 1.0, DIFFUSE, (0.4, 0.2, 0.1), 0.0),
                ((4.0, 1.0, 0.0), 1.0, METAL, (0.7, 0.6, 0.5), 0.0)]
    return _scene(spheres)
# --8<-- [end:scene]


def empty_scene() -> Scene:
    """No spheres at all: every ray sees the sky."""
    return _scene([])


def camera(scene: Scene, width: int, height: int) -> np.ndarray:
    """The thin-lens camera as 19 float32 numbers: origin, lower-left corner of the focus plane,
    its horizontal and vertical extents, the lens axes u and v, and the lens radius."""
    origin = np.array(scene.lookfrom, np.float64)
    theta = math.radians(scene.vfov)
    half_h = math.tan(theta / 2)
    half_w = half_h * width / height
    w = origin - np.array(scene.lookat, np.float64)
    w /= np.linalg.norm(w)
    u = np.cross((0.0, 1.0, 0.0), w)
    u /= np.linalg.norm(u)
    v = np.cross(w, u)
    horizontal = 2 * half_w * scene.focus_dist * u
    vertical = 2 * half_h * scene.focus_dist * v
    lower_left = origin - horizontal / 2 - vertical / 2 - scene.focus_dist * w
    return np.concatenate([origin, lower_left, horizontal, vertical, u, v,
                           [scene.aperture / 2]]).astype(np.float32)
