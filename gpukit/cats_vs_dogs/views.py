"""The chapter's tables and plots, drawn from its results files."""

from __future__ import annotations

from .. import pages, results
from ..pages import fmt_num, fmt_pct, fmt_time, machine_title, plot_title, table
from .meta import (COMMAND, OVERLAPPED, SHAPE, TUTORIAL_REPORTED, mean_interval, same_accuracy,
                   step_times)


# --------------------------------------------------------------------- renderers

NAME = "cats_vs_dogs"

#: the targets of "training, round two", judged on the recorded numbers
TIME_TARGET_S = 25.0          # command start to checkpoint on disk, every seed
ACC_TARGET = 0.93             # mean test-half accuracy over the seeds
PAIR_TARGET = 2.0             # two independent runs at once, models per hour over one GPU
REAL_OVER_SYNTHETIC = 1.10    # a step on real photos over a step on synthetic data
TUTORIAL_FACTOR = 10.0        # images/s over the tutorial pipeline measured in the same run


def _ci(ci) -> str:
    return f"{100 * ci[0]:.1f}-{100 * ci[1]:.1f} %"


def _mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs)


def _span(xs, fmt) -> str:
    """'a' when all values format alike, else 'lowest to highest'."""
    lo, hi = fmt(min(xs)), fmt(max(xs))
    return lo if lo == hi else f"{lo} to {hi}"


@pages.renderer(NAME, "summary")
def _summary(slug: str, data: dict) -> str:
    t = data["training"]
    rs = t["rows"]
    rows = [[f"seed {r['seed']}", f"**{fmt_pct(r['test_acc'], fraction=True)}** ({_ci(r['test_ci'])})", fmt_pct(r["selection_acc"], fraction=True),
             fmt_pct(r["val_acc"], fraction=True), fmt_time(r["time_to_model_s"]), fmt_num(r["images_per_s"])] for r in rs]
    mean_test = _mean(r["test_acc"] for r in rs)
    rows.append(["**mean**", f"**{fmt_pct(mean_test, fraction=True)}**", fmt_pct(_mean(r["selection_acc"] for r in rs), fraction=True),
                 fmt_pct(_mean(r["val_acc"] for r in rs), fraction=True), fmt_time(_mean(r["time_to_model_s"] for r in rs)), ""])
    c = t["config"]
    n_test, n_sel = rs[0]["n_test"], rs[0]["n_selection"]
    head = (f"{t['n']:,} training photos; {t['n_val']:,} validation photos split into a selection half "
            f"({n_sel}) and a test half ({n_test}). CatDogNet width {c['width']} "
            f"({t['params'] / 1e6:.2f} M parameters), {c['epochs']} epochs at {c['img_size']} px, batch "
            f"{c['batch_size']}, crops from {100 * c['crop_scale']:.0f} % of the area, {t['precision']}"
            f"{', accuracy with mirror averaging' if t['tta'] else ''}"
            f"{' (quick run on a tiny subset)' if t.get('quick') else ''}. Each seed is one fresh "
            "`gpukit train` process; its time from spawn to exit is in the phase table.\n\n")
    return head + table(["run", "test half (95 % interval)", "selection half", f"all {t['n_val']:,}",
                         "time to model", "training images/s"], rows)


#: the phases of the time to a model, as the training command names them, in order
PHASES_OTHER = "other"


@pages.renderer(NAME, "phases")
def _phases(slug: str, data: dict) -> str:
    t = data["training"]
    rs = t["rows"]
    names = list(dict.fromkeys(n for r in rs for n in r["phases"]))
    total = _mean(r["time_to_model_s"] for r in rs)
    rows = []
    for n in names:
        vals = [r["phases"].get(n, 0.0) for r in rs]
        rows.append([n, *(fmt_time(v) for v in vals), fmt_time(_mean(vals)), f"{100 * _mean(vals) / total:.1f} %"])
    rows.append(["**time to a model**", *(f"**{fmt_time(r['time_to_model_s'])}**" for r in rs),
                 f"**{fmt_time(total)}**", "100 %"])
    rows.append(["process, spawn to exit (timed by the benchmark, outside)", *(fmt_time(r["process_s"]) for r in rs),
                 fmt_time(_mean(r["process_s"] for r in rs)), ""])
    dec = [r["decoding"] for r in rs if r.get("decoding")]
    imp = [r["phases"].get("import torch", 0.0) for r in rs]
    note = ""
    if dec:
        note = (f"The photos are decoded by {dec[0]['how']} started before `import torch`: decoding took "
                f"{_span([d['seconds'] for d in dec], fmt_time)} from the workers' start to the last photo, "
                f"while the import took {_span(imp, fmt_time)}; once torch and the CUDA context were ready, "
                f"the run waited {_span([d['waited_s'] for d in dec], fmt_time)} for the workers. The phase "
                "\"photos\" is that wait plus putting the photos on the GPU.\n\n")
    biggest = max(names, key=lambda n: _mean(r["phases"].get(n, 0.0) for r in rs))
    share = 100 * _mean(r["phases"].get(biggest, 0.0) for r in rs) / total
    return (f"The largest phase is {biggest}, {share:.0f} % of the mean time to a model.\n\n" + note
            + pages.collapsed("Every phase of every seed, from the process's start to the end of the "
                              "final evaluation",
                              table(["phase", "mean", "share", *(f"seed {r['seed']}" for r in rs)],
                                    [[row[0], row[-2], row[-1], *row[1:-2]] for row in rows])))


