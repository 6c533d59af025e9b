"""The three measured takeaways of the card at the top of the chapter (what it teaches
and what to read first are in the front matter of its page)."""

from __future__ import annotations

from gpukit import pages

from .meta import NAME


@pages.card_renderer(NAME)
def card(data: dict) -> str:
    dram = data["latency"]["rows"][-1]                  # the array far larger than L2
    strided = data["strided"]["rows"]
    one, widest = strided[0], max(strided, key=lambda r: r["stride"])
    div = {(r["mode"], r["k"]): r["median_s"] for r in data["divergence"]["rows"]}
    kmax = max(k for _, k in div)
    takeaways = [
        f"One load from GPU memory takes {dram['latency_ns']:,.0f} ns, so each multiprocessor "
        f"keeps dozens of warps with loads on their way.",
        f"When neighbouring threads read floats {widest['stride']} apart instead of side by side, "
        f"a copy gets {100 * widest['gbs'] / one['gbs']:.0f} % of the bandwidth.",
        f"A warp whose threads take {kmax} different paths runs "
        f"{div[(0, kmax)] / div[(0, 1)]:.0f} times slower than one whose threads agree.",
    ]
    return pages.takeaways(takeaways, source=f"measured on {pages.plot_title(data)}")
