"""The chapter's tables and plots, drawn from its results files."""

from __future__ import annotations

from .. import pages
from ..pages import fmt_num, fmt_time, machine_title, plot_title, table
from .measure import TUTORIAL_REPORTED, step_times


# --------------------------------------------------------------------- renderers

NAME = "cats_vs_dogs"


@pages.renderer(NAME, "summary")
def _summary(slug: str, data: dict) -> str:
    t = data["training"]
    rows = [[r["name"], f"{100 * r['val_acc']:.1f} %", fmt_time(r["median_s"]), fmt_time(r["load_s"]),
             fmt_time(r["train_s"]), fmt_num(r["images_per_s"])] for r in t["rows"]]
    accs = [r["val_acc"] for r in t["rows"]]
    rows.append(["**mean**", f"**{100 * sum(accs) / len(accs):.1f} %**",
                 fmt_time(sum(r["median_s"] for r in t["rows"]) / len(accs)), "", "", ""])
    c = t["config"]
    head = (f"**{machine_title(data)}**: {t['n']:,} training photos, {t['n_val']:,} validation photos, "
            f"CatDogNet width {c['width']} ({t['params'] / 1e6:.2f} M parameters), {c['epochs']} epochs "
            f"at {c['img_size']} px, batch {c['batch_size']}, {t['precision']}"
            f"{', accuracy with mirror averaging' if t['tta'] else ''}"
            f"{' (quick run on a tiny subset)' if t.get('quick') else ''}\n\n")
    return head + table(["run", "val accuracy", "wall time", "of which data loading", "training",
                         "images/s"], rows)


@pages.renderer(NAME, "variants")
def _variants(slug: str, data: dict) -> str:
    t = data["training"]
    v, c = t["variants_seed0"], t["config"]
    rows = [[f"seed 0 as trained (eval at {c['eval_size']} px{', mirror averaged' if t['tta'] else ''})",
             f"{100 * t['rows'][0]['val_acc']:.1f} %", ""],
            ["seed 0, without mirror averaging", f"{100 * v['no_tta']:.1f} %", ""],
            [f"seed 0, evaluated at the training size, {c['img_size']} px", f"{100 * v['at_train_size']:.1f} %", ""]]
    for w in t.get("more", []):
        rows.append([f"seed 0, {w['epochs']} epochs, width {w['width']} ({w['params'] / 1e6:.2f} M "
                     "parameters)", f"{100 * w['val_acc']:.1f} %", fmt_time(w["wall_s"])])
    return table(["variant", "val accuracy", "wall time"], rows)


@pages.renderer(NAME, "confusion")
def _confusion(slug: str, data: dict) -> str:
    c = data["training"]["confusion"]
    rows = [["**cat**", c[0][0], c[0][1]], ["**dog**", c[1][0], c[1][1]]]
    return (f"Seed 0 on {machine_title(data)}: rows are the true class, columns the prediction.\n\n"
            + table(["", "predicted cat", "predicted dog"], rows))


def _targets(ratio: float, real: float, tut: dict | None, cited: dict) -> str:
    """The two step-time targets, each judged on numbers of this run only; the cited tutorial
    number is shown next to them, with its source, and judges nothing."""
    verdict = lambda ok: "**met**" if ok else "**missed**"  # noqa: E731
    lines = [f"- Real photos within 10 % of synthetic data: {verdict(ratio <= 1.10)}."]
    if tut:
        lines.append(f"- Ten times the images/s of the tutorial pipeline measured in the same run "
                     f"({fmt_num(tut['images_per_s'])} images/s): {verdict(real / tut['images_per_s'] >= 10)} "
                     f"({real / tut['images_per_s']:.1f}x).")
    else:
        lines.append("- Ten times the images/s of the tutorial pipeline: **not judged**, this run did "
                     "not measure that pipeline.")
    source = cited.get("source") or (TUTORIAL_REPORTED["source"]
                                     if cited["images_per_s"] == TUTORIAL_REPORTED["images_per_s"]
                                     else "source not recorded")
    lines.append(f"- For reference only, judged on nothing: {fmt_num(cited['images_per_s'])} images/s for a "
                 f"tutorial pipeline, {source} (real photos give {real / cited['images_per_s']:.1f}x that).")
    return "\n".join(lines)


