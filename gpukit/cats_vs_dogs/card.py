"""The card at the top of the chapter: what it teaches and three measured takeaways."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_time

from .measure import step_times

LEARN = [
    "train a small network from scratch on 2,000 real photos, with the same script on one GPU or many",
    "keep the GPU busy: decode the photos once, keep them on the GPU, augment them there",
    "mixed precision and tensor cores, and where a training step's time goes",
    "checkpoints that survive Ctrl-C, and the CPU and the GPU timed in the same run",
]


@pages.card_renderer("cats_vs_dogs")
def card(data: dict) -> str:
    runs = data["training"]["rows"]
    acc = sorted(100 * r["val_acc"] for r in runs)
    walls = sorted(r["median_s"] for r in runs)
    tp = data["throughput"]
    syn_s, real_s = step_times(tp["rows"])
    real = tp["batch_size"] / real_s
    tut = tp.get("tutorial_measured")
    cvg = data["cpu_vs_gpu"]
    takeaways = [
        f"Trained from scratch, {len(runs)} seed{'s' if len(runs) > 1 else ''} reach {acc[0]:.1f} to "
        f"{acc[-1]:.1f} % validation accuracy in {fmt_time(walls[0])} to {fmt_time(walls[-1])} of wall "
        f"time, reading and decoding the photos included.",
        f"A step on real photos takes {real_s / syn_s:.2f}x a step on synthetic data already on the GPU: "
        f"{fmt_num(real)} images/s"
        + (f", {real / tut['images_per_s']:.1f}x a typical tutorial pipeline measured in the same run."
           if tut else "."),
        f"One epoch takes {fmt_time(cvg['gpu_epoch_s'])} on the GPU and {fmt_time(cvg['cpu']['epoch_s'])} on "
        f"{cvg['cpu']['threads']} CPU cores ({cvg['cpu']['precision']} on both): {cvg['ratio']:.0f}x.",
    ]
    return pages.card(LEARN, ["vector_add", "timing"], takeaways, source=f"measured on {pages.plot_title(data)}")
