"""The chapter's tables and plots, drawn from its results files."""

from __future__ import annotations

import math

from .. import catalogue, pages
from ..pages import fmt_num, fmt_time, table
from .meta import BLOCK_SIZES, DIVERGENCE_MODES, NAME, PATHS, READ_VARIANTS, littles_law
from . import diagrams  # noqa: F401  (registers the "hierarchy" view)


# ------------------------------------------------------------------- tables and plots

def _figure(nrows: int = 1, height: float = 3.6, **kwargs):
    """``(plt, fig, axes)``: a plot drawn through :func:`gpukit.pages.figure` (phone width)."""
    import matplotlib.pyplot as plt
    fig, axes = pages.figure(nrows, 1, height=height, **kwargs)
    return plt, fig, axes


def _plain_log_axis(axis, values=()) -> None:
    """Label a logarithmic axis with plain numbers (1, 2, 5, 10, ...) instead of powers of ten;
    only powers of ten where ``values`` span more than two decades (labels would crowd)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    values = [v for v in values if v > 0]
    wide = bool(values) and math.log10(max(values) / min(values)) > 2
    axis.set_major_locator(LogLocator(base=10, subs=(1.0,) if wide else (1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}"))
    axis.set_minor_formatter(NullFormatter())


def _part(data: dict, name: str) -> dict:
    part = data[name]                             # KeyError: this machine has no such part
    if part.get("error"):
        raise pages.NotRecorded(name)
    return part


def _mib(b) -> str:
    if b is None:
        return "-"
    return f"{b / 2**30:,.0f} GiB" if b >= 2**30 else f"{b / 2**20:,.0f} MiB" if b >= 2**20 else f"{b / 2**10:,.0f} KiB"


@pages.renderer(NAME, "facts")
def facts(slug: str, data: dict) -> str:
    g = data["machine"].get("gpu") or {}
    h = data["host"]["facts"]
    caches = {(c["level"], c["type"]): c for c in h.get("caches", [])}
    l1 = caches.get((1, "Data"))
    l2 = caches.get((2, "Unified"))
    l3 = caches.get((3, "Unified"))
    cores = h.get("physical_cores") or h.get("usable_cpus")
    per_core = (h.get("logical_cpus") or 0) // cores if cores else None

    def gv(key, fmt=str):
        return fmt(g[key]) if g.get(key) is not None else "-"
    lanes = h["float32_lanes"]
    clock = (f"{h['max_mhz']:,.0f} MHz (max)" if h.get("max_mhz")
             else f"{h['current_mhz']:,.0f} MHz (as read)" if h.get("current_mhz") else "-")
    occ = data.get("occupancy", {})
    best_gpu = max((r["gbs"] for r in occ.get("rows", [])), default=None)
    host_read = next((r["gbs"] for r in data["host"].get("rows", []) if r.get("kind") == "read"), None)
    rows = [
        ["model", f"{g['name']} (compute capability {g['compute_capability']})" if g else "no GPU",
         h["model"]],
        ["independent processors", gv("multiprocessors", lambda v: f"{v} multiprocessors (SMs)"),
         f"{cores} cores ({h.get('usable_cpus')} usable here)"],
        ["lanes that run one instruction together",
         gv("warp_size", lambda v: f"a warp of {v} threads"),
         f"{lanes} float32 lanes per SIMD instruction"],
        ["threads kept resident per processor",
         gv("max_threads_per_multiprocessor",
            lambda v: f"{v:,} ({v // g['warp_size']} warps)"),
         f"{per_core} (hardware threads per core)" if per_core else "-"],
        ["registers per processor",
         gv("registers_per_multiprocessor", lambda v: f"{v:,} x 32 bit ({v * 4 // 1024} KiB)"),
         f"{h['vector_registers']} vector registers x {lanes * 4} B "
         f"({h['vector_registers'] * lanes * 4 // 1024} KiB)"],
        ["fast memory next to the processor",
         gv("shared_memory_per_multiprocessor_bytes", lambda v: f"{_mib(v)} shared memory per SM (part of its L1)"),
         f"{_mib(l1['bytes'])} L1 data cache per core" if l1 else "-"],
        ["L2 cache", gv("l2_cache_bytes", lambda v: f"{_mib(v)}, shared by all SMs"),
         (f"{_mib(l2['bytes'])}" + (" per core" if (l2.get('shared_by_cpus') or 1) <= (per_core or 1)
                                    else "")) if l2 else "-"],
        ["L3 cache", "none", (f"{_mib(l3['bytes'])}, shared by {l3.get('shared_by_cpus')} logical CPUs"
                              if l3 else "-")],
        ["memory", gv("memory_bytes", lambda v: f"{v / 1e9:,.0f} GB ({v / 2**30:,.0f} GiB)"),
         f"{h['memory_bytes'] / 1e9:,.0f} GB ({h['memory_bytes'] / 2**30:,.0f} GiB)"
         if h.get("memory_bytes") else "-"],
        ["memory bus", gv("memory_bus_bits", lambda v: f"{v:,} bits"), "-"],
        ["clock", gv("sm_clock_mhz", lambda v: f"{v:,.0f} MHz (SM), {g.get('memory_clock_mhz') or 0:,.0f} MHz (memory)"),
         clock],
        ["peak memory bandwidth (from bus and clock)",
         gv("theoretical_bandwidth_gbs", lambda v: f"{v:,.0f} GB/s"), "-"],
        ["read bandwidth, measured here",
         f"{best_gpu:,.0f} GB/s (best of the occupancy sweep)" if best_gpu else "-",
         f"{host_read:,.1f} GB/s (all {data['host'].get('threads')} threads)" if host_read else "-"],
    ]
    if not g:                                  # a machine without a GPU: the host column only
        rows = [[r[0], r[2]] for r in rows if r[2] != "-"]
        head = f"**{h['model']}**, a machine without a GPU (host facts only)\n\n"
        return head + table(["", "host CPU"], rows, "ll")
    head = f"**{g['name']}** next to its host **{h['model']}**\n\n"
    text = head + table(["", "GPU", "host CPU"], rows, "lll")
    return pages.collapsed(f"The device query, next to the host ({len(rows)} rows)", text) \
        if len(rows) > 12 else text


@pages.renderer(NAME, "latency")
def latency(slug: str, data: dict) -> str:
    p = _part(data, "latency")
    rows = [[r["name"].replace("load latency, ", ""), f"{r['latency_ns']:,.0f} ns",
             f"{r['latency_cycles']:,.0f}", _mib(r["array_bytes"]), f"{r['steps']:,}"]
            for r in p["rows"]]
    return table(["where the data is", "time per load", "SM cycles", "array", "dependent loads"],
                 rows)


@pages.renderer(NAME, "little")
def little(slug: str, data: dict) -> str:
    lat = _part(data, "latency")
    occ = _part(data, "occupancy")
    g = data["machine"]["gpu"]
    dram = lat["rows"][-1]["latency_ns"]
    best = max(r["gbs"] for r in occ["rows"])
    law = littles_law(best, dram, g["multiprocessors"], 4, g["warp_size"])
    rows = [["best read bandwidth (occupancy sweep)", f"{best:,.0f} GB/s"],
            ["latency of one load, device memory", f"{dram:,.0f} ns"],
            ["bytes in flight = bandwidth x latency", f"{law['bytes_in_flight'] / 2**20:,.1f} MiB"],
            [f"per SM ({g['multiprocessors']} SMs)", f"{law['bytes_per_sm'] / 1024:,.1f} KiB"],
            ["4-byte loads in flight per SM", f"{law['loads_per_sm']:,.0f}"],
            ["warps per SM, one 4-byte load each",
             f"{law['warps_per_sm_one_load_each']:,.0f} (at most "
             f"{g['max_threads_per_multiprocessor'] // g['warp_size']} fit)"]]
    return table(["quantity", "value"], rows, "lr")


@pages.renderer(NAME, "occupancy")
def occupancy_plot(slug: str, data: dict) -> str:
    p = _part(data, "occupancy")
    plt, fig, ax = _figure(height=4.0)
    colors = {READ_VARIANTS[0]: "#d62728", READ_VARIANTS[1]: "#1f77b4", READ_VARIANTS[2]: "#2ca02c"}
    markers = dict(zip(BLOCK_SIZES, "v^<>os"))
    for variant in READ_VARIANTS:
        rows = [r for r in p["rows"] if r.get("variant") == variant]
        if not rows:
            continue
        best = {}
        for r in rows:
            best[r["warps_per_sm"]] = max(best.get(r["warps_per_sm"], 0), r["gbs"])
            ax.scatter(r["warps_per_sm"], r["gbs"], color=colors[variant],
                       marker=markers.get(r["threads"], "o"), s=22, alpha=0.8)
        xs = sorted(best)
        ax.plot(xs, [best[x] for x in xs], color=colors[variant], lw=1.2, label=variant)
    # the two ceilings are close on a log scale: one label above its line, one below
    for value, label, style, dy, va in (
            (p.get("theoretical_gbs"), "peak, bus x clock", ":", 2, "bottom"),
            (p.get("copy_ceiling_gbs"), "device copy", "--", -2, "top")):
        if value:
            ax.axhline(value, color="gray", ls=style, lw=1)
            ax.annotate(f"{label}: {value:,.0f} GB/s", (1, value), xytext=(2, dy), va=va,
                        textcoords="offset points", color="dimgray")
    top = max([r["gbs"] for r in p["rows"]] + [p.get("theoretical_gbs") or 0])
    low = min(r["gbs"] for r in p["rows"])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("warps resident on each multiprocessor")
    ax.set_ylabel("read bandwidth (GB/s)")
    ax.set_xticks([1, 2, 4, 8, 16, 32, 64], ["1", "2", "4", "8", "16", "32", "64"])
    ax.set_ylim(low / 1.5, top * 1.6)
    ticks = [t for t in (20, 50, 100, 200, 500, 1000, 2000, 4000, 8000) if low / 1.5 <= t <= top * 1.6]
    ax.set_yticks(ticks, [f"{t:,}" for t in ticks])
    ax.minorticks_off()
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", bbox_to_anchor=(-0.02, 1.0), frameon=False,
              title=f"Streaming read, {pages.machine_title(data, cores=False)};\n"
              "one point per block size", title_fontsize=12.5, alignment="left")
    return pages.svg(fig)


@pages.renderer(NAME, "occupancy-table")
def occupancy_table(slug: str, data: dict) -> str:
    p = _part(data, "occupancy")
    rows = []
    for variant in READ_VARIANTS:
        rs = [r for r in p["rows"] if r.get("variant") == variant]
        if not rs:
            continue
        top = max(rs, key=lambda r: r["gbs"])
        enough = min((r for r in rs if r["gbs"] >= 0.9 * top["gbs"]), key=lambda r: r["warps_per_sm"])
        one = max((r for r in rs if r["warps_per_sm"] == 1), key=lambda r: r["gbs"], default=None)
        ceiling = p.get("copy_ceiling_gbs")
        rows.append([variant, fmt_num(top["gbs"]),
                     f"{100 * top['gbs'] / ceiling:.0f} %" if ceiling else "-",
                     str(enough["warps_per_sm"]),
                     f"{top['warps_per_sm']} ({top['threads']} x {top['blocks_per_sm']})",
                     fmt_num(one["gbs"]) if one else "-", fmt_num(top.get("registers"))])
    return table(["read kernel", "best GB/s", "of copy", "warps for 90 %",
                  "best at warps (threads x blocks)", "GB/s, 1 warp", "registers"], rows)


@pages.renderer(NAME, "occupancy-latency")
def occupancy_latency(slug: str, data: dict) -> str:
    # Little's law read backwards: with exactly one 4-byte load in flight per thread, the bytes
    # in flight are known, so bandwidth gives the latency each load really took under load.
    p = _part(data, "occupancy")
    g = data["machine"]["gpu"]
    best: dict = {READ_VARIANTS[0]: {}, READ_VARIANTS[2]: {}}
    for r in p["rows"]:
        if r.get("variant") in best:
            b = best[r["variant"]]
            b[r["warps_per_sm"]] = max(b.get(r["warps_per_sm"], 0), r["gbs"])
    one, four = best[READ_VARIANTS[0]], best[READ_VARIANTS[2]]
    if not one:
        raise pages.NotRecorded("occupancy-latency")
    rows = []
    for w in sorted(one):
        in_flight = w * g["warp_size"] * 4 * g["multiprocessors"]
        row = [str(w), fmt_num(one[w]), f"{in_flight / 2**10:,.0f} KiB",
               f"{in_flight / (one[w] * 1e9) * 1e9:,.0f} ns"]
        row += ([fmt_num(four[w]), f"{4 * in_flight / (four[w] * 1e9) * 1e9:,.0f} ns"]
                if w in four else ["-", "-"])
        rows.append(row)
    lat = data.get("latency", {})
    chase_ns = lat["rows"][-1]["latency_ns"] if lat.get("rows") else None
    head = (f"**{g['name']}**: latency = bytes in flight / bandwidth"
            + (f"; one load alone (the pointer chase above) takes {chase_ns:,.0f} ns" if chase_ns else "")
            + "\n\n")
    return head + table(["warps per SM", "GB/s, 1 load", "in flight, GPU", "latency",
                         "GB/s, 4 loads", "latency, 4 in flight"], rows)


@pages.renderer(NAME, "strided")
def strided_plot(slug: str, data: dict) -> str:
    series = []
    if "strided" in data and not data["strided"].get("error"):
        series.append((data["machine"]["gpu"]["name"], data["strided"]["rows"], "#1f77b4"))
    host_rows = [r for r in data["host"].get("rows", []) if r.get("kind") == "strided"]
    if host_rows:
        series.append((f"host CPU, {data['host'].get('threads')} threads",
                       host_rows, "#ff7f0e"))
    if not series:
        raise pages.NotRecorded("strided")
    plt, fig, (a, b) = _figure(2, height=5.0, sharex=True)
    for label, rows, color in series:
        xs = [r["stride"] for r in rows]
        a.plot(xs, [r["gbs"] for r in rows], "o-", color=color, label=label, ms=4)
        b.plot(xs, [100 * r["fraction_of_stride1"] for r in rows], "o-", color=color, label=label, ms=4)
    for ax in (a, b):
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 2, 4, 8, 16, 32], ["1", "2", "4", "8", "16", "32"])
        ax.grid(alpha=0.3, which="both")
    b.set_xlabel("stride between neighbouring threads (floats)")
    a.set_yscale("log")
    _plain_log_axis(a.yaxis, [r["gbs"] for _, rows, _ in series for r in rows])
    a.set_ylabel("useful GB/s")
    b.set_yscale("log")
    b.set_ylabel("% of the stride-1 rate")
    _plain_log_axis(b.yaxis, [100 * r["fraction_of_stride1"] for _, rows, _ in series for r in rows])
    a.legend(loc="lower left", bbox_to_anchor=(-0.02, 1.0), frameon=False,
             title="copy out[i] = x[i * stride], float32", title_fontsize=12.5,
             alignment="left")
    return pages.svg(fig)


@pages.renderer(NAME, "strided-traffic")
def strided_traffic(slug: str, data: dict) -> str:
    # What the memory must move per copied element if it fetches whole pieces of G bytes:
    # the read costs min(4 x stride, G) bytes (a piece is shared only while threads are closer
    # than G bytes apart), the contiguous write 4 bytes.
    p = _part(data, "strided")
    rows = []
    for r in p["rows"]:
        s_ = r["stride"]
        cells = [str(s_), fmt_num(r["gbs"]), f"{100 * r['fraction_of_stride1']:.0f} %"]
        for piece in (32, 64):
            moved = min(4 * s_, piece) + 4
            cells += [str(moved), fmt_num(r["gbs"] * moved / 8)]
        rows.append(cells)
    occ = data.get("occupancy", {})
    ceiling = occ.get("copy_ceiling_gbs")
    head = f"**{data['machine']['gpu']['name']}**"
    if ceiling:
        head += (f": device copy in the same run {ceiling:,.0f} GB/s; the stride-1 copy reaches "
                 f"{100 * p['rows'][0]['gbs'] / ceiling:.0f} % of it")
    return head + "\n\n" + table(["stride", "useful GB/s", "of stride 1", "bytes, 32 B sectors",
                                   "memory GB/s", "bytes, 64 B pieces", "memory GB/s"], rows)


@pages.renderer(NAME, "divergence-summary")
def divergence_summary(slug: str, data: dict) -> str:
    p = _part(data, "divergence")
    t = {(r["mode"], r["k"]): r for r in p["rows"]}
    kmax = max(r["k"] for r in p["rows"])
    base = t[(2, 1)]
    rows = [[label, fmt_time(t[(mode, 1)]["median_s"]), fmt_time(t[(mode, kmax)]["median_s"]),
             f"{t[(mode, kmax)]['median_s'] / base['median_s']:.2f}x"]
            for mode, label in enumerate(DIVERGENCE_MODES)]
    g = data["machine"]["gpu"]
    head = f"**{g['name']}**: {p['n']:,} threads x {p['iters']:,} multiply-adds"
    tflops = base.get("tflops")
    if tflops:
        head += f"; the kernel computes at {tflops:.1f} TFLOP/s without a branch"
    peak = catalogue.fp32_peak(g)
    if tflops and peak:
        head += (f", {100 * tflops / peak['tflops']:.0f} % of the {peak['tflops']:.1f} TFLOP/s that "
                 f"{peak['sms']} SMs x {peak['lanes']} FP32 lanes x 2 FLOP x {peak['mhz']:,.0f} MHz "
                 f"could do")
    head += "\n\n"
    return head + table(["version", f"{kmax} paths vs no branch", "1 path", f"{kmax} paths"],
                        [[r[0], r[3], r[1], r[2]] for r in rows], "lrrr")


@pages.renderer(NAME, "divergence")
def divergence_plot(slug: str, data: dict) -> str:
    p = _part(data, "divergence")
    plt, fig, ax = _figure(height=3.8)
    # Two pairs of series nearly coincide (paths inside a warp on the k x line; one path per
    # warp on no branch): each gets its own line style and marker, and the reference line is a
    # wide pale band underneath, so every series stays visible where they overlap.
    styles = ({"color": "#d62728", "ls": "-", "marker": "o", "ms": 4, "lw": 1.4, "zorder": 3},
              {"color": "#1f77b4", "ls": (0, (5, 3)), "marker": "^", "ms": 9, "mfc": "none",
               "mew": 1.4, "lw": 1.4, "zorder": 3},
              {"color": "#2ca02c", "ls": "-", "marker": "s", "ms": 3.5, "lw": 1.0, "zorder": 2})
    base = next(r for r in p["rows"] if r["mode"] == 0 and r["k"] == 1)["median_s"] * 1e3
    ax.plot(PATHS, [base * k for k in PATHS], color="#999999", lw=7, alpha=0.35,
            solid_capstyle="round", zorder=1, label="k x the time of one path")
    for mode, label in enumerate(DIVERGENCE_MODES):
        rows = sorted((r for r in p["rows"] if r["mode"] == mode), key=lambda r: r["k"])
        ax.plot([r["k"] for r in rows], [r["median_s"] * 1e3 for r in rows], label=label,
                **styles[mode])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(list(PATHS), [str(k) for k in PATHS])
    ax.set_xlabel("k, number of different paths")
    _plain_log_axis(ax.yaxis)
    ax.set_ylabel("kernel time (ms)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="lower left", bbox_to_anchor=(-0.02, 1.0), frameon=False,
              title=f"{p['n']:,} threads x {p['iters']:,} multiply-adds,\n"
              f"{pages.machine_title(data, cores=False)}", title_fontsize=12.5,
              alignment="left")
    return pages.svg(fig)


@pages.renderer(NAME, "launch")
def launch_table(slug: str, data: dict) -> str:
    p = _part(data, "launch")
    rows = [[r["name"], fmt_time(r["host_submit_s"]), fmt_time(r["gpu_per_kernel_s"])
             + ("" if r.get("queue_stayed_ahead") else " (queue ran dry)"),
             fmt_time(r["round_trip_s"])] for r in p["rows"]]
    return table(["empty kernel, launched with", "host time to launch", "GPU time, queued",
                  "launch and wait"], rows)


@pages.renderer(NAME, "graph")
def graph_table(slug: str, data: dict) -> str:
    p = _part(data, "launch")
    c = p["chain"]
    one_by_one = c["rows"][0]["median_s"]
    rows = []
    for r in c["rows"]:
        captured = "capture_s" in r
        rows.append([r["name"], fmt_time(r["per_kernel_s"]), f"{one_by_one / r['median_s']:.1f}x",
                     fmt_time(r["median_s"]),
                     fmt_time(r["capture_s"]) if captured else "-",
                     ("yes" if r["identical_to_one_by_one"] else "no") if captured else "-"])
    head = (f"{c['kernels']:,} dependent kernels, each updating {c['elements']:,} float32 "
            f"elements (x = 0.999 x + 0.001), then one synchronisation\n\n")
    foot = ""
    graph = next((r for r in c["rows"] if "capture_s" in r), None)
    if graph and one_by_one > graph["median_s"]:
        saved = one_by_one - graph["median_s"]
        n_replays = max(1, math.ceil(graph["capture_s"] / saved))
        foot = (f"\n\nRecording the graph took {fmt_time(graph['capture_s'])}, "
                f"{graph['capture_s'] / one_by_one:.1f} times one chain launched one by one; each "
                f"replay saves {fmt_time(saved)}, so the recording has paid for itself after "
                f"{n_replays} replay{'s' if n_replays > 1 else ''}.")
    return head + table(["how", "per kernel", "vs CuPy one by one", "whole chain",
                         "recording (once)", "same result"], rows, "lrrrrl") + foot


@pages.renderer(NAME, "simulator")
def simulator(slug: str, data: dict) -> str:
    p = _part(data, "simulator")
    ok = [c["kernel"] for c in p["checks"] if c["ok"]]
    bad = [c["kernel"] for c in p["checks"] if not c["ok"]]
    return (f"On the CUDA simulator: {len(ok)} kernels checked against NumPy"
            + (f", **{len(bad)} failed: {', '.join(bad)}**" if bad else ", all correct") + ".")