@pages.renderer(NAME, "cudnn")
def _cudnn(slug: str, data: dict) -> str:
    t = data["training"]
    probes = t.get("cudnn")
    if not probes:
        raise pages.NotRecorded("cudnn")
    rows = [[r["name"], *(fmt_time(s) for s in r["first_steps_s"][:3]), fmt_time(r["step_s"])] for r in probes]
    by = {r["benchmark"]: r for r in probes}
    tail = ""
    if True in by and False in by:
        rule, timed = by[False], by[True]
        c = t["config"]
        steps = c["epochs"] * (t["n"] // c["batch_size"])
        extra = sum(timed["first_steps_s"]) - sum(rule["first_steps_s"])
        saved = (rule["step_s"] - timed["step_s"]) * steps
        tail = (f"\n\nOver the recipe's {steps:,} steps, the timed trial's steadier step would "
                f"{'save' if saved >= 0 else 'cost'} {fmt_time(abs(saved))}; its first three steps cost "
                f"{fmt_time(extra)} more than the rule's. "
                + ("The rule wins for this run." if extra > saved else "The timed trial wins for this run."))
    return (f"**{machine_title(data)}**, the recipe's network on a synthetic batch of 256 at 128 px, bf16, "
            "each setting in a fresh process:\n\n"
            + table(["cuDNN", "step 1", "step 2", "step 3", "steady step (mean of 200)"], rows) + tail)


@pages.renderer(NAME, "command")
def _command(slug: str, data: dict) -> str:
    cmd = data["training"]["command"]
    args = cmd[2:] if cmd[:2] == ["-m", "gpukit"] else cmd
    return pages.command_block(["gpukit", *args])


@pages.renderer(NAME, "pair")
def _pair(slug: str, data: dict) -> str:
    p = data["training"].get("pair")
    if not p:
        raise pages.NotRecorded("pair")  # needs two GPUs
    rows = [[f"seed {r['seed']}", f"GPU {k}", fmt_pct(r["test_acc"], fraction=True), fmt_time(r["time_to_model_s"]),
             fmt_time(r["process_s"])] for k, r in enumerate(p["runs"])]
    ratio = p["throughput_ratio"]
    limit = (" Two GPUs cannot do more than twice the work of one: the part above 2x is timing "
             "noise." if ratio > 2.0 else "")
    return (f"Two `gpukit train` processes started together, one per GPU, "
            f"finished in {fmt_time(p['wall_s'])}; one run alone takes {fmt_time(p['one_run_median_s'])} "
            f"(the median of the seeds above, spawn to exit). Two GPUs thus train **{ratio:.2f}x** the "
            f"models per hour of one.{limit}\n\n"
            + table(["run", "GPU", "test half", "time to model", "process, spawn to exit"], rows))


@pages.renderer(NAME, "variants")
def _variants(slug: str, data: dict) -> str:
    t = data["training"]
    v, c = t["variants_seed0"], t["config"]
    more = t.get("more", [])
    rows = [[f"seed 0 as trained (eval at {c['eval_size']} px{', mirror averaged' if t['tta'] else ''})",
             fmt_pct(t["rows"][0]["val_acc"], fraction=True)],
            ["seed 0, without mirror averaging", fmt_pct(v["no_tta"], fraction=True)],
            [f"seed 0, evaluated at the training size, {c['img_size']} px", fmt_pct(v["at_train_size"], fraction=True)]]
    rows = [row + [""] for row in rows] if more else rows
    for w in more:
        rows.append([f"seed 0, {w['epochs']} epochs, width {w['width']} ({w['params'] / 1e6:.2f} M "
                     "parameters)", fmt_pct(w["val_acc"], fraction=True), fmt_time(w["wall_s"])])
    return table(["variant", f"accuracy on all {t['n_val']:,} validation photos"] + (["wall time"] if more else []),
                 rows)


@pages.renderer(NAME, "confusion")
def _confusion(slug: str, data: dict) -> str:
    c = data["training"]["confusion"]
    rows = [["**cat**", c[0][0], c[0][1]], ["**dog**", c[1][0], c[1][1]]]
    return (f"Seed 0 on {machine_title(data)}, all {sum(map(sum, c)):,} validation photos: rows are the true "
            "class, columns the prediction.\n\n"
            + table(["", "predicted cat", "predicted dog"], rows))


def _tutorial_source(cited: dict) -> str:
    """Where the cited tutorial figure comes from: outside this benchmark, with the details
    the record gives in brackets."""
    import re
    source = cited.get("source") or ""
    if cited["images_per_s"] == TUTORIAL_REPORTED["images_per_s"] or "not measured" in source:
        details = re.search(r"\(([^)]*)\)", source)
        return TUTORIAL_REPORTED["source"] if not details else (
            f"reported outside this benchmark ({details.group(1)})")
    return source or "source not recorded"


def _overlap(rows: list[dict]) -> str:
    """What the record says about running the augmentation on a side stream."""
    side = next((r for r in rows if "side stream" in r["name"]), None)
    plain = next((r for r in rows if "no overlap" in r["name"]), None)
    alone = next((r for r in rows if r["name"].startswith("augmentation alone")), None)
    if not (side and plain and alone):
        return ""
    times = [side["median_s"]] + ([side["second_median_s"]] if side.get("second_median_s") else [])
    real, syn = step_times(rows)[1], step_times(rows)[0]
    faster = all(x < plain["median_s"] for x in times)
    return (f"With the side stream a step took {' and '.join(fmt_time(x) for x in times)}, without it "
            f"{fmt_time(plain['median_s'])}: "
            + ("the side stream was faster in every timing. " if faster else
               "this run measured no gain from the side stream. ")
            + f"Real photos cost {fmt_time(real - syn)} more per step than synthetic data, "
            + ("more than" if real - syn > alone["median_s"] else "at most")
            + f" the augmentation alone ({fmt_time(alone['median_s'])}), so no overlap of the two was "
            "measured.")


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
    cited = tp.get("tutorial_reported", TUTORIAL_REPORTED)
    head = (f"Batch {tp['batch_size']} at {tp['img_size']} px{over}: "
            f"a step on real photos takes **{ratio:.3f}x** the time of a step on synthetic "
            f"data{orders}; real photos give {fmt_num(real)} images/s "
            f"({3 * 2 * tp['macs_per_image'] * real / 1e12:.1f} TFLOP/s at "
            f"{tp['macs_per_image'] / 1e6:.0f} M multiply-adds per image forward, x3 for training).\n\n"
            + _overlap(tp["rows"]) + "\n\n")
    tail = (f"\n\nFor reference, a tutorial pipeline was reported at {fmt_num(cited['images_per_s'])} "
            f"images/s ({_tutorial_source(cited)}); real photos give {real / cited['images_per_s']:.1f}x "
            "that.")
    return head + pages.collapsed(
        "Every step timed, and the tutorial pipeline",
        table(["what one step does", "median step", "images/s",
               "first call (one epoch)" if per_epoch else "first call"], rows) + tail)


@pages.renderer(NAME, "decode")
def _decode_table(slug: str, data: dict) -> str:
    d = data["decode"]
    one = next((r for r in d["rows"] if r["name"].startswith("PIL, 1 thread")), d["rows"][0])
    rows = [[r["name"], fmt_num(r["images_per_s"]), f"{r['images_per_s'] / one['images_per_s']:.2f}x",
             r.get("note", "")] for r in d["rows"]]
    t = data["training"]
    dec = [r["decoding"] for r in t["rows"] if r.get("decoding")]
    imp = t.get("imports") or {}
    lines = []
    if dec:
        n = t["n"] + t["n_val"]
        lines.append(f"`gpukit train` decodes its {n:,} photos with {dec[0]['how']} forked before torch is "
                     f"imported: {_span([x['seconds'] for x in dec], fmt_time)} from their start to the last "
                     f"photo, overlapping the import; the run then waited "
                     f"{_span([x['waited_s'] for x in dec], fmt_time)} for them.")
    gpu = [r for r in d["rows"] if "GPU" in r["name"] and "resize" in r["name"]]
    if imp.get("torchvision") and gpu and dec:
        lines.append(f"nvJPEG with the resize on the GPU would decode them in "
                     f"{fmt_time((t['n'] + t['n_val']) / gpu[0]['images_per_s'])} at the rate below, but it "
                     f"needs torchvision, whose import takes {fmt_time(imp['torchvision'])} after torch's "
                     f"{fmt_time(imp['torch'])} (a fresh process).")
    return (f"**{machine_title(data)}**: {d['n']:,} JPEGs (short side 160 px), read into memory first except "
            "by the worker processes, which read their own files and whose start is inside the timing.\n\n"
            + "".join(f"- {line}\n" for line in lines) + "\n"
            + pages.collapsed("Every decoder, in images per second",
                              table(["decoder", "images/s", "x PIL, 1 thread", "what"], rows,
                                    align="lrrl")))


@pages.renderer(NAME, "cpu-vs-gpu")
def _cpu_vs_gpu(slug: str, data: dict) -> str:
    c = data["cpu_vs_gpu"]
    cpu = c["cpu"]
    batch = min(data["training"]["config"]["batch_size"], c["n"])
    per_epoch = c.get("images_per_epoch") or cpu["steps_per_epoch"] * batch
    rows = [[r["name"], fmt_time(r["median_s"]), fmt_num(per_epoch / r["median_s"])] for r in c["rows"]]
    note = (f" (timed {cpu['steps_timed']} of {cpu['steps_per_epoch']} steps and scaled)"
            if cpu["extrapolated"] else "")
    return (f"An epoch trains {per_epoch:,} of the {c['n']:,} photos (whole batches of {batch}). CPU: {data['machine']['cpu']['model']}, "
            f"{cpu['threads']} threads, {cpu['precision']} (one step: fp32 {fmt_time(cpu['step_s_fp32'])}, "
            f"bf16 {fmt_time(cpu['step_s_bf16'])}){note}. **The GPU epoch is {c['ratio']:.{0 if c['ratio'] >= 10 else 1}f}x faster.**\n\n"
            + table(["", "epoch time", "images/s"], rows))


@pages.renderer(NAME, "curves")
def _curves(slug: str, data: dict) -> str:
    h = data["training"]["history"]
    ep = [r["epoch"] for r in h]
    val = [r for r in h if "val_acc" in r]
    fig, (a, b) = pages.figure(2, 1, height=6.0, sharex=True)
    for ax, key, label in ((a, "loss", "loss"), (b, "acc", "accuracy (%)")):
        scale = 100 if key == "acc" else 1
        ax.plot(ep, [scale * r[f"train_{key}"] for r in h], label="training crops")
        ax.plot([r["epoch"] for r in val], [scale * r[f"val_{key}"] for r in val], "o-", ms=3,
                label="selection half")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    b.set_xlabel("epoch")
    a.legend(loc="upper right")
    return pages.svg(fig)


@pages.renderer(NAME, "grid")
def _grid(slug: str, data: dict) -> str:
    b64 = data["training"]["grid_jpeg_base64"]
    if not b64:
        return ""
    return (f'<img src="data:image/jpeg;base64,{b64}" alt="Validation photos with the predictions '
            f'of the network trained on {machine_title(data)}" style="max-width:100%">')


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
            + pages.collapsed("GPU time per step, by kind of kernel",
                              table(["kernels", "GPU time per step", "share"], rows)))


