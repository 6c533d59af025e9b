"""The chapter's tables and plots, drawn from its results files."""

from __future__ import annotations

from .. import pages
from ..catalogue import fp32_peak
from .meta import AWKWARD, PTXAS_NAME


# ---------------------------------------------------------------------- renderers

#: The kernel each CUDA C name in the compiler report belongs to.
PTXAS_NAMES = {"04-smem-cuda": "mm04_smem", "05-1d-blocktile": "mm05_blocktile1d",
               "06-2d-blocktile": "mm06_blocktile2d", "07-vectorised": "mm07_vectorised",
               "08-warptile": "mm08_warptile", "09-warptile-128x64": "mm09_warptile_128x64",
               "10-warptile-128x256": "mm10_warptile_128x256", "11-warptile-bk8": "mm11_warptile_bk8",
               "12-pipelined": "mm12_pipelined"}


def _pct(v):
    return "-" if v is None else f"{v:.1f} %"


def _tf(v):
    return "-" if v is None else f"{v:.2f}"


@pages.renderer("matmul", "table")
def render_table(slug: str, data: dict) -> str:
    g = data["gpu"]
    rows = []
    for r in g["rows"] + g.get("failed", []):
        if r.get("error"):
            rows.append([f"`{r['name']}`", "failed: " + r["error"][:80], "-", "-", "-", "-", "-"])
            continue
        occ = r.get("occupancy") or {}
        rows.append([f"`{r['name']}`", _tf(r.get("tflops")), _pct(r.get("pct_of_cublas")),
                     pages.fmt_time(r.get("median_s")), pages.fmt_time(r.get("first_call_s")),
                     r.get("registers", "-") if r.get("registers") is not None else "-",
                     f"{occ['warps_per_sm']} ({occ['occupancy'] * 100:.0f} %)" if occ else "-"])
    n = g["n"]
    best = next((r for r in g["rows"] if r["name"] == g.get("best_kernel")), None)
    lead = (f"The best kernel, `{best['name']}`, reaches {best['pct_of_cublas']:.0f} % of cuBLAS at "
            f"{n} x {n}.\n\n" if best and best.get("pct_of_cublas") is not None else "")
    head = (f"C = A @ B with {n} x {n} float32 matrices "
            f"({g['flops'] / 1e9:.0f} GFLOP per call), median of repeated calls timed with CUDA "
            f"events; cuBLAS with TF32 {g['cublas_tf32']}. First call: at "
            f"{' x '.join(map(str, AWKWARD))}, including numba's compilation; the CUDA C module "
            f"(all its kernels) was compiled once before, in "
            f"{pages.fmt_time(g.get('module_compile_s'))}.\n\n")
    return lead + pages.collapsed(
        "Every kernel: speed, first call, registers and occupancy",
        head + pages.table(["kernel", "TFLOP/s", "% of cuBLAS", "median", "first call",
                            "registers / thread", "warps / SM (occupancy)"], rows))


#: Block tile (rows, columns of C) of each tiled kernel; kept here so the renderers need
#: no numba import (tests check it against the kernels' own constants).
BLOCK_TILES = {"03-smem-numba": (64, 64), "03b-smem-8x8-numba": (128, 128),
               "03c-regtile-numba": (128, 128), "04-smem-cuda": (32, 32), "05-1d-blocktile": (64, 64),
               "06-2d-blocktile": (128, 128), "07-vectorised": (128, 128),
               "08-warptile": (128, 128), "09-warptile-128x64": (128, 64),
               "10-warptile-128x256": (128, 256), "11-warptile-bk8": (128, 128),
               "12-pipelined": (128, 256)}

