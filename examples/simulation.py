# %% [markdown]
# # Fluid, gravity and heat on the GPU, checked against the CPU and against physics
#
# Runs the three simulations of `gpukit.simulation` on the GPU (numba CUDA) and on all CPU
# cores, checks that both give the same answer and that the physics holds (mass, energy, the
# exact decay of a sine mode), and reports how fast each ran. Without an NVIDIA GPU the CUDA
# kernels run on numba's simulator at tiny sizes.
#
# Run it: `python examples/simulation.py --json simulation.json`

# %%
# --8<-- [start:setup]
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from gpukit import device

SIMULATED = device.use_simulator_if_no_gpu()  # before numba is imported

from gpukit.simulation import Heat, Lattice, NBody, cylinder, plummer, sine_decay, sine_mode  # noqa: E402
# --8<-- [end:setup]

# the simulator runs one Python thread per GPU thread: tiny sizes there
SIZES = ({"lbm": (16, 8, 10), "nbody": (64, 2), "heat": (18, 5)} if SIMULATED else
         {"lbm": (2048, 512, 200), "nbody": (8192, 20), "heat": (4096, 200)})


def timed(run) -> float:
    """Seconds of ``run()``, waiting for the GPU to finish."""
    from numba import cuda
    t0 = time.perf_counter()
    run()
    cuda.synchronize()
    return time.perf_counter() - t0


# %% [markdown]
# ## Fluid: the same lattice on both backends, mass conserved
#
# A fully periodic box with a cylinder: no fluid enters or leaves, so the total mass must
# stay what it was, to float32 rounding (the weights sum to exactly 1 and the populations are
# stored as departures from rest, so that rounding does not add up step after step). The GPU
# and the CPU run the same cell update; the rate counts the fluid cells.

# %%
# --8<-- [start:lbm]
def check_lbm(nx: int, ny: int, steps: int) -> dict:
    solid = cylinder(nx, ny)
    gpu = Lattice(solid, tau=0.6, u_in=0.1, backend="numba-cuda", perturb=0.3)
    cpu = Lattice(solid, tau=0.6, u_in=0.1, backend="cpu", perturb=0.3)
    mass0 = gpu.mass()
    gpu.step(1)                                     # the first step compiles: not timed
    seconds = timed(lambda: gpu.step(steps - 1))
    cpu.step(steps)
    diff = float(np.abs(gpu.f - cpu.f).max())
    drift = abs(gpu.mass() - mass0) / mass0
    assert np.isfinite(gpu.f).all() and diff < 1e-4, f"LBM: GPU and CPU differ by {diff}"
    assert drift < 1e-6, f"LBM: mass changed by {drift:.2e}"
    fluid = int(np.count_nonzero(solid == 0))
    return {"model": "lbm", "size": f"{nx} x {ny}", "steps": steps, "seconds": seconds,
            "rate": fluid * (steps - 1) / seconds, "gpu_vs_cpu": diff, "mass_drift": drift}
# --8<-- [end:lbm]


# %% [markdown]
# ## Gravity: energy and momentum of a star cluster
#
# A Plummer sphere advanced by leapfrog: the total energy may wobble but must not drift, and
# the total momentum (zero at the start) must stay zero.

# %%
# --8<-- [start:nbody]
def check_nbody(n: int, steps: int) -> dict:
    pos, vel = plummer(n, seed=0)
    gpu = NBody(pos, vel, dt=1e-3, eps=0.05, backend="numba-cuda")
    cpu = NBody(pos, vel, dt=1e-3, eps=0.05, backend="cpu")
    e0 = gpu.energy()
    gpu.step(1)
    seconds = timed(lambda: gpu.step(steps - 1))
    cpu.step(steps)
    diff = float(np.abs(gpu.state()[0] - cpu.state()[0]).max())
    drift = abs(gpu.energy() - e0) / abs(e0)
    assert diff < 1e-4, f"n-body: GPU and CPU positions differ by {diff}"
    assert drift < 1e-4, f"n-body: energy drifted by {drift:.2e}"
    assert np.abs(gpu.momentum()).max() < 1e-5, "n-body: momentum not conserved"
    return {"model": "nbody", "size": f"N = {n}", "steps": steps, "seconds": seconds,
            "rate": n * n * (steps - 1) / seconds, "gpu_vs_cpu": diff, "energy_drift": drift}
# --8<-- [end:nbody]


# %% [markdown]
# ## Heat: a sine mode decays at the rate the scheme predicts
#
# sin(pi x) sin(pi y) is an eigenvector of the 5-point stencil, so each step multiplies it by
# an exact factor; after `steps` steps the grid must equal the start times that factor.

# %%
# --8<-- [start:heat]
def check_heat(side: int, steps: int) -> dict:
    u0 = sine_mode(side, side, dtype="float32")
    gpu = Heat(u0, r=0.25, backend="numba-cuda")
    gpu.step(1)
    seconds = timed(lambda: gpu.step(steps - 1))
    cpu = Heat(u0, r=0.25, backend="cpu").step(steps)
    expected = u0.astype(np.float64) * sine_decay(side, side, 1, 1, 0.25, steps)
    err = float(np.abs(gpu.u - expected).max())
    assert err < 1e-5 and np.abs(gpu.u - cpu.u).max() < 1e-5, f"heat: error {err:.2e} against the exact decay"
    return {"model": "heat", "size": f"{side} x {side}", "steps": steps, "seconds": seconds,
            "rate": (side - 2) ** 2 * (steps - 1) / seconds, "error_vs_exact": err}
# --8<-- [end:heat]


# %%
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fluid, gravity and heat on the GPU, checked.")
    parser.add_argument("--json", metavar="PATH", help="write the results record here")
    args = parser.parse_args(argv)
    try:
        rows = [check_lbm(*SIZES["lbm"]), check_nbody(*SIZES["nbody"]), check_heat(*SIZES["heat"])]
    except AssertionError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    where = "numba CUDA simulator (no GPU)" if SIMULATED else device.describe(device.machine_record())
    print(f"on {where}; the first step (it compiles) is not timed")
    print(f"{'model':<7}{'size':>14}{'steps':>7}{'seconds':>10}{'updates/s':>12}   (GPU, after the first step)")
    for r in rows:
        print(f"{r['model']:<7}{r['size']:>14}{r['steps']:>7}{r['seconds']:>10.3f}{r['rate']:>12.3g}")
    print("GPU and CPU agree; mass, energy, momentum and the sine mode's decay check out")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"example": "simulation", "simulated": SIMULATED, "machine": device.machine_record(),
                       "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(None if "ipykernel" not in sys.modules else []))
