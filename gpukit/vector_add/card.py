"""The three measured takeaways of the card at the top of the chapter (what it teaches
and what to read first are in the front matter of its page)."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num


@pages.card_renderer("vector_add")
def card(data: dict) -> str:
    g = data["gpu"]
    kernels = [r for r in g["rows"] if r.get("backend") and r["backend"] != "torch"]
    best = max(kernels, key=lambda r: r["gbs"])
    fastest = min(r["median_s"] for r in g["rows"] if r.get("backend"))
    e2e, pit = g["end_to_end"], g["pitfalls"]
    takeaways = [
        f"Your own kernel can match the library: the fastest one here moves "
        f"{fmt_num(best['pct_of_torch_add'], 0)} % of what `torch.add` moves per second.",
        f"Copying the arrays to the GPU and back takes {e2e['median_s'] / fastest:,.0f} times "
        f"longer than the addition itself.",
        f"A kernel that was configured but never launched looks "
        f"{fmt_num(pit['not_launched_gbs'] / g['ceiling_gbs'])} times faster than memory allows: "
        f"check that it ran.",
    ]
    return pages.takeaways(takeaways, source=f"measured on {pages.plot_title(data)}")
