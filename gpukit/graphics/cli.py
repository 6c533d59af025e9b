"""``gpukit render``: path-trace the final scene of *Ray Tracing in One Weekend* to a PNG."""

from __future__ import annotations

import argparse
import time

from .. import cli
from ..cli import UserError, positive_int


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"expected a seed in [0, 2**32), got {value}")
    return value


def check_output(path: str) -> str:
    """The output must be a .png in a folder we can write to; checked before rendering."""
    return cli.check_output(path, {".png": "picture"})

def register(sub) -> None:
    from .renderer import BACKENDS
    p = sub.add_parser("render", help="path-trace the final scene of Ray Tracing in One Weekend",
                       description="Render the book's final scene on the CPU or the GPU and write a PNG.")
    p.add_argument("--width", type=positive_int, default=640)
    p.add_argument("--height", type=positive_int, default=360)
    p.add_argument("--spp", type=positive_int, default=16, help="samples per pixel")
    p.add_argument("--depth", type=positive_int, default=8, help="most ray segments per path")
    p.add_argument("--seed", type=_seed, default=0, help="scene layout and random numbers")
    p.add_argument("--backend", choices=BACKENDS, default="numba-cpu")
    p.add_argument("--out", required=True, help="the PNG to write")
    p.set_defaults(func=_main)


def _main(args) -> int:
    from .renderer import MAX_DEPTH, MAX_SIDE, MAX_SPP
    for name, value, top in (("--width", args.width, MAX_SIDE), ("--height", args.height, MAX_SIDE),
                             ("--spp", args.spp, MAX_SPP), ("--depth", args.depth, MAX_DEPTH)):
        if value > top:
            raise UserError(f"{name} must be at most {top}, got {value}")
    check_output(args.out)
    if args.backend == "numba-cuda":
        from .. import device
        if not device.has_gpu():
            raise UserError("backend 'numba-cuda' needs an NVIDIA GPU and none was found "
                            "(run `gpukit doctor`); try --backend numba-cpu")
    from .renderer import render, write_png
    from .scene import final_scene
    scene = final_scene(args.seed)
    stats: dict = {}
    t0 = time.perf_counter()
    image = render(scene, args.width, args.height, spp=args.spp, max_depth=args.depth, seed=args.seed,
                   backend=args.backend, stats=stats)
    seconds = time.perf_counter() - t0
    try:
        write_png(image, args.out)
    except OSError as exc:
        raise UserError(f"cannot write {args.out!r}: {exc.strerror or exc}") from None
    print(f"{args.width} x {args.height}, {args.spp} samples per pixel, up to {args.depth} segments, "
          f"{scene.n} spheres, {args.backend}")
    print(f"{seconds:.2f} s including compilation: {stats['segments'] / seconds / 1e6:,.1f} M ray segments/s")
    print(f"wrote {args.out}")
    return 0
