"""The chapter's tables and plots, drawn from its results files."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_time, table

from .meta import LEVELS, NAME, PASSES, level_loc


def _part(data: dict) -> dict:
    return data["gpu"] if "gpu" in data else data["cpu"]


def _where(data: dict) -> str:
    """The GPU's name, or "<CPU model>, <n> cores, no GPU" (not quite
    :func:`gpukit.pages.machine_title`'s words on a machine without a GPU)."""
    m = data["machine"]
    if m.get("gpu"):
        return m["gpu"]["name"]
    return f"{m['cpu']['model']}, {m['cpu']['usable_cpus']} cores, no GPU"


#: each level's name where a plot has little room (the tabs' names)
SHORT = {"torch-eager": "PyTorch eager", "torch-softmax": "torch.softmax",
         "torch-compile": "torch.compile", "cupy-array": "CuPy arrays",
         "cupy-kernels": "CuPy kernels", "numba-cuda": "numba.cuda", "cuda-c": "CUDA C",
         "triton": "Triton", "jax": "JAX"}

#: the sweep plot's levels: the one-pass kernels, a compiler's, and eager code for contrast
SWEEP_LEVELS = ("torch-eager", "torch-compile", "cuda-c", "triton", "jax")

#: the chapter's target: a level at this share of the copy ceiling or more, on the main shape
TARGET_PCT = 90
#: the levels the target is for: the hand-written kernels that read once and write once
TARGET_LEVELS = ("cuda-c", "triton")


def _loc(r: dict) -> int:
    """Lines of the code the page shows for a level (the recorded count if it is unknown)."""
    try:
        return level_loc(r["level"])
    except KeyError:
        return r["loc"]


@pages.renderer(NAME, "table")
def speed(slug: str, data: dict) -> str:
    p = _part(data)
    gpu = "gpu" in data
    out, notes = [], []
    wall = [r["level"] for r in p["rows"] if gpu and r.get("timer") == "wall-clock"]
    # Every level in the chapter's order; one that did not run stays in the table, with its
    # reason below it (too long for a cell).
    for r in _in_order(p["rows"] + p["failed"] + p["skipped"]):
        if "error" in r:
            out.append([r["label"], "**failed**", "-", "-", str(_loc(r)), "-"])
            notes.append(f"**{r['label']}** failed in this run. The last line of its error: "
                         f"`{_short_error(r['error'])}`")
            continue
        if "reason" in r:
            out.append([r["label"], "skipped", "-", "-", str(_loc(r)), "-"])
            notes.append(f"**{r['label']}** skipped: {r['reason']}")
            continue
        rate = ("simulated: correctness only" if r["simulated"] else
                f"{fmt_num(r['gbs'], 0 if r['gbs'] >= 100 else 1)} ({fmt_num(r.get('pct_of_copy'), 0)} %)")
        steady = fmt_time(r["median_s"]) + (" *" if r["level"] in wall else "")
        out.append([r["label"], rate, steady, fmt_time(r["first_call_s"]), str(_loc(r)),
                    f"{r['max_rel_err']:.1e}"])
    if wall:
        notes.append("\\* timed with the wall clock around a call that waits for the result, "
                     "not with CUDA events, so it includes the Python dispatch of each call.")
    rows, cols = p["shape"]
    head = (f"**{_where(data)}**, {rows:,} x {cols:,} float32 "
            f"({p['ideal_bytes'] / 1e9:.2f} GB read + written at the least); copy ceiling "
            f"{fmt_num(p['ceiling_gbs'])} GB/s ({'device' if gpu else 'host'} copy, same run)"
            + ("; first calls in fresh processes with empty kernel caches" if p["fresh_process"] else "")
            + "\n\n")
    body = table(["level", "GB/s (% of copy)", "steady state", "first call", "lines",
                  "rel. error"], out)
    return head + body + ("\n\n" + "\n".join(f"- {n}" for n in notes) if notes else "")


@pages.renderer(NAME, "passes")
def passes(slug: str, data: dict) -> str:
    p = _part(data)
    if "gpu" not in data:
        raise pages.NotRecorded("gpu")   # the traffic model is about the GPU levels
    out = []
    for r in _in_order(p["rows"] + p["failed"]):
        n = r["passes"]
        traffic = PASSES.get(n, "decided by its compiler")
        bound = f"{100 * 2 / n:.0f} %" if n else "-"
        if "error" in r:
            out.append([SHORT.get(r["level"], r["label"]), "failed", bound, str(n or "-"),
                        "-", traffic])
            continue
        pct = r.get("pct_of_copy", 0)
        per_pass = f"{pct * n / 2:.0f} %" if n else "-"
        out.append([SHORT.get(r["level"], r["label"]), fmt_num(pct, 0) + " %", bound,
                    str(n or "-"), per_pass, traffic])
    header = ["level", "measured", "bound", "array passes", "each pass",
              "traffic (from the code)"]
    return table(header, out, "lrrrrl")


