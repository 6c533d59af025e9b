"""The chapter's tables and plots, drawn from its results files."""

from __future__ import annotations

import textwrap

from gpukit import pages
from gpukit.pages import fmt_num, fmt_time, table

from .meta import (NAME, implied_gbs, is_impossible, ncu_elements, ncu_metric, peak_gbs,
                   saxpy_bytes)


# ------------------------------------------------------------------ renderers

def _fmt_rate(gbs: float | None) -> str:
    return "-" if gbs is None else fmt_num(gbs, 0 if gbs >= 100 else 1)


def _head(data: dict) -> str:
    """The machine in bold (only the CPU model on a machine without a GPU)."""
    m = data["machine"]
    if m.get("gpu"):
        return f"**{m['gpu']['name']}**"
    return f"**{m['cpu']['model']}** ({m['cpu']['usable_cpus']} cores usable, no GPU)"


def _where(data: dict) -> str:
    """The hardware and date, for a plot's title (with the CPU's cores on a machine without a GPU)."""
    m = data["machine"]
    hw = m["gpu"]["name"] if m.get("gpu") else f"{m['cpu']['model']} ({m['cpu']['usable_cpus']} cores, no GPU)"
    # wrapped: a long CPU model name on one line would push the plot past a phone's width
    return textwrap.fill(f"{hw}, {m['date'][:10]}", 36)


