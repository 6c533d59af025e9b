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
    from .views import TARGETS, chapter_targets, counts_fluid, gpu_rows
    g = gpu_rows(data["gpu"])
    lbm, best, plain, h32, h64 = g["lbm"], g["nbody"], g["nbody_plain"], g["heat32"], g["heat64"]
    rate, share, nb, heat = chapter_targets(data)

    def target(t, goal: str) -> str:
        return f"{'meets' if t.met else 'misses'} the target of {goal}"
    if counts_fluid(lbm):
        both = rate.met and share.met
        fluid = (f"The fluid (D2Q9 lattice Boltzmann, float32) updates {fmt_num(lbm['rate'] / 1e6)} million "
                 f"fluid cells per second past a cylinder and moves {lbm['pct_copy']:.1f} % of the copy "
                 f"bandwidth measured in the same run: it {'meets' if both else 'misses'} the target of "
                 f"{fmt_num(TARGETS['lbm_mlups'])} MLUPs/s and {TARGETS['lbm_pct_copy']} %; "
                 f"{fmt_ratio(lbm.get('vs_cpu'), 0)} the rate of numba on all CPU cores.")
    else:                                       # recorded when every cell of the grid was counted
        fluid = (f"The fluid (D2Q9 lattice Boltzmann, float32) runs {fmt_ratio(lbm.get('vs_cpu'), 0)} "
                 "the rate of numba on all CPU cores; its rate counting only fluid cells is not in "
                 "this record.")
    takeaways = [
        fluid,
        f"All-pairs gravity: the fastest kernel, `{best['name']}`, computes {fmt_num(best['rate'] / 1e12, 2)} T "
        f"interactions/s ({best['pct_fp32']:.0f} % of the FP32 peak at 20 FLOP each), "
        f"{fmt_ratio(best['rate'] / plain['rate'], 1)} the straightforward tiled kernel; it "
        + target(nb, f"{TARGETS['nbody_t']} T") + ".",
        f"The same heat stencil reaches {h32['pct_copy']:.0f} % of the copy in float32 and {h64['pct_copy']:.0f} % "
        f"in float64, so a float64 step takes {fmt_ratio(h32['rate'] / h64['rate'], 2)} the time of a float32 one "
        f"(twice the bytes predicts 2x); float32 "
        + target(heat, f"{TARGETS['heat32_pct_copy']} %") + ", and why it moves bytes more slowly was not measured.",
    ]
    return pages.card(LEARN, ["vector_add", "timing"], takeaways, source=f"measured on {pages.plot_title(data)}")
