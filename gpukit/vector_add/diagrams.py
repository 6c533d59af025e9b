"""Vector add from the host's point of view, drawn to scale: copy in, add, copy out.

One view, ``timeline``: for pinned and for pageable host memory, the two host-to-device copies
of the inputs, the add kernel and the device-to-host copy of the result, one after the other,
each as long as its measured median in ``vector_add.json`` (the copies of one array each, the
fastest add kernel of the same run). It is the sum of separately timed steps, laid end to end.
"""

from __future__ import annotations

from ..pages import NotRecorded, fmt_time, machine_title, renderer, svg

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
    """One panel per kind of host memory, each step as long as its measured median."""
    from .. import pages
    lanes = steps(data)
    g = data["gpu"]
    fig, axes = pages.figure(len(lanes), 1, height=2.4 * len(lanes) + 0.5, squeeze=False)
    for ax, (memory, lane) in zip(axes[:, 0], lanes.items()):
        total = sum(s for _, _, s in lane)
        t = 0.0
        for step, label, seconds in lane:
            ax.broken_barh([(t * 1e3, seconds * 1e3)], (-0.3, 0.6), facecolor=COLOURS[step],
                           edgecolor="white", lw=0.8)
            middle = (t + seconds / 2) * 1e3
            if step == "add":
                # the kernel is a sliver: point at it from above the bar
                ax.annotate(f"add {fmt_time(seconds)}", xy=(middle, 0.3), xytext=(0.99, 0.97),
                            textcoords="axes fraction", ha="right", va="top",
                            arrowprops=dict(arrowstyle="-", color=COLOURS["add"], lw=1))
            else:
                ax.text(middle, 0, f"{label.split()[0]}\n{fmt_time(seconds)}", ha="center",
                        va="center", color="black", linespacing=1.4)
            t += seconds
        share = next(s for step, _, s in lane if step == "add") / total
        ax.set_title(f"{memory} host memory: {fmt_time(total)}, the add {100 * share:.1f} %",
                     loc="left")
        ax.set_ylim(-0.6, 1.9)
        ax.set_xlim(0, total * 1e3)
        ax.set_yticks([])
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
    axes[-1, 0].set_xlabel("time (ms), one step after the other")
    fig.tight_layout()
    head = (f"**{machine_title(data)}**: two arrays of {g['n'] * 4 / 2**30:.0f} GiB copied in, "
            f"added by the fastest kernel of the run, and the result copied out, drawn to scale "
            f"(each panel its own time axis)\n\n")
    return head + svg(fig)
