"""Vector add from the host's point of view, drawn to scale: copy in, add, copy out.

One view, ``timeline``: for pinned and for pageable host memory, the two host-to-device copies
of the inputs, the add kernel and the device-to-host copy of the result, one after the other,
each as long as its measured median in ``vector_add.json`` (the copies of one array each, the
fastest add kernel of the same run). It is the sum of separately timed steps, laid end to end.
"""

from __future__ import annotations

from ..pages import NotRecorded, fmt_time, machine_title, plot_title, renderer, svg

#: the colour of each step
COLOURS = {"copy in": "#f2a33a", "add": "#1e63b5", "copy out": "#2e9d4f"}


def steps(data: dict) -> dict[str, list[tuple[str, str, float]]]:
    """Memory kind -> [(step, label, seconds)] in order: copy x in, copy y in, add, copy out."""
    g = data["gpu"]
    copies = {c["name"]: c for c in g.get("copies", [])}
    kernels = [r for r in g["rows"] if r.get("backend")]
    if not kernels:
        raise NotRecorded("rows")
    kernel = min(kernels, key=lambda r: r["median_s"])
    out = {}
    for memory in ("pinned", "pageable"):
        h2d, d2h = copies.get(f"host to device, {memory}"), copies.get(f"device to host, {memory}")
        if not (h2d and d2h):
            continue
        out[memory] = [("copy in", "x to GPU", h2d["median_s"]),
                       ("copy in", "y to GPU", h2d["median_s"]),
                       ("add", kernel["name"], kernel["median_s"]),
                       ("copy out", "out to host", d2h["median_s"])]
    if not out:
        raise NotRecorded("copies")
    return out


@renderer("vector_add", "timeline")
def timeline(slug: str, data: dict) -> str:
    lanes = steps(data)
    g = data["gpu"]
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 1.3 + 0.8 * len(lanes)))
    longest = max(sum(s for _, _, s in lane) for lane in lanes.values())
    for y, (memory, lane) in enumerate(reversed(list(lanes.items()))):
        t = 0.0
        for step, label, seconds in lane:
            ax.broken_barh([(t * 1e3, seconds * 1e3)], (y - 0.3, 0.6), facecolor=COLOURS[step],
                           edgecolor="white", lw=0.8)
            if seconds > 0.08 * longest:        # room for the label inside the bar
                ax.text((t + seconds / 2) * 1e3, y, f"{label}\n{fmt_time(seconds)}", ha="center",
                        va="center", fontsize=8.5, color="white" if step == "add" else "black")
            elif step == "add":                 # the kernel is a sliver: point at it
                ax.annotate(f"add: {fmt_time(seconds)}", xy=((t + seconds / 2) * 1e3, y + 0.3),
                            xytext=((t + seconds / 2) * 1e3, y + 0.52), ha="center", va="bottom",
                            fontsize=8.5, arrowprops=dict(arrowstyle="-", color=COLOURS["add"], lw=1))
            t += seconds
        share = next(s for step, _, s in lane if step == "add") / t
        ax.text(t * 1e3 + longest * 1e3 * 0.01, y, f"{fmt_time(t)} in all,\nthe kernel {100 * share:.1f} %",
                va="center", fontsize=8.5)
    ax.set_yticks(range(len(lanes)), [f"{m} host memory" for m in reversed(list(lanes))])
    ax.set_ylim(-0.6, len(lanes) - 0.15)
    ax.set_xlim(0, longest * 1e3 * 1.27)
    ax.set_xlabel("time (ms), one step after the other, each its measured median")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(axis="x", alpha=0.3)
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=COLOURS["copy in"], label="copy to the GPU"),
                       Patch(color=COLOURS["add"], label="add kernel"),
                       Patch(color=COLOURS["copy out"], label="copy to the host")],
              fontsize=8.5, loc="upper right", frameon=False)
    ax.set_title(f"x + y for two arrays of {g['n'] * 4 / 2**30:.0f} GiB that start and end on the host\n"
                 f"{plot_title(data)}", fontsize=10)
    head = (f"**{machine_title(data)}**: the add kernel (the fastest of the run) against the copies "
            f"it needs, drawn to scale\n\n")
    return head + svg(fig)
