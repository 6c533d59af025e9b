"""The three measured takeaways of the card at the top of the chapter (what it teaches
and what to read first are in the front matter of its page)."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_time

from .meta import step_times


@pages.card_renderer("cats_vs_dogs")
def card(data: dict) -> str:
    runs = data["training"]["rows"]
    acc = sum(r["test_acc"] for r in runs) / len(runs)
    secs = sum(r["time_to_model_s"] for r in runs) / len(runs)
    syn_s, real_s = step_times(data["throughput"]["rows"])
    cvg = data["cpu_vs_gpu"]
    takeaways = [
        f"One `gpukit train` run, start-up included, gives a model {100 * acc:.0f} % right on "
        f"unseen photos after {fmt_time(secs)} on average (photos shrunk beforehand).",
        f"A training step on real photos takes {real_s / syn_s:.1f}x as long as one on data "
        "that is already on the GPU.",
        f"An epoch runs {cvg['ratio']:.0f}x faster on the GPU than on all "
        f"{cvg['cpu']['threads']} cores of its CPU.",
    ]
    return pages.takeaways(takeaways, source=f"measured on {pages.plot_title(data)}")
