"""What ``gpukit bench simulation`` records: each simulation's rate on the GPU and on all CPU
cores, as a share of the roof that limits it (measured copy bandwidth or the FP32 peak), with
pictures of the runs.

Every row is verified before it is timed: the GPU against the CPU (same arithmetic), the n-body
accelerations against float64 NumPy. The CPU runs fewer steps on smaller grids; the rate per
update is what compares.
"""

from __future__ import annotations

import re
import time

import numpy as np

from gpukit import bench

from .meta import (HEAT_BYTES_PER_CELL, HEAT_FLOPS_PER_CELL, LBM_BYTES_PER_CELL,
                   NBODY_FLOPS_PER_INTERACTION, lbm_bytes)

#: sizes: "gpu" for the GPU rows, "cpu" for the CPU baseline on a GPU machine, "small" on a machine
#: without a GPU, "tiny" for the tests. Grids several times larger than the caches (CPU L3 included).
SIZES = {
    "gpu": {"lbm": (8192, 4096), "lbm_picture": (2048, 512, 40000), "nbody": 131072, "heat": 16384,
            "nbody_energy": (4096, 2000)},
    "cpu": {"lbm": (4096, 2048), "lbm_picture": (320, 80, 6000), "nbody": 16384, "heat": 16384,
            "nbody_energy": (1024, 500)},
    "tiny": {"lbm": (64, 32), "lbm_picture": (64, 16, 100), "nbody": 256, "heat": 256,
             "nbody_energy": (64, 20)},
    "small": {"lbm": (2048, 512), "lbm_picture": (320, 80, 6000), "nbody": 4096, "heat": 8192,
              "nbody_energy": (512, 400)},
}


#: steps of the physics checks: Poiseuille flow, and each half of the closed box's mass run
PHYSICS_STEPS = {"cpu": {"poiseuille": 3000, "mass": 10_000}, "small": {"poiseuille": 3000, "mass": 10_000},
                 "tiny": {"poiseuille": 3000, "mass": 1000}}


def _roofs(copy_gbs=None, fp32_tflops=None) -> dict:
    """A row's shares of the copy bandwidth and of the FP32 peak, in percent."""
    return {"pct_copy": bench.Roof("gbs", copy_gbs),
            "pct_fp32": bench.Roof("tflops", fp32_tflops)}


def _row(model, name, backend, size, updates, t, *, roof_gbs=None, bytes_per=None, flops_per=None,
         fp32_tflops=None, unit=""):
    rate = updates / t.median_s
    if callable(roof_gbs):
        roof_gbs = roof_gbs()
    extra = {}
    if bytes_per:
        extra.update(bytes_per_update=bytes_per, roof_gbs=roof_gbs, gbs=rate * bytes_per / 1e9)
    if flops_per:
        extra.update(flops_per_update=flops_per, tflops=rate * flops_per / 1e12)
    r = bench.row(t, roofs=_roofs(roof_gbs, fp32_tflops), model=model, name=name,
                  backend=backend, size=size, updates_per_call=updates, unit=unit, rate=rate,
                  **extra)
    print(f"  {model:<6} {name:<28} {backend:<10} {size:<14} first {t.first_call_s:7.3f} s  "
          f"median {t.median_s * 1e3:9.3f} ms  {rate:.4g} {unit}/s"
          + (f"  {r['gbs']:.0f} GB/s" if bytes_per else "") + (f"  {r['tflops']:.2f} TFLOP/s" if flops_per else ""),
          flush=True)
    return r