@pages.renderer(NAME, "sweeptable")
def sweep_table(slug: str, data: dict) -> str:
    p = _part(data)
    cols = sorted({r["cols"] for r in p["sweep"] if not r["simulated"]})
    if len(cols) < 2:
        raise pages.NotRecorded("sweep")
    by_level: dict[str, dict] = {}
    for r in p["sweep"]:
        if not r["simulated"]:
            by_level.setdefault(r["label"], {})[r["cols"]] = r
    out = []
    for label, rs in by_level.items():
        out.append([label] + [fmt_num(rs[c]["pct_of_copy"], 0) + " %" if c in rs else "-"
                              for c in cols])
    rows_of = {c: next(r["rows"] for r in p["sweep"] if r["cols"] == c) for c in cols}
    header = ["level"] + [f"{rows_of[c]:,} x {c:,}" for c in cols]
    return table(header, out, "l" + "r" * len(cols))


@pages.renderer(NAME, "sweep")
def sweep(slug: str, data: dict) -> str:
    p = _part(data)
    by_level: dict[str, list] = {}
    for r in p["sweep"]:
        if not r["simulated"]:
            by_level.setdefault(r["label"], []).append(r)
    by_level = {k: sorted(v, key=lambda r: r["cols"]) for k, v in by_level.items() if len(v) > 1}
    if not by_level:
        raise pages.NotRecorded("sweep")
    from matplotlib.ticker import FixedLocator
    fig, ax = pages.figure(height=3.6)
    markers = "osD^v"
    shown = [lv for lv in SWEEP_LEVELS if LEVELS[lv][0] in by_level]
    for i, lv in enumerate(shown):
        rs = by_level[LEVELS[lv][0]]
        ax.plot([r["cols"] for r in rs], [r["pct_of_copy"] for r in rs],
                marker=markers[i % len(markers)], label=SHORT[lv])
    ax.axhline(100, color="0.3", linestyle="--", linewidth=1)
    ax.set_xscale("log", base=2)
    cols = sorted({r["cols"] for rs in by_level.values() for r in rs})
    ax.xaxis.set_major_locator(FixedLocator(cols))
    ax.set_xticklabels([f"{c:,}" for c in cols])
    ax.xaxis.set_minor_locator(FixedLocator([]))
    ax.set_ylim(0, 115)
    ax.set_xlabel("row length C (elements)")
    ax.set_ylabel("% of the copy ceiling")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.02), ncols=2, frameon=False,
              title=f"{_where(data)}, {data['machine']['date'][:10]}", alignment="left")
    fig.canvas.draw()   # place the legend before the labels are checked
    return pages.svg(fig)


@pages.renderer(NAME, "bars")
def bars(slug: str, data: dict) -> str:
    p = _part(data)
    timed = [r for r in _in_order(p["rows"]) if not r["simulated"]]
    if not timed:
        raise pages.NotRecorded("rows")
    fig, ax = pages.figure(height=0.62 * len(timed) + 1.3)
    names = [SHORT.get(r["level"], r["label"]) for r in timed]
    pct = [r["pct_of_copy"] for r in timed]
    pages.name_bars(ax, names, pct, limit=125)
    ax.set_xticks([0, 25, 50, 75, 100])
    ax.axvline(100, color="0.3", linestyle="--", linewidth=1)
    rows, cols = p["shape"]
    ax.set_xlabel("% of a memory copy's speed, same run")
    ax.set_title(f"{rows:,} x {cols:,} float32\n{_where(data)}", loc="left")
    return pages.svg(fig)


@pages.renderer(NAME, "summary")
def summary(slug: str, data: dict) -> str:
    p = _part(data)
    timed = [r for r in p["rows"] if not r["simulated"]]
    if not timed:
        raise pages.NotRecorded("rows")
    best = max(timed, key=lambda r: r["gbs"])
    second = max((r for r in timed if r is not best), key=lambda r: r["gbs"], default=None)
    text = (f"On the **{_where(data)}** the fastest level is **{best['label']}** at "
            f"{best['pct_of_copy']:.0f} % of the copy ceiling"
            + (f", then {second['label']} at {second['pct_of_copy']:.0f} %" if second else "")
            + ".")
    if p["failed"]:
        text += " Did not run: " + ", ".join(f"{r['label']} (failed)" for r in p["failed"]) + "."
    return text


def _in_order(rows: list) -> list:
    """Rows (measured, failed or skipped) in the order of :data:`LEVELS`."""
    order = list(LEVELS)
    return sorted(rows, key=lambda r: order.index(r["level"]) if r["level"] in order else len(order))


def _short_error(error: str) -> str:
    """The recorded error without the random temporary path that NVRTC names in it."""
    import re
    return re.sub(r'"?/tmp/[^" ]*/([^/" ]+)"?', r"\1", error).replace("`", "'")


@pages.targets(NAME)
def targets(data: dict) -> list[pages.Target]:
    p = data["gpu"]
    rows, cols = p["shape"]
    out = []
    for r in _in_order(p["rows"] + p["failed"]):
        if r["level"] not in TARGET_LEVELS:
            continue
        pct = r.get("pct_of_copy")
        out.append(pages.Target(f"Softmax ladder, {r['label']}, {rows:,} x {cols:,} float32",
                                f">= {TARGET_PCT} % of a device copy",
                                "failed" if pct is None else f"{pct:.0f} %",
                                None if pct is None else pct >= TARGET_PCT))
    return out

