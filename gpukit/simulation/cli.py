"""``gpukit simulate lbm|nbody|heat``: run a simulation, write a picture (.png) or a record (.json)."""

from __future__ import annotations

import json
import time

from .. import cli
from ..cli import UserError, finite_float, positive_int

#: the largest --size of each model (memory: LBM 72 B per cell on a size x size/4 grid,
#: heat 8 B per cell on size x size; n-body's time grows as size^2)
MAX_SIZE = {"lbm": 32768, "nbody": 1 << 20, "heat": 65536}
MIN_SIZE = {"lbm": 16, "nbody": 1, "heat": 3}


def check_output(path: str) -> str:
    """A .png or .json in a folder we can write to; checked before anything runs."""
    return cli.check_output(path, {".png": "picture", ".json": "record"})

def register(sub) -> None:
    from .meta import BACKENDS, MODELS
    p = sub.add_parser("simulate", help="run a fluid, gravity or heat simulation; write a PNG or JSON",
                       description="Run the lattice Boltzmann fluid (lbm), the n-body gravity (nbody) or "
                                   "the heat-equation (heat) simulation and write a picture or a record.")
    p.add_argument("model", choices=MODELS)
    p.add_argument("--size", type=positive_int, default=None,
                   help="lbm: grid width (height = width/4); nbody: bodies; heat: grid side")
    p.add_argument("--steps", type=positive_int, default=None, help="time steps")
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help="numba-cuda (default with a GPU) or cpu (all cores)")
    p.add_argument("--tau", type=finite_float, default=None, help="lbm: relaxation time (> 0.5)")
    p.add_argument("--reynolds", type=finite_float, default=150.0, help="lbm: Reynolds number (sets tau)")
    p.add_argument("--r", type=finite_float, default=0.25, help="heat: diffusion number alpha dt/dx^2 (<= 0.25)")
    p.add_argument("--dt", type=finite_float, default=1e-3, help="nbody: time step")
    p.add_argument("--out", required=True, help="a .png picture or a .json record")
    p.set_defaults(func=_main)


def _check(args) -> None:
    from . import meta
    size = args.size or {"lbm": 800, "nbody": 4096, "heat": 512}[args.model]
    if not MIN_SIZE[args.model] <= size <= MAX_SIZE[args.model]:
        raise UserError(f"--size for {args.model} must be in [{MIN_SIZE[args.model]}, {MAX_SIZE[args.model]}], got {size}")
    args.size = size
    args.steps = args.steps or {"lbm": 8000, "nbody": 100, "heat": 2000}[args.model]
    if args.steps > 10**7:
        raise UserError(f"--steps must be <= 10,000,000, got {args.steps}")
    try:
        if args.model == "lbm":
            if args.tau is not None:
                meta.check_tau(args.tau)
            elif args.reynolds <= 0:
                raise ValueError(f"--reynolds must be > 0, got {args.reynolds}")
            else:
                meta.check_tau(0.5 + 3 * 0.1 * (size // 4) / 5 / args.reynolds)
        elif args.model == "heat":
            meta.check_r(args.r)
        elif not args.dt > 0:
            raise ValueError(f"--dt must be > 0, got {args.dt}")
    except ValueError as exc:
        raise UserError(str(exc)) from None
    check_output(args.out)
    from .. import device
    if args.backend is None:
        args.backend = "numba-cuda" if device.has_gpu() else "cpu"
    if args.backend == "numba-cuda" and not device.has_gpu():
        raise UserError("backend 'numba-cuda' needs an NVIDIA GPU and none was found "
                        "(run `gpukit doctor`); try --backend cpu")


def _run(args):
    """(picture RGB, record) of one run; the first step is timed apart (it compiles)."""
    import numpy as np

    from . import heat, lbm, nbody, picture
    from .meta import LBM_BYTES_PER_CELL
    sync = (lambda: __import__("numba.cuda").cuda.synchronize()) if args.backend == "numba-cuda" else (lambda: None)
    record = {"model": args.model, "size": args.size, "steps": args.steps, "backend": args.backend}
    if args.model == "lbm":
        nx, ny = args.size, max(8, args.size // 4)
        diameter = ny / 5
        tau = args.tau if args.tau is not None else 0.5 + 3 * 0.1 * diameter / args.reynolds
        sim = lbm.Lattice(lbm.cylinder(nx, ny, diameter / 2), tau=tau, u_in=0.1, inlet=True,
                          backend=args.backend, perturb=0.3)
        updates = nx * ny
        record.update(nx=nx, ny=ny, tau=tau, reynolds=0.1 * diameter / ((tau - 0.5) / 3),
                      bytes_per_update=LBM_BYTES_PER_CELL)
    elif args.model == "heat":
        sim = heat.Heat(heat.hot_spots(args.size, args.size), r=args.r, backend=args.backend)
        updates = (args.size - 2) ** 2
        record.update(r=args.r, bytes_per_update=8)
    else:
        pos, vel = nbody.plummer(args.size)
        sim = nbody.NBody(pos, vel, dt=args.dt, backend=args.backend)
        updates = args.size ** 2
        record.update(dt=args.dt, kernel=sim.kernel)
        if args.size <= 16384:                            # the float64 energy is O(n^2) on the host
            record["energy_start"] = sim.energy()
    t0 = time.perf_counter()
    sim.step(1)
    sync()
    record["first_step_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    sim.step(args.steps - 1)
    sync()
    seconds = time.perf_counter() - t0
    record["steps_s"] = seconds
    if args.steps > 1:
        record["updates_per_s"] = updates * (args.steps - 1) / seconds
    if args.model == "lbm":
        w = sim.vorticity()
        if not np.isfinite(w).all():
            raise UserError(f"the flow blew up (NaN) with tau = {tau:.4f}: raise tau or lower --reynolds")
        record["mass"] = sim.mass()
        rgb = picture.vorticity_rgb(w, sim.solid)
    elif args.model == "heat":
        u = sim.u
        record.update(min=float(u.min()), max=float(u.max()))
        rgb = picture.heat_rgb(u)
    else:
        if "energy_start" in record:
            record["energy_end"] = sim.energy()
        p = sim.state()[0]
        hist, _, _ = np.histogram2d(p[1], p[0], bins=400, range=[[-3, 3], [-3, 3]])
        rgb = picture.heat_rgb(np.log1p(hist))
    return rgb, record


def _main(args) -> int:
    _check(args)
    from .picture import write_png
    rgb, record = _run(args)
    try:
        if args.out.lower().endswith(".png"):
            write_png(rgb, args.out)
        else:
            from .. import device
            from ..files import atomic_write
            record["machine"] = device.machine_record()
            text = json.dumps(record, indent=1) + "\n"
            atomic_write(args.out, lambda fh: fh.write(text))
    except OSError as exc:
        raise UserError(f"cannot write {args.out!r}: {exc.strerror or exc}") from None
    rate = record.get("updates_per_s")
    print(f"{args.model}, size {args.size}, {args.steps} steps on {args.backend}")
    print(f"first step {record['first_step_s'] * 1e3:10.1f} ms  (includes compilation)")
    print(f"the rest   {record['steps_s'] * 1e3:10.1f} ms" + (f"  ({rate:.4g} updates/s)" if rate else ""))
    print(f"wrote {args.out}")
    return 0
