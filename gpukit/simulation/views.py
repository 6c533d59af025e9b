"""The chapter's tables, plots and pictures, drawn from its results files (and, for the FP64
table, from the GPU data shipped in gpukit)."""

from __future__ import annotations

from .. import pages
from ..pages import fmt_num, fmt_ratio, fmt_time, table
from .meta import (HEAT_BYTES_PER_CELL, NBODY_FLOPS_PER_INTERACTION, heat_rgb, unpack,
                   vorticity_rgb)

MODEL_TITLE = {"lbm": "fluid (LBM D2Q9)", "nbody": "gravity (n-body)", "heat": "heat (5-point stencil)"}
UNIT = {"lbm": "MLUP/s", "nbody": "G interactions/s", "heat": "G cells/s"}
SCALE = {"lbm": 1e6, "nbody": 1e9, "heat": 1e9}
WHERE = {"numba-cuda": "GPU", "cpu": "CPU, all cores"}

#: the chapter's targets on the GPU: each a rate or a share of the measured copy
TARGETS = {"lbm_mlups": 40_000, "lbm_pct_copy": 75, "nbody_t": 1.5, "heat32_pct_copy": 85}
#: two limits closer than this (relative) are called a near tie, not a verdict
NEAR_TIE = 0.10


def gpu_rows(p: dict) -> dict:
    """The GPU rows a target is judged on: the fastest kernel of the fluid past the cylinder
    (and of the obstacle-free box, where recorded), of the n-body and of heat in each
    precision; ``*_first`` are the first kernels of each (the "before" of the tuned ones)."""
    gpu = [r for r in p["rows"] if r["backend"] == "numba-cuda"]
    fastest = lambda rows: max(rows, key=lambda r: r["rate"]) if rows else None  # noqa: E731
    heat = {d: [r for r in gpu if r["model"] == "heat" and r["dtype"] == d] for d in ("float32", "float64")}
    nbody = [r for r in gpu if r["model"] == "nbody"]
    lbm = [r for r in gpu if r["model"] == "lbm"]
    cyl = [r for r in lbm if r.get("case", "cylinder") == "cylinder"]
    box = [r for r in lbm if r.get("case") == "box"]
    return {"lbm": fastest(cyl), "lbm_first": cyl[0], "lbm_box": fastest(box),
            "nbody": fastest(nbody), "nbody_plain": nbody[0],
            "heat32": fastest(heat["float32"]), "heat64": fastest(heat["float64"]),
            "heat32_first": heat["float32"][0], "heat64_first": heat["float64"][0]}


def counts_fluid(r: dict) -> bool:
    """Whether an LBM row counts only fluid cells and the bytes actually moved (older records
    counted every cell of the grid, solid ones included, at 73 bytes each)."""
    return "fluid_cells" in r and "bytes_per_call" in r


@pages.targets("simulation")
def chapter_targets(data: dict) -> list[pages.Target]:
    """The chapter's targets on the GPU, judged on the recorded rows. The fluid is judged on the
    flow past the cylinder, counting the cells that stream and collide and the bytes moved."""
    g = gpu_rows(data["gpu"])
    lbm, nb, h32 = g["lbm"], g["nbody"], g["heat32"]
    fluid = counts_fluid(lbm)
    out = [pages.Target(f"fluid, LBM D2Q9 float32, past a cylinder, {lbm['size']}"
                        f"{_kernel(lbm)}: fluid-cell updates",
                        f">= {fmt_num(TARGETS['lbm_mlups'])} MLUPs/s",
                        f"{fmt_num(lbm['rate'] / 1e6)} MLUPs/s" if fluid else "not recorded",
                        lbm["rate"] / 1e6 >= TARGETS["lbm_mlups"] if fluid else None),
           pages.Target(f"fluid{_kernel(lbm)}, bytes moved per second, of the copy in the same run",
                        f">= {TARGETS['lbm_pct_copy']} %",
                        f"{lbm['pct_copy']:.1f} % ({fmt_num(lbm['gbs'])} of {fmt_num(lbm['roof_gbs'])} GB/s)"
                        if fluid else "not recorded",
                        lbm["pct_copy"] >= TARGETS["lbm_pct_copy"] if fluid else None),
           pages.Target(f"gravity, all-pairs n-body at {nb['size']} (`{nb['name']}`)",
                        f">= {TARGETS['nbody_t']} T interactions/s",
                        f"{fmt_num(nb['rate'] / 1e12, 2)} T interactions/s", nb["rate"] / 1e12 >= TARGETS["nbody_t"]),
           pages.Target(f"heat, 5-point stencil float32{_kernel(h32)}, of the copy in the same run",
                        f">= {TARGETS['heat32_pct_copy']} %",
                        f"{h32['pct_copy']:.1f} % ({fmt_num(h32['gbs'])} of {fmt_num(h32['roof_gbs'])} GB/s)",
                        h32["pct_copy"] >= TARGETS["heat32_pct_copy"])]
    return out


