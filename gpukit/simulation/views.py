"""The chapter's tables, plots and pictures, drawn from its results files (and, for the FP64
table, from the GPU data shipped in gpukit)."""

from __future__ import annotations

from .. import pages
from ..pages import fmt_num, fmt_ratio, fmt_time, table
from .meta import HEAT_BYTES_PER_CELL, HEAT_FLOPS_PER_CELL, NBODY_FLOPS_PER_INTERACTION

MODEL_TITLE = {"lbm": "fluid (LBM D2Q9)", "nbody": "gravity (n-body)", "heat": "heat (5-point stencil)"}
UNIT = {"lbm": "MLUP/s", "nbody": "G interactions/s", "heat": "G cells/s"}
SCALE = {"lbm": 1e6, "nbody": 1e9, "heat": 1e9}


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
    figs = [f'<figure style="margin:0"><img src="{src}" width="{width}" alt="{cap}">'
            f"<figcaption>{cap}</figcaption></figure>" for cap, src in items]
    return ('<div style="display:flex;flex-wrap:wrap;gap:0.6em;justify-content:center">'
            + "".join(figs) + "</div>")


@pages.renderer("simulation", "vortex")
def vortex(slug: str, data: dict) -> str:
    """The vorticity of the flow past a cylinder, frames of the recorded run."""
    from .picture import png_data_uri, unpack, vorticity_rgb
    p = _part(data)["lbm_picture"]
    solid = unpack(p["solid"])
    frames = p["frames"]
    limit = float(max(abs(unpack(f["vorticity"]).astype(float)).max() for f in frames)) * 0.3
    items = [(f"step {f['step']:,}", png_data_uri(vorticity_rgb(unpack(f["vorticity"]), solid, limit)))
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
        rows.append([MODEL_TITLE[r["model"]], pages.marked(r), f"`{r['backend']}`", r["size"],
                     fmt_time(r["first_call_s"]), fmt_time(r["median_s"]), rate, speed, _roof(r),
                     fmt_ratio(r.get("vs_cpu"), 0) if r.get("vs_cpu") else "-"])
    copy = ", ".join(f"`{k}` {fmt_num(v)} GB/s" for k, v in p["copy_gbs"].items() if not k.endswith("_bytes"))
    peak = f"; FP32 peak {fmt_num(p['fp32_tflops'], 1)} TFLOP/s from the machine record" if p.get("fp32_tflops") else ""
    head = (f"**{pages.machine_title(data)}**. Memory roof: a copy measured in the same run ({copy}; each CPU "
            f"row against a copy with all cores measured just before it){peak}. "
            f"A call is one time step (n-body: one acceleration pass); steady state is the median "
            f"of repeated calls, first call apart (it compiles).\n\n")
    return head + table(["simulation", "kernel", "backend", "size", "first call", "steady state",
                         "rate", "achieved", "of the roof", "vs all CPU cores"], rows,
                        "lllrrrrrrr") + pages.host_bound_note(p["rows"])


@pages.renderer("simulation", "roof")
def roof(slug: str, data: dict) -> str:
    """Bars: each row's share of the roof that limits it."""
    import matplotlib.pyplot as plt
    p = _part(data)
    rows = [r for r in p["rows"] if (r.get("pct_copy") or r.get("pct_fp32")) is not None]
    if not rows:
        raise pages.NotRecorded("roof")
    labels = [f"{MODEL_TITLE[r['model']].split(' (')[0]}: {r['name']} ({r['backend']})" for r in rows]
    vals = [r.get("pct_copy") if r.get("pct_copy") is not None else r["pct_fp32"] for r in rows]
    colours = ["#1f77b4" if r.get("pct_copy") is not None else "#d62728" for r in rows]
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(rows) + 1.2))
    ax.barh(range(len(rows)), vals, color=colours)
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of the roof: blue = measured copy bandwidth, red = FP32 peak")
    for i, v in enumerate(vals):
        ax.text(min(v, 88) + 1, i, f"{v:.0f} %", va="center", fontsize=8)
    ax.set_title(f"Share of the roof, {pages.plot_title(data)}", fontsize=10)
    return pages.svg(fig)


@pages.renderer("simulation", "nbody")
def nbody_variants(slug: str, data: dict) -> str:
    p = data["gpu"]
    ptx = p.get("ptx", {})
    rows = []
    base = None
    for r in (r for r in p["rows"] if r["model"] == "nbody" and r["backend"] == "numba-cuda"):
        base = base or r["rate"]
        f = ptx.get(r["name"], {})
        inst = (f"{f['rsqrt.approx']} rsqrt.approx" if f.get("rsqrt.approx") else
                f"{f['sqrt.approx']} sqrt.approx + {f['div.approx']} div.approx" if f.get("sqrt.approx") else
                f"{f.get('sqrt.rn', '?')} sqrt.rn + {f.get('rcp.rn', '?')} rcp.rn") if f else "-"
        rows.append([pages.marked(r), fmt_num(r["rate"] / 1e12, 2), fmt_num(r["tflops"], 1), _pct(r.get("pct_fp32")),
                     fmt_ratio(r["rate"] / base, 2), inst, f.get("ld.shared", "-")])
    n = next(r["size"] for r in p["rows"] if r["model"] == "nbody")
    return (f"**{pages.machine_title(data)}**, {n}, one acceleration pass, "
            f"{NBODY_FLOPS_PER_INTERACTION} FLOP per interaction. The last two columns are read from "
            "the PTX numba-cuda emits for each kernel (sm_90): the instructions for 1/sqrt and the "
            "shared-memory loads in the unrolled inner loop.\n\n"
            + table(["kernel", "T interactions/s", "TFLOP/s", "of FP32 peak", "vs straightforward",
                     "1/sqrt in the PTX inner loop", "ld.shared in it"], rows, "lrrrrll"))


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
    return table(["check", "what", "result"], rows, "lll")


