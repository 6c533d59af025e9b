"""The three measured takeaways of the card at the top of the chapter (what it teaches
and what to read first are in the front matter of its page)."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_time

from .meta import NAME


@pages.card_renderer(NAME)
def card(data: dict) -> str:
    nosync = data["nosync"]
    wrong = next(r for r in nosync["rows"] if r["kind"] == "wrong" and r["name"].startswith("torch"))
    events = next(r for r in nosync["rows"] if r["kind"] == "right" and "events" in r["name"]
                  and r["name"].startswith("torch"))
    first = next(r for r in data["first_call"]["rows"] if r["name"] == "numba-cuda")
    moves = data["transfers"]["rows"]
    copies = max((r for r in moves if r["question"] == "answer" and "copies" in r["name"]),
                 key=lambda r: r["median_s"])
    cpu = next((r for r in moves if r["name"].startswith("CPU")), None)
    loses = cpu is not None and all(r["median_s"] > cpu["median_s"] for r in moves
                                    if r["question"] == "answer" and "copies" in r["name"])
    takeaways = [
        f"A clock that does not wait for the GPU read {fmt_time(wrong['median_s'])} for work "
        f"the GPU needed {fmt_time(events['median_s'])} to do.",
        f"numba's first call took {fmt_num(first['first_over_steady'])} times as long as the "
        "calls after it: it compiles the kernel.",
        f"Copying the data in and out made one SAXPY {fmt_num(copies['ratio_to_kernel'])} times "
        "slower than the kernel alone"
        + (", slower than the CPU doing the work itself." if loses else "."),
    ]
    return pages.takeaways(takeaways, source=f"measured on {pages.plot_title(data)}")