def _kernel(r: dict) -> str:
    """`` (`kernel`)`` for a row that names its kernel (records before several kernels: none)."""
    return f" (`{r['kernel']}`)" if r.get("kernel") else ""


def _cpu_row(p: dict, r: dict) -> dict | None:
    return next((c for c in p["rows"] if c["backend"] == "cpu" and c["model"] == r["model"]
                 and c.get("dtype") == r.get("dtype") and c.get("case") == r.get("case")), None)


def _part(data: dict) -> dict:
    return data["gpu"] if "gpu" in data else data["cpu"]


def _where(data: dict) -> str:
    return "the GPU run" if "gpu" in data else "a small CPU run (no GPU on this machine)"


def _pct(v) -> str:
    return "-" if v is None else f"{v:.0f} %"


def _roof(r: dict) -> str:
    if r.get("pct_copy") is not None:
        return f"{_pct(r['pct_copy'])} of copy"
    if r.get("pct_fp32") is not None:
        return f"{_pct(r['pct_fp32'])} of FP32 peak"
    return "-"


def _figures(items: list[tuple[str, str]], width: int) -> str:
    figs = [f'<figure style="margin:0;max-width:{width}px"><img src="{src}" width="{width}" alt="{cap}">'
            f"<figcaption>{cap}</figcaption></figure>" for cap, src in items]
    return ('<div style="display:flex;flex-wrap:wrap;gap:0.6em;justify-content:center">'
            + "".join(figs) + "</div>")


@pages.renderer("simulation", "vortex")
def vortex(slug: str, data: dict) -> str:
    """The vorticity of the flow past a cylinder, frames of the recorded run."""
    p = _part(data)["lbm_picture"]
    solid = unpack(p["solid"])
    frames = p["frames"]
    limit = float(max(abs(unpack(f["vorticity"]).astype(float)).max() for f in frames)) * 0.3
    items = [(f"step {f['step']:,}", pages.image_uri(vorticity_rgb(unpack(f["vorticity"]), solid, limit)))
             for f in frames]
    head = (f"Vorticity (red: anticlockwise, blue: clockwise) of the flow past a cylinder, "
            f"{p['nx']} x {p['ny']} cells, Reynolds number {p['reynolds']}, tau = {p['tau']:.4f}, "
            f"{p['steps']:,} steps on `{p['backend']}` in {fmt_time(p['seconds'])} "
            f"({_where(data)}; pictures shrunk to {frames[0]['vorticity']['shape'][1]} pixels wide).\n\n")
    return head + _figures(items, 680)