@pages.renderer("simulation", "gallery")
def gallery(slug: str, data: dict) -> str:
    """The gravity and heat runs as pictures."""
    import numpy as np

    from .picture import heat_rgb, png_data_uri, unpack
    p = _part(data)
    e, h = p["nbody_energy"], p["heat_picture"]
    hist, _, _ = np.histogram2d(e["xy"]["y"], e["xy"]["x"], bins=160, range=[[-2.5, 2.5], [-2.5, 2.5]])
    items = [(f"n-body: {len(e['xy']['x']):,} of the {e['n']:,} bodies after {e['steps']:,} steps, seen from above",
              png_data_uri(heat_rgb(np.log1p(hist)))),
             (f"heat: a {h['side']} x {h['side']} plate after {h['steps']:,} steps (r = {h['r']})",
              png_data_uri(heat_rgb(unpack(h["u"]))))]
    return _figures(items, 300)


@pages.renderer("simulation", "fp64")
def fp64(slug: str, data: dict) -> str:
    """The measured float32/float64 heat rows, then what a 1:64 card would do (computed)."""
    from gpukit.cloud import data as gpus
    p = data["gpu"]
    heat = {r["dtype"]: r for r in p["rows"] if r["model"] == "heat" and r["backend"] == "numba-cuda"}
    f32, f64 = heat["float32"], heat["float64"]
    measured = (f"Measured on **{pages.machine_title(data)}**: float32 {fmt_num(f32['rate'] / 1e9, 1)} G cells/s "
                f"({_pct(f32['pct_copy'])} of copy), float64 {fmt_num(f64['rate'] / 1e9, 1)} G cells/s "
                f"({_pct(f64['pct_copy'])} of copy, {HEAT_BYTES_PER_CELL['float64']} B per cell): the float64 "
                f"stencil runs at {fmt_ratio(f64['rate'] / f32['rate'], 2)} the float32 rate.\n\n")
    rows = []
    for g in gpus.gpus():
        ratio, fp32, bw = g.get("fp64_ratio"), g.get("fp32_tflops"), g.get("bandwidth_gbs")
        if not (ratio and fp32 and bw) or g.get("segment") not in ("consumer", "workstation") and g["key"] != "h200-sxm":
            continue
        tf64 = fp32 * ratio
        mem = bw * 1e9 / HEAT_BYTES_PER_CELL["float64"] / 1e9
        alu = tf64 * 1e12 / HEAT_FLOPS_PER_CELL / 1e9
        nb64 = tf64 * 1e12 / NBODY_FLOPS_PER_INTERACTION / 1e12
        nb32 = fp32 * 1e12 / NBODY_FLOPS_PER_INTERACTION / 1e12
        rows.append([g["name"], f"1:{round(1 / ratio)}", fmt_num(tf64, 2), fmt_num(mem, 0), fmt_num(alu, 0),
                     "memory" if mem <= alu else "**FP64 units**", f"{fmt_num(nb32, 2)} / {fmt_num(nb64, 3)}"])
    return (measured + "Computed from data sheets, **not measured**: the float64 heat step (16 B and "
            f"{HEAT_FLOPS_PER_CELL} FLOP per cell) limited by memory (bandwidth / 16 B) or by the FP64 "
            f"units (FP64 peak / {HEAT_FLOPS_PER_CELL} FLOP), and the n-body's ceiling at "
            f"{NBODY_FLOPS_PER_INTERACTION} FLOP per interaction in FP32 and FP64.\n\n"
            + table(["GPU", "FP64 : FP32", "FP64 TFLOP/s", "heat f64, memory limit (G cells/s)",
                     "heat f64, FP64 limit (G cells/s)", "heat f64 limited by",
                     "n-body ceiling FP32 / FP64 (T interactions/s)"], rows, "lrrrrll")
            + f"\n\n<small>From `gpukit/data/gpus.yaml`, data as of {gpus.data_as_of()}; peak rates "
              "without tensor cores.</small>")


@pages.data_renderer("simulation", "anchor")
def anchor() -> str:
    """FluidX3D's published H200 numbers, and the bytes a D2Q9 and a D3Q19 cell update move."""
    from .meta import FLUIDX3D, LBM_BYTES_PER_CELL
    rows = [[f"FluidX3D, D3Q19, {r['storage']} (arithmetic/storage)", f"19 x 2 x {4 if r['storage'].endswith('FP32') else 2} B + flags",
             str(r["bytes_per_cell"]), fmt_num(r["mlups"]), f"{r['pct_spec']} % of {FLUIDX3D['spec_bandwidth_gbs']:,} GB/s (data sheet)"]
            for r in FLUIDX3D["rows"]]
    rows.append(["this chapter, D2Q9, FP32/FP32", "9 x 2 x 4 B + 1 B cell type", str(LBM_BYTES_PER_CELL),
                 "measured below", "of the copy measured in the same run"])
    return (table(["code", "per cell update", "bytes", "MLUPs/s on an H200", "bandwidth used"], rows, "lllrl")
            + f"\n\n<small>FluidX3D: the {FLUIDX3D['gpu']} row of the "
              f"[single-GPU benchmark table in its README]({FLUIDX3D['source']}).</small>")