@pages.renderer(NAME, "throughput")
def _throughput_table(slug: str, data: dict) -> str:
    tp = data["throughput"]
    per_epoch = "steps" in tp  # rows timed over an epoch of steps, shown per step
    rows = [[r["name"], fmt_time(r["median_s"]), fmt_num(r["images_per_s"]),
             fmt_time(r["first_call_s"])] for r in tp["rows"]]
    tut = tp.get("tutorial_measured")
    if tut:
        rows.append([f"tutorial pipeline: ImageFolder + PIL DataLoader ({tut['workers']} workers), "
                     f"fp32 small CNN, batch {tut['batch_size']}", "-", fmt_num(tut["images_per_s"]), "-"])
        rows.append(["the same DataLoader alone, no model", "-", fmt_num(tut["loader_only_images_per_s"]), "-"])
    syn_s, real_s = step_times(tp["rows"])
    ratio, real = real_s / syn_s, tp["batch_size"] / real_s
    over = f", each row timed over an epoch of {tp['steps']} steps" if per_epoch else ""
    orders = ""
    r0, r1 = tp["rows"][0], tp["rows"][1]
    if r0.get("second_median_s") and r1.get("second_median_s"):
        orders = (f" (the two main rows were timed twice, in both orders: real photos "
                  f"{fmt_time(r1['median_s'])} then {fmt_time(r1['second_median_s'])}, synthetic "
                  f"{fmt_time(r0['median_s'])} then {fmt_time(r0['second_median_s'])}; the means count)")
    head = (f"**{machine_title(data)}**, batch {tp['batch_size']} at {tp['img_size']} px{over}: "
            f"a step on real photos takes **{ratio:.3f}x** the time of a step on synthetic "
            f"data{orders}; real photos give {fmt_num(real)} images/s "
            f"({3 * 2 * tp['macs_per_image'] * real / 1e12:.1f} TFLOP/s at "
            f"{tp['macs_per_image'] / 1e6:.0f} M multiply-adds per image forward, x3 for training).\n\n"
            + _targets(ratio, real, tut, tp.get("tutorial_reported", TUTORIAL_REPORTED)) + "\n\n")
    return head + table(["what one step does", "median step", "images/s",
                         "first call (one epoch)" if per_epoch else "first call"], rows)


@pages.renderer(NAME, "decode")
def _decode_table(slug: str, data: dict) -> str:
    d = data["decode"]
    rows = [[r["name"], fmt_num(r["images_per_s"]), r.get("note", "")] for r in d["rows"]]
    return (f"**{machine_title(data)}**: {d['n']:,} JPEGs (short side 160 px) read into memory first; "
            f"decoding the whole data set for training took {d['load_s_seed0']:.2f} s.\n\n"
            + table(["decoder", "images/s", "what"], rows, align="lrl"))


@pages.renderer(NAME, "cpu-vs-gpu")
def _cpu_vs_gpu(slug: str, data: dict) -> str:
    c = data["cpu_vs_gpu"]
    cpu = c["cpu"]
    rows = [[r["name"], fmt_time(r["median_s"]), fmt_num(c["n"] / r["median_s"])] for r in c["rows"]]
    note = (f" (timed {cpu['steps_timed']} of {cpu['steps_per_epoch']} steps and scaled)"
            if cpu["extrapolated"] else "")
    return (f"Same model, batch and augmentation. CPU: {data['machine']['cpu']['model']}, "
            f"{cpu['threads']} threads, {cpu['precision']} (one step: fp32 {fmt_time(cpu['step_s_fp32'])}, "
            f"bf16 {fmt_time(cpu['step_s_bf16'])}){note}. **The GPU epoch is {c['ratio']:.{0 if c['ratio'] >= 10 else 1}f}x faster.**\n\n"
            + table(["", "epoch time", "images/s"], rows))


