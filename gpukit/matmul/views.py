"""The chapter's tables and plots, drawn from its results files."""

from __future__ import annotations

from .. import pages
from .measure import AWKWARD
from .ptxas import PTXAS_NAME


# ---------------------------------------------------------------------- renderers

#: The kernel each CUDA C name in the compiler report belongs to.
PTXAS_NAMES = {"04-smem-cuda": "mm04_smem", "05-1d-blocktile": "mm05_blocktile1d",
               "06-2d-blocktile": "mm06_blocktile2d", "07-vectorised": "mm07_vectorised",
               "08-warptile": "mm08_warptile", "09-warptile-128x64": "mm09_warptile_128x64",
               "10-warptile-128x256": "mm10_warptile_128x256", "11-warptile-bk8": "mm11_warptile_bk8"}


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
    head = (f"**{pages.machine_title(data)}**, C = A @ B with {n} x {n} float32 matrices "
            f"({g['flops'] / 1e9:.0f} GFLOP per call), median of repeated calls timed with CUDA "
            f"events; cuBLAS with TF32 {g['cublas_tf32']}. First call: at "
            f"{' x '.join(map(str, AWKWARD))}, including numba's compilation; the CUDA C module "
            f"(all its kernels) was compiled once before, in "
            f"{pages.fmt_time(g.get('module_compile_s'))}.\n\n")
    return head + pages.table(["kernel", "TFLOP/s", "% of cuBLAS", "median", "first call",
                                "registers / thread", "warps / SM (occupancy)"], rows)


#: Block tile (rows, columns of C) of each tiled kernel; kept here so the renderers need
#: no numba import (tests check it against the kernels' own constants).
BLOCK_TILES = {"03-smem-numba": (64, 64), "03b-smem-8x8-numba": (128, 128), "04-smem-cuda": (32, 32), "05-1d-blocktile": (64, 64),
               "06-2d-blocktile": (128, 128), "07-vectorised": (128, 128),
               "08-warptile": (128, 128), "09-warptile-128x64": (128, 64),
               "10-warptile-128x256": (128, 256), "11-warptile-bk8": (128, 128)}


def tile_intensity(kernel: str) -> float | None:
    """FLOP per byte read from global memory if every tile load went to DRAM.

    A BM x BN block tile reads (BM + BN) floats for each step along k and does
    2 BM BN flops with them; an untiled kernel reads 2 floats per multiply-add.
    """
    if kernel in ("01-naive-numba", "02-coalesced-numba"):
        return 2 / 8
    tile = BLOCK_TILES.get(kernel)
    if tile is None:
        return None
    bm, bn = tile
    return 2 * bm * bn / (4 * (bm + bn))


@pages.renderer("matmul", "roofline")
def render_roofline(slug: str, data: dict) -> str:
    g = data["gpu"]
    if not g.get("copy_ceiling_gbs"):
        raise pages.NotRecorded("copy_ceiling_gbs")      # not measured in this run: no roofline
    bw = g["copy_ceiling_gbs"] * 1e9
    cublas = next(r for r in g["rows"] if r["name"] == "cublas")
    peak = cublas["tflops"] * 1e12
    n = g["n"]
    rows = []
    for r in g["rows"]:
        ai = tile_intensity(r["name"])
        if ai is None or not r.get("tflops"):
            continue
        roof = min(peak, ai * bw)
        rows.append([f"`{r['name']}`", f"{ai:.2f}", _tf(roof / 1e12), _tf(r["tflops"]),
                     "memory" if ai * bw < peak else "compute"])
    head = (f"Memory roof: device copy {g['copy_ceiling_gbs']:,.0f} GB/s; compute roof: cuBLAS "
            f"fp32 {cublas['tflops']:.1f} TFLOP/s; both measured in this run. They cross at "
            f"{peak / bw:.1f} FLOP/byte. Reading A and B once and writing C once, "
            f"n = {n} needs only {2 * n**3 / (12 * n * n):.0f} FLOP/byte.\n\n")
    return head + pages.table(["kernel", "FLOP per byte of tile loads", "roof there (TFLOP/s)",
                                "measured (TFLOP/s)", "bound by"], rows)


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
                line.append(_tf(r.get("tflops")))
            else:
                line.append(f"{_tf(r.get('tflops'))} ({_pct(r.get('pct_of_cublas'))})")
        body.append(line)
    return pages.table(["n (n x n x n)"] + [f"`{x}` TFLOP/s" for x in names], body)


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
            f"second shape takes the 16-byte path). Command: `{s['runs'][0]['command']}`. "
            f"Tool summaries: {summaries}.\n\n")
    return head + pages.table(["kernel"] + [f"{t}: reports naming it" for t in tools], rows,
                               align="l" + "r" * len(tools))


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
    return ("<figure class=\"gpukit-plot\">\n" + plot_svg(data) + "\n<figcaption>Speed of each kernel as a "
            "percentage of cuBLAS fp32 at the same size, in the same run.</figcaption>\n</figure>")


