"""The chapter's tables: vector add on the GPU and the CPU, copies, and the launch pitfalls."""

from __future__ import annotations

from ..pages import host_bound_note, marked, fmt_num, fmt_time, machine_title, renderer, table
from . import diagrams  # noqa: F401  (registers the "timeline" view)


@renderer("vector_add", "gpu")
def _vector_add_gpu(slug: str, data: dict) -> str:
    g = data["gpu"]
    rows = []
    for r in g["rows"]:
        rows.append([marked(r), fmt_time(r["first_call_s"]), fmt_time(r["median_s"]),
                     fmt_num(r["gbs"]), fmt_num(r.get("pct_of_copy"), 1) + " %",
                     fmt_num(r.get("pct_of_torch_add"), 1) + " %"])
    head = (f"**{machine_title(data)}**, {g['n']:,} float32 elements "
            f"({3 * g['n'] * 4 / 1e9:.1f} GB moved per add)\n\n")
    return head + table(["implementation", "first call", "median", "GB/s", "% of copy",
                         "% of torch.add"], rows) + host_bound_note(g["rows"])


@renderer("vector_add", "gpu-plot")
def _vector_add_gpu_plot(slug: str, data: dict) -> str:
    """The same rows as bars: how close each implementation gets to a plain device copy."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .. import pages
    g = data["gpu"]
    rows = [r for r in g["rows"] if r.get("gbs")]
    copy = next((r["gbs"] for r in rows if r["name"] == "device copy"), None)
    rows = [r for r in rows if r["name"] != "device copy"]
    with plt.rc_context({"svg.fonttype": "none", "font.size": 11}):
        # each name above its bar, not beside it: the plot keeps its width on a phone
        fig, ax = plt.subplots(figsize=(5.2, 0.62 * len(rows) + 1.3), dpi=100)
        top = max(r["gbs"] for r in rows + ([{"gbs": copy}] if copy else []))
        for y, r in enumerate(rows):
            ax.barh(y, r["gbs"], color="#2e7d32", height=0.45)
            ax.text(0, y - 0.3, r["name"], va="bottom", fontsize=11)
            ax.text(r["gbs"], y, f"{r['gbs']:,.0f}" + (" †" if r.get("host_bound") else "") + " ",
                    va="center", ha="right", fontsize=10, color="white")
        if copy:
            ax.axvline(copy, color="#d32f2f", linestyle="--", linewidth=1.2)
            ax.text(copy, -0.95, f"device copy {copy:,.0f} GB/s", ha="center", va="bottom",
                    color="#d32f2f", fontsize=10)
        ax.set_xlim(0, top * 1.08)
        ax.set_ylim(len(rows) - 0.5, -1.0)
        ax.set_yticks([])
        ax.set_xlabel(f"GB/s: three arrays of {g['n']:,} float32 per add\n{pages.plot_title(data)}")
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
        fig.tight_layout()
    return '<figure class="gpukit-plot">\n' + pages.svg(fig) + "\n</figure>"


@renderer("vector_add", "copies")
def _vector_add_copies(slug: str, data: dict) -> str:
    g = data["gpu"]
    rows = [[c["name"], fmt_time(c["median_s"]), fmt_num(c["gbs"], 1)] for c in g["copies"]]
    kernel = min(r["median_s"] for r in g["rows"] if r.get("backend"))
    e2e = g["end_to_end"]
    rows.append(["the fastest add kernel alone", fmt_time(kernel), "-"])
    rows.append([e2e["name"], fmt_time(e2e["median_s"]), "-"])
    head = f"**{machine_title(data)}**, arrays of {g['n'] * 4 / 2**30:.1f} GiB\n\n"
    return head + table(["operation", "median", "GB/s"], rows)


@renderer("vector_add", "pitfalls")
def _vector_add_pitfalls(slug: str, data: dict) -> str:
    p = data["gpu"]["pitfalls"]
    ceiling = data["gpu"]["ceiling_gbs"]
    rows = [
        ["kernel configured but never launched (`kernel[blocks, threads]`)", fmt_time(p["not_launched_s"]),
         fmt_num(p["not_launched_gbs"])],
        ["launched, clock stopped without synchronising", fmt_time(p["no_sync_s"]), fmt_num(p["no_sync_gbs"])],
        ["launched and timed with CUDA events (median)", fmt_time(p["events_s"]),
         fmt_num(3 * data["gpu"]["n"] * 4 / p["events_s"] / 1e9)],
        ["device copy ceiling, for comparison", "-", fmt_num(ceiling)],
    ]
    return table(["what was timed", "time", "implied GB/s"], rows)


@renderer("vector_add", "cpu")
def _vector_add_cpu(slug: str, data: dict) -> str:
    c = data["cpu"]
    cpu = data["machine"]["cpu"]
    rows = [[r["name"], fmt_time(r["median_s"]), fmt_num(r["gbs"], 1),
             fmt_num(r.get("pct_of_copy"), 0) + " %" if r.get("pct_of_copy") else "-"] for r in c["rows"]]
    head = f"**{cpu['model']}** ({cpu['usable_cpus']} cores usable), {c['n']:,} float32 elements\n\n"
    return head + table(["implementation", "median", "GB/s", "% of host copy"], rows)
