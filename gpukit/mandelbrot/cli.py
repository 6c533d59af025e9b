"""``gpukit mandelbrot``: render the Mandelbrot set to a PNG and say how long it took."""

from __future__ import annotations

import os
import time

from .. import cli
from ..cli import UserError, finite_float, positive_int

# Working memory per pixel: the int32 output plus, for the NumPy and torch backends,
# about a dozen float64 arrays of the same shape (z, c, squares, masks, temporaries).
BYTES_PER_PIXEL = {"numpy": 4 + 12 * 8, "torch": 4 + 12 * 8}


def _available_host_memory() -> int | None:
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(width: int, height: int, backend: str) -> None:
    """Refuse sizes whose arrays cannot fit in memory (host, and GPU for GPU backends)."""
    pixels = width * height
    need = pixels * BYTES_PER_PIXEL.get(backend, 4) + pixels * 3  # + the RGB image
    have = _available_host_memory()
    if have is not None and need > have:
        raise UserError(f"{width} x {height} needs about {need / 2**30:.1f} GiB of memory, "
                        f"but only {have / 2**30:.1f} GiB is available; choose a smaller size")
    if pixels > 2**31 - 1:
        raise UserError(f"{width} x {height} has more than 2^31 pixels; choose a smaller size")


def check_output(path: str) -> str:
    """The output must be a .png in a directory we can write to; fail before computing."""
    return cli.check_output(path, {".png": "picture"})

def register(sub) -> None:
    from .meta import BACKENDS, DEFAULT_BOUNDS
    p = sub.add_parser("mandelbrot", help="render the Mandelbrot set to a PNG, timed",
                       description="Compute the Mandelbrot set on a backend and write a PNG.")
    p.add_argument("--width", type=positive_int, default=1024)
    p.add_argument("--height", type=positive_int, default=768)
    p.add_argument("--max-iter", type=positive_int, default=256)
    p.add_argument("--backend", choices=BACKENDS, default="numba-cpu")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    p.add_argument("--bounds", type=finite_float, nargs=4, metavar=("XMIN", "XMAX", "YMIN", "YMAX"),
                   default=list(DEFAULT_BOUNDS))
    p.add_argument("--cmap", default="magma", help="a matplotlib colormap (default: magma)")
    p.add_argument("--out", required=True, help="the PNG to write")
    p.set_defaults(func=_main)


def _main(args) -> int:
    xmin, xmax, ymin, ymax = args.bounds
    if xmin >= xmax or ymin >= ymax:
        raise UserError(f"--bounds need XMIN < XMAX and YMIN < YMAX, got {args.bounds}")
    from matplotlib import colormaps
    if args.cmap not in colormaps:
        raise UserError(f"unknown colormap {args.cmap!r} (try magma, viridis, inferno, twilight)")
    check_output(args.out)
    check_fits(args.width, args.height, args.backend)
    if args.backend in ("numba-cuda", "cupy"):
        from .. import device
        if not device.has_gpu():
            raise UserError(f"backend {args.backend!r} needs an NVIDIA GPU and none was found "
                            "(run `gpukit doctor`); try --backend numba-cpu")
    from . import kernels as mandel
    from .image import colorize, write_png
    kw = dict(max_iter=args.max_iter, bounds=args.bounds, backend=args.backend, dtype=args.dtype)
    t0 = time.perf_counter()
    counts = mandel.mandelbrot(args.width, args.height, **kw)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    counts = mandel.mandelbrot(args.width, args.height, **kw)
    second = time.perf_counter() - t0
    try:
        write_png(colorize(counts, args.max_iter, args.cmap), args.out)
    except OSError as exc:
        raise UserError(f"cannot write {args.out!r}: {exc.strerror or exc}") from None
    pixels = args.width * args.height
    print(f"{args.width} x {args.height}, {args.max_iter} iterations, {args.backend}, {args.dtype}")
    print(f"first call  {first * 1e3:10.1f} ms  (includes compilation and start-up)")
    print(f"second call {second * 1e3:10.1f} ms  ({pixels / second / 1e6:,.1f} Mpixel/s, "
          "including the copy back to the host)")
    print(f"wrote {args.out}")
    return 0
