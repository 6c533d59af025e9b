"""The card at the top of the chapter: what it teaches and three measured takeaways."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_time

from .measure import NAME

LEARN = [
    "read a GPU's device query next to its host CPU's: multiprocessors, warps, registers, caches",
    "why a GPU needs many warps resident on each multiprocessor to keep its memory busy (Little's law)",
    "why neighbouring threads should read neighbouring addresses, and what divergent branches cost",
    "what launching a kernel costs, and how much a CUDA graph saves",
]


def _warps(n: int) -> str:
    return f"{n} warp" + ("s" if n != 1 else "")


@pages.card_renderer(NAME)
def card(data: dict) -> str:
    dram = data["latency"]["rows"][-1]                  # the array far larger than L2
    occ = data["occupancy"]["rows"]
    fewest = min(occ, key=lambda r: (r["warps_per_sm"], r["gbs"]))
    best = max(occ, key=lambda r: r["gbs"])
    strided = data["strided"]["rows"]
    one, widest = strided[0], max(strided, key=lambda r: r["stride"])
    div = {(r["mode"], r["k"]): r["median_s"] for r in data["divergence"]["rows"]}
    kmax = max(k for _, k in div)
    chain = data["launch"]["chain"]["rows"]
    graph = next(r for r in chain if "graph" in r["name"])
    takeaways = [
        f"One load from device memory takes {dram['latency_ns']:,.0f} ns ({dram['latency_cycles']:,.0f} "
        f"clock cycles): with {_warps(fewest['warps_per_sm'])} per multiprocessor, reading reaches "
        f"{fewest['gbs']:,.0f} GB/s; with {_warps(best['warps_per_sm'])} ({best['variant']}), "
        f"{best['gbs']:,.0f} GB/s.",
        f"Threads of a warp reading with a stride of {widest['stride']} elements get "
        f"{100 * widest['gbs'] / one['gbs']:.0f} % of the bandwidth of neighbouring reads "
        f"({widest['gbs']:,.0f} against {one['gbs']:,.0f} GB/s); a warp whose threads take {kmax} "
        f"different paths runs {div[(0, kmax)] / div[(0, 1)]:.0f}x slower.",
        f"Launched one by one, each small kernel of a chain costs {fmt_time(chain[0]['per_kernel_s'])}; "
        f"replayed from a CUDA graph, {fmt_time(graph['per_kernel_s'])}.",
    ]
    return pages.card(LEARN, ["why_gpus"], takeaways, source=f"measured on {pages.plot_title(data)}")