#: Outputs each thread computes (rows, columns of C) in the tiled kernels: per step along k a
#: thread reads rows + columns floats from shared memory for rows x columns multiply-adds
#: (tests check the product against the block tile and the threads of a block).
THREAD_TILES = {"03-smem-numba": (4, 4), "03b-smem-8x8-numba": (8, 8),
                "03c-regtile-numba": (8, 8), "04-smem-cuda": (1, 1),
                "05-1d-blocktile": (8, 1), "06-2d-blocktile": (8, 8), "07-vectorised": (8, 8),
                "08-warptile": (8, 8), "09-warptile-128x64": (8, 8), "10-warptile-128x256": (16, 8),
                "11-warptile-bk8": (8, 8), "12-pipelined": (16, 8)}

#: Dynamic shared memory of the kernels that take it (bytes; the compiler's report counts
#: only static shared memory). Kernel 12: 3 stages x BK 16 x (128 + 4 + 256) floats.
DYNAMIC_SHARED = {"12-pipelined": 4 * 3 * 16 * (128 + 4 + 256)}

#: Kernels without tiles: every multiply-add loads both operands from global memory.
UNTILED = ("01-naive-numba", "02-coalesced-numba")

def tile_intensity(kernel: str) -> float | None:
    """FLOP per byte of the kernel's loads from global memory (its tile loads).

    A BM x BN block tile reads (BM + BN) floats for each step along k and does
    2 BM BN flops with them; an untiled kernel reads 2 floats per multiply-add.
    """
    if kernel in UNTILED:
        return 2 / 8
    tile = BLOCK_TILES.get(kernel)
    if tile is None:
        return None
    bm, bn = tile
    return 2 * bm * bn / (4 * (bm + bn))


def shared_intensity(kernel: str) -> float | None:
    """FLOP per byte the kernel's threads read from shared memory in the inner loop: a TM x TN
    thread tile reads TM + TN floats per step along k for TM TN multiply-adds."""
    tile = THREAD_TILES.get(kernel)
    if tile is None:
        return None
    tm, tn = tile
    return 2 * tm * tn / (4 * (tm + tn))


# The roofline model used here. A kernel's speed is bounded by the compute roof (the FP32
# peak) and, for each level of the memory hierarchy, by that level's bandwidth times the
# kernel's FLOP per byte of the traffic *that level serves*:
#
# * HBM (device memory) serves the data the first time it is needed. A and B must be read once
#   and C written once, 12 n^2 bytes for 2 n^3 FLOP: at most n / 6 FLOP per byte. Its roof is
#   the device copy measured in the same run.
# * L2 serves the tile loads (the global-memory loads of each block; the loads of the untiled
#   kernels too, through L1). Each tile is read by many blocks while it stays in L2, so this
#   traffic is far larger than the HBM traffic: tile_intensity(). Applying the HBM bandwidth to
#   it gives a roof only for the case where no tile load ever hit in L2.
# * Shared memory serves the tiled kernels' inner loop: shared_intensity().
#
# Only the levels with a bandwidth measured in the results file get a roof; the file holds none
# for L2 or shared memory, so for them the view gives the kernels' intensities and says that no
# roof was measured, rather than drawing one. The DRAM traffic a kernel really causes lies
# between the n / 6 bound and its tile traffic; only a profile (hardware counters) would say.

def _roofline(data: dict) -> dict:
    g = data["gpu"]
    if not g.get("copy_ceiling_gbs"):
        raise pages.NotRecorded("copy_ceiling_gbs")      # not measured in this run: no roofline
    n = g["n"]
    kernels = []
    for r in g["rows"]:
        if r["name"] == "cublas" or not r.get("tflops"):
            continue
        kernels.append({"name": r["name"], "tflops": r["tflops"], "tile": tile_intensity(r["name"]),
                        "shared": shared_intensity(r["name"])})
    return {"peak": fp32_peak(data["machine"].get("gpu") or {}), "hbm_gbs": g["copy_ceiling_gbs"],
            "hbm_intensity": 2 * n**3 / (12 * n * n), "n": n, "kernels": kernels,
            "cublas": next((r["tflops"] for r in g["rows"] if r["name"] == "cublas"), None)}


def _fmt_ai(v):
    return "-" if v is None else f"{v:.2f}"


