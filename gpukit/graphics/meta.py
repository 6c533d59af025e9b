"""The chapter's names and tables as plain data (no heavy imports): what the kernels, the
benchmark, the views, the card and the tests agree on."""

from __future__ import annotations

from typing import NamedTuple

NAME = "graphics"

#: most spheres the shared-memory kernel stages (4 floats each: 8 KiB)
MAX_SHARED = 512

#: the CPU rows of the record: numba on all cores, on one core, and on all cores walking the
#: BVH; the name of each row -> its name in the tables
CPU_ROWS = {
    "numba-cpu": "CPU, all cores",
    "numba-cpu-1core": "CPU, one core",
    "numba-cpu-bvh": "CPU, all cores, BVH",
}


class Variant(NamedTuple):
    """One timed GPU run of the final scene (its key in :data:`VARIANTS` names its row)."""

    #: its name in the tables
    label: str
    #: what ``gpu.DeviceScene.launch`` runs: a key of ``gpu.KERNELS``, or "sorted"
    kernel: str
    #: "final" (the book's scene), "bvh" (that scene in a tree of boxes) or "diffuse" (its
    #: spheres, every one diffuse)
    scene: str = "final"
    #: samples per pixel; None: the frame's
    spp: int | None = None
    #: its image is compared with the plain kernel's (``max_abs_vs_plain``)
    compare: bool = False
    #: most spheres it can take; None: any number
    most_spheres: int | None = None
    #: its name on the scorecard; None: not judged
    judged: str | None = None
    #: the variant that times its 1-spp frame (judged variants only)
    one_spp: str | None = None

    @property
    def every_sphere(self) -> bool:
        """Each ray segment tests every sphere (no tree): ray-sphere tests are counted."""
        return self.scene != "bvh"

    @property
    def cpu_row(self) -> str:
        """The CPU row it is compared with: the same hit test on all cores."""
        return "numba-cpu" if self.every_sphere else "numba-cpu-bvh"


#: the GPU runs, in the order they are measured and shown; the keys are the rows' names in
#: the results files (renaming one orphans the recorded rows)
VARIANTS = {
    "plain": Variant("every sphere tested", "plain", compare=True,
                     judged="every sphere", one_spp="1 spp"),
    "shared": Variant("spheres in shared memory", "shared", compare=True,
                      most_spheres=MAX_SHARED, judged="every sphere, shared memory"),
    "bvh": Variant("BVH", "bvh", scene="bvh", compare=True, judged="BVH", one_spp="1 spp, BVH"),
    "1 spp": Variant("1 sample per pixel", "plain", spp=1),
    "1 spp, BVH": Variant("1 sample per pixel, BVH", "bvh", scene="bvh", spp=1),
    "leaky": Variant("leaky float64 hit test", "leaky", compare=True),
    "all diffuse": Variant("every sphere diffuse", "plain", scene="diffuse"),
    "sorted": Variant("grouped by first-hit material", "sorted", compare=True),
}

#: the variant every other is compared with, and whose image is the chapter's picture
BASE = "plain"


def label(name: str) -> str:
    """A row's name in the tables (CPU rows and GPU variants)."""
    return CPU_ROWS[name] if name in CPU_ROWS else VARIANTS[name].label


def every_sphere(name: str) -> bool:
    """Whether the row ``name`` (CPU or GPU) tests every sphere on every segment."""
    if name in VARIANTS:
        return VARIANTS[name].every_sphere
    return not name.endswith("-bvh")
