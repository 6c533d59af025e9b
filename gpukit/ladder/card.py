"""The three measured takeaways of the card at the top of the chapter (what it teaches
and what to read first are in the front matter of its page)."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_time

from .meta import NAME


@pages.card_renderer(NAME)
def card(data: dict) -> str:
    p = data["gpu"]
    rows = {r["level"]: r for r in p["rows"]}
    ceiling = p["ceiling_gbs"]
    best = max(p["rows"], key=lambda r: r["gbs"])
    eager, compiled = rows["torch-eager"], rows["torch-compile"]

    def pct(r: dict) -> str:
        return f"{100 * r['gbs'] / ceiling:.0f} %"
    takeaways = [
        f"The fastest level, {best['label'].split(' (')[0]}, runs at {pct(best)} of a memory "
        "copy's speed.",
        f"Eager PyTorch, written out, reaches {pct(eager)}: each of its operations is another "
        "pass over memory.",
        f"`torch.compile` made the same code {eager['median_s'] / compiled['median_s']:.1f} times "
        f"faster, after a first call of {fmt_time(compiled['first_call_s'])}.",
    ]
    return pages.takeaways(takeaways, source=f"measured on {pages.plot_title(data)}")