ORIGINALS = "cats_vs_dogs_originals"
@pages.renderer(ORIGINALS, "table")
def _originals(slug: str, data: dict) -> str:
    o = data["originals"]
    rows, by = [], {r["folder"]: r for r in o["rows"]}
    for r in o["rows"]:
        w, h = r["median_px"]
        mine = r["runs"]
        rows.append([r["name"], "**" + _span([x["time_to_model_s"] for x in mine], fmt_time) + "**",
                     f"{w:.0f} x {h:.0f}", f"{r['bytes'] / r['photos'] / 1e3:.1f} KB",
                     fmt_num(r["decode"]["images_per_s"]),
                     _span([x["decoding"]["seconds"] for x in mine if x.get("decoding")], fmt_time),
                     _span([x["phases"].get("import torch", 0.0) for x in mine], fmt_time)])
    a, b = by["shrunk"], by["standins"]
    gap = b["median_s"] - a["median_s"]
    runs = len(a["runs"])
    head = (f"**{machine_title(data)}**: the chapter's recipe (seed 0) on the photos as measured above "
            f"and on stand-ins of the originals made from them: each photo enlarged to a "
            f"{o['long_side']} px long side and saved at the JPEG quality ({o['quality']}) that makes a "
            f"photo about {o['target_bytes'] / 1e3:.0f} KB. "
            f"{runs} runs per folder, alternating, each a fresh `gpukit train` process.\n\n")
    body = table(["photos", "time to model", "median size (px)", "on disk, a photo",
                  "decoded per second, alone", "decoding in the run", "import torch"], rows,
                 align="lrrrrrr")
    slower = a["decode"]["images_per_s"] / b["decode"]["images_per_s"]
    waited = [x["decoding"]["waited_s"] for r in (a, b) for x in r["runs"] if x.get("decoding")]
    tail = (f"\n\nAlone, the command's decoder takes {slower:.1f}x as long on the stand-ins. In a run, "
            "its worker processes start before `import torch` and decode while torch loads"
            + (f"; the run then waited {_span(waited, fmt_time)} for them, on either folder"
               if waited else "") + ". ")
    ta, tb = [x["time_to_model_s"] for x in a["runs"]], [x["time_to_model_s"] for x in b["runs"]]
    versus = (f"The median time to a model is {fmt_time(b['median_s'])} on the stand-ins against "
              f"{fmt_time(a['median_s'])} on the shrunk copy ({'-' if gap < 0 else '+'}"
              f"{fmt_time(abs(gap))}, {100 * gap / a['median_s']:+.0f} %)")
    if max(ta) >= min(tb) and max(tb) >= min(ta):
        tail += (versus + ", while the runs of one folder spread over "
                 f"{fmt_time(max(max(ta) - min(ta), max(tb) - min(tb)))}: the ranges overlap, so "
                 f"{runs} runs a folder measure no difference.")
    else:
        tail += versus + "; the ranges of the two folders do not overlap."
    tail += (" An enlarged photo holds less detail than an original of its size; whether an "
             "original decodes as fast as its stand-in is an open question, since no original "
             "was at hand.")
    if o.get("quick"):
        tail += " (Quick run: a tiny recipe, not the chapter's.)"
    return head + body + tail


