"""The memory hierarchy of a GPU as a diagram, with the latency and bandwidth measured at each level.

One view, ``hierarchy``: registers, L1 / shared memory, L2, device memory and the host's memory
across PCIe, each with its size from the device query and what this machine's results files
measured there: the load latencies of ``gpu_anatomy.json``, the read bandwidth of its occupancy
sweep, the device copy and the host-device copies of ``vector_add.json``, and the L2-resident
and L2-flushed SAXPY of ``timing.json``. A level nothing measured says "not measured".
"""

from __future__ import annotations

from .. import pages, results
from .meta import NAME

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
    return f"{row['latency_ns']:,.0f} ns ({row['latency_cycles']:,.0f} SM cycles)"


def _other(name: str, slug: str, data: dict) -> dict | None:
    """This machine's record of another results file, from the folder ``data`` was read from,
    or None where it has none."""
    return results.load(name, root=getattr(data, "root", None)).get(slug)


def levels(slug: str, data: dict) -> list[dict]:
    """The levels, fastest first: name, size, latency and bandwidth text, from the results files."""
    g = data["machine"].get("gpu")
    if not g:
        raise pages.NotRecorded("gpu")
    lat_rows = data["latency"]["rows"]               # NotRecorded on a machine without the part
    occ = data.get("occupancy") or {}
    best_read = max((r["gbs"] for r in occ.get("rows", [])), default=None)
    vadd = (_other("vector_add", slug, data) or {}).get("gpu") or {}
    timing = (_other("timing", slug, data) or {}).get("cache") or {}
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
    """The levels stacked top to bottom, fastest first: one box each, with its name and size,
    then the latency of one load and the bandwidth measured (phone-width, one column)."""
    from matplotlib.patches import FancyBboxPatch

    line = 0.215                                  # inches per line of 11.5 pt text
    boxes = []
    for row in rows:
        lines = [(f"{row['name']}: {row['size']}", "bold")]
        for key, label in (("latency", "latency"), ("bandwidth", "bandwidth")):
            parts = row[key].split("\n")
            lines += [(f"{label}: {parts[0]}", key)] + [(f"    {p}", key) for p in parts[1:]]
        boxes.append(lines)
    gap = 0.12
    height = sum(len(b) * line + 0.16 for b in boxes) + gap * (len(boxes) - 1) + 0.1
    fig, ax = pages.figure(height=height + 0.1)
    fig.subplots_adjust(0, 0, 1, 1)
    width = pages.FIGURE_WIDTH_IN
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    colours = ["#fde2c4", "#fbd3a4", "#d8ecff", "#b9dcf7", "#e4e7eb"]
    top = height - 0.05
    for i, (row, lines) in enumerate(zip(rows, boxes)):
        h = len(lines) * line + 0.16
        ax.add_patch(FancyBboxPatch((0.05, top - h), width - 0.1, h,
                                    boxstyle="round,pad=0,rounding_size=0.08",
                                    fc=colours[i % len(colours)], ec="#57606a", lw=0.8))
        for j, (text, kind) in enumerate(lines):
            grey = NOT_MEASURED in text
            indent = 0.18 + (0.3 if text.startswith(" ") else 0)
            ax.text(indent, top - 0.08 - (j + 0.5) * line, text.strip(), va="center",
                    fontweight="bold" if kind == "bold" else "normal",
                    color="#6e7781" if grey else "#1f2328", style="italic" if grey else "normal")
        top -= h + gap
    ax.set_title(title, loc="left")
    return pages.svg(fig)


@pages.renderer(NAME, "hierarchy")
def hierarchy(slug: str, data: dict) -> str:
    rows = levels(slug, data)
    title = f"Memory hierarchy, {pages.plot_title(data)}"
    others = [f"`results/{slug}/{name}.json` (recorded {rec['machine']['date'][:10]})"
              for name in ("vector_add", "timing") if (rec := _other(name, slug, data))]
    body = _draw(title, rows)
    if others:
        body += f"\n\n<small>Bandwidths also from {' and '.join(others)}.</small>"
    return pages.collapsed("Every level of memory in one picture: size, latency, bandwidth", body)