@pages.renderer("matmul", "roofline")
def render_roofline(slug: str, data: dict) -> str:
    m = _roofline(data)
    peak, bw = m["peak"], m["hbm_gbs"]
    if peak:
        compute = (f"**compute roof**: the FP32 peak, {peak['sms']} SMs x {peak['lanes']} FP32 lanes x 2 "
                   f"FLOP x {peak['mhz']:,.0f} MHz = {peak['tflops']:.1f} TFLOP/s (SM count and clock from "
                   f"the machine record)")
    else:
        compute = "**compute roof**: not known (the machine record lacks the SM count, the clock or the lanes)"
    head = (f"{compute}; **HBM roof**: the device copy measured in this run, {bw:,.0f} GB/s; "
            + (f"they cross at {peak['tflops'] * 1e3 / bw:.1f} FLOP/byte; " if peak else "")
            + f"**L2 and shared memory**: no bandwidth measured in this results file, so no roof. "
            f"HBM traffic: reading A and B once and writing C once, n = {m['n']} allows up to "
            f"{m['hbm_intensity']:.0f} FLOP/byte, where the HBM roof is "
            f"{min(peak['tflops'], m['hbm_intensity'] * bw / 1e3) if peak else m['hbm_intensity'] * bw / 1e3:.1f} "
            f"TFLOP/s. cuBLAS in the same run: {_tf(m['cublas'])} TFLOP/s"
            + (f" ({100 * m['cublas'] / peak['tflops']:.0f} % of the peak), a measured speed, not a roof"
               if peak and m["cublas"] else "") + ".")
    return head


@pages.renderer("matmul", "roofline-kernels")
def render_roofline_kernels(slug: str, data: dict) -> str:
    """Every kernel against the roofs of :func:`render_roofline`."""
    m = _roofline(data)
    peak, bw = m["peak"], m["hbm_gbs"]
    rows = []
    for k in m["kernels"]:
        worst = k["tile"] * bw / 1e3 if k["tile"] is not None else None
        if worst is None:
            hbm_note = "-"
        elif peak and worst >= peak["tflops"]:
            hbm_note = f"{_tf(peak['tflops'])} (the FP32 peak)"
        elif worst < k["tflops"]:
            hbm_note = f"{_tf(worst)} (HBM; exceeded: caches served part of these loads)"
        else:
            hbm_note = f"{_tf(worst)} (HBM)"
        rows.append([f"`{k['name']}`", _tf(k["tflops"]),
                     _pct(100 * k["tflops"] / peak["tflops"]) if peak else "-",
                     _fmt_ai(k["tile"]),
                     "-" if k["tile"] is None else pages.fmt_num(k["tflops"] * 1e3 / k["tile"]),
                     hbm_note, _fmt_ai(k["shared"])])
    return pages.table(["kernel", "TFLOP/s", "% of FP32 peak", "FLOP/byte (tile)", "tile GB/s",
                        "HBM roof (TFLOP/s)", "FLOP/byte (shared)"], rows)


