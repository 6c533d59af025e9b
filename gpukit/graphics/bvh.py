"""A bounding volume hierarchy over the spheres, built on the host with NumPy.

Each node is a box that holds every sphere below it. The tree is stored as one float32 array of
shape (nodes, 9), in depth-first order: the box's lower and upper corners (columns 0-5), the first
sphere and the number of spheres of a leaf (6, 7; 0 spheres for an inner node, whose children
follow it), and the node to visit next when the ray misses this box or is done with it (8). With
that "skip" pointer the kernel walks the tree with a loop and no stack (``trace.nearest_bvh``).
The spheres are reordered so that each leaf's spheres are consecutive.
"""

from __future__ import annotations

import dataclasses

import numpy as np

#: most spheres in a leaf
LEAF_SIZE = 4
#: a tree with no spheres: one empty leaf (brute-force kernels receive it and ignore it)
EMPTY = np.array([[0, 0, 0, 0, 0, 0, 0, 0, 1]], dtype=np.float32)


def build_bvh(scene, leaf_size: int = LEAF_SIZE):
    """``scene`` with its spheres reordered and ``nodes`` holding their hierarchy."""
    n = scene.n
    if n == 0:
        return dataclasses.replace(scene, nodes=EMPTY.copy())
    center, radius = scene.center.astype(np.float64), scene.radius.astype(np.float64)
    lo = center - scene.radius[:, None]
    hi = center + scene.radius[:, None]
    nodes: list[list[float]] = []
    order: list[int] = []

    def split(idx: np.ndarray) -> None:
        me = len(nodes)
        nodes.append([*lo[idx].min(axis=0), *hi[idx].max(axis=0), 0, 0, 0])
        big = radius[idx] > 10 * np.median(radius[idx])
        if len(idx) <= leaf_size:
            nodes[me][6], nodes[me][7] = len(order), len(idx)
            order.extend(idx.tolist())
        elif big.any():  # a huge sphere (the ground) apart, or its box swallows its neighbours'
            split(idx[big])
            split(idx[~big])
        else:  # halve along the longest extent of the centres
            c = center[idx]
            axis = int(np.argmax(c.max(axis=0) - c.min(axis=0)))
            idx = idx[np.argsort(c[:, axis], kind="stable")]
            split(idx[: len(idx) // 2])
            split(idx[len(idx) // 2:])
        nodes[me][8] = len(nodes)            # after this subtree

    split(np.arange(n))
    table = np.array(nodes, dtype=np.float64)
    pad = 1e-4 * (1 + np.abs(table[:, :6]))  # float32 rounding must not shrink a box
    table[:, :3] -= pad[:, :3]
    table[:, 3:6] += pad[:, 3:6]
    perm = np.array(order)
    return dataclasses.replace(
        scene, center=scene.center[perm], radius=scene.radius[perm], material=scene.material[perm],
        albedo=scene.albedo[perm], fuzz=scene.fuzz[perm], nodes=table.astype(np.float32))