@pages.renderer("simulation", "table")
def speed(slug: str, data: dict) -> str:
    p = _part(data)
    rows = []
    for r in p["rows"]:
        s = SCALE[r["model"]]
        rate = f"{fmt_num(r['rate'] / s, 1 if r['rate'] / s < 100 else 0)} {UNIT[r['model']]}"
        speed = (f"{fmt_num(r['gbs'])} GB/s" if r.get("gbs") and r["model"] != "nbody"
                 else f"{fmt_num(r['tflops'], 2)} TFLOP/s" if r.get("tflops") else "-")
        kernel = (f"{MODEL_TITLE[r['model']].split(' (')[0]}: {pages.marked(r)}, {r['size']} "
                  f"({WHERE[r['backend']].split(',')[0]})")
        share = _roof(r)
        rows.append([kernel, rate, speed + ("" if share == "-" else f", {share}"),
                     fmt_ratio(r.get("vs_cpu"), 0) if r.get("vs_cpu") else "-",
                     fmt_time(r["median_s"]), fmt_time(r["first_call_s"])])
    copy = ", ".join(f"{WHERE.get(k, k)} {fmt_num(v)} GB/s" for k, v in p["copy_gbs"].items() if not k.endswith("_bytes"))
    peak = f"; FP32 peak {fmt_num(p['fp32_tflops'], 1)} TFLOP/s from the machine record" if p.get("fp32_tflops") else ""
    head = (f"**{pages.machine_title(data)}**. Memory roof: a copy measured in the same run ({copy}; each CPU "
            f"row against a copy with all cores measured just before it){peak}. "
            f"A call is one time step (n-body: one acceleration pass); steady state is the median "
            f"of repeated calls, first call apart (it compiles)."
            + (" The last column divides the GPU's rate per update by that of the same simulation on all CPU cores."
               if any(r.get("vs_cpu") for r in p["rows"]) else "") + "\n\n")
    over = [r for r in p["rows"] if (r.get("pct_copy") or 0) > 100]
    note = ("" if not over else "\n\nAbove 100 % of the copy measured just before it: " + "; ".join(
        f"{MODEL_TITLE[r['model']].split(' (')[0]}, `{r['name']}` ({WHERE[r['backend']]})" for r in over)
        + ". That copy is then no hard roof for the kernel (see the open questions).")
    body = table(["kernel, size", "rate", "achieved", "GPU / CPU", "steady state",
                  "first call"], rows, "lrrrrr") + pages.flag_note(p["rows"]) + note
    if len(rows) > 12:                          # a long table opens on a click
        body = pages.collapsed(f"All {len(rows)} runs: rate, share of the roof, GPU / CPU, "
                               "time per step", body)
    return head + body