def _error_block(p: dict) -> str:
    return f"!!! failure \"This part failed on this machine\"\n    `{p['error']}`"


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks 1, 2, 5 per decade between lo and hi, or only the powers of ten when that
    would crowd a short axis."""
    import math
    decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    ticks = [m * 10.0 ** e for e in decades for m in (1, 2, 5) if lo <= m * 10.0 ** e <= hi]
    if len(ticks) > 6:
        ticks = [10.0 ** e for e in decades if lo <= 10.0 ** e <= hi]
    return ticks


def _facts(rows: list[list[str]]) -> str:
    return table(["what", "measured"], rows, "lr")


@pages.renderer(NAME, "nosync")
def nosync(slug: str, data: dict) -> str:
    p = data["nosync"]
    if "error" in p:
        return _error_block(p)
    peak = p.get("peak_gbs")
    rows = []
    for r in p["rows"]:
        flag = " **impossible**" if r.get("impossible") else ""
        rows.append([r["name"], fmt_time(r["median_s"]), _fmt_rate(r["gbs"]) + flag,
                     fmt_num(r["ratio_to_events"], 3 if r["ratio_to_events"] < 10 else 0) + "x"])
    head = (f"{_head(data)}, SAXPY on {p['n']:,} float32 elements "
            f"({p['bytes'] / 1e9:.1f} GB moved per call), median of several calls"
            + (f"; the memory's peak (from the memory clock and bus width): "
               f"{fmt_num(peak)} GB/s" if peak else "") + "\n\n")
    return head + table(["how it was timed", "time", "implied GB/s", "events time / this"], rows)


@pages.renderer(NAME, "first_call")
def first_call(slug: str, data: dict) -> str:
    p = data["first_call"]
    if "error" in p:
        return _error_block(p)
    rows = [[f"`{r['name']}`", fmt_num(r["first_over_steady"]) + "x", fmt_time(r["first_call_s"]),
             fmt_time(r["second_call_s"]), fmt_time(r["median_s"])]
            for r in p["rows"]]
    rows += [[f"`{e['name']}`", e["error"], "failed", "-", "-"] for e in p.get("errors", [])]
    head = f"{_head(data)}, SAXPY on {p['n']:,} float32 elements, fresh process, empty kernel caches\n\n"
    return head + table(["backend", "first / steady", "first call", "second call",
                         "steady (median)"], rows)


@pages.renderer(NAME, "context")
def context(slug: str, data: dict) -> str:
    p = data["first_call"]
    if "error" in p:
        return _error_block(p)
    rows = [[f"`{r['name']}`", fmt_time(r["to_first_result_s"]),
             fmt_num(r["start_to_first_over_steady"]) + "x", fmt_time(r["startup_s"]),
             fmt_time(r["import_s"]),
             fmt_time(r["context_s"]) if r["name"] != "numba-cpu" else "none",
             fmt_time(r["data_s"]), fmt_time(r["first_call_s"])]
            for r in p["rows"]]
    head = (f"{_head(data)}, each step of a fresh process, from starting `python` to the first "
            f"result ({p['n']:,} elements); \"/ steady\" divides the total by the steady-state "
            "time of one call\n\n")
    return head + table(["backend", "total", "/ steady", "start Python", "import", "GPU context",
                         "data", "first call"], rows)


@pages.renderer(NAME, "transfers")
def transfers(slug: str, data: dict) -> str:
    p = data["transfers"]
    if "error" in p:
        return _error_block(p)
    cpu = next((r["median_s"] for r in p["rows"] if r["name"].startswith("CPU")), None)
    rows = [[r["name"], "kernel" if r["question"] == "kernel" else "answer",
             fmt_time(r["median_s"]), fmt_num(r["median_s"] / cpu, 2) + "x" if cpu else "-",
             fmt_num(r["ratio_to_kernel"], 1) + "x", _fmt_rate(r["gbs"])] for r in p["rows"]]
    head = (f"{_head(data)}, SAXPY on {p['n']:,} float32 elements ({p['bytes'] / 1e9:.1f} GB "
            "of inputs and output), inputs start in host memory; GB/s is those bytes over "
            "the time\n\n")
    return head + table(["what was timed", "question", "median", "vs CPU", "vs kernel",
                         "GB/s"], rows, "llrrrr")


@pages.renderer(NAME, "one_run")
def one_run(slug: str, data: dict) -> str:
    p = data["one_run"]
    if "error" in p:
        return _error_block(p)
    def size(n):
        return f"2<sup>{n.bit_length() - 1}</sup>" if n > 0 and n & (n - 1) == 0 else f"{n:,}"
    rows = [[size(r["n_elements"]), "CUDA events" if r["timer"] == "events" else "host clock + sync",
             fmt_time(r["first_s"]), fmt_time(r["min_s"]), fmt_time(r["median_s"]),
             fmt_time(r["p95_s"]), fmt_time(r["max_s"]), fmt_num(r["max_over_min"], 2) + "x"]
            for r in p["rows"]]
    spread = max(p["rows"], key=lambda r: r["max_over_min"])
    head = (f"{_head(data)}, {p['count']} SAXPY calls of each size, each timed alone\n\n")
    return (f"The widest spread: the slowest of {p['count']} runs took "
            f"{fmt_num(spread['max_over_min'], 1)}x the fastest.\n\n"
            + pages.collapsed("Run 1, min, median, 95th percentile and max of each size",
                              head + table(["elements", "timer", "run 1", "min", "median",
                                            "95th pct", "max", "max / min"], rows,
                                           "llrrrrrr")))


@pages.renderer(NAME, "one_run_facts")
def one_run_facts(slug: str, data: dict) -> str:
    p = data["one_run"]
    if "error" in p or p.get("device") != "gpu":
        raise pages.NotRecorded("one_run_facts")  # the GPU comparison only
    rows = {(r["size"], r["timer"]): r for r in p["rows"]}
    small_h, small_e = rows[("small", "host")], rows[("small", "events")]
    facts = [[f"small ({small_e['n_elements']:,} elements): host clock + sync / CUDA events, medians",
              fmt_num(small_h["median_s"] / small_e["median_s"], 1) + "x"],
             ["small: CUDA events around one call, median", fmt_time(small_e["median_s"])]]
    cache = data.get("cache", {})
    graph = next((r for r in cache.get("rows", []) if "graph" in r.get("method", "")), None)
    if graph:
        facts.append([f"one call inside a CUDA graph, back to back, at {graph['n_elements']:,} "
                      "elements (the smallest size of the cache sweep below, a little larger)",
                      fmt_time(graph["median_s"])])
        facts.append(["CUDA events around one call / one call inside the graph",
                      fmt_num(small_e["median_s"] / graph["median_s"], 0) + "x"])
    return f"{_head(data)}, what the small size's times are made of\n\n" + _facts(facts)


@pages.renderer(NAME, "one_run_plot")
def one_run_plot(slug: str, data: dict) -> str:
    p = data["one_run"]
    if "error" in p:
        return _error_block(p)
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
    fig, axes = pages.figure(2, 1, height=4.8)
    fig.subplots_adjust(hspace=0.55)
    for ax, size in zip(axes, ("large", "small")):
        for s, colour, mark in zip([s for s in p["series"] if s["name"].startswith(size)],
                                   ("#1f77b4", "#d62728"), ("o", "x")):
            us = [v * 1e6 for v in s["samples_s"]]
            ax.plot(range(1, len(us) + 1), us, mark, ms=3, color=colour,
                    label=s["name"].split(", ", 1)[1])
        ax.set_yscale("log")
        every = [v * 1e6 for s in p["series"] if s["name"].startswith(size) for v in s["samples_s"]]
        lo, hi = min(every) / 1.3, max(every) * 1.3
        ax.set_ylim(lo, hi)
        ax.yaxis.set_major_locator(FixedLocator(_log_ticks(lo, hi)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlim(0, len(us) + 1)
        ax.xaxis.set_major_locator(FixedLocator([1] + list(range(50, len(us) + 1, 50))))
        ax.set_ylabel("µs per run (log)")
        n_el = next(r["n_elements"] for r in p["rows"] if r["size"] == size)
        ax.set_title(f"{n_el:,} elements", loc="left")
        ax.grid(alpha=0.3, which="both")
    axes[1].set_xlabel("run number")
    axes[0].legend(loc="lower left", bbox_to_anchor=(0, 1.12), ncols=1, frameon=False,
                   title=_where(data))
    fig.canvas.draw()   # place the legend before the labels are checked
    return pages.svg(fig)


@pages.renderer(NAME, "cache_plot")
def cache_plot(slug: str, data: dict) -> str:
    p = data["cache"]
    if "error" in p:
        return _error_block(p)
    from matplotlib.ticker import FixedLocator, FuncFormatter
    fig, ax = pages.figure(height=3.2)
    mib = [r["working_set_bytes"] / 2**20 for r in p["rows"]]
    one_core = " (one core)" if p.get("device") == "cpu" else ""
    ax.plot(mib, [r["gbs"] for r in p["rows"]], "o-", color="#1f77b4",
            label="same data, run after run" + one_core)
    ax.set_xscale("log", base=2)  # sizes span 12 doublings; bandwidth on a linear axis from 0
    ax.set_ylim(0, 1.15 * max([r["gbs"] for r in p["rows"]] + [p.get("peak_gbs") or 0]))
    ax.set_xlabel("working set: x + y + out (MiB)")
    ax.set_ylabel("apparent GB/s")
    if p.get("l2_bytes"):
        ax.axvline(p["l2_bytes"] / 2**20, color="#2ca02c", ls="--",
                   label=f"L2 cache ({p['l2_bytes'] / 2**20:.0f} MiB"
                   + (", all cores)" if p.get("device") == "cpu" else ")"))
    if p.get("l3_bytes"):
        ax.axvline(p["l3_bytes"] / 2**20, color="#9467bd", ls=":",
                   label=f"L3 cache ({p['l3_bytes'] / 2**20:.0f} MiB)")
    if p.get("peak_gbs"):
        ax.axhline(p["peak_gbs"], color="#d62728", ls="-.",
                   label=f"memory peak ({p['peak_gbs']:,.0f} GB/s)")
    ticks = [t for t in (1, 16, 256, 4096) if mib[0] <= t <= mib[-1]]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.02), frameon=False, title=_where(data),
              alignment="left")
    fig.canvas.draw()   # place the legend before the labels are checked
    return pages.svg(fig)


@pages.renderer(NAME, "cache_facts")
def cache_facts(slug: str, data: dict) -> str:
    p = data["cache"]
    if "error" in p or not p.get("rows"):
        raise pages.NotRecorded("cache_facts")
    rows = p["rows"]
    best = max(rows, key=lambda r: r["gbs"])
    big = rows[-1]
    small = rows[0]
    last = p.get("l3_bytes") or p.get("l2_bytes")  # the last-level cache
    level = "L3" if p.get("l3_bytes") else "L2"
    above = next((r for r in rows if last and r["working_set_bytes"] > last), None)
    facts = [[f"highest apparent bandwidth: {best['name']} working set", f"{best['gbs']:,.0f} GB/s"]]
    if p.get("peak_gbs"):
        facts.append(["highest apparent bandwidth / the memory's peak",
                      fmt_num(best["gbs"] / p["peak_gbs"], 2) + "x"])
        facts.append([f"largest working set, {big['name']}: share of the peak",
                      f"{100 * big['gbs'] / p['peak_gbs']:.0f} % ({big['gbs']:,.0f} GB/s)"])
    else:
        facts.append([f"largest working set, {big['name']}", f"{big['gbs']:,.1f} GB/s"])
    if above:
        facts.append([f"first size above the {level} cache, {above['name']}", f"{above['gbs']:,.0f} GB/s"])
    facts.append([f"smallest working set, {small['name']}: time of one call", fmt_time(small["median_s"])])
    return f"{_head(data)}, read from the sweep above\n\n" + _facts(facts)


@pages.renderer(NAME, "cache")
def cache(slug: str, data: dict) -> str:
    p = data["cache"]
    if "error" in p:
        return _error_block(p)
    if not p.get("hot_cold"):
        raise pages.NotRecorded("hot_cold")  # a CPU machine: the sweep only
    methods = {h.get("hot_method", "events per call") for h in p["hot_cold"]}
    hot_label = "hot" + (" (events per call)" if methods == {"events per call"} else "")
    rows = [[f"{h['working_set_bytes'] / 2**20:,.0f} MiB",
             fmt_num(h["cold_s"] / h["hot_s"], 2) + "x",
             f"{fmt_time(h['hot_s'])} ({_fmt_rate(h['hot_gbs'])} GB/s)",
             f"{fmt_time(h['cold_s'])} ({_fmt_rate(h['cold_gbs'])} GB/s)"] for h in p["hot_cold"]]
    head = (f"{_head(data)}, L2 cache {p['l2_bytes'] / 2**20:.0f} MiB; memory peak "
            f"{fmt_num(p.get('peak_gbs'))} GB/s (from clock and bus width)\n\n")
    body = head + table(["working set", "flushed / hot", f"{hot_label}: median",
                         "L2 flushed: median"], rows)
    small = p["hot_cold"][0]
    if small.get("hot_method", "events per call") == "events per call" and small["cold_s"] < small["hot_s"]:
        near = [r for r in p.get("rows", []) if "graph" in r.get("method", "")
                and abs(r["working_set_bytes"] / small["working_set_bytes"] - 1) <= 0.5]
        body += ("\n\nThe flushed runs of the small working set were *faster* than the hot ones: the "
                 "hot runs were timed one call at a time on an otherwise idle GPU, so each event pair "
                 "also holds the gap while the host launches the kernel (mistake 5), while each "
                 "flushed run was queued behind its flush and started at once.")
        if near:
            body += (" Hot and back to back, from the CUDA graphs of the sweep: "
                     + "; ".join(f"{r['name']}: {fmt_time(r['median_s'])} ({r['gbs']:,.0f} GB/s)"
                                 for r in near) + ".")
    return body


@pages.renderer(NAME, "zeros")
def zeros(slug: str, data: dict) -> str:
    p = data["zeros"]
    if "error" in p:
        return _error_block(p)
    rows = [[r["name"], fmt_num(r["speed_vs_random"], 3) + "x", fmt_time(r["median_s"]),
             fmt_num(r["tflops"]),
             fmt_num(r.get("power_w")) + " W" if r.get("power_w") else "-",
             fmt_num(r.get("sm_clock_mhz")) + " MHz" if r.get("sm_clock_mhz") else "-"]
            for r in p["rows"]]
    limit = next((r["power_limit_w"] for r in p["rows"] if r.get("power_limit_w")), None)
    reps = p["rows"][0].get("repeats")
    head = (f"{_head(data)}, `a @ b` in bfloat16, {p['n']:,} x {p['n']:,} matrices"
            + (f", board power limit {limit:.0f} W" if limit else "")
            + f". Time: median of {reps} calls after a warm-up. Power and clock: medians of "
            "samples taken afterwards, during about 1.5 s of calls back to back\n\n")
    return head + table(["inputs", "speed vs random", "median", "TFLOP/s", "board power",
                         "SM clock"], rows)


@pages.renderer(NAME, "poison")
def poison(slug: str, data: dict) -> str:
    p = data["poison"]
    if "error" in p:
        return _error_block(p)
    rows = [[c["case"], f"**caught**: {c['message'].split(': ', 1)[-1]}" if c["caught"]
             else c["message"]] for c in p["cases"]]
    where = "numba's CUDA simulator" if p.get("simulator") else "the GPU"
    head = (f"{_head(data)}, on {where}: {p['n']:,} elements, {p['threads']} threads per block, "
            f"so {p['unwritten']} elements are never written\n\n")
    return head + table(["output buffer", "check_close says"], rows, "ll")


@pages.renderer(NAME, "right_way")
def right_way(slug: str, data: dict) -> str:
    p = data["right_way"]
    if "error" in p:
        return _error_block(p)
    peak = peak_gbs(data["machine"])

    def kernel(name):
        return "CuPy elementwise" if "CuPy" in name or "cupyx" in name else "torch.add"
    rows = [[r["name"], kernel(r["name"]), fmt_time(r["median_s"]),
             _fmt_rate(r["gbs"]) + (" **impossible**" if peak and is_impossible(r["gbs"], peak) else ""),
             f"{100 * r['gbs'] / peak:,.0f} %" if peak else "-"]
            for r in p["rows"]]
    rows += [[e["name"], "-", "failed", e["error"], "-"] for e in p.get("errors", [])]
    head = (f"{_head(data)}, SAXPY on {p['n']:,} float32 elements, median of each tool"
            + (f"; memory peak {peak:,.0f} GB/s (from clock and bus width)" if peak else "") + "\n\n")
    return head + table(["tool", "kernel timed", "median", "implied GB/s", "of peak"], rows, "llrrr")


@pages.renderer(NAME, "torch_profiler")
def torch_profiler(slug: str, data: dict) -> str:
    p = data["right_way"]
    prof = p.get("torch_profiler")
    if not prof:
        raise pages.NotRecorded("torch_profiler")
    rows = [[f"`{r['name'][:72]}{'...' if len(r['name']) > 72 else ''}`", r["calls"],
             fmt_time(r["device_us"] / 1e6 / r["calls"]) if r["device_us"] else "-",
             fmt_time(r["cpu_us"] / 1e6 / r["calls"]) if r["cpu_us"] else "-"]
            for r in prof["rows"]]
    head = (f"{_head(data)}, {prof['steps']} calls of the torch SAXPY under `torch.profiler`, "
            "sorted by GPU time; times per call (CPU time includes the events nested inside)\n\n")
    body = head + table(["event (operator, runtime call or kernel)", "calls", "GPU / call",
                         "CPU / call"], rows, "lrrr")
    by = {r["name"]: r for r in prof["rows"]}
    abr, op = by.get("Activity Buffer Request"), by.get("aten::add")
    kern = next((r for r in prof["rows"] if "elementwise_kernel" in r["name"]), None)
    if abr:
        body += ("\n\n`Activity Buffer Request` is the profiler's own bookkeeping (it asks the "
                 "driver for a buffer to record into), not part of the SAXPY.")
        if op and kern and abs(op["device_us"] - abr["device_us"] - kern["device_us"]) <= 0.01 * kern["device_us"]:
            body += (" Its times are also counted in `aten::add`'s totals: without them, `aten::add` took "
                     f"{fmt_time((op['device_us'] - abr['device_us']) / 1e6 / op['calls'])} of GPU time "
                     f"and {fmt_time((op['cpu_us'] - abr['cpu_us']) / 1e6 / op['calls'])} of CPU time "
                     "per call.")
    kern_line = ""
    if kern:
        kern_line = (f"The SAXPY kernel took {fmt_time(kern['device_us'] / 1e6 / kern['calls'])} "
                     f"of GPU time per call, over {kern['calls']} calls.\n\n")
    return kern_line + pages.collapsed("Every event the profiler recorded", body)


@pages.renderer(NAME, "ncu")
def ncu(slug: str, data: dict) -> str:
    p = data["right_way"]
    nc = p["ncu"]
    if not nc["available"]:
        status = "Nsight Compute (`ncu`) was not installed on this machine."
    elif nc.get("permission_error"):
        status = ("`ncu` ran, and the driver refused access to the performance counters "
                  "(`ERR_NVGPUCTRPERM`).")
    elif nc.get("returncode") == 0:
        status = (f"`ncu` ran in {nc['seconds']:.0f} s (it replays the kernel once per counter pass, "
                  "and starts the program under its control).")
    else:
        status = f"`ncu` exited with code {nc.get('returncode')}."
    log = f"```text\n$ {nc['command']}\n{nc['output']}\n```"
    out = f"{_head(data)}: {status}\n\n" + pages.collapsed("What `ncu` printed", log)
    dur, n = ncu_metric(nc.get("output", ""), "Duration"), ncu_elements(nc.get("command", ""))
    if dur and n and nc.get("returncode") == 0:
        out += (f"\n\nFrom the `Duration` line: {saxpy_bytes(n) / 1e9:.2f} GB in {dur:,.0f} µs is "
                f"{implied_gbs(saxpy_bytes(n), dur * 1e-6):,.0f} GB/s, at the clock `ncu` set.")
    return out
