"""The card at the top of the chapter: what it teaches and three measured takeaways."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_ratio, fmt_time

LEARN = [
    "run Nsight Compute (`ncu`) on one kernel and read the few numbers that say what limits it",
    "read the PyTorch profiler's kernel table and how busy the GPU was during a training step",
    "overlap copies with kernels on CUDA streams with pinned memory, and measure the result "
    "against its ideal bound",
    "what pageable and managed (unified) memory cost on the same job",
]


@pages.card_renderer("profiling")
def card(data: dict) -> str:
    g = data["gpu"]
    rows = {r["name"]: r for r in g["rows"]}
    serial = rows["serial, pinned"]
    piped = min((r for r in g["rows"] if r["pinned"] and r["streams"] > 1), key=lambda r: r["median_s"])
    page = rows["serial, pageable"]
    takeaways = [
        f"Copy in, kernel and copy out of {g['bytes'] / 2**30:.0f} GiB took {fmt_time(serial['median_s'])} "
        f"one after the other; in chunks on {piped['streams']} streams, {fmt_time(piped['median_s'])}: "
        f"{fmt_ratio(serial['median_s'] / piped['median_s'], 2)} faster, {fmt_ratio(piped['vs_ideal'], 2)} "
        f"the ideal bound (the slowest of the three steps alone).",
        f"From pageable memory the serial job took {fmt_time(page['median_s'])}, "
        f"{fmt_ratio(page['median_s'] / serial['median_s'], 2)} the pinned time.",
    ]
    t = g.get("torch", {})
    if "busy" in t:
        takeaways.append(f"During a small CNN's training step the GPU was busy {100 * t['busy']:.0f} % of the "
                         "profiled span; the gaps are visible in the profile, their cause is not measured here.")
    else:
        best = min(g["sweep"], key=lambda s: s["median_s"])
        takeaways.append(f"Of the chunk counts tried, {best['chunks']} chunks gave the shortest job: "
                         f"{fmt_time(best['median_s'])}, {fmt_ratio(best['vs_ideal'], 2)} the ideal bound.")
    return pages.card(LEARN, ["vector_add", "timing", "matmul"], takeaways,
                      source=f"measured on {pages.plot_title(data)}")
