"""The card at the top of the chapter: what it teaches and three measured takeaways."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_time

from .measure import NAME

LEARN = [
    "one row-wise softmax written at every level: PyTorch (eager and `torch.compile`), CuPy, "
    "numba.cuda, CUDA C and Triton, with JAX alongside",
    "what each level costs in lines of code and in its first call, compilation included",
    "how close each level gets to the fastest the memory allows, and why some fall short",
    "when going down a level pays, and when it does not",
]


@pages.card_renderer(NAME)
def card(data: dict) -> str:
    p = data["gpu"]
    rows = {r["level"]: r for r in p["rows"]}
    ceiling = p["ceiling_gbs"]
    best = max(p["rows"], key=lambda r: r["gbs"])
    short = min((r for r in p["rows"] if r["gbs"] >= 0.9 * best["gbs"]), key=lambda r: r["loc"])
    eager, compiled = rows["torch-eager"], rows["torch-compile"]

    def pct(r: dict) -> str:
        return f"{100 * r['gbs'] / ceiling:.0f} %"
    quick = min(p["rows"], key=lambda r: r["first_call_s"])
    slow = max(p["rows"], key=lambda r: r["first_call_s"])
    takeaways = [
        f"The fastest level, *{best['label']}*, moves {fmt_num(best['gbs'])} GB/s, {pct(best)} of a device "
        f"copy, in {best['loc']} lines; *{short['label']}* gets within 10 % of it "
        f"({fmt_num(short['gbs'])} GB/s) in {short['loc']}.",
        f"*{eager['label']}* ({eager['loc']} lines) reaches {pct(eager)} of the copy; `torch.compile` of the "
        f"same code {pct(compiled)}, {eager['median_s'] / compiled['median_s']:.1f}x faster, after a first "
        f"call of {fmt_time(compiled['first_call_s'])}.",
        f"First calls{' (each in a fresh process, kernel caches empty)' if p['fresh_process'] else ''} range "
        f"from {fmt_time(quick['first_call_s'])} (*{quick['label']}*) to {fmt_time(slow['first_call_s'])} "
        f"(*{slow['label']}*): a level's compiler is part of its cost.",
    ]
    return pages.card(LEARN, ["vector_add", "timing"], takeaways, source=f"measured on {pages.plot_title(data)}")
