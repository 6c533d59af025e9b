"""The card at the top of the chapter: what it teaches and three measured takeaways."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_time

from .measure import step_times

LEARN = [
    "train a network from scratch on 2,000 real photos, from the command's start to a checkpoint on disk, "
    "and where each second of that goes",
    "keep the GPU busy: decode the photos once, keep them on the GPU, augment them there",
    "choose a recipe on one half of the validation photos and report it on the other half",
    "mixed precision, checkpoints that survive Ctrl-C, and when a second GPU pays off",
]


@pages.card_renderer("cats_vs_dogs")
def card(data: dict) -> str:
    runs = data["training"]["rows"]
    acc = sorted(100 * r["test_acc"] for r in runs)
    times = sorted(r["time_to_model_s"] for r in runs)
    n_test = runs[0]["n_test"]
    tp = data["throughput"]
    syn_s, real_s = step_times(tp["rows"])
    real = tp["batch_size"] / real_s
    tut = tp.get("tutorial_measured")
    cvg = data["cpu_vs_gpu"]
    seeds = f"{len(runs)} seed{'s' if len(runs) > 1 else ''}"
    takeaways = [
        f"From the command's start to a trained model on disk: {fmt_time(times[0])} to {fmt_time(times[-1])} "
        f"({seeds}, each a fresh `gpukit train`); accuracy {acc[0]:.1f} to {acc[-1]:.1f} %, mean "
        f"{sum(acc) / len(acc):.1f} %, on {n_test} test photos that chose nothing.",
        f"A step on real photos takes {real_s / syn_s:.2f}x a step on synthetic data already on the GPU: "
        f"{fmt_num(real)} images/s"
        + (f", {real / tut['images_per_s']:.1f}x a typical tutorial pipeline measured in the same run."
           if tut else "."),
        f"One epoch takes {fmt_time(cvg['gpu_epoch_s'])} on the GPU and {fmt_time(cvg['cpu']['epoch_s'])} on "
        f"{cvg['cpu']['threads']} CPU cores ({cvg['cpu']['precision']} on both): {cvg['ratio']:.0f}x.",
    ]
    return pages.card(LEARN, ["vector_add", "timing"], takeaways, source=f"measured on {pages.plot_title(data)}")
