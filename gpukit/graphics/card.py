"""The three measured takeaways of the card at the top of the chapter (what it teaches
and what to read first are in the front matter of its page)."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_ratio, fmt_time


@pages.card_renderer("graphics")
def card(data: dict) -> str:
    p = data["gpu"]
    by = {r["name"]: r for r in p["rows"]}
    plain, leaky, tree = by["plain"], by["leaky"], by["bvh"]
    takeaways = [
        f"The GPU path-traces a {tree['width']} x {tree['height']} frame in "
        f"{fmt_time(tree['median_s'])} when a tree of boxes lets each ray skip most spheres.",
        f"On the same work, the GPU traces {fmt_ratio(p['vs_all_cores'], 0)} as many rays per "
        "second as numba on every CPU core.",
        f"A literal like `2.0` turns float32 math into float64: "
        f"{p['ptx_f64']['leaky']['outside_sincos']} extra instructions and a "
        f"{fmt_ratio(leaky['median_s'] / plain['median_s'], 2)} longer frame.",
    ]
    return pages.takeaways(takeaways, source=f"measured on {pages.plot_title(data)}")
