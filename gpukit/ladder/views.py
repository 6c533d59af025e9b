"""The chapter's tables and plots, drawn from its results files."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_time, table

from .levels import LEVELS, PASSES
from .measure import NAME


def _part(data: dict) -> dict:
    return data["gpu"] if "gpu" in data else data["cpu"]


def _where(data: dict) -> str:
    """The GPU's name, or "<CPU model>, <n> cores, no GPU" (not quite
    :func:`gpukit.pages.machine_title`'s words on a machine without a GPU)."""
    m = data["machine"]
    if m.get("gpu"):
        return m["gpu"]["name"]
    return f"{m['cpu']['model']}, {m['cpu']['usable_cpus']} cores, no GPU"


def _register() -> None:
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
                out.append([r["label"], str(r["loc"]), "**failed**", "-", "-", "-"])
                notes.append(f"**{r['label']}** failed in this run. The last line of its error: "
                             f"`{_short_error(r['error'])}`")
                continue
            if "reason" in r:
                out.append([r["label"], str(r["loc"]), "skipped", "-", "-", "-"])
                notes.append(f"**{r['label']}** skipped: {r['reason']}")
                continue
            rate = ("simulated: correctness only" if r["simulated"] else
                    f"{fmt_num(r['gbs'], 0 if r['gbs'] >= 100 else 1)} ({fmt_num(r.get('pct_of_copy'), 0)} %)")
            steady = fmt_time(r["median_s"]) + (" *" if r["level"] in wall else "")
            out.append([r["label"], str(r["loc"]), fmt_time(r["first_call_s"]), steady, rate,
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
        body = table(["level", "lines", "first call", "steady state", "GB/s (% of copy)",
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
            if "error" in r:
                out.append([r["label"], PASSES.get(n, "decided by its compiler"), str(n or "-"),
                            f"{100 * 2 / n:.0f} %" if n else "-", "failed", "-"])
                continue
            pct = r.get("pct_of_copy", 0)
            bound = f"{100 * 2 / n:.0f} %" if n else "-"
            per_pass = f"{pct * n / 2:.0f} %" if n else "-"
            out.append([r["label"], PASSES.get(n, "decided by its compiler"), str(n or "-"), bound,
                        fmt_num(pct, 0) + " %", per_pass])
        header = ["level", "memory traffic (from the code)", "array passes",
                  "at most, if each pass ran at copy speed", "measured",
                  "each pass at (measured x passes / 2)"]
        return table(header, out, "llrrrr")

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
        return ("% of the copy ceiling for each shape (rows x row length C):\n\n"
                + table(header, out, "l" + "r" * len(cols)))

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
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 4.2))
        fig.patch.set_facecolor("white")
        markers = "osD^v<>ph*"
        for i, (label, rs) in enumerate(by_level.items()):
            ax.plot([r["cols"] for r in rs], [r["gbs"] for r in rs], marker=markers[i % len(markers)],
                    label=label)
        ax.axhline(p["ceiling_gbs"], color="0.3", linestyle="--", linewidth=1)
        ax.text(min(r["cols"] for rs in by_level.values() for r in rs), p["ceiling_gbs"] * 1.03,
                "copy ceiling", fontsize=8, color="0.3")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        cols = sorted({r["cols"] for rs in by_level.values() for r in rs})
        ax.set_xticks(cols, [f"{c:,}" for c in cols])
        ax.set_xlabel(f"row length C (elements); R x C = {p['n']:,} float32 in every case")
        ax.set_ylabel("GB/s of ideal traffic (log)")
        from matplotlib.ticker import FuncFormatter, NullFormatter
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 10 else f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
        ax.set_title(f"softmax(scale * x + bias) per row on {_where(data)}, {data['machine']['date'][:10]}",
                     fontsize=10)
        return pages.svg(fig)

    @pages.renderer(NAME, "summary")
    def summary(slug: str, data: dict) -> str:
        p = _part(data)
        timed = [r for r in p["rows"] if not r["simulated"]]
        if not timed:
            raise pages.NotRecorded("rows")
        best = max(timed, key=lambda r: r["gbs"])
        top = [r for r in timed if r.get("pct_of_copy", 0) >= 90]
        short = [r for r in timed if r.get("pct_of_copy", 0) < 90]
        names = lambda rs: ", ".join(f"{r['label']} ({r['pct_of_copy']:.0f} %)" for r in rs) or "none"
        text = (f"On the **{_where(data)}** the fastest level is **{best['label']}** at "
                f"{best['pct_of_copy']:.0f} % of the copy ceiling. At 90 % or more: {names(top)}. "
                f"Below 90 %: {names(short)}.")
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


_register()