@pages.renderer("matmul", "roofline-plot")
def render_roofline_plot(slug: str, data: dict) -> str:
    """The roofline as an inline SVG: the measured roofs, each kernel at its tile intensity."""
    m = _roofline(data)
    peak, bw = m["peak"], m["hbm_gbs"]
    fig, ax = pages.figure(height=4.6)
    pts = [k for k in m["kernels"] if k["tile"] is not None]
    xs = [k["tile"] for k in pts]
    lo, hi = min(xs + [0.1]) / 2, max(xs + [m["hbm_intensity"]]) * 2
    top = peak["tflops"] if peak else max(k["tflops"] for k in pts)
    x_ridge = top * 1e3 / bw
    ax.plot([lo, x_ridge], [lo * bw / 1e3, top], color="#1565c0", lw=2, label="HBM roof")
    if peak:
        ax.plot([x_ridge, hi], [top, top], color="#b71c1c", lw=2, label="FP32 peak")
    if m["cublas"]:
        ax.axhline(m["cublas"], color="#555555", ls="--", lw=1, label="cuBLAS fp32")
    # the tensor cores' roofs: the library's rate in lower precisions, measured in the same run
    tensor = [r for r in data["gpu"].get("tensor_cores", [])
              if r.get("tflops") and not r.get("error") and r.get("dtype") != "float32"]
    best_tc = max(tensor, key=lambda r: r["tflops"], default=None)
    if best_tc:
        ax.axhline(best_tc["tflops"], color="#6a1b9a", ls=":", lw=2,
                   label=f"{best_tc['dtype'].replace('bfloat16', 'bf16')} tensor cores")
        top = max(top, best_tc["tflops"])
    for lang, marker, colour in (("numba", "o", "#7cb342"), ("CUDA C", "s", "#2e7d32")):
        mine = [k for k in pts if k["name"].endswith("numba") == (lang == "numba")]
        ax.plot([k["tile"] for k in mine], [k["tflops"] for k in mine], ls="none",
                marker=marker, ms=7, color=colour, markeredgecolor="black",
                markeredgewidth=0.5, label=f"{lang} kernels")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ylo, yhi = min(k["tflops"] for k in pts) / 3, top * 3
    decades = [10.0 ** e for e in range(-3, 5)]
    ax.set_xticks([d for d in decades if lo <= d <= hi])
    ax.set_yticks([d for d in decades if ylo <= d <= yhi])
    ax.xaxis.set_major_formatter("{x:g}")
    ax.yaxis.set_major_formatter("{x:g}")
    ax.minorticks_off()
    ax.set_xlim(lo, hi)
    ax.set_ylim(ylo, yhi)
    ax.set_xlabel("FLOP per byte of tile loads")
    ax.set_ylabel("TFLOP/s")
    ax.grid(alpha=0.3, which="major")
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.02), ncol=2, frameon=False)
    return pages.svg(fig)


@pages.renderer("matmul", "sweep")
def render_sweep(slug: str, data: dict) -> str:
    rows = data["gpu"]["sweep"]
    if not rows:
        raise pages.NotRecorded("sweep")
    names = list(dict.fromkeys(r["name"] for r in rows if "name" in r))
    sizes = sorted({r["n"] for r in rows})
    body = []
    for s in sizes:
        line = [f"{s}"]
        for name in names:
            r = next((x for x in rows if x["n"] == s and x.get("name") == name), None)
            if r is None or r.get("error"):
                line.append("failed" if r else "-")
            elif name == "cublas":
                line.append(_tf(r.get("tflops")) + pages.dagger(r))
            else:
                line.append(f"{_tf(r.get('tflops'))} ({_pct(r.get('pct_of_cublas'))})"
                            + pages.dagger(r))
        body.append(line)
    batched = sorted({(r["n"], r["batch"]) for r in rows if r.get("batch", 1) > 1})
    note = ("\n\nAt " + ", ".join(f"n = {n}" for n, _ in batched) + ", each sample times "
            + ", ".join(f"{b}" for _, b in batched) + " launches back to back (in that order), "
            "so the launch gaps do not count as kernel time.") if batched else ""
    return (pages.table(["n (n x n x n)"] + [f"`{x}`" for x in names], body) + note
            + pages.flag_note([r for r in rows if "name" in r]))


@pages.renderer("matmul", "tensor-cores")
def render_tensor_cores(slug: str, data: dict) -> str:
    g = data["gpu"]
    fp32 = next((r for r in g["tensor_cores"] if r.get("tflops") and not r.get("tf32")
                 and r.get("dtype") == "float32"), None)
    rows = []
    for r in g["tensor_cores"]:
        if r.get("error"):
            rows.append([r["name"], "failed: " + r["error"][:80], "-", "-"])
            continue
        times = f"{r['tflops'] / fp32['tflops']:.1f}x" if fp32 else "-"
        rows.append([r["name"], _tf(r["tflops"]), times, f"{r['max_err']:.1e}"])
    best = next((r for r in g["rows"] if r["name"] == g.get("best_kernel")), None)
    if best and fp32:
        rows.append([f"best hand-written fp32 kernel (`{best['name']}`)", _tf(best["tflops"]),
                     f"{best['tflops'] / fp32['tflops']:.1f}x", f"{best['max_err']:.1e}"])
    return pages.table(["cuBLAS via torch", "TFLOP/s", "vs fp32", "max error / (\\|A\\| @ \\|B\\|)"],
                        rows)