def plot_svg(data: dict) -> str:
    """The bar chart as inline SVG (:func:`gpukit.pages.svg`)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    g = data["gpu"]
    rows = [r for r in g["rows"] if r.get("pct_of_cublas") is not None and r["name"] != "cublas"]
    if not rows:
        raise pages.NotRecorded("pct_of_cublas")
    with plt.rc_context({"svg.fonttype": "none"}):   # keep labels as text: searchable
        return _plot(plt, data, rows)


def _plot(plt, data, rows):
    g = data["gpu"]
    names = [r["name"] for r in rows]
    pct = [r["pct_of_cublas"] for r in rows]
    fig, ax = plt.subplots(figsize=(7.5, 3.8), dpi=100)
    colors = ["#7cb342" if n.endswith("numba") else "#2e7d32" for n in names]
    bars = ax.barh(names[::-1], pct[::-1], color=colors[::-1])
    for bar, v in zip(bars, pct[::-1]):
        ax.text(bar.get_width() + 1, bar.get_y() + bar.get_height() / 2, f"{v:.1f} %",
                va="center", fontsize=8)
    ax.axvline(100, color="#555", linestyle="--", linewidth=1)
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color="#7cb342", label="numba"), Patch(color="#2e7d32", label="CUDA C")],
              loc="lower right", fontsize=8)
    ax.set_xlim(0, max(110, max(pct) + 15))
    ax.set_xlabel("speed, % of cuBLAS SGEMM (fp32, TF32 off) measured in the same run")
    ax.set_ylabel("kernel")
    date = data["machine"].get("date", "")[:10]
    ax.set_title(f"fp32 matmul, {g['n']} x {g['n']} x {g['n']}, on {pages.machine_title(data)} ({date})",
                 fontsize=10)
    fig.tight_layout()
    return pages.svg(fig)


@pages.renderer(PTXAS_NAME, "registers")
def render_ptxas(slug: str, data: dict) -> str:
    rows = []
    for kernel, rep in data.get("numba", {}).items():
        rows.append([f"`{kernel}`", "numba", rep.get("registers", "-"), rep.get("shared_bytes", "-"),
                     rep.get("spill_stores", "-")])
    for kernel, fn in PTXAS_NAMES.items():
        rep = data["cuda_c"].get(fn, {})
        rows.append([f"`{kernel}` (`{fn}`)", "CUDA C", rep.get("registers", "-"),
                     rep.get("shared_bytes", "-"), rep.get("spill_stores", "-")])
    note = (f"\n\n<small>From `{data['command']}` ({data['nvcc']}, {data['arch']}), recorded "
            "by `python -m gpukit.matmul.ptxas --ptxas`.</small>")
    return pages.table(["kernel", "written in", "registers / thread", "shared memory (bytes)",
                         "spill stores (bytes)"], rows) + note