def host_copy_all_cores(nbytes: int):
    """The CPU's memory roof: a copy with every core (NumPy's copy uses one), bytes read + written."""
    import numba

    @numba.njit(parallel=True)
    def copy(dst, src):
        for i in numba.prange(src.size):
            dst[i] = src[i]
    src = np.random.default_rng(0).random(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    return bench.bench(lambda: copy(dst, src), name="host copy, all cores", warmup=2, repeat=10,
                       bytes=2 * src.nbytes)


def _simd(fn, sig) -> dict:
    """Packed SIMD arithmetic in a CPU function's machine code (xmm: 4 floats, ymm: 8, zmm: 16),
    and scalar float instructions. A fresh compile: numba shows no code loaded from its cache."""
    import numba
    try:
        opts = {k: v for k, v in fn.targetoptions.items() if k not in ("cache", "nopython", "boundscheck")}
        fresh = numba.njit(**opts)(fn.py_func)
        fresh.compile(sig)
        asm = fresh.inspect_asm(sig)
    except Exception as exc:  # noqa: BLE001 - recorded, not fatal
        return {"error": f"{type(exc).__name__}: {exc}"}
    ops = re.findall(r"^\s*v(?:add|sub|mul|fmadd\w*|fnmadd\w*|div|sqrt|rsqrt\w*)p[sd]\s+%?([xyz])mm", asm, re.M)
    counts = {f"packed_{k}mm": ops.count(k) for k in ("x", "y", "z")}
    counts["scalar"] = len(re.findall(r"^\s*v\w+s[sd]\s", asm, re.M))
    counts["vectorised"] = sum(ops.count(k) for k in ("y", "z")) > 0
    return counts


def cpu_simd() -> dict:
    from numba import types as T

    from . import heat, lbm, nbody
    f2, f3, f = T.float32[:, ::1], T.float32[:, :, ::1], T.float32
    return {"lbm": _simd(lbm.lbm_step_cpu, (f3, f3, T.uint8[:, ::1], f, f, f, T.int64)),
            "nbody": _simd(nbody.accel_cpu, (f2, f2, f)), "heat": _simd(heat.heat_step_cpu, (f2, f2, f))}


def _ptx(fn, sig: str, fastmath: bool = False) -> str | None:
    """The PTX numba-cuda emits for ``fn`` on sm_90; None where this machine has no NVVM (or
    runs the simulator, which compiles nothing). Any other compile error is raised."""
    from gpukit import device
    if device.simulator_enabled():
        return None
    try:
        from numba import cuda
        compile_ptx = cuda.compile_ptx
    except (ImportError, AttributeError):
        return None
    if compile_ptx is None:
        return None
    try:
        from numba.cuda.cudadrv import nvvm
        nvvm.NVVM()
    except Exception:  # noqa: BLE001 - NvvmSupportError and the like: no compiler here
        return None
    ptx, _ = compile_ptx(fn, sig, cc=(9, 0), fastmath=fastmath)
    return ptx


def inner_loop(ptx: str) -> str:
    """The PTX of the n-body kernel's inner loop: the shortest loop (a label and a branch
    back to it) that holds a square root or a reciprocal square root; the whole text where
    there is none."""
    lines = ptx.splitlines()
    where = {m.group(1): i for i, line in enumerate(lines)
             if (m := re.match(r"^(\$L__BB\w+):", line.strip()))}
    best = None
    for i, line in enumerate(lines):
        m = re.search(r"\bbra(?:\.uni)?\s+(\$L__BB\w+);", line)
        if m and where.get(m.group(1), i + 1) <= i:
            body = "\n".join(lines[where[m.group(1)]:i + 1])
            if re.search(r"\b(?:rsqrt|sqrt)\.", body) and (best is None or len(body) < len(best)):
                best = body
    return ptx if best is None else best


def ptx_facts() -> dict:
    """What numba-cuda emits for each n-body kernel's inner loop (compiled for sm_90, read
    from its PTX); ``{"skipped": why}`` where this machine cannot compile PTX."""
    from . import nbody
    facts = {}
    for variant, (_, fastmath, _, _, _) in nbody.VARIANTS.items():
        ptx = _ptx(nbody.accel_kernel(variant).py_func,
                   "float32[:,::1], float32[:,::1], float32", fastmath)
        if ptx is None:
            return {"skipped": "no NVVM on this machine, or the CUDA simulator"}
        ptx = inner_loop(ptx)
        count = {name: len(re.findall(pat, ptx)) for name, pat in (
            ("rsqrt.approx", r"\brsqrt\.approx"), ("sqrt.approx", r"\bsqrt\.approx"), ("sqrt.rn", r"\bsqrt\.rn"),
            ("rcp.rn", r"\brcp\.rn"), ("div.approx", r"\bdiv\.approx"), ("div.rn", r"\bdiv\.rn"),
            ("ld.shared", r"\bld\.shared"), ("f64", r"\.f64\b"), ("local", r"\.local\b"))}
        facts[variant] = count
    return facts


#: floating-point arithmetic instructions in PTX: operation and type
PTX_ARITH = re.compile(r"^\s*(add|sub|mul|fma|div|neg|abs|min|max)(?:\.\w+)*\.(f32|f64)\s", re.M)


def heat_ptx() -> dict:
    """The heat kernel's floating-point instructions per cell update, per precision, read from
    its PTX for sm_90: each kind counted, divided by the stores (one per cell) in the PTX."""
    from . import heat
    out = {}
    for dtype in ("float32", "float64"):
        ptx = _ptx(heat.heat_kernel.py_func, f"{dtype}[:,::1], {dtype}[:,::1], {dtype}")
        if ptx is None:
            return {"skipped": "no NVVM on this machine, or the CUDA simulator"}
        stores = len(re.findall(r"^\s*st\.global\.f(?:32|64)\s", ptx, re.M))
        kinds: dict[str, int] = {}
        for op, _ in PTX_ARITH.findall(ptx):
            kinds[op] = kinds.get(op, 0) + 1
        per = {k: v / stores for k, v in kinds.items()}
        out[dtype] = {"stores": stores, "per_cell": per, "instructions": sum(per.values()),
                      "flops": sum(per.values()) + per.get("fma", 0)}     # an FMA is two FLOP
    return out


def _lbm(where, sizes, copy_gbs, cpu_only, repeat):
    from . import lbm
    from .picture import pack
    rows = []
    backends = ["cpu"] if cpu_only else ["numba-cuda", "cpu"]
    check = {}
    compile_s = None
    if not cpu_only:                                    # verify first: the same arithmetic on both
        b = lbm.Lattice(lbm.cylinder(256, 64), tau=0.6, u_in=0.1, inlet=True, backend="cpu",
                        perturb=0.3).step(200)
        compile_s, diffs = {}, {}
        for kernel in lbm.VARIANTS:
            a = lbm.Lattice(lbm.cylinder(256, 64), tau=0.6, u_in=0.1, inlet=True,
                            backend="numba-cuda", perturb=0.3, kernel=kernel)
            compile_s[kernel] = _first_step(a)          # the kernel's first call: it compiles
            a.step(199)
            diffs[kernel] = float(np.abs(a.g - b.g).max())
        check = {"grid": "256 x 64", "steps": 200, "max_abs_diff": max(diffs.values()),
                 "by_kernel": diffs}
        if not check["max_abs_diff"] < 1e-3:
            raise AssertionError(f"LBM: GPU and CPU differ by {diffs}")
    runs = [("numba-cuda", k) for k in (() if cpu_only else lbm.VARIANTS)] + [("cpu", "cpu")]
    for case in ("cylinder", "box"):
        for backend, kernel in runs:
            nx, ny = sizes["gpu" if backend == "numba-cuda" else where]["lbm"]
            if case == "cylinder":                      # flow past a cylinder, in at the left
                lat = lbm.Lattice(lbm.cylinder(nx, ny), tau=0.6, u_in=0.1, inlet=True,
                                  backend=backend, perturb=0.01)
            else:                                       # every cell fluid, periodic: no walls
                lat = lbm.Lattice(np.zeros((ny, nx), np.uint8), tau=0.6, u_in=0.1,
                                  backend=backend, perturb=0.01)
            if backend == "numba-cuda":
                lat.kernel = kernel
            solid = int(np.count_nonzero(lat.solid))
            inlet = ny - int(np.count_nonzero(lat.solid[:, 0])) if lat.inlet else 0
            fluid = nx * ny - solid - inlet             # the cells that stream and collide
            moved = lbm_bytes(fluid, inlet, solid)
            roof = _roof_for(backend, copy_gbs)          # a busy host: its copy measured just before
            t = _bench(lambda: lat.step(1), backend, repeat=repeat,
                       batch=10 if backend == "numba-cuda" else 1)
            if backend == "numba-cuda" and case == "cylinder":
                t.first_call_s = compile_s[kernel]        # compiled in the check above
            g = lat.g[:, ::7, ::7]                      # every 49th cell: a cheap look at the density
            rho = 1 + g.sum(axis=0, dtype=np.float64)[lat.solid[::7, ::7] == 0]
            if not np.isfinite(rho).all() or abs(rho.mean() - 1) > 0.05:
                raise AssertionError(f"LBM on {backend}: density left [0.95, 1.05] or is not finite")
            name = ("D2Q9, fused stream+collide" if case == "cylinder"
                    else "D2Q9, obstacle-free periodic box")
            if backend == "numba-cuda" and kernel != "one thread per cell":
                name += f", {kernel}"                   # the first kernel keeps its name
            r = _row("lbm", name, backend, f"{nx} x {ny}", fluid, t, roof_gbs=roof,
                     bytes_per=LBM_BYTES_PER_CELL, unit="lattice updates")
            r.update(case=case, kernel=kernel, cells=nx * ny, fluid_cells=fluid, inlet_cells=inlet,
                     solid_cells=solid, bytes_per_call=moved)
            r["gbs"] = moved / t.median_s / 1e9          # the bytes moved, not 73 B per cell
            r.update(bench.shares(r, _roofs(copy_gbs=roof)))
            rows.append(r)
            del lat
    # the picture: flow past a cylinder until the vortex street forms
    nx, ny, steps = sizes["gpu" if not cpu_only else where]["lbm_picture"]
    t0 = time.perf_counter()
    lat, snaps = lbm.lbm(nx, ny, steps, backend=backends[0], reynolds=150, frames=3)
    seconds = time.perf_counter() - t0
    picture = {"nx": nx, "ny": ny, "steps": steps, "reynolds": 150, "u_in": 0.1, "tau": lat.tau,
               "backend": backends[0], "seconds": seconds, "solid": pack(lat.solid.astype(np.float32), 400),
               "frames": [{"step": s, "vorticity": pack(w, 400)} for s, w in snaps]}
    return rows, check, picture


def physics(backend: str, steps: dict) -> dict:
    """Checks against physics on ``backend``: Poiseuille flow against its parabola, the mass of
    a closed box over a long run, and a sine mode of the heat equation against its exact decay.
    ``steps``: the Poiseuille steps and the mass run's two halves."""
    from . import heat, lbm
    out = {"backend": backend}
    # a channel between walls driven by a body force: u(y) = F/(2 nu) (y - y0)(y1 - y), the walls
    # half-way between the solid rows and the first fluid rows (half-way bounce-back)
    tau, force, ny = 0.9, 1e-6, 18
    lat = lbm.Lattice(lbm.channel(3, ny), tau=tau, force=force, backend=backend)
    lat.step(steps["poiseuille"])
    _, ux, uy = lat.fields()
    nu = (tau - 0.5) / 3
    y = np.arange(1, ny - 1)
    exact = force / (2 * nu) * (y - 0.5) * (ny - 1.5 - y)
    out["poiseuille"] = {"fluid_rows": ny - 2, "tau": tau, "force": force, "steps": steps["poiseuille"],
                         "max_rel_err": float(np.abs(ux[1:-1, 1] - exact).max() / exact.max()),
                         "cross_flow": float(np.abs(uy).max() / exact.max())}
    # a closed box (periodic, a cylinder, no inflow): nothing enters or leaves
    box = lbm.Lattice(lbm.cylinder(32, 16, 3), tau=0.8, u_in=0.1, backend=backend, perturb=0.3)
    m0 = box.mass()
    box.step(steps["mass"])
    m1 = box.mass()
    box.step(steps["mass"])
    m2 = box.mass()
    out["mass"] = {"grid": "32 x 16", "tau": 0.8, "steps": 2 * steps["mass"], "change": m2 / m0 - 1,
                   "second_half_change": m2 / m1 - 1,
                   "rounded_weights_change": 2 * steps["mass"] * float(box.omega) * lbm.ROUNDED_WEIGHTS_EXCESS}
    # a sine mode of the heat equation: the scheme multiplies it by one factor every step
    n, k, r = 64, 100, 0.25
    decay = {}
    for dtype in ("float32", "float64"):
        u0 = heat.sine_mode(n, n, 1, 1, dtype)
        got = heat.Heat(u0, r=r, backend=backend).step(k).u.astype(np.float64)
        want = u0.astype(np.float64) * heat.sine_decay(n, n, 1, 1, r, k)
        decay[dtype] = float(np.abs(got - want).max() / np.abs(want).max())
    out["heat_decay"] = {"grid": f"{n} x {n}", "steps": k, "r": r, "max_rel_err": decay}
    return out


def _roof_for(backend: str, copy_gbs: dict) -> float:
    """The memory roof of a row: the GPU's copy of this run; for the CPU, whose speed a shared or
    busy host changes from minute to minute, a copy with all cores measured just before the row."""
    if backend == "numba-cuda":
        return copy_gbs[backend]
    return host_copy_all_cores(copy_gbs["cpu_bytes"]).gbs


def _first_step(sim) -> float:
    """Seconds of one GPU step, waiting for it: the first includes compiling."""
    from numba import cuda
    t0 = time.perf_counter()
    sim.step(1)
    cuda.synchronize()
    return time.perf_counter() - t0


def _bench(fn, backend, *, repeat, batch=1):
    return bench.bench(fn, timer="numba" if backend == "numba-cuda" else "cpu", warmup=2,
                       repeat=repeat, batch=batch)


def _nbody(where, sizes, fp32, cpu_only, repeat, n_gpu):
    from numba import cuda

    from . import nbody
    rows, checks = [], []
    eps = np.float32(0.05)
    if not cpu_only:
        pos, _ = nbody.plummer(n_gpu, seed=1)
        d_pos, d_acc = cuda.to_device(pos), cuda.device_array((3, n_gpu), np.float32)
        sample = np.linspace(0, n_gpu - 1, 64).astype(int)
        ref = nbody.accel_reference(pos, float(eps), sample)
        for variant in nbody.VARIANTS:
            d_acc.copy_to_device(np.full((3, n_gpu), np.nan, np.float32))        # poison: catch unwritten
            t0 = time.perf_counter()
            nbody.launch_accel(variant, d_pos, d_acc, eps * eps)                 # compiles; verified first
            got = d_acc.copy_to_host()
            compile_s = time.perf_counter() - t0
            err = float(np.abs(got[:, sample] - ref).max() / np.abs(ref).max())
            if not np.isfinite(got).all() or err > 1e-3:
                raise AssertionError(f"n-body {variant}: error {err:.3g} against float64 (or NaN)")
            checks.append({"variant": variant, "max_rel_err": err})
            t = _bench(lambda: nbody.launch_accel(variant, d_pos, d_acc, eps * eps), "numba-cuda",
                       repeat=max(3, repeat // 3))
            t.first_call_s = compile_s                    # the verified call was the first
            rows.append(_row("nbody", variant, "numba-cuda", f"N = {n_gpu:,}", n_gpu * n_gpu, t,
                             flops_per=NBODY_FLOPS_PER_INTERACTION, fp32_tflops=fp32, unit="interactions"))
    n = sizes[where]["nbody"]
    pos, _ = nbody.plummer(n, seed=1)
    acc = np.full((3, n), np.nan, np.float32)
    t = _bench(lambda: nbody.accel_cpu(pos, acc, eps * eps), "cpu", repeat=max(3, repeat // 6))
    sample = np.linspace(0, n - 1, 64).astype(int)
    ref = nbody.accel_reference(pos, float(eps), sample)
    err = float(np.abs(acc[:, sample] - ref).max() / np.abs(ref).max())
    if not np.isfinite(acc).all() or err > 1e-3:
        raise AssertionError(f"n-body cpu: error {err:.3g} against float64 (or NaN)")
    checks.append({"variant": "cpu", "max_rel_err": err})
    rows.append(_row("nbody", "all cores, fastmath", "cpu", f"N = {n:,}", n * n, t,
                     flops_per=NBODY_FLOPS_PER_INTERACTION, unit="interactions"))
    # energy and momentum over a run of the tuned kernel (the CPU's where there is no GPU)
    ne, steps = sizes["gpu" if not cpu_only else where]["nbody_energy"]
    sim = nbody.nbody(ne, 0, backend="cpu" if cpu_only else "numba-cuda", dt=1e-3, eps=0.05, seed=2)
    e0, p0 = sim.energy(), sim.momentum()
    sim.step(steps)
    e1, p1 = sim.energy(), sim.momentum()
    pos_end = sim.state()[0]
    energy = {"n": ne, "steps": steps, "dt": 1e-3, "eps": 0.05, "backend": sim.backend, "kernel": sim.kernel,
              "e0": e0, "e1": e1, "rel_drift": abs(e1 - e0) / abs(e0),
              "momentum_change": float(np.abs(p1 - p0).max()),
              "xy": {"x": pos_end[0, :2000].round(3).tolist(), "y": pos_end[1, :2000].round(3).tolist()}}
    return rows, checks, energy


def _heat(where, sizes, copy_gbs, cpu_only, repeat):
    from . import heat
    rows = []
    check, compile_s = {}, {}
    if not cpu_only:                                    # verify first: the same stencil on both
        diffs = {}
        for dtype in ("float32", "float64"):
            u0 = heat.hot_spots(1024, 1024, dtype)
            b = heat.Heat(u0, backend="cpu").step(50).u
            for kernel in heat.VARIANTS:
                if heat.runs(kernel, u0.shape, dtype) != kernel:
                    continue                            # e.g. pairs: float32 only
                a = heat.Heat(u0, backend="numba-cuda", kernel=kernel)
                compile_s[dtype, kernel] = _first_step(a)
                diffs[f"{dtype}, {kernel}"] = float(np.abs(a.step(49).u - b).max())
        check = {"grid": "1024 x 1024", "steps": 50, "max_abs_diff": max(diffs.values()),
                 "by_kernel": diffs}
        if not check["max_abs_diff"] < 1e-5:
            raise AssertionError(f"heat: GPU and CPU differ by {diffs}")
    for dtype in ("float32", "float64"):
        for backend in (["cpu"] if cpu_only else ["numba-cuda", "cpu"]):
            side = sizes["gpu" if backend == "numba-cuda" else where]["heat"]
            u0 = np.random.default_rng(0).random((side, side), dtype=np.float32).astype(dtype)
            kernels = ([k for k in heat.VARIANTS if heat.runs(k, u0.shape, dtype) == k]
                       if backend == "numba-cuda" else ["cpu"])
            for kernel in kernels:
                h = heat.Heat(u0, r=0.25, backend=backend,
                              **({"kernel": kernel} if backend == "numba-cuda" else {}))
                roof = _roof_for(backend, copy_gbs)
                t = _bench(lambda: h.step(1), backend, repeat=repeat if backend == "numba-cuda" else 3,
                           batch=5 if backend == "numba-cuda" else 1)
                if (dtype, kernel) in compile_s:
                    t.first_call_s = compile_s[dtype, kernel]   # compiled in the check above
                name = f"5-point stencil, {dtype}"
                if kernel not in ("sliding column", "cpu"):
                    name += f", {kernel}"               # the first kernel keeps its name
                rows.append(_row("heat", name, backend, f"{side} x {side}", (side - 2) ** 2, t,
                                 roof_gbs=roof, bytes_per=HEAT_BYTES_PER_CELL[dtype],
                                 flops_per=HEAT_FLOPS_PER_CELL, unit="cell updates"))
                rows[-1].update(dtype=dtype, kernel=kernel)
                del h
    side = 256 if where != "tiny" else 32
    pic = heat.heat(side, side, 600, backend="cpu").u
    from .picture import pack
    return rows, check, {"side": side, "steps": 600, "r": 0.25, "u": pack(pic, 128)}


def run(n: int | None, repeat: int) -> dict:
    """All the chapter's measurements; the GPU rows where there is a GPU."""
    from gpukit import bench, device
    gpu = device.has_gpu() and not device.simulator_enabled()
    where = "cpu" if gpu else ("tiny" if n and n <= 1000 else "small")   # tiny: the tests' run
    repeat = max(3, min(repeat, 20))
    t_all = time.perf_counter()
    machine = device.machine_record()
    nbytes = 2**29 if gpu else 2**24 if where == "tiny" else 2**28
    copy = {"cpu": host_copy_all_cores(nbytes).gbs, "cpu_bytes": nbytes}
    fp32 = None
    if gpu:
        copy["numba-cuda"] = bench.copy_ceiling("cupy").gbs
        peak = device.fp32_peak(machine["gpu"] or {})
        fp32 = peak["tflops"] if peak else None
    print(f"  copy ceilings (GB/s): {copy}; FP32 peak {fp32} TFLOP/s", flush=True)
    part = {"n": (n or SIZES["gpu"]["nbody"]) if gpu else SIZES[where]["nbody"], "copy_gbs": copy, "fp32_tflops": fp32,
            "sizes": SIZES["gpu" if gpu else where] | ({"cpu_baseline": SIZES["cpu"]} if gpu else {})}
    t0 = time.perf_counter()
    lbm_rows, part["lbm_check"], part["lbm_picture"] = _lbm(where, SIZES, copy, not gpu, repeat)
    part["lbm_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    nb_rows, part["nbody_checks"], part["nbody_energy"] = _nbody(where, SIZES, fp32, not gpu, repeat,
                                                                 n or SIZES["gpu"]["nbody"])
    part["nbody_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    heat_rows, part["heat_check"], part["heat_picture"] = _heat(where, SIZES, copy, not gpu, repeat)
    part["heat_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    part["physics"] = physics("cpu" if not gpu else "numba-cuda", PHYSICS_STEPS[where])
    part["physics_s"] = time.perf_counter() - t0
    rows = lbm_rows + nb_rows + heat_rows
    for r in rows:                                      # GPU rate over all-cores CPU rate, same work
        cpu = [c for c in rows if c["backend"] == "cpu" and c["model"] == r["model"]
               and c.get("dtype") == r.get("dtype") and c.get("case") == r.get("case")]
        if r["backend"] != "cpu" and cpu:
            r["vs_cpu"] = r["rate"] / cpu[0]["rate"]
    part["rows"] = rows
    part["cpu_simd"] = cpu_simd()
    part["ptx"] = ptx_facts()
    part["heat_ptx"] = heat_ptx()
    part["total_s"] = time.perf_counter() - t_all
    return {"gpu" if gpu else "cpu": part}