@pages.renderer("matmul", "sanitizer")
def render_sanitizer(slug: str, data: dict) -> str:
    s = data["gpu"]["sanitizer"]
    if not s.get("sanitizer"):
        return f"compute-sanitizer was not run: {s.get('note', 'not found')}"
    tools = list(dict.fromkeys(r["tool"] for r in s["runs"]))
    kernels = list(dict.fromkeys(k for r in s["runs"] for k in r["kernels"]))
    rows = []
    for k in kernels:
        line = [f"`{k}`"]
        for tool in tools:
            run_ = next((r for r in s["runs"] if r["tool"] == tool and k in r["kernels"]), None)
            pk = (run_ or {}).get("per_kernel", {}).get(k)
            line.append("-" if pk is None else f"{pk['errors']} ({pk['verified']} shapes verified)")
        rows.append(line)
    summaries = "; ".join(f"{r['tool']}: {r['summary'] or 'no summary'}"
                          + (f" (exit status {r['returncode']})" if r["returncode"] else "")
                          for r in s["runs"] if len(r["kernels"]) > 1) or "one process per kernel"
    head = (f"compute-sanitizer {s.get('version') or ''}, each kernel at "
            f"{' and '.join('x'.join(map(str, x)) for x in s['shapes'])} (M x N x K; the "
            f"shapes after the first take the 16-byte path). Command: "
            f"`{s['runs'][0]['command']}`. "
            f"Tool summaries: {summaries}.\n\n")
    return head + pages.collapsed("Reports per kernel and tool", pages.table(
        ["kernel"] + [f"{t}: reports naming it" for t in tools], rows, align="l" + "r" * len(tools)))


@pages.renderer("matmul", "cpu")
def render_cpu(slug: str, data: dict) -> str:
    c = data["cpu"]
    cpu = data["machine"]["cpu"]
    rows = [[r["name"], _tf(r["tflops"]), pages.fmt_time(r["median_s"])] for r in c["rows"]]
    return (f"**{cpu['model']}** ({cpu['usable_cpus']} cores usable), n = {c['n']}\n\n"
            + pages.table(["implementation", "TFLOP/s", "median"], rows))


@pages.renderer("matmul", "plot")
def render_plot(slug: str, data: dict) -> str:
    """% of cuBLAS per kernel as an inline SVG bar chart (made at build time)."""
    return plot_svg(data)


def plot_svg(data: dict) -> str:
    """The bar chart as inline SVG (:func:`gpukit.pages.svg`)."""
    from matplotlib.patches import Patch
    g = data["gpu"]
    rows = [r for r in g["rows"] if r.get("pct_of_cublas") is not None and r["name"] != "cublas"]
    if not rows:
        raise pages.NotRecorded("pct_of_cublas")
    names = [r["name"] for r in rows]
    pct = [r["pct_of_cublas"] for r in rows]
    fig, ax = pages.figure(height=0.62 * len(rows) + 1.6)
    colors = ["#7cb342" if n.endswith("numba") else "#2e7d32" for n in names]
    pages.name_bars(ax, names, pct, colors=colors, limit=max(115, max(pct) * 1.2))
    ax.axvline(100, color="#555", linestyle="--", linewidth=1)
    ax.legend(handles=[Patch(color="#7cb342", label="numba"),
                       Patch(color="#2e7d32", label="CUDA C")],
              loc="lower left", bbox_to_anchor=(0, 1.0), ncol=2, frameon=False)
    ax.set_xlabel(f"% of cuBLAS fp32, n = {g['n']}")
    return pages.svg(fig)