SWEEP = "cats_vs_dogs_sweep"


@pages.renderer(SWEEP, "table")
def _sweep(slug: str, data: dict) -> str:
    s, base = data["sweep"], data["base"]
    chosen = s["chosen"]
    rows = []
    for r in sorted(s["rows"], key=lambda r: -r["selection_mean"]):
        change = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in r["changes"].items()) or "(base recipe)"
        name = f"**`{r['name']}`** (chosen)" if r["name"] == chosen else f"`{r['name']}`"
        rows.append([name, change, len(r["seeds"]), f"**{fmt_pct(r['selection_mean'], fraction=True)}**", fmt_pct(r["test_mean"], fraction=True),
                     f"{fmt_pct(r['test_min'], fraction=True)} - {fmt_pct(r['test_max'], fraction=True)}"])
    n_sel, n_test = data["runs"][0]["n_selection"], data["runs"][0]["n_test"]
    head = (f"Each variant changes the base recipe (peak learning rate {base['lr']}, "
            f"weight average {base['ema']}, label smoothing {base['label_smoothing']}, crops from "
            f"{100 * base['crop_scale']:.0f} % of the area, {base['epochs']} epochs, width {base['width']}) and "
            f"is trained once per seed ({', '.join(map(str, data['seeds']))}) on the same decoded photos: "
            f"{len(data['runs'])} runs on {data['gpus']} GPU(s). The selection half ({n_sel} photos) decides; "
            f"the test half ({n_test} photos) only reports.\n\n")
    by = {r["name"]: r for r in s["rows"]}
    tail = "\n\n"
    if chosen in by and "recipe" in by and chosen != "recipe":
        c, b = by[chosen], by["recipe"]
        gain = 100 * (c["selection_mean"] - b["selection_mean"])
        diff = 100 * (c["test_mean"] - b["test_mean"])
        same = abs(diff) < 0.05
        tail += (f"The choice, `{chosen}`, leads the base recipe by {gain:.1f} points on the selection half; "
                f"on the test half its mean is {fmt_pct(c['test_mean'], fraction=True)}, "
                + ("equal to the base recipe's: the lead did not carry over to photos it was not chosen on."
                   if same else f"{diff:+.1f} points from the base recipe's {fmt_pct(b['test_mean'], fraction=True)}."))
    sel = [r["selection_mean"] for r in s["rows"]]
    test = [r["test_mean"] for r in s["rows"]]
    seeds = max(r["test_max"] - r["test_min"] for r in s["rows"])
    tail += (f" Across the variants, the means span {100 * (max(sel) - min(sel)):.1f} points on the selection "
             f"half and {100 * (max(test) - min(test)):.1f} on the test half, while the seeds of one variant "
             f"differ by up to {100 * seeds:.1f} points on the test half"
             + (": three seeds per variant cannot tell these variants apart." if max(test) - min(test) < seeds
                else "."))
    rows = [[r[0], r[3], r[4], r[5], r[1], r[2]] for r in rows]
    return (head + tail.strip() + "\n\n"
            + pages.collapsed("Every variant, best selection-half mean first",
                              table(["variant", "selection half, mean (decides)", "test half, mean (reports)",
                                     "test half, range", "change", "seeds"], rows, align="lrrrlr")))


