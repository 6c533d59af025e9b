"""The card at the top of the chapter: what it teaches and three measured takeaways."""

from __future__ import annotations

from gpukit import pages

from .meta import NAME

LEARN = [
    "read a GPU's device query next to its host CPU's: multiprocessors, warps, caches",
    "why a GPU keeps many warps on each multiprocessor (Little's law)",
    "why neighbouring threads should read neighbouring addresses, and what branches cost",
    "what launching a kernel costs, and how much a CUDA graph saves",
]


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
    return pages.card(LEARN, ["why_gpus"], takeaways, level="intermediate",
                      source=f"measured on {pages.plot_title(data)}")
