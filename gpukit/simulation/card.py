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
    from .views import TARGETS, gpu_rows
    g = gpu_rows(data["gpu"])
    lbm, best, plain, h32, h64 = g["lbm"], g["nbody"], g["nbody_plain"], g["heat32"], g["heat64"]
    lbm_ok = lbm["rate"] / 1e6 >= TARGETS["lbm_mlups"] and lbm["pct_copy"] >= TARGETS["lbm_pct_copy"]
    nb_ok = best["rate"] / 1e12 >= TARGETS["nbody_t"]
    h_ok = h32["pct_copy"] >= TARGETS["heat32_pct_copy"]

    def target(ok: bool, goal: str) -> str:
        return f"{'meets' if ok else 'misses'} the target of {goal}"
    takeaways = [
        f"The fluid (D2Q9 lattice Boltzmann, float32) runs {fmt_num(lbm['rate'] / 1e6)} million lattice updates "
        f"per second, {lbm['pct_copy']:.1f} % of the copy bandwidth measured in the same run, and "
        + target(lbm_ok, f"{fmt_num(TARGETS['lbm_mlups'])} and {TARGETS['lbm_pct_copy']} %")
        + f"; {fmt_ratio(lbm.get('vs_cpu'), 0)} the rate of numba on all CPU cores.",
        f"All-pairs gravity: the fastest kernel, `{best['name']}`, computes {fmt_num(best['rate'] / 1e12, 2)} T "
        f"interactions/s ({best['pct_fp32']:.0f} % of the FP32 peak at 20 FLOP each), "
        f"{fmt_ratio(best['rate'] / plain['rate'], 1)} the straightforward tiled kernel; it "
        + target(nb_ok, f"{TARGETS['nbody_t']} T") + ".",
        f"The same heat stencil reaches {h32['pct_copy']:.0f} % of the copy in float32 and {h64['pct_copy']:.0f} % "
        f"in float64, so a float64 step takes {fmt_ratio(h32['rate'] / h64['rate'], 2)} the time of a float32 one "
        f"(twice the bytes predicts 2x); float32 "
        + target(h_ok, f"{TARGETS['heat32_pct_copy']} %") + ", and why it moves bytes more slowly was not measured.",
    ]
    return pages.card(LEARN, ["vector_add", "timing"], takeaways, source=f"measured on {pages.plot_title(data)}")