# ------------------------------------------------------------------ data parallel (scaling.py, ddp_steps.py)

DDP = "cats_vs_dogs_ddp"
#: the targets of data parallel on two GPUs
DDP_IMAGES_TARGET = 1.85      # steady-state images/s of N GPUs over one, where the step is long
DDP_LONG_STEP_S = 0.010       # ... "long": the one-GPU step at the global batch, at least this
DDP_TIME_TARGET = 1.5         # launcher start to exit, one GPU over N, at the same accuracy


def _signed(seconds: float) -> str:
    return ("-" if seconds < 0 else "") + fmt_time(abs(seconds))


def _opts(args: list[str]) -> dict:
    return dict(zip(args[::2], args[1::2]))


def _pending(data: dict) -> str | None:
    """A note in place of the data-parallel views when this machine's record is older than
    :mod:`.scaling`'s current shape (runs timed from the launcher, 1 and N GPUs alternating,
    steps sampled with their spread): none of its numbers are shown."""
    if data["gpu"].get("shape") == SHAPE:
        return None
    return ('!!! note "Not yet recorded"\n'
            f"    The data-parallel record of {machine_title(data)} dates from "
            f"{data['machine']['date'][:16].replace('T', ' ')} UTC, before each run was timed from "
            "the launcher's start to its exit, with one and two GPUs alternating over five seeds, "
            "and before the step breakdown was sampled with its spread, so none of its numbers are "
            "shown here. `python -m gpukit.cats_vs_dogs.scaling --save` on a machine with two GPUs "
            "records them.\n")


def _spread(t: dict) -> str:
    lo, hi = fmt_time(t["min_s"]), fmt_time(t["max_s"])
    return lo if lo == hi else f"{lo} to {hi}"


def _ratio(one: dict, many: dict) -> tuple[float, float, float]:
    """Images/s of the N-GPU step over the one-GPU step at the same global batch: the ratio of
    the medians, and the lowest and highest the samples allow."""
    return (one["median_s"] / many["median_s"], one["min_s"] / many["max_s"],
            one["max_s"] / many["min_s"])


def _fmt_ratio(r: tuple[float, float, float]) -> str:
    return f"{r[0]:.2f}x ({r[1]:.2f}-{r[2]:.2f}x)"


def difference(a: dict, b: dict) -> dict:
    """``a - b`` of two sampled times: the difference of the medians, and the lowest and highest
    difference the samples allow; ``zero`` says whether that range holds 0."""
    lo, hi = a["min_s"] - b["max_s"], a["max_s"] - b["min_s"]
    return {"median_s": a["median_s"] - b["median_s"], "lo": lo, "hi": hi, "zero": lo <= 0 <= hi}


def _fmt_difference(d: dict) -> str:
    text = f"{_signed(d['median_s'])} (spread {_signed(d['lo'])} to {_signed(d['hi'])})"
    if d["zero"]:
        return text + ": indistinguishable from 0 at this spread"
    if d["hi"] < 0:
        return text + ": below 0 beyond the spread, an open question"
    return text


def _wrap_label(w: dict) -> str:
    """'DDP `name` (its options)', or one of gpukit's exchanges by its name."""
    if w["wrapping"] == COMMAND or w["wrapping"] in OVERLAPPED:
        return f"`{w['wrapping']}`" + (f" ({w['buckets']} buckets)" if w.get("buckets") else "")
    opts = ", ".join(f"`{k}={v}`" for k, v in w["options"].items()) or "no options"
    return f"DDP `{w['wrapping']}` ({opts})"


def _exchanges(many: dict) -> dict:
    """The three exchanges of one run: gpukit's after backward, the best overlapped one, the
    best DDP wrapping (name -> row); a kind not recorded is left out."""
    rows = many["ddp"]
    out = {}
    command = [w for w in rows if w["wrapping"] == COMMAND]
    overlap = [w for w in rows if w["wrapping"] in OVERLAPPED]
    ddp = [w for w in rows if w["wrapping"] not in OVERLAPPED and w["wrapping"] != COMMAND]
    for kind, ws in (("after backward", command), ("overlapped", overlap), ("DDP", ddp)):
        if ws:
            out[kind] = min(ws, key=lambda w: w["step"]["median_s"])
    return out