@pages.renderer(PTXAS_NAME, "registers")
def render_ptxas(slug: str, data: dict) -> str:
    rows = []
    for kernel, rep in data.get("numba", {}).items():
        rows.append([f"`{kernel}`", "numba", rep.get("registers", "-"), rep.get("shared_bytes", "-"),
                     rep.get("spill_stores", "-")])
    for kernel, fn in PTXAS_NAMES.items():
        rep = data["cuda_c"].get(fn, {})
        shared = rep.get("shared_bytes", "-")
        if kernel in DYNAMIC_SHARED:
            shared = f"{DYNAMIC_SHARED[kernel]:,} (dynamic)"
        rows.append([f"`{kernel}` (`{fn}`)", "CUDA C", rep.get("registers", "-"),
                     shared, rep.get("spill_stores", "-")])
    note = (f"\n\n<small>From `{data['command']}` ({data['nvcc']}, {data['arch']}), recorded "
            "by `python -m gpukit.matmul.ptxas --ptxas`.</small>")
    spills = sum(1 for r in rows if isinstance(r[4], (int, float)) and r[4] > 0)
    lead = (f"{'No kernel spills' if not spills else f'{spills} kernel(s) spill'} registers to local "
            "memory.\n\n")
    return lead + pages.collapsed("Registers, shared memory and spills, kernel by kernel",
                                  pages.table(["kernel", "written in", "registers / thread",
                                               "shared memory (bytes)", "spill stores (bytes)"],
                                              rows) + note)


# ------------------------------------------------------------ targets and profiles

#: (kernel before, kernel after) as profile.PAIRS (kept here: views import no kernels)
PROFILE_PAIRS = (("03b-smem-8x8-numba", "03c-regtile-numba"),
                 ("10-warptile-128x256", "12-pipelined"))

#: the chapter's targets: % of cuBLAS fp32 at the benchmark size
NUMBA_TARGET_PCT = 50.0
SIMT_TARGET_PCT = 92.0


def _best(rows, numba: bool):
    mine = [r for r in rows if r.get("pct_of_cublas") is not None and r["name"] != "cublas"
            and r["name"].endswith("numba") == numba]
    return max(mine, key=lambda r: r["pct_of_cublas"], default=None)


@pages.targets("matmul")
def targets(data: dict) -> list[pages.Target]:
    g = data["gpu"]
    n = g["n"]
    out = []
    for what, numba, goal in (("numba kernel with shared memory", True, NUMBA_TARGET_PCT),
                              ("best fp32 SIMT kernel", False, SIMT_TARGET_PCT)):
        best = _best(g["rows"], numba)
        value = ("not recorded" if best is None
                 else f"{best['pct_of_cublas']:.1f} % (`{best['name']}`)")
        out.append(pages.Target(f"matmul, {what}, {n}^3", f">= {goal:.0f} % of cuBLAS SGEMM",
                                value, None if best is None else best["pct_of_cublas"] >= goal))
    return out


@pages.renderer("matmul", "tuning")
def render_tuning(slug: str, data: dict) -> str:
    """Kernel 12 at the sizes it was chosen from: block tile, BK, stages."""
    rows = data["gpu"].get("tuning")
    if not rows:
        return "*Not recorded yet: the results file predates kernel 12's shapes.*"
    body = []
    for r in rows:
        shape = f"{r['block_tile'][0]} x {r['block_tile'][1]}" if r.get("block_tile") else "-"
        if r.get("error"):
            body.append([f"`{r['name']}`", shape, r.get("bk", "-"), r.get("stages", "-"),
                         "failed: " + r["error"][:60], "-"])
            continue
        body.append([f"`{r['name']}`", shape, r["bk"], r["stages"], _tf(r.get("tflops")),
                     _pct(r.get("pct_of_cublas"))])
    best = max((r for r in rows if r.get("tflops")), key=lambda r: r["tflops"], default=None)
    lead = (f"Of these shapes, `{best['name']}` was the fastest in this run.\n\n"
            if best else "")
    return lead + pages.table(["kernel", "block tile", "BK", "stages", "TFLOP/s",
                               "% of cuBLAS"], body)