@pages.renderer(NAME, "curves")
def _curves(slug: str, data: dict) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    h = data["training"]["history"]
    ep = [r["epoch"] for r in h]
    val = [r for r in h if "val_acc" in r]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4))
    a.plot(ep, [r["train_loss"] for r in h], label="training (augmented)")
    a.plot([r["epoch"] for r in val], [r["val_loss"] for r in val], label="validation")
    a.set_xlabel("epoch")
    a.set_ylabel("cross-entropy loss")
    a.legend()
    b.plot(ep, [100 * r["train_acc"] for r in h], label="training (augmented)")
    b.plot([r["epoch"] for r in val], [100 * r["val_acc"] for r in val], label="validation")
    b.set_xlabel("epoch")
    b.set_ylabel("accuracy (%)")
    b.legend()
    for ax in (a, b):
        ax.grid(alpha=0.3)
    fig.suptitle(f"Cats vs dogs from scratch, seed 0, on {plot_title(data)}")
    return pages.svg(fig)


@pages.renderer(NAME, "grid")
def _grid(slug: str, data: dict) -> str:
    b64 = data["training"]["grid_jpeg_base64"]
    if not b64:
        return ""
    return (f'<img src="data:image/jpeg;base64,{b64}" alt="Validation photos with the predictions '
            f'of the network trained on {machine_title(data)}" style="max-width:100%">\n\n'
            "Green: right; red and framed: wrong. The percentage is the network's probability for its answer.")


@pages.renderer(NAME, "profile")
def _profile(slug: str, data: dict) -> str:
    tp = data["throughput"]
    p = tp.get("profile")
    if not p:
        raise pages.NotRecorded("profile")  # recorded on GPUs only
    step = step_times(tp["rows"])[0]
    rows = [[kind, fmt_time(s), f"{100 * s / p['gpu_time_per_step_s']:.0f} %"] for kind, s in p["by_kind"]]
    rows.append(["**all kernels of one step (GPU busy)**", f"**{fmt_time(p['gpu_time_per_step_s'])}**", "100 %"])
    return (f"**{machine_title(data)}**, one training step on a synthetic batch of {tp['batch_size']}, "
            f"from `torch.profiler` ({p['steps']} steps): {p['kernels_per_step']:.0f} kernels per step. "
            f"The same step takes **{fmt_time(step)}** of wall-clock time per step in a loop (the "
            f"mean of the two timings of the throughput table), so the GPU is busy "
            f"**{100 * p['gpu_time_per_step_s'] / step:.0f} %** of the time.\n\n"
            + table(["kernels", "GPU time per step", "share"], rows))


SWEEP = "cats_vs_dogs_sweep"


@pages.renderer(SWEEP, "table")
def _sweep(slug: str, data: dict) -> str:
    s = data["sweep"]
    base = s["base"]
    rows = []
    for r in sorted(s["rows"], key=lambda r: -r["val_acc_mean"]):
        change = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in r["changes"].items()) or "(base)"
        rows.append([f"`{r['name']}`", change, len(r["seeds"]), f"**{100 * r['val_acc_mean']:.1f} %**",
                     f"{100 * r['val_acc_min']:.1f} - {100 * r['val_acc_max']:.1f} %", fmt_time(r["median_s"])])
    head = (f"**{machine_title(data)}**: each variant changes the base recipe (learning rate {base['lr']}, no "
            f"weight average, {base['epochs']} epochs, width {base['width']}, label smoothing "
            f"{base['label_smoothing']}, crops from {int(100 * base['crop_scale'])} % of the area) and is "
            f"trained once per seed on the same decoded photos. {s['how']}.\n\n")
    return head + table(["variant", "change", "seeds", "mean accuracy", "range", "median wall time"], rows,
                        align="llrrrr")