def _profile_rows(one: dict, b: int, n: int) -> list[list]:
    prof = one.get("profile") or {}
    rows = []
    for key, label in (("whole", f"batch {b}"), ("half", f"batch {b // n}")):
        p = prof.get(key)
        if p:
            rows.append([label, fmt_time(p["wall_s"]), fmt_time(p["busy_s"]),
                         f"{100 * p['busy_fraction']:.0f} %", fmt_time(p["kernel_s"]),
                         f"{p['kernels_per_step']:.0f}", fmt_time(p["gap_s"]),
                         fmt_time(p["largest_gap_s"])])
    return rows


def _profile_line(one: dict, b: int, n: int) -> str:
    prof = one.get("profile") or {}
    half, whole = prof.get("half"), prof.get("whole")
    if prof.get("error"):
        return f"The profiler failed ({prof['error']}); no profile was recorded."
    if not (half and whole):
        return "No profile was recorded (it needs a GPU)."
    host = one["one_gpu_half_batch_step"].get("host_s")
    line = (f"Under the profiler, the GPU was busy {100 * whole['busy_fraction']:.0f} % of a step at "
            f"batch {b} and {100 * half['busy_fraction']:.0f} % at batch {b // n}; the half batch's "
            f"kernels took {fmt_time(half['busy_s'])} per step against {fmt_time(whole['busy_s'])} "
            f"for the whole batch ({half['busy_s'] / whole['busy_s']:.2f}x).")
    if host is not None:
        more = host > half["busy_s"]
        line += (f" Issuing one half-batch step took the host {fmt_time(host)}, "
                 + ("more than" if more else "less than") + " the GPU's busy time for it"
                 + (": at that batch the step waits for the host." if more else "."))
    return line


@pages.renderer(DDP, "steps")
def _ddp_steps(slug: str, data: dict) -> str:
    if _pending(data):
        return _pending(data)
    g = data["gpu"]
    n = g["gpus"]
    if not g["steps"]:
        return "The step breakdown is not recorded yet."
    first = g["steps"][0]["one"]
    out = [f"{n} GPUs; each step on a synthetic batch already on the GPU (bf16, channels_last, "
           f"torch's SGD, cuDNN timing its algorithms), {first['samples']} samples of "
           f"{first['steps']} steps each, the slowest process's time of each sample; the median, "
           "the lowest and highest sample, and the host's time to issue one step with the GPU "
           "idle:"]
    for st in g["steps"]:
        one, many = st["one"], st["many"]
        b = int(one["batch"])
        whole, compute = one["one_gpu_step"], one["one_gpu_half_batch_step"]

        def line(label, t, images=True):
            return [label, fmt_time(t["median_s"]), _spread(t), fmt_time(t.get("host_s")),
                    fmt_num(b / t["median_s"]) if images else ""]
        rows = [line(f"1 GPU, global batch {b}", whole),
                line(f"1 GPU, batch {b // n}: the compute of each of {n} GPUs", compute, False)]
        for w in many["ddp"]:
            rows.append(line(f"{n} GPUs, {_wrap_label(w)}", w["step"]))
            if w.get("no_sync_step"):
                quiet = "without the all-reduce" if w["wrapping"] == COMMAND else "under `no_sync()`"
                rows.append(line(f"the same {quiet}", w["no_sync_step"], False))
        rows.append(line(f"all-reduce of the gradients alone ({many['all_reduce_bytes'] / 1e6:.1f} MB, "
                         f"{one['params'] / 1e6:.2f} M fp32 parameters)", many["all_reduce"], False))
        ex = _exchanges(many)
        how = {"after backward": "with the exchange after backward", "overlapped": "overlapped",
               "DDP": "with DDP"}
        ratios = "; ".join(f"**{_fmt_ratio(_ratio(whole, w['step']))}** {how[kind]} (`{w['wrapping']}`)"
                           for kind, w in ex.items())
        parts = []
        cmd = ex.get("after backward")
        if cmd and cmd.get("no_sync_step"):
            parts.append("- per-step overhead, the step without the all-reduce minus the compute: "
                         + _fmt_difference(difference(cmd["no_sync_step"], compute)))
            parts.append("- exposed exchange, the step minus the same without the all-reduce: "
                         + _fmt_difference(difference(cmd["step"], cmd["no_sync_step"])))
        if cmd and "overlapped" in ex:
            parts.append("- the overlapped exchange minus the one after backward: "
                         + _fmt_difference(difference(ex["overlapped"]["step"], cmd["step"])))
        if cmd and "DDP" in ex:
            parts.append(f"- DDP (`{ex['DDP']['wrapping']}`) minus the exchange after backward: "
                         + _fmt_difference(difference(ex["DDP"]["step"], cmd["step"])))
        prof_rows = _profile_rows(one, b, n)
        wrap = ""
        if "ddp_first_wrap_s" in many:
            wrap = (f" Wrapping the model in DistributedDataParallel for the first time in a process took "
                    f"{fmt_time(many['ddp_first_wrap_s'])} and imported {many['ddp_first_wrap_modules']:,} "
                    "modules" + (", torch's compiler (`torch._dynamo`) among them"
                                 if many.get("ddp_imports_compiler") else "") + ".")
        block = (table(["one training step", "median", "lowest to highest", "host", "images/s"], rows,
                       align="lrrrr")
                 + "\n\n" + "\n".join(parts) + "\n\n" + _profile_line(one, b, n)
                 + ("\n\n" + table(["one step, profiled", "wall", "GPU busy", "busy / wall", "kernel time",
                                    "kernels", "gaps", "largest gap"], prof_rows, align="lrrrrrrr")
                    if prof_rows else ""))
        out.append(f"**`{st['regime']}`**: {st['what']}. The images/s of {n} GPUs over one GPU's "
                   f"(the medians' ratio, and the range the samples allow): {ratios}.{wrap}\n\n"
                   + pages.collapsed(f"The step of `{st['regime']}`, split into its parts", block))
    return "\n\n".join(out)