def _share(v):
    return "-" if v is None else f"{100 * v:.1f} %"


def _num(v, fmt):
    return "-" if v is None else format(v, fmt)


@pages.renderer("matmul", "profile")
def render_profile(slug: str, data: dict) -> str:
    """Nsight Compute counters of the kernels before and after their newest rungs, and the
    ceiling they set: FFMA share of the instructions x share of cycles with an issue."""
    p = data.get("profile") if hasattr(data, "get") else None
    if not p:
        return ("*Not recorded yet: run `python -m gpukit.matmul.profile --save` on the "
                "GPU.*")
    peak = fp32_peak(data["machine"].get("gpu") or {})
    rows, notes = [], []
    for r in p["kernels"]:
        if r.get("error"):
            rows.append([f"`{r['name']}`", "not profiled: " + r["error"][:60]] + ["-"] * 6)
            continue
        ceiling = (r["ffma_share"] * r["issue_active_pct"] / 100
                   if r.get("ffma_share") is not None and r.get("issue_active_pct") else None)
        stall = next(iter(r.get("stalls") or {}), None)
        rows.append([f"`{r['name']}`", pages.fmt_time(r.get("duration_s")),
                     _share(r.get("ffma_share")), _num(r.get("issue_active_pct"), ".1f"),
                     _share(ceiling), _num(r.get("warps_active_pct"), ".1f"),
                     f"{stall} ({r['stalls'][stall]:.2f})" if stall else "-",
                     _num(r.get("bank_conflicts"), ",.0f")])
    by_name = {r["name"]: r for r in p["kernels"] if not r.get("error")}
    lead = []
    for before, after in PROFILE_PAIRS:
        b, a = by_name.get(before), by_name.get(after)
        if b and a and b.get("ffma_share") and a.get("ffma_share"):
            lead.append(f"`{after}` from {_share(b['ffma_share'])} (`{before}`) to "
                        f"{_share(a['ffma_share'])}, with issue active at "
                        f"{_num(a.get('issue_active_pct'), '.0f')} % of cycles against "
                        f"{_num(b.get('issue_active_pct'), '.0f')} %")
    lead = ("The new rungs raise the share of FFMA among the instructions they execute: "
            + "; ".join(lead) + ".") if lead else ""
    cublas = next((x["tflops"] for x in data["gpu"]["rows"] if x["name"] == "cublas"
                   and x.get("tflops")), None)
    if peak and cublas:
        notes.append(f"cuBLAS runs at {100 * cublas / peak['tflops']:.0f} % of the FP32 peak "
                     f"of {peak['tflops']:.1f} TFLOP/s in the benchmark run; "
                     f"{SIMT_TARGET_PCT:.0f} % of cuBLAS is "
                     f"{SIMT_TARGET_PCT * cublas / peak['tflops']:.0f} % of the peak.")
    key = ("Columns: FFMA share is the share of executed instructions that are FFMA (each "
           "does two of the FLOPs counted); issue active is the share of cycles in which a "
           "scheduler issued an instruction; their product is the share of the FP32 peak "
           "the kernel would reach at the clock ncu saw; warps active is the occupancy "
           "reached; the top stall is in cycles per issued instruction.")
    return ((lead + "\n\n" if lead else "")
            + pages.table(["kernel", "time", "FFMA share", "issue active (%)",
                         "FFMA x issue", "warps active (%)", "top stall",
                         "shared bank conflicts"], rows)
            + "\n\n" + " ".join(notes + [key])
            + f"\n\n<small>`{p['command']}` (ncu {p.get('ncu') or '?'}), n = {p['n']}.</small>")
