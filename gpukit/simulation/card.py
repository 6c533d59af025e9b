"""The three measured takeaways of the card at the top of the chapter (what it teaches
and what to read first are in the front matter of its page)."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_ratio


@pages.card_renderer("simulation")
def card(data: dict) -> str:
    from .views import gpu_rows
    g = gpu_rows(data["gpu"])
    lbm, best, plain, h32, h64 = g["lbm"], g["nbody"], g["nbody_plain"], g["heat32"], g["heat64"]
    fluid = (f"The fluid simulation runs {fmt_ratio(lbm.get('vs_cpu'), 0)} faster on the GPU "
             "than on every CPU core: memory sets its pace on both.")
    takeaways = [
        fluid,
        f"Gravity does not wait on memory: tuning its kernel made it "
        f"{fmt_ratio(best['rate'] / plain['rate'], 1)} faster, at "
        f"{fmt_num(best['rate'] / 1e12, 2)} T interactions/s between pairs of bodies.",
        f"In float64 the heat step took {fmt_ratio(h32['rate'] / h64['rate'], 2)} the time "
        + ("of float32: about the 2x that twice the bytes predicts."
           if abs(h32["rate"] / h64["rate"] - 2) < 0.1 else
           "of float32, not the 2x that twice the bytes predicts."),
    ]
    return pages.takeaways(takeaways, source=f"measured on {pages.plot_title(data)}")
