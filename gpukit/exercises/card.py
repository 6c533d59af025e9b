"""The three measured takeaways of the card at the top of the chapter (what it teaches
and what to read first are in the front matter of its page)."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num


@pages.card_renderer("exercises")
def card(data: dict) -> str:
    g = data["gpu"]
    sim = data["sim"]
    n = len(sim["rows"])
    copy = [r for r in g["rows"] if r.get("percent_of_roof") is not None and r["roof"] == "copy"]
    best = max(copy, key=lambda r: r["percent_of_roof"])
    half = [r for r in copy if r["percent_of_roof"] >= 50]
    passed = sum(1 for r in sim["rows"] if r["ok"] and r["score"] == r["minimum"])
    failed = [str(r["puzzle"]) for r in g["rows"] if not r["ok"]]
    if passed == n and not failed:
        first = (f"All {n} reference solutions pass the checker with their puzzle's minimum "
                 "score, on the simulator and again at full size on a GPU.")
    else:
        first = (f"{passed} of {n} reference solutions pass the checker on the simulator with "
                 "their puzzle's minimum score"
                 + (f"; puzzle {', '.join(failed)} failed at full size on the GPU." if failed
                    else "."))
    takeaways = [
        first,
        f"The solutions are written to be read, not tuned: {len(half)} of the {len(copy)} "
        "memory-bound ones reach half the speed of a plain copy.",
        f"The fastest is puzzle {best['puzzle']}, {best['title'].lower()}, at "
        f"{fmt_num(best['percent_of_roof'], 0)} % of the copy speed.",
    ]
    return pages.takeaways(takeaways, source=f"measured on {pages.plot_title(data)}")
