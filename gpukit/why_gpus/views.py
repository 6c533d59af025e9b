"""The chapter's tables and plots, drawn from its results files."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_time, table

from .meta import BACKENDS, CPU_NAMES, DEGREE, GPU_BACKENDS, LABELS, NAME

COLORS = {"python": "#8d6e63", "numpy": "#fb8c00", "numba-1core-naive": "#9e9e9e",
          "numba-1core": "#1e88e5", "numba-parallel": "#283593", "gpu-kernel": "#2e7d32",
          "gpu-pageable": "#d32f2f", "gpu-pinned": "#8e24aa"}
#: Line style of each GPU variant: the same style marks its crossover line.
GPU_STYLE = {"gpu-kernel": "-", "gpu-pageable": "--", "gpu-pinned": ":"}
#: Short column heads for the wide tables.
SHORT = {"python": "Python", "numpy": "NumPy", "numba-1core-naive": "1 core, per element",
         "numba-1core": "1 core, SIMD", "numba-parallel": "all cores", "gpu-kernel": "GPU kernel",
         "gpu-pageable": "GPU + copies, pageable", "gpu-pinned": "GPU + copies, pinned"}
TITLES = {"saxpy": "SAXPY out = a·x + y (memory-bound, 12 B/element)",
          "poly": f"Degree-{DEGREE} polynomial (compute-bound, {2 * DEGREE} FLOP/element)"}


def _where(data: dict) -> str:
    """The GPU and the CPU with the numba threads the run used: both sides of every comparison
    (:func:`gpukit.pages.machine_title` names one processor only)."""
    m = data["machine"]
    cpu = f"{m['cpu']['model']} ({data['hardware']['cpu']['cores_used']} threads)"
    return (m["gpu"]["name"] + " + " + cpu) if m.get("gpu") else cpu + ", no GPU"


#: Short legend names: the plot is drawn for a phone.
LEGEND = {"python": "Python", "numpy": "NumPy", "numba-1core-naive": "1 core, naive",
          "numba-1core": "1 core", "numba-parallel": "all cores", "gpu-kernel": "GPU kernel",
          "gpu-pageable": "GPU + pageable", "gpu-pinned": "GPU + pinned"}
PLOT_TITLES = {"saxpy": "SAXPY (memory-bound)", "poly": f"Degree-{DEGREE} polynomial (compute-bound)"}


def plot_svg(data: dict, work: str) -> str:
    """Median time per call against size, one line per backend; the GPU's crossovers as
    vertical lines in the colour and style of their GPU line, named in the crossover table."""
    part = data[work]
    if not part.get("rows"):
        raise pages.NotRecorded(work)
    fig, ax = pages.figure(height=5.0)
    for backend in BACKENDS[work] + GPU_BACKENDS:
        rs = [r for r in part["rows"] if r["backend"] == backend]
        if not rs:
            continue
        ax.loglog([r["size"] for r in rs], [r["median_s"] for r in rs], GPU_STYLE.get(backend, "-"),
                  marker="o", markersize=3.5, linewidth=1.8, color=COLORS[backend],
                  label=LEGEND[backend])
    for backend, ls in GPU_STYLE.items():
        s = part.get("crossover", {}).get(backend)
        if s:
            ax.axvline(s, color=COLORS[backend], linestyle=ls, linewidth=1.2, alpha=0.8)
            ax.plot([s], [1.0], marker="v", ms=8, color=COLORS[backend], clip_on=False,
                    transform=ax.get_xaxis_transform(), zorder=5)
    _decades(ax)
    ax.set_xlabel("elements (float32)")
    ax.set_ylabel("median time per call (s)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower left", bbox_to_anchor=(-0.12, 1.02), ncol=2, frameon=False,
              handlelength=1.6, columnspacing=0.8, borderaxespad=0.2)
    ax.set_title(f"{PLOT_TITLES[work]}\n{pages.machine_title(data, cores=False)}",
                 loc="left", pad=8 + 21 * ((len([b for b in BACKENDS[work] + GPU_BACKENDS
                                                 if _at(part, b)]) + 1) // 2))
    return pages.svg(fig)


def _decades(ax) -> None:
    """Label every power of ten inside the drawn range on both log axes, and no tick outside it."""
    import math
    for lim, setter in ((ax.get_xlim(), ax.set_xticks), (ax.get_ylim(), ax.set_yticks)):
        lo, hi = math.ceil(math.log10(lim[0])), math.floor(math.log10(lim[1]))
        setter([10.0 ** k for k in range(lo, hi + 1)])
    ax.minorticks_off()


def _at(part: dict, backend: str, size: int | None = None) -> dict | None:
    rs = [r for r in part["rows"] if r["backend"] == backend and (size is None or r["size"] == size)]
    return rs[-1] if rs else None


def _best_cpu_row(part: dict, size: int) -> dict | None:
    rs = [r for r in part["rows"] if r["backend"] in CPU_NAMES and r["size"] == size]
    return min(rs, key=lambda r: r["median_s"]) if rs else None


def _common_top(part: dict, a: str, b: str) -> int | None:
    """Largest size measured for both backends a and b."""
    both = {r["size"] for r in part["rows"] if r["backend"] == a} & {
        r["size"] for r in part["rows"] if r["backend"] == b}
    return max(both) if both else None


def ratio(part: dict, slow: str, fast: str) -> tuple[float, int] | None:
    """(time of slow / time of fast, size) at the largest size both measured."""
    s = _common_top(part, slow, fast)
    if s is None:
        return None
    return _at(part, slow, s)["median_s"] / _at(part, fast, s)["median_s"], s


def key_numbers(data: dict) -> list[tuple[str, str]]:
    """The numbers the chapter's prose talks about, derived from one results file."""
    h, sax, pol = data["hardware"], data["saxpy"], data["poly"]
    c, g = h["cpu"], h.get("gpu")
    out: list[tuple[str, str]] = []
    if g and _at(sax, "gpu-kernel"):
        small = sorted(r["median_s"] for part in (sax, pol) for r in part["rows"]
                       if r["backend"] == "gpu-kernel" and r["size"] <= 10**5)
        out.append(("GPU kernel alone, 1,000 to 100,000 elements: the fixed cost of a launch from Python "
                    "(median over both workloads)", fmt_time(small[len(small) // 2])))
        small_c = sorted(r["median_s"] for part in (sax, pol) for r in part["rows"]
                         if r["backend"] == "gpu-pinned" and r["size"] <= 10**5)
        out.append(("GPU with copies from pinned memory, same sizes: the fixed cost of two copies and "
                    "a launch", fmt_time(small_c[len(small_c) // 2])))
    one = _at(sax, "numba-1core", min(r["size"] for r in sax["rows"]))
    if one:
        out.append((f"one CPU core, SAXPY of {one['size']:,} elements", fmt_time(one["median_s"])))
    par = [r for r in sax["rows"] if r["backend"] == "numba-parallel"]
    if par:
        top = max(par, key=lambda r: r["gbs"])
        last = par[-1]
        out.append((f"all CPU cores, SAXPY: fastest rate, at {top['size']:,} elements "
                    f"({fmt_num(top['size'] * 12 / 1e6, 0)} MB of arrays)", f"{fmt_num(top['gbs'], 1)} GB/s"))
        out.append((f"all CPU cores, SAXPY at {last['size']:,} elements "
                    f"({fmt_num(last['size'] * 12 / 1e9, 1)} GB of arrays)", f"{fmt_num(last['gbs'], 1)} GB/s"))
    cross = sax.get("crossover", {}).get("gpu-kernel")
    if cross:
        out.append(("SAXPY crossover, kernel alone: size of the arrays there",
                    f"{fmt_num(cross * 12 / 1e6, 0)} MB"))
    if g and g.get("theoretical_bandwidth_gbs") and _at(sax, "gpu-kernel"):
        r = _at(sax, "gpu-kernel")
        out.append((f"GPU SAXPY kernel at {r['size']:,} elements: share of the data-sheet bandwidth "
                    f"({fmt_num(g['theoretical_bandwidth_gbs'])} GB/s)",
                    f"{100 * r['gbs'] / g['theoretical_bandwidth_gbs']:.0f}%"))
    if g and g.get("peak_tflops") and _at(pol, "gpu-kernel"):
        r = _at(pol, "gpu-kernel")
        out.append((f"GPU polynomial kernel at {r['size']:,} elements: share of peak FP32 "
                    f"({fmt_num(g['peak_tflops'], 1)} TFLOP/s)",
                    f"{100 * r['gflops'] / (g['peak_tflops'] * 1e3):.1f}%"))
    if c.get("peak_gflops_1fma"):
        r = _at(pol, "numba-parallel")
        if r:
            out.append((f"CPU polynomial, all {c['cores_used']} cores, {r['size']:,} elements: share of peak "
                        f"with one FMA unit per core ({fmt_num(c['peak_gflops_1fma'])} GFLOP/s)",
                        f"{100 * r['gflops'] / c['peak_gflops_1fma']:.0f}%"))
        r = _at(pol, "numba-1core")
        if r:
            per_core = c["peak_gflops_1fma"] / c["cores_used"]
            out.append((f"CPU polynomial, one core, {r['size']:,} elements: share of one core's peak "
                        f"({fmt_num(per_core)} GFLOP/s)", f"{100 * r['gflops'] / per_core:.0f}%"))
    r = _at(pol, "numba-1core-naive")
    if r and c.get("clock_mhz"):
        out.append(("one core, per-element polynomial loop: multiply-adds per clock cycle "
                    f"(at the reported {fmt_num(c['clock_mhz'])} MHz)",
                    f"{r['gflops'] / 2 / (c['clock_mhz'] / 1e3):.2f}"))
    n = c["cores_used"]
    for part, label, slow, fast in (
            (pol, "polynomial, one core: speed-up of the SIMD-friendly loop over the per-element loop",
             "numba-1core-naive", "numba-1core"),
            (pol, "polynomial: speed-up of NumPy over the compiled per-element loop", "numba-1core-naive", "numpy"),
            (pol, f"polynomial: speed-up of all {n} cores over one core", "numba-1core", "numba-parallel"),
            (sax, f"SAXPY: speed-up of all {n} cores over one core", "numba-1core", "numba-parallel"),
            (sax, "SAXPY, one core: speed-up of the compiled loop over NumPy", "numpy", "numba-1core")):
        q = ratio(part, slow, fast)
        if q:
            out.append((f"{label}, at {q[1]:,} elements", f"{q[0]:.1f}x"))
    if g:
        for b in ("gpu-pageable", "gpu-pinned"):
            r = _at(sax, b)
            if r:
                out.append((f"SAXPY with copies ({b[4:]}) at {r['size']:,} elements: bytes moved per second",
                            f"{fmt_num(r['gbs'], 1)} GB/s"))
        r, k = _at(pol, "gpu-pinned"), _at(pol, "gpu-kernel")
        if r and k and r["size"] == k["size"]:
            out.append((f"polynomial with pinned copies at {r['size']:,} elements: share of the time "
                        "spent in the kernel", f"{100 * k['median_s'] / r['median_s']:.0f}%"))
    return out


def speedups(data: dict) -> list[list[str]]:
    """GPU kernel alone (and with pinned copies) against each CPU implementation, at the
    largest size both measured."""
    rows = []
    for work in ("saxpy", "poly"):
        part = data[work]
        for b in BACKENDS[work]:
            q = ratio(part, b, "gpu-kernel")
            if q is None:
                continue
            p = ratio(part, b, "gpu-pinned")
            rows.append([work if work == "saxpy" else "polynomial", SHORT[b], f"{q[0]:,.1f}x",
                         f"{p[0]:,.2f}x" if p and p[1] == q[1] else "-", f"{q[1]:,}"])
    return rows


def _figure(data: dict, work: str) -> str:
    return '<figure class="gpukit-plot">\n' + plot_svg(data, work) + "\n</figure>"


@pages.renderer(NAME, "saxpy-plot")
def saxpy_plot(slug: str, data: dict) -> str:
    return _figure(data, "saxpy")


@pages.renderer(NAME, "poly-plot")
def poly_plot(slug: str, data: dict) -> str:
    return _figure(data, "poly")


@pages.renderer(NAME, "times")
def times(slug: str, data: dict) -> str:
    out = [f"**{_where(data)}**"]
    for work in ("saxpy", "poly"):
        part = data[work]
        szs = sorted({r["size"] for r in part["rows"]})
        for side, names in (("CPU", BACKENDS[work]), ("GPU", GPU_BACKENDS)):
            present = [b for b in names if _at(part, b)]   # two narrower tables, not one too wide
            if not present:
                continue
            rows, timed = [], []
            for s in szs:
                row = [f"{s:,}"]
                for b in present:
                    r = _at(part, b, s)
                    timed += [r] if r else []
                    row.append(fmt_time(r["median_s"]) + pages.dagger(r)
                               if r else "-")
                rows.append(row)
            out.append(f"*{TITLES[work]}*, median time per call, {side}\n\n"
                       + table(["elements"] + [SHORT[b] for b in present], rows)
                       + pages.flag_note(timed))
        for e in part.get("errors", []):
            out.append(f"`{e.get('backend', '?')}` failed at n = {e.get('size', '?')}: `{e['error']}`")
    return pages.collapsed("Every median time, size by size", "\n\n".join(out))


@pages.renderer(NAME, "summary")
def summary(slug: str, data: dict) -> str:
    rows = []
    for work in ("saxpy", "poly"):
        part = data[work]
        top = max(r["size"] for r in part["rows"])
        best = _best_cpu_row(part, top)
        one = _at(part, "numba-1core") or _at(part, "numba-1core-naive")
        picked = []
        for r in [one, best] + [_at(part, b, top) for b in GPU_BACKENDS]:
            if r is None or any(r is p for p in picked):
                continue
            picked.append(r)
            ref = _best_cpu_row(part, r["size"])     # compared at the row's own size
            label = SHORT[r["backend"]] + (" (best CPU)" if r is ref else "")
            rate = (f"{fmt_num(r['gbs'], 1)} GB/s" if work == "saxpy"
                    else f"{fmt_num(r['gflops'], 1)} GFLOP/s")
            rows.append([work if work == "saxpy" else "polynomial", label,
                         f"{ref['median_s'] / r['median_s']:.2f}x", rate,
                         fmt_time(r["median_s"]), f"{r['size']:,}"])
    return f"**{_where(data)}**\n\n" + table(
        ["workload", "implementation", "vs best CPU", "rate", "median", "elements"],
        rows, "llrrrr")


@pages.renderer(NAME, "key-numbers")
def key(slug: str, data: dict) -> str:
    rows = [list(r) for r in key_numbers(data)]
    text = f"**{_where(data)}**\n\n" + table(["", "measured"], rows, "lr")
    return pages.collapsed(f"Key numbers ({len(rows)} rows)", text) if len(rows) > 12 else text


@pages.renderer(NAME, "speedups")
def speed(slug: str, data: dict) -> str:
    if not data["machine"].get("gpu"):
        raise pages.NotRecorded("gpu")
    return f"**{_where(data)}**\n\n" + table(
        ["workload", "CPU implementation", "GPU kernel faster by", "with pinned copies",
         "elements"], speedups(data), "llrrr")


@pages.renderer(NAME, "crossover")
def cross(slug: str, data: dict) -> str:
    if not data["machine"].get("gpu"):
        raise pages.NotRecorded("gpu")
    rows = []
    for work in ("saxpy", "poly"):
        c = data[work].get("crossover", {})
        rows.append([TITLES[work]] + [f"{c[b]:,}" if c.get(b) else "never (up to "
                                      f"{data[work]['n']:,})" for b in GPU_BACKENDS])
    return f"**{_where(data)}**\n\n" + table(
        ["workload", "GPU kernel alone", "with copies, pageable", "with copies, pinned"], rows, "lrrr")


@pages.renderer(NAME, "poly-kernels")
def poly_kernels(slug: str, data: dict) -> str:
    pk = data["poly_kernels"]
    if not pk.get("rows"):
        raise pages.NotRecorded("poly_kernels")
    rows = []
    for r in pk["rows"]:
        mark = " (kept)" if r["elems"] == pk["best_elems"] else ""
        rows.append([r["kernel"] + mark, fmt_time(r["median_s"]), fmt_num(r["tflops"], 1),
                     f"{r['pct_of_peak']:.0f} %" if r.get("pct_of_peak") else "-",
                     f"{r['max_rel_err']:.1e}"])
    text = (f"**{_where(data)}**, {pk['n']:,} elements, degree {DEGREE}\n\n"
            + table(["kernel", "median", "TFLOP/s", "of peak FP32", "max relative error"], rows, "lrrrr"))
    ptx = pk["rows"][0].get("ptx", {})
    if "fma" in ptx:
        text += (f"\n\nnumba's kernel compiles to PTX with {ptx['fma']} multiply-adds and "
                 f"{ptx['const_loads']} loads from constant memory"
                 + (": one load for every multiply-add." if ptx["fma"] == ptx["const_loads"] else "."))
    return text


@pages.renderer(NAME, "hardware")
def hardware(slug: str, data: dict) -> str:
    h = data["hardware"]
    c, g = h["cpu"], h.get("gpu")
    sax, pol = data["saxpy"], data["poly"]
    top_s = max(r["size"] for r in sax["rows"])
    top_p = max(r["size"] for r in pol["rows"])
    cpu_bw = _best_cpu_row(sax, top_s)["gbs"]
    cpu_fl = _best_cpu_row(pol, top_p)["gflops"]
    simd = "AVX-512" if c["fp32_lanes"] == 16 else "AVX2" if c["fp32_lanes"] == 8 else "SSE"
    clock = f"{c['clock_mhz']:,.0f} MHz" if c.get("clock_mhz") else "unknown"
    rows = [
        ["parallel units", f"{c['cores_used']} cores (numba threads)", f"{g['sms']} SMs" if g else "-"],
        ["FP32 lanes per unit", f"{c['fp32_lanes']} ({simd})",
         f"{g['fp32_lanes_per_sm']} (compute capability {g['compute_capability']})" if g else "-"],
        ["clock (as reported)", clock, f"{g['clock_mhz']:,.0f} MHz" if g and g.get("clock_mhz") else "-"],
        ["peak FP32, units x lanes x 2 (FMA) x clock",
         f"{fmt_num(c.get('peak_gflops_1fma'))} GFLOP/s (one FMA unit per core)",
         f"{fmt_num(g['peak_tflops'] * 1e3)} GFLOP/s" if g and g.get("peak_tflops") else "-"],
        ["measured, polynomial (best)", f"{fmt_num(cpu_fl, 1)} GFLOP/s",
         f"{fmt_num(_at(pol, 'gpu-kernel', top_p)['gflops'], 1)} GFLOP/s" if g and _at(pol, "gpu-kernel", top_p) else "-"],
        ["measured, SAXPY (best)", f"{fmt_num(cpu_bw, 1)} GB/s",
         f"{fmt_num(_at(sax, 'gpu-kernel', top_s)['gbs'], 1)} GB/s" if g and _at(sax, "gpu-kernel", top_s) else "-"],
    ]
    if g and g.get("theoretical_bandwidth_gbs"):
        rows.append(["memory bandwidth, data sheet (from the driver)", "-",
                     f"{fmt_num(g['theoretical_bandwidth_gbs'])} GB/s"])
    head = ["", f"CPU: {c['model']}", f"GPU: {g['name']}" if g else "GPU: none"]
    text = table(head, rows, "lrr")
    if g:
        gk_p, gk_s = _at(pol, "gpu-kernel", top_p), _at(sax, "gpu-kernel", top_s)
        ratios = [["peak FP32, one FMA unit per CPU core",
                   f"{g['peak_tflops'] * 1e3 / c['peak_gflops_1fma']:.0f}x" if c.get("peak_gflops_1fma")
                   and g.get("peak_tflops") else "-",
                   f"{gk_p['gflops'] / cpu_fl:.0f}x" if gk_p else "-"],
                  ["memory bandwidth", "-", f"{gk_s['gbs'] / cpu_bw:.0f}x" if gk_s else "-"]]
        text += "\n\n" + table(["GPU / CPU", "from the hardware", "measured (kernel alone)"], ratios, "lrr")
    return f"**{_where(data)}**\n\n" + text


@pages.renderer(NAME, "first-call")
def first_call(slug: str, data: dict) -> str:
    rows = []
    for work in ("saxpy", "poly"):
        for b, f in data[work].get("first_calls", {}).items():
            rows.append([work, LABELS[b], f"{f['size']:,}", fmt_time(f["first_call_s"]),
                         fmt_time(f["median_s"])])
    text = f"**{_where(data)}**\n\n" + table(
        ["workload", "implementation", "first call (numba: includes compiling)", "steady state",
         "elements"], [[r[0], r[1], r[3], r[4], r[2]] for r in rows], "llrrr")
    return pages.collapsed(f"First call and steady state ({len(rows)} rows)", text) \
        if len(rows) > 12 else text