@pages.renderer("simulation", "roof")
def roof(slug: str, data: dict) -> str:
    """Bars: each row's share of the roof that limits it (blue: the copy, red: FP32 peak)."""
    p = _part(data)
    rows = [r for r in p["rows"] if (r.get("pct_copy") or r.get("pct_fp32")) is not None]
    if not rows:
        raise pages.NotRecorded("roof")
    # the GPU's kernels where there are any (the CPU's shares are in the table)
    rows = [r for r in rows if r["backend"] == "numba-cuda"] or rows
    gpu = any(r["backend"] == "numba-cuda" for r in rows)
    labels = [f"{MODEL_TITLE[r['model']].split(' (')[0]}: {_short(r)}"
              + ("" if gpu else f" ({WHERE[r['backend']]})") for r in rows]
    vals = [r["pct_copy"] if r.get("pct_copy") is not None else r["pct_fp32"] for r in rows]
    colours = ["#4c72b0" if r.get("pct_copy") is not None else "#c44e52" for r in rows]
    fig, ax = pages.figure(height=0.62 * len(rows) + 0.8)
    pages.name_bars(ax, labels, vals, colors=colours, limit=max(125.0, max(vals) * 1.25))
    ax.axvline(100, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("% of the roof")
    return pages.svg(fig)


#: short names of the kernels, for the bars of the roof plot
SHORT = {"D2Q9, fused stream+collide": "D2Q9, past a cylinder",
         "D2Q9, fused stream+collide, loads first": "D2Q9, cylinder, loads first",
         "D2Q9, obstacle-free periodic box": "D2Q9, box",
         "D2Q9, obstacle-free periodic box, loads first": "D2Q9, box, loads first",
         "5-point stencil, float32": "float32", "5-point stencil, float64": "float64",
         "5-point stencil, float32, loads first": "float32, loads first",
         "5-point stencil, float64, loads first": "float64, loads first",
         "5-point stencil, float32, pairs": "float32, pairs", "2 bodies per thread": "2 per thread",
         "4 bodies per thread": "4 per thread", "fastmath + rsqrt": "rsqrt",
         "4 per thread, sum split 4 ways": "split 4 ways", "split sum, unrolled by 4": "split, unrolled"}


def _short(r: dict) -> str:
    return SHORT.get(r["name"], r["name"])


@pages.renderer("simulation", "nbody")
def nbody_variants(slug: str, data: dict) -> str:
    from .meta import TILE, VARIANTS
    p = data["gpu"]
    ptx = p.get("ptx", {})
    gpu = data["machine"].get("gpu") or {}
    sms, most = gpu.get("multiprocessors"), gpu.get("max_warps_per_multiprocessor")
    rows = []
    base = None
    for r in (r for r in p["rows"] if r["model"] == "nbody" and r["backend"] == "numba-cuda"):
        base = base or r["rate"]
        f = ptx.get(r["name"], {})
        inst = (f"{f['rsqrt.approx']} rsqrt.approx" if f.get("rsqrt.approx") else
                f"{f['sqrt.approx']} sqrt.approx + {f['div.approx']} div.approx" if f.get("sqrt.approx") else
                f"{f.get('sqrt.rn', '?')} sqrt.rn + {f.get('rcp.rn', '?')} rcp.rn") if f else "-"
        # one 1/sqrt per interaction: the loop body's interactions are its square roots
        per = f.get("rsqrt.approx") or f.get("sqrt.approx") or f.get("sqrt.rn")
        lds = f"{f['ld.shared']} ({fmt_num(f['ld.shared'] / per, 0)})" if per and "ld.shared" in f else "-"
        bpt, rows_ = (VARIANTS[r["name"]][0], VARIANTS[r["name"]][3]) if r["name"] in VARIANTS else (None, 1)
        warps = (fmt_num(r["updates_per_call"] ** 0.5 / bpt * rows_ / 32 / sms, 0) + (f" of {most}" if most else "")
                 if bpt and sms else "-")
        rows.append([pages.marked(r), f"{fmt_num(r['rate'] / 1e12, 2)} ({_pct(r.get('pct_fp32'))})",
                     fmt_ratio(r["rate"] / base, 2), inst, lds, warps])
    n = next(r["size"] for r in p["rows"] if r["model"] == "nbody")
    gpu_nb = [r for r in p["rows"] if r["model"] == "nbody" and r["backend"] == "numba-cuda"]
    slower = [b["name"] for a, b in zip(gpu_nb, gpu_nb[1:]) if b["rate"] <= a["rate"]]
    paid = ("Each change made the kernel faster than the row above it." if not slower else
            f"Not every change paid: {', '.join(slower)} ran no faster than the row above.")
    local = [v for v, f in ptx.items() if isinstance(f, dict) and f.get("local")]
    spill = ("" if "local" not in next(iter(ptx.values()), {}) else
             " No kernel's PTX touches local memory: the per-thread arrays became registers (spills that "
             "ptxas might add in the machine code were not checked)." if not local else
             f" Local memory in the PTX of: {', '.join(local)}.")
    return (f"**{pages.machine_title(data)}**, {n}, one acceleration pass, speed-up against the first row, "
            f"{NBODY_FLOPS_PER_INTERACTION} FLOP per interaction. The instruction columns are read from "
            "the PTX numba-cuda emits for each kernel (sm_90): the instructions for 1/sqrt and the "
            "shared-memory loads in the unrolled inner loop (one 1/sqrt per interaction)." + spill
            + f" The last column is arithmetic, not measured: the warps the launch holds ({TILE} threads per "
              "row of a block, N / bodies per thread x rows threads in all) spread evenly over the SMs, against "
              "the most an SM can hold; how many are resident at once (the occupancy) was not measured.\n\n"
            + table(["kernel", "T interactions/s (of peak)", "speed-up", "1/sqrt in PTX",
                     "ld.shared (per interaction)", "warps / SM"],
                    rows, "lrrllr")
            + f"\n\n{paid}")


@pages.renderer("simulation", "checks")
def checks(slug: str, data: dict) -> str:
    p = _part(data)
    e = p["nbody_energy"]
    rows = [["n-body energy", f"{e['n']:,} bodies, {e['steps']:,} steps of dt = {e['dt']} on `{e['backend']}`"
             + (f" (`{e['kernel']}`)" if e["backend"] != "cpu" else ""),
             f"relative drift {e['rel_drift']:.1e}"],
            ["n-body momentum", "same run, total momentum (starts at 0)", f"changed by {e['momentum_change']:.1e}"]]
    for c in p["nbody_checks"]:
        rows.append(["n-body accelerations", f"`{c['variant']}` vs float64 NumPy, 64 bodies",
                     f"max relative error {c['max_rel_err']:.1e}"])
    ph = p.get("physics")
    if ph:                                       # recorded since the physics checks were added
        where = f"on `{ph['backend']}`"
        q, m, h = ph["poiseuille"], ph["mass"], ph["heat_decay"]
        rows[:0] = [
            ["LBM, Poiseuille flow", f"{q['fluid_rows']} fluid rows between walls, driven by a body force, "
             f"{q['steps']:,} steps {where}, against the exact parabola",
             f"max error {100 * q['max_rel_err']:.2f} % of the peak speed; cross flow "
             f"{q['cross_flow']:.1e} of it"],
            ["LBM, mass", f"a closed {m['grid']} box with a cylinder, {m['steps']:,} steps {where}",
             f"changed by {m['change']:.1e} ({m['second_half_change']:.1e} in the second half); weights "
             f"rounded plainly to float32 would add {m['rounded_weights_change']:.1e}"],
            ["heat, sine mode", f"{h['grid']}, {h['steps']} steps of r = {h['r']} {where}, against the "
             "exact decay factor of the scheme",
             "max error " + ", ".join(f"{v:.1e} ({k})" for k, v in h["max_rel_err"].items()) + " of the peak"]]
    for name, key in (("LBM, GPU vs CPU", "lbm_check"), ("heat, GPU vs CPU", "heat_check")):
        c = p.get(key) or {}
        if c:
            rows.append([name, f"{c['grid']}, {c['steps']} steps", f"max difference {c['max_abs_diff']:.1e}"])
    simd = p.get("cpu_simd", {})
    for model, s in simd.items():
        if "error" not in s:
            rows.append([f"CPU `{model}` machine code", "packed (SIMD) float instructions, xmm/ymm/zmm",
                         f"{s['packed_xmm']}/{s['packed_ymm']}/{s['packed_zmm']}: "
                         + ("vectorised" if s["vectorised"] else "**not vectorised**")])
    return pages.collapsed(f"The {len(rows)} checks and their results",
                           table(["check", "result", "what"], [[a, c, b] for a, b, c in rows],
                                 "lll"))


@pages.renderer("simulation", "gallery")
def gallery(slug: str, data: dict) -> str:
    """The gravity and heat runs as pictures."""
    import numpy as np

    p = _part(data)
    e, h = p["nbody_energy"], p["heat_picture"]
    hist, _, _ = np.histogram2d(e["xy"]["y"], e["xy"]["x"], bins=160, range=[[-2.5, 2.5], [-2.5, 2.5]])
    items = [(f"n-body: {len(e['xy']['x']):,} of the {e['n']:,} bodies after {e['steps']:,} steps on the "
              f"{WHERE[e['backend']].split(',')[0]}, seen from above",
              pages.image_uri(heat_rgb(np.log1p(hist)))),
             # the recording draws the plate with the CPU kernel (the same stencil: see the checks)
             (f"heat: a {h['side']} x {h['side']} plate after {h['steps']:,} steps (r = {h['r']}), on the CPU",
              pages.image_uri(heat_rgb(unpack(h["u"]))))]
    return _figures(items, 300)


@pages.renderer("simulation", "fp64")
def fp64(slug: str, data: dict) -> str:
    """The measured float32/float64 heat rows, then what a 1:64 card would do (computed)."""
    from gpukit import catalogue as gpus
    p = data["gpu"]
    g = gpu_rows(p)
    f32, f64 = g["heat32"], g["heat64"]                # the fastest kernel of each precision
    expect = HEAT_BYTES_PER_CELL["float32"] / HEAT_BYTES_PER_CELL["float64"]
    got = f64["rate"] / f32["rate"]
    why = ("" if abs(got - expect) < 0.05 else
           f" That is not the {fmt_ratio(expect, 2)} that twice the bytes predicts, and the reason is not "
           f"that float64 is cheap: the two kernels reach different shares of the copy (the heat "
           f"section says why).")
    measured = (f"Measured on **{pages.machine_title(data)}**, the fastest kernel of each precision: "
                f"float32{_kernel(f32)} {fmt_num(f32['rate'] / 1e9, 1)} G cells/s "
                f"({HEAT_BYTES_PER_CELL['float32']} B per cell, {_pct(f32['pct_copy'])} of copy), "
                f"float64{_kernel(f64)} {fmt_num(f64['rate'] / 1e9, 1)} G cells/s ({HEAT_BYTES_PER_CELL['float64']} B per cell, "
                f"{_pct(f64['pct_copy'])} of copy): the float64 stencil runs at {fmt_ratio(got, 2)} the "
                f"float32 rate.{why}\n\n")
    ptx = p.get("heat_ptx", {}).get("float64")
    if not ptx:                       # the instruction count is read from PTX when recording
        return measured.rstrip()
    inst = ptx["instructions"]
    kinds = ", ".join(f"{fmt_num(v, 0)} {k}" for k, v in sorted(ptx["per_cell"].items()))
    rows = []
    for g in gpus.gpus():
        ratio, fp32, bw = g.get("fp64_ratio"), g.get("fp32_tflops"), g.get("bandwidth_gbs")
        if not (ratio and fp32 and bw) or g.get("segment") not in ("consumer", "workstation") and g["key"] != "h200-sxm":
            continue
        tf64 = fp32 * ratio
        mem = bw * 1e9 / HEAT_BYTES_PER_CELL["float64"] / 1e9
        alu = tf64 * 1e12 / 2 / inst / 1e9          # FP64 instructions per second: peak / 2 (an FMA)
        nb64 = tf64 * 1e12 / NBODY_FLOPS_PER_INTERACTION / 1e12
        nb32 = fp32 * 1e12 / NBODY_FLOPS_PER_INTERACTION / 1e12
        close = abs(alu / mem - 1) <= NEAR_TIE
        limit = ("a near tie" if close else "memory" if mem < alu else "**FP64 units**")
        rows.append([g["name"], f"1:{round(1 / ratio)}", fmt_num(tf64, 2), f"{fmt_num(mem, 0)} / {fmt_num(alu, 0)}",
                     limit, f"{fmt_num(nb32, 2)} / {fmt_num(nb64, 3)}"])
    return (measured + pages.collapsed(
        "Other GPUs, computed from data sheets, not measured",
        "Computed from data sheets, **not measured**: the float64 heat step limited by memory "
            f"(bandwidth / {HEAT_BYTES_PER_CELL['float64']} B per cell) or by the FP64 units. The kernel's "
            f"PTX holds {fmt_num(inst, 0)} float64 instructions per cell ({kinds}); the FP64 peak counts "
            "an FMA as two FLOP, so the units issue peak / 2 instructions per second, and the limit is "
            f"(FP64 peak / 2) / {fmt_num(inst, 0)}. Limits within {NEAR_TIE:.0%} of each other are a near "
            "tie: which one binds then depends on how close the kernel comes to each, which the data "
            f"sheets do not say. The last column is the n-body's ceiling at {NBODY_FLOPS_PER_INTERACTION} "
            "FLOP per interaction in FP32 and FP64.\n\n"
            + table(["GPU", "FP64 : FP32", "FP64 TFLOP/s", "limit: memory / FP64 (G cells/s)",
                     "limited by", "n-body FP32 / FP64 (T int./s)"], rows, "lrrrll")
            + f"\n\n<small>From `gpukit/data/gpus.yaml`, data as of {gpus.data_as_of()}; peak rates "
              "without tensor cores.</small>"))


@pages.renderer("simulation", "anchor")
def anchor(slug: str, data: dict) -> str:
    """FluidX3D's published H200 numbers beside the measured D2Q9 kernel on an obstacle-free
    box (as FluidX3D's benchmark runs): bytes per cell update, updates per second, and the
    bandwidth used as a share of the data sheet (FluidX3D's basis)."""
    from .meta import FLUIDX3D, LBM_BYTES_PER_CELL
    spec = FLUIDX3D["spec_bandwidth_gbs"]
    rows = [[f"FluidX3D, D3Q19, {r['storage']}",
             f"19 x 2 x {4 if r['storage'].endswith('FP32') else 2} + flags = {r['bytes_per_cell']}",
             fmt_num(r["mlups"]), fmt_num(r["mlups"] * r["bytes_per_cell"] / 1e3), f"{r['pct_spec']} %", "-"]
            for r in FLUIDX3D["rows"]]
    box = gpu_rows(data["gpu"])["lbm_box"]
    if box is None:                                  # recorded before the box was timed
        return (table(["code (arithmetic/storage)", "bytes per update", "MLUPs/s", "GB/s",
                       f"of {spec:,} GB/s (data sheet)", "of the copy"], rows, "llrrrr")
                + "\n\nThe chapter's kernel on an obstacle-free box is not in this record.")
    rows.append([f"this chapter, D2Q9, FP32/FP32, obstacle-free box {box['size']}, **measured**",
                 f"9 x 2 x 4 + 1 cell type = {LBM_BYTES_PER_CELL}", fmt_num(box["rate"] / 1e6),
                 fmt_num(box["gbs"]), _pct(100 * box["gbs"] / spec), _pct(box["pct_copy"])])
    ours, theirs = 100 * box["gbs"] / spec, FLUIDX3D["rows"][0]["pct_spec"]
    verdict = (f"On the data sheet's basis the chapter's D2Q9 kernel uses {'less' if ours < theirs else 'more'} "
               f"of the bandwidth than FluidX3D's FP32 D3Q19 kernel ({_pct(ours)} against {theirs} %) and runs "
               f"{fmt_ratio(box['rate'] / 1e6 / FLUIDX3D['rows'][0]['mlups'], 1)} its lattice updates per second, "
               f"because each of its updates moves {fmt_ratio(LBM_BYTES_PER_CELL / FLUIDX3D['rows'][0]['bytes_per_cell'], 2)} "
               "the bytes.")
    return (table(["code (arithmetic/storage)", "bytes per update", "MLUPs/s", "GB/s",
                   f"of {spec:,} GB/s (data sheet)", "of the copy"], rows, "llrrrr")
            + f"\n\n{verdict}")


@pages.renderer("simulation", "heat")
def heat_rows(slug: str, data: dict) -> str:
    """The GPU heat rows, each kernel in each precision: bytes moved per second and the share
    of the copy; then how far apart the precisions and the kernels came out."""
    p = data["gpu"]
    g = gpu_rows(p)
    heat = [r for r in p["rows"] if r["model"] == "heat" and r["backend"] == "numba-cuda"]
    rows = [[f"`{r.get('kernel', 'sliding column')}`", r["dtype"], _pct(r["pct_copy"]),
             f"{fmt_num(r['gbs'])} GB/s", f"{fmt_num(r['rate'] / 1e9, 1)} G cells/s",
             fmt_time(r["median_s"]), str(r["bytes_per_update"])] for r in heat]
    f32, f64 = g["heat32_first"], g["heat64_first"]
    gap = (f"With the same code and launch shape, the first kernel in float64 moves "
           f"{fmt_ratio(f64['gbs'] / f32['gbs'], 2)} the bytes per second of the float32 one."
           if abs(f64["gbs"] / f32["gbs"] - 1) > 0.05 else
           "The first kernel moves the same bytes per second in both precisions, within 5 %.")
    best = g["heat32"]
    if best is not f32:
        gap += (f" In float32, `{best.get('kernel')}` takes {fmt_ratio(best['median_s'] / f32['median_s'], 2)} "
                f"the time of `{f32.get('kernel', 'sliding column')}` per step, "
                f"{_pct(best['pct_copy'])} of the copy against {_pct(f32['pct_copy'])}.")
    return (f"**{pages.machine_title(data)}**, copy {fmt_num(f32['roof_gbs'])} GB/s in the same run, "
            f"{f32['size']} cells.\n\n"
            + table(["kernel", "precision", "of copy", "achieved", "rate", "one step", "bytes per cell"],
                    rows, "llrrrrr") + f"\n\n{gap}")


@pages.renderer("simulation", "lbm")
def lbm_kernels(slug: str, data: dict) -> str:
    """The GPU fluid rows, each kernel on each grid: updates per second, bytes moved per
    second and the share of the copy; then how far apart the kernels came out."""
    p = data["gpu"]
    g = gpu_rows(p)
    lbm = [r for r in p["rows"] if r["model"] == "lbm" and r["backend"] == "numba-cuda"]
    rows = [[f"`{r.get('kernel', 'one thread per cell')}`",
             "past a cylinder" if r.get("case", "cylinder") == "cylinder" else "obstacle-free box",
             f"{fmt_num(r['rate'] / 1e6)} MLUP/s", f"{fmt_num(r['gbs'])} GB/s", _pct(r["pct_copy"]),
             fmt_time(r["median_s"])] for r in lbm]
    first, best = g["lbm_first"], g["lbm"]
    said = ("Only the first kernel is in this record." if best is first else
            f"Past the cylinder, `{best.get('kernel')}` takes {fmt_ratio(best['median_s'] / first['median_s'], 2)} "
            f"the time of `{first.get('kernel', 'one thread per cell')}` per step: {_pct(best['pct_copy'])} "
            f"of the copy against {_pct(first['pct_copy'])}.")
    return (f"**{pages.machine_title(data)}**, copy {fmt_num(first['roof_gbs'])} GB/s in the same run, "
            f"{first['size']} cells; bytes are those a step moves (73 per fluid cell).\n\n"
            + table(["kernel", "grid", "rate", "bytes moved", "of copy", "one step"], rows, "llrrrr")
            + f"\n\n{said}")