def _runs_by_regime(g: dict) -> dict:
    by = {}
    for r in g["rows"]:
        if "error" not in r and "skipped" not in r:
            by.setdefault(r["regime"], {}).setdefault(r["gpus"], []).append(r)
    return by


def _ddp_regimes(g: dict) -> list[dict]:
    """Per regime run on 1 and N GPUs: the launcher's times and the test accuracies, each mean
    with its 95 % t-interval, the ratio of the mean times, and the accuracy verdict."""
    out = []
    for regime, per in _runs_by_regime(g).items():
        if 1 not in per or len(per) < 2:
            continue
        n = max(per)
        ones, manys = per[1], per[n]
        t1 = mean_interval([r["launcher_s"] for r in ones])
        tn = mean_interval([r["launcher_s"] for r in manys])
        w1 = _mean(r["time_to_model_s"] for r in ones)
        wn = _mean(r["time_to_model_s"] for r in manys)
        out.append({"regime": regime, "n": n, "t1": t1, "tn": tn, "ratio": t1["mean"] / tn["mean"],
                    "workers_ratio": w1 / wn,
                    "acc": same_accuracy([r["test_acc"] for r in ones], [r["test_acc"] for r in manys])})
    return out


def _session(g: dict, regime: str) -> str:
    """' All from one command: DATE UTC, commit C.' for a regime's runs, when recorded."""
    st = g.get("regimes", {}).get(regime, {}).get("sessions", {}).get("runs")
    if not st:
        return ""
    commit = (st.get("code") or {}).get("commit")
    return (f" All from one command: {st['date'][:16].replace('T', ' ')} UTC"
            + (f", commit {commit[:7]}" if commit else "") + ".")


def _interval(m: dict, fmt) -> str:
    if m["lo"] is None:
        return f"{fmt(m['mean'])} (one value, no interval)"
    return f"{fmt(m['mean'])} ({fmt(m['lo'])} to {fmt(m['hi'])})"


def _pct(x: float) -> str:
    return fmt_pct(x, fraction=True)


def _points(x: float) -> str:
    return f"{100 * x:+.1f} points"


@pages.renderer(DDP, "runs")
def _ddp_runs(slug: str, data: dict) -> str:
    if _pending(data):
        return "The end-to-end runs on one and on two GPUs come with the same record."
    g = data["gpu"]
    if not g["rows"]:
        return "The end-to-end runs are not recorded yet."
    rows, labels = [], {}
    for r in sorted(g["rows"], key=lambda r: (list(g["regimes"]).index(r["regime"])
                                              if r["regime"] in g["regimes"] else 0, r.get("order", 0))):
        labels.setdefault(r["regime"], r.get("label") or r["regime"])
        if "error" in r or "skipped" in r:
            err = r.get("error") or r["skipped"]
            err = err[0] if isinstance(err, list) and err else err
            what = "failed" if "error" in r else "skipped"
            rows.append([f"`{r['regime']}`", r["gpus"], r["seed"], "-", "-", "-", "-", f"{what}: {err}"])
            continue
        agree = "yes" if r.get("ranks_agree") else ("-" if r["gpus"] == 1 else "**NO**")
        rows.append([f"`{r['regime']}`", r["gpus"], r["seed"],
                     f"{_pct(r['test_acc'])} ({_ci(r['test_ci'])})" if r.get("test_ci") else _pct(r["test_acc"]),
                     fmt_time(r["launcher_s"]), fmt_time(r["time_to_model_s"]),
                     fmt_num(r["images_per_s"]), agree])
    lines = []
    multi = [r for per in _runs_by_regime(g).values() for k, rs in per.items() if k > 1 for r in rs]
    if multi:
        lines.append(f"- {sum(bool(r.get('ranks_agree')) for r in multi)} of {len(multi)} multi-GPU runs "
                     "ended with identical weights on every process.")
    for f in _ddp_regimes(g):
        a, n = f["acc"], f["n"]
        verdict = {True: "within", False: "outside", None: "not comparable with"}[a["within"]]
        d = a["diff"]
        diff = (f"difference of the means {_points(d['diff'])}"
                + (f" ({_points(d['lo'])} to {_points(d['hi'])})" if d["lo"] is not None else ""))
        lines.append(
            f"- `{f['regime']}`: from the launcher's start to its exit, {_interval(f['t1'], fmt_time)} on "
            f"1 GPU and {_interval(f['tn'], fmt_time)} on {n} (means, 95 % intervals): **{f['ratio']:.2f}x** "
            f"({f['workers_ratio']:.2f}x on the time the workers measure from their own start). Test "
            f"accuracy {_interval(a['one'], _pct)} on 1 GPU and {_interval(a['many'], _pct)} on {n}: the "
            f"{n}-GPU mean is {verdict} the 1-GPU interval; {diff}.{_session(g, f['regime'])}")
    return ("`torchrun --standalone --nproc_per_node=N -m gpukit.cli train cats-vs-dogs` with every "
            "recipe setting on the command line, in a fresh process per run, one and two GPUs "
            "alternating seed by seed in one command per regime, after one untimed short run. The "
            "intervals are Student-t intervals over the seeds; the difference of the means has "
            "Welch's interval. The regimes trained "
            + "; ".join(f"`{k}`: {v}" for k, v in labels.items()) + ".\n\n"
            + ("\n".join(lines) + "\n\n" if lines else "")
            + pages.collapsed("Every run, in the order it ran: test half with its 95 % interval, "
                              "time from the launcher's start and from the workers' start, steady "
                              "images/s of all processes together",
                              table(["regime", "GPUs", "seed", "test half (95 % interval)", "launcher",
                                     "workers", "images/s", "same weights"], rows, "lrrrrrrl")))


