"""The memory hierarchy of a GPU as a diagram, with the latency and bandwidth measured at each level.

One view, ``hierarchy``: registers, L1 / shared memory, L2, device memory and the host's memory
across PCIe, each with its size from the device query and what this machine's results files
measured there: the load latencies of ``gpu_anatomy.json``, the read bandwidth of its occupancy
sweep, the device copy and the host-device copies of ``vector_add.json``, and the L2-resident
and L2-flushed SAXPY of ``timing.json``. A level nothing measured says "not measured".
"""

from __future__ import annotations

from .. import pages, results
from .measure import NAME

NOT_MEASURED = "not measured"


def _size(b: float | None) -> str:
    if not b:
        return "size not reported"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= scale:
            return f"{b / scale:,.0f} {unit}"
    return f"{b:,.0f} B"


def _latency(rows: list[dict], word: str) -> str:
    """The measured latency of the load-latency row whose name holds ``word``."""
    row = next((r for r in rows if word in r["name"]), None)
    if row is None:
        return NOT_MEASURED
    return f"{row['latency_ns']:,.0f} ns\n({row['latency_cycles']:,.0f} SM cycles)"


def _other(name: str, slug: str) -> dict | None:
    """This machine's record of another results file, or None where it has none."""
    return results.load(name).get(slug)


def levels(slug: str, data: dict) -> list[dict]:
    """The levels, fastest first: name, size, latency and bandwidth text, from the results files."""
    g = data["machine"].get("gpu")
    if not g:
        raise pages.NotRecorded("gpu")
    lat_rows = data["latency"]["rows"]               # NotRecorded on a machine without the part
    occ = data.get("occupancy") or {}
    best_read = max((r["gbs"] for r in occ.get("rows", [])), default=None)
    vadd = (_other("vector_add", slug) or {}).get("gpu") or {}
    timing = (_other("timing", slug) or {}).get("cache") or {}
    host = data.get("host") or {}

    memory_bw = []
    if vadd.get("ceiling_gbs"):
        memory_bw.append(f"{vadd['ceiling_gbs']:,.0f} GB/s device copy")
    if best_read:
        memory_bw.append(f"{best_read:,.0f} GB/s best read")
    if occ.get("theoretical_gbs"):
        memory_bw.append(f"(peak from bus x clock: {occ['theoretical_gbs']:,.0f} GB/s)")

    l2 = g.get("l2_cache_bytes")
    in_l2 = [h for h in timing.get("hot_cold", []) if l2 and h["working_set_bytes"] < l2]
    l2_bw = NOT_MEASURED
    if in_l2:
        h = in_l2[0]
        l2_bw = (f"{h['hot_gbs']:,.0f} GB/s: SAXPY on {_size(h['working_set_bytes'])},\n"
                 f"in L2 ({h['cold_gbs']:,.0f} GB/s with L2 flushed)")

    copies = {c["name"]: c["gbs"] for c in vadd.get("copies", [])}
    link_bw = NOT_MEASURED
    if copies:
        link_bw = "\n".join(f"{gbs:,.1f} GB/s {name}" for name, gbs in copies.items()
                            if name.startswith("host to device"))
    host_read = next((r["gbs"] for r in host.get("rows", []) if r.get("kind") == "read"), None)
    if host_read:
        link_bw += f"\n(the CPU reads it at {host_read:,.0f} GB/s)"

    sms = g["multiprocessors"]
    regs = g.get("registers_per_multiprocessor")
    smem = g.get("shared_memory_per_multiprocessor_bytes")
    return [
        {"name": "registers",
         "size": f"{regs:,} x 32 bit per SM" if regs else "size not reported",
         "latency": NOT_MEASURED, "bandwidth": NOT_MEASURED},
        {"name": "L1 / shared memory",
         "size": f"up to {_size(smem)} per SM" if smem else "size not reported",
         "latency": _latency(lat_rows, "L1"), "bandwidth": NOT_MEASURED},
        {"name": "L2 cache",
         "size": f"{_size(l2)}, shared by {sms} SMs",
         "latency": _latency(lat_rows, "L2"), "bandwidth": l2_bw},
        {"name": "device memory",
         "size": _size(g.get("memory_bytes")),
         "latency": _latency(lat_rows, "device memory"),
         "bandwidth": "\n".join(memory_bw) or NOT_MEASURED},
        {"name": "host memory, over PCIe",
         "size": _size((host.get("facts") or {}).get("memory_bytes")),
         "latency": NOT_MEASURED, "bandwidth": link_bw},
    ]


def _draw(title: str, rows: list[dict]) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    n = len(rows)
    width = 6.8                                  # inches; the axes fill the figure, 1 unit = 1 inch
    fig = plt.figure(figsize=(width, 0.8 * n + 0.9))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(-0.2, n + 0.85)
    ax.axis("off")
    centre, lat_x, bw_x = 1.72, 3.3, 4.55
    colours = ["#fde2c4", "#fbd3a4", "#d8ecff", "#b9dcf7", "#e4e7eb"]
    head = dict(fontsize=9.5, fontweight="bold", va="center")
    ax.text(centre, n + 0.4, "level\n(size: from the device query)", ha="center", **head)
    ax.text(lat_x, n + 0.4, "latency\nof one load", **head)
    ax.text(bw_x, n + 0.4, "bandwidth\nmeasured", **head)
    for i, row in enumerate(rows):
        y = n - 1 - i + 0.5                     # fastest level on top
        half = 1.0 + 0.1 * i                    # a pyramid: wider as the level grows
        ax.add_patch(FancyBboxPatch((centre - half, y - 0.38), 2 * half, 0.76,
                                    boxstyle="round,pad=0.02,rounding_size=0.08",
                                    fc=colours[i % len(colours)], ec="#57606a", lw=0.8))
        ax.text(centre, y + 0.14, row["name"], ha="center", va="center", fontsize=10, fontweight="bold")
        ax.text(centre, y - 0.17, row["size"], ha="center", va="center", fontsize=9)
        for x, key in ((lat_x, "latency"), (bw_x, "bandwidth")):
            text = row[key]
            ax.text(x, y, text, va="center", fontsize=9, linespacing=1.25,
                    color="#6e7781" if text == NOT_MEASURED else "#1f2328",
                    style="italic" if text == NOT_MEASURED else "normal")
        if i:
            ax.plot([lat_x - 0.1, width], [y + 0.5, y + 0.5], color="#d0d7de", lw=0.6)
    ax.annotate("", xy=(0.2, 0.1), xytext=(0.2, n - 0.1),
                arrowprops=dict(arrowstyle="->", color="#57606a", lw=1))
    ax.text(0.08, n / 2, "larger, slower", rotation=90, va="center", ha="center", fontsize=9,
            color="#57606a")
    ax.text(width / 2, n + 0.85, title, ha="center", va="bottom", fontsize=10)
    return pages.svg(fig)


@pages.renderer(NAME, "hierarchy")
def hierarchy(slug: str, data: dict) -> str:
    rows = levels(slug, data)
    title = f"Memory hierarchy, {pages.plot_title(data)}"
    others = [f"`results/{slug}/{name}.json` (recorded {rec['machine']['date'][:10]})"
              for name in ("vector_add", "timing") if (rec := _other(name, slug))]
    body = _draw(title, rows)
    if others:
        body += f"\n\n<small>Bandwidths also from {' and '.join(others)}.</small>"
    return body
