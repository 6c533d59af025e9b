"""The card at the top of the chapter: what it teaches and three measured takeaways."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_ratio

LEARN = [
    "three classic simulations on the GPU with numba: a fluid (lattice Boltzmann), gravity "
    "(all-pairs n-body) and heat (a stencil), each checked against physics and against the CPU",
    "which roof limits each one, memory bandwidth or arithmetic, and how close each gets to it",
    "what shared-memory tiles, fast math and several bodies per thread buy in a compute-bound kernel",
    "when float64 costs little on a GPU and when it costs 64 times",
]


@pages.card_renderer("simulation")
def card(data: dict) -> str:
    p = data["gpu"]
    gpu = {(r["model"], r.get("dtype"), r["name"]): r for r in p["rows"] if r["backend"] == "numba-cuda"}
    lbm = next(r for k, r in gpu.items() if k[0] == "lbm")
    nb = [r for k, r in gpu.items() if k[0] == "nbody"]
    best, plain = max(nb, key=lambda r: r["rate"]), nb[0]
    h32 = next(r for k, r in gpu.items() if k[0] == "heat" and k[1] == "float32")
    takeaways = [
        f"The fluid runs at {fmt_num(lbm['rate'] / 1e6)} million lattice updates per second, "
        f"{lbm['pct_copy']:.0f} % of the copy bandwidth measured in the same run and "
        f"{fmt_ratio(lbm.get('vs_cpu'), 0)} the rate of numba on all CPU cores.",
        f"All-pairs gravity: `{best['name']}` computes {fmt_num(best['rate'] / 1e12, 2)} T interactions/s "
        f"({best['pct_fp32']:.0f} % of the FP32 peak at 20 FLOP each), "
        f"{fmt_ratio(best['rate'] / plain['rate'], 1)} the straightforward tiled kernel.",
        f"The heat stencil moves {fmt_num(h32['gbs'])} GB/s, {h32['pct_copy']:.0f} % of a plain copy: "
        "a memory-bound kernel's roof is the copy, not the arithmetic.",
    ]
    return pages.card(LEARN, ["vector_add", "timing"], takeaways, source=f"measured on {pages.plot_title(data)}")