@pages.renderer(SWEEP, "throughput")
def _sweep_throughput(slug: str, data: dict) -> str:
    tp = dict(data["throughput"], tutorial_reported=TUTORIAL_REPORTED)
    return _throughput_table(slug, dict(data, throughput=tp))


# ------------------------------------------------------------------ data parallel (scaling.py)

#: When the chapter's recipe (peak learning rate 0.05 with a weight average) became the training
#: command's default, and what the defaults were before: runs recorded earlier without their
#: recipe options used those.
RECIPE_DEFAULT_SINCE = "2026-11-30T02:59"
DEFAULTS_BEFORE = "a peak learning rate of 0.2 and no weight average (the `base` row of the recipe table)"


def _recipe_warning(rows: list[dict], date: str) -> str:
    """An admonition above the scaling table when its runs did not record their recipe."""
    unrecorded = [r for r in rows if "--lr" not in (r.get("args") or [])]
    if not unrecorded:
        return ""
    opts = sorted({" ".join(r.get("args") or []) for r in unrecorded})
    given = " and ".join(f"`{o}`" if o else "no options" for o in opts)
    before = date < RECIPE_DEFAULT_SINCE
    which = (f"Those defaults were {DEFAULTS_BEFORE}, not the recipe of this chapter: the accuracies "
             "below belong to that older recipe, and images/s may differ a little (the weight average "
             "adds an update to every step); that all processes end with the same weights does not "
             "depend on the recipe." if before else
             "The file does not say which recipe those defaults were.")
    return ('!!! warning "Recorded before the chapter\'s recipe"\n'
            f"    These runs (recorded {date[:10]}) passed {given} to the training command, so they "
            f"trained with its defaults of that day. {which} The table is replaced when the scaling "
            "benchmark is run again; new runs record every recipe setting.\n\n")

def _register_scaling() -> None:
    @pages.renderer("cats_vs_dogs_ddp", "table")
    def scaling_table(slug: str, data: dict) -> str:
        g = data["gpu"]
        rows, by_regime = [], {}
        for r in g["rows"]:
            args = r.get("args", [])
            epochs = args[args.index("--epochs") + 1] if "--epochs" in args else "250"
            regime = r["regime"]
            if "--lr" not in args:  # recorded without its recipe: the label cannot claim one
                regime = regime.replace("recipe as in the chapter", "the command's defaults then")
            r = {**r, "regime": f"{regime}, {epochs} epochs"}
            if "error" in r:
                rows.append([r["regime"], r["gpus"], r["seed"], "-", "-", "-", f"failed: {r['error']}"])
                continue
            by_regime.setdefault(r["regime"], {}).setdefault(r["gpus"], []).append(r["images_per_s"])
            agree = "yes" if r["ranks_agree"] else ("-" if r["gpus"] == 1 else "NO")
            rows.append([r["regime"], r["gpus"], r["seed"], f"{100 * r['val_acc']:.1f} %",
                         fmt_time(r["wall_s"]), fmt_num(r["images_per_s"]), agree])
        lines = []
        for regime, per in by_regime.items():
            if 1 in per and len(per) > 1:
                n = max(per)
                one, many = sum(per[1]) / len(per[1]), sum(per[n]) / len(per[n])
                lines.append(f"{regime}: {n} GPUs give {many / one:.2f}x the images/s of one "
                             f"(scaling efficiency {100 * many / (n * one):.0f} %)")
        return (_recipe_warning(g["rows"], data["machine"]["date"])
                + table(["regime", "GPUs", "seed", "val accuracy", "wall time", "images/s",
                         "all ranks hold the same weights"], rows, "lrrrrrl")
                + "\n\n" + "\n".join(f"- {line}" for line in lines))


_register_scaling()