# ----------------------------------------------------------------------------- targets

@pages.targets(NAME)
def _targets(data: dict) -> list[pages.Target]:
    """The chapter's targets, judged on the reference machine's record."""
    out = []
    t = data.get("training")
    if t and t.get("rows"):
        rs = t["rows"]
        slowest = max(r["time_to_model_s"] for r in rs)
        mean_test = _mean(r["test_acc"] for r in rs)
        out.append(pages.Target("Cats vs dogs: command start to a trained model, slowest seed",
                                f"<= {TIME_TARGET_S:.0f} s", fmt_time(slowest), slowest <= TIME_TARGET_S))
        out.append(pages.Target(f"Cats vs dogs: mean test-half accuracy over {len(rs)} seeds",
                                f">= {fmt_pct(ACC_TARGET, 0, fraction=True)} (post hoc: set after a run was measured "
                                "on the same validation photos)", fmt_pct(mean_test, 2, fraction=True), mean_test >= ACC_TARGET))
        p = t.get("pair")
        if p:
            ratio = p["throughput_ratio"]
            out.append(pages.Target("Cats vs dogs: two independent runs at once, models per hour over one "
                                    "GPU", f">= {PAIR_TARGET:.1f}x (2x is the limit: a margin above it is "
                                    "noise)", f"{ratio:.2f}x", ratio >= PAIR_TARGET))
    tp = data.get("throughput")
    if tp and tp.get("rows"):
        syn_s, real_s = step_times(tp["rows"])
        out.append(pages.Target("Cats vs dogs: step on real photos over a step on synthetic data",
                                f"<= {REAL_OVER_SYNTHETIC:.2f}x", f"{real_s / syn_s:.3f}x",
                                real_s / syn_s <= REAL_OVER_SYNTHETIC))
        tut = tp.get("tutorial_measured")
        real = tp["batch_size"] / real_s
        out.append(pages.Target("Cats vs dogs: images/s over a tutorial pipeline measured in the same run",
                                f">= {TUTORIAL_FACTOR:.0f}x",
                                f"{real / tut['images_per_s']:.1f}x" if tut else "not recorded",
                                real / tut["images_per_s"] >= TUTORIAL_FACTOR if tut else None))
    return out


@pages.targets(DDP)
def _ddp_targets(data: dict) -> list[pages.Target]:
    """Data parallel on two GPUs, judged on the reference machine's record."""
    g = data.get("gpu") or {}
    if g.get("shape") != SHAPE:
        return [pages.Target("Cats vs dogs, data parallel", "recorded from the launcher's start, "
                             "1 and 2 GPUs alternating", "not recorded", None)]
    n = g["gpus"]
    out = []
    long = [st for st in g["steps"] if st["one"]["one_gpu_step"]["median_s"] >= DDP_LONG_STEP_S]
    for st in long:
        ex = _exchanges(st["many"])
        for kind in ("after backward", "overlapped"):
            if kind in ex:
                r = _ratio(st["one"]["one_gpu_step"], ex[kind]["step"])
                out.append(pages.Target(
                    f"Cats vs dogs `{st['regime']}`: steady images/s of {n} GPUs over one, gpukit's "
                    f"exchange {kind}", f">= {DDP_IMAGES_TARGET}x (a step of {fmt_time(DDP_LONG_STEP_S)} "
                    "or more)", _fmt_ratio(r), r[0] >= DDP_IMAGES_TARGET))
    if not long:
        out.append(pages.Target(f"Cats vs dogs: steady images/s of {n} GPUs over one, a step of "
                                f"{fmt_time(DDP_LONG_STEP_S)} or more", f">= {DDP_IMAGES_TARGET}x",
                                "not recorded", None))
    by = _runs_by_regime(g)
    multi = [r for per in by.values() for k, rs in per.items() if k > 1 for r in rs]
    if multi:
        ok = sum(bool(r.get("ranks_agree")) for r in multi)
        out.append(pages.Target("Cats vs dogs, data parallel: identical weights on every process",
                                "every multi-GPU run", f"{ok} of {len(multi)}", ok == len(multi)))
    regimes = _ddp_regimes(g)
    for f in regimes:
        within = f["acc"]["within"]
        met = None if within is None else (f["ratio"] >= DDP_TIME_TARGET and within)
        out.append(pages.Target(
            f"Cats vs dogs `{f['regime']}`: launcher start to exit, 1 GPU over {f['n']}, at the same "
            "accuracy", f">= {DDP_TIME_TARGET}x, {f['n']}-GPU mean accuracy within the 1-GPU 95 % interval",
            f"{f['ratio']:.2f}x, accuracy " + {None: "not comparable", True: "within",
                                               False: "outside"}[within], met))
    if not regimes:
        out.append(pages.Target("Cats vs dogs, data parallel: launcher start to exit, 1 GPU over 2",
                                f">= {DDP_TIME_TARGET}x at the same accuracy", "not recorded", None))
    return out
