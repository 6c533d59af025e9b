"""The chapter's tables and plots, drawn from its results files."""

from __future__ import annotations

from .. import pages, results
from ..pages import fmt_num, fmt_pct, fmt_time, machine_title, plot_title, table
from .ddp_steps import COMMAND
from .measure import TUTORIAL_REPORTED, step_times


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
    return ("The command each seed ran (`DATA`, `OUT.pt` and `REPORT.json` stand for paths; the seed "
            "changes):\n\n" + pages.command_block(["gpukit", *args]))


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
            + pages.collapsed("GPU time per step, by kind of kernel",
                              table(["kernels", "GPU time per step", "share"], rows)))


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
DDP_IMAGES_TARGET = 1.85      # steady-state images/s of N GPUs over one (the wide regime)
DDP_TIME_TARGET = 1.5         # end-to-end time to a model, one GPU over N, at the same accuracy


def _signed(seconds: float) -> str:
    return ("-" if seconds < 0 else "") + fmt_time(abs(seconds))


def _opts(args: list[str]) -> dict:
    return dict(zip(args[::2], args[1::2]))


def _default_wrapping(many: dict) -> dict:
    """The wrapping the training command uses (records before ``command_wrapping`` used DDP's
    defaults, the row also timed under ``no_sync``)."""
    name = many.get("command_wrapping")
    return next((w for w in many["ddp"] if w["wrapping"] == name),
                next((w for w in many["ddp"] if "no_sync_step_s" in w), many["ddp"][0]))


def _quiet_wrapping(many: dict, d: dict) -> dict | None:
    """The wrapping whose step was also timed under ``no_sync()``: the command's if it was, else
    the last one that was (``static_graph`` rules it out)."""
    if "no_sync_step_s" in d:
        return d
    return next((w for w in reversed(many["ddp"]) if "no_sync_step_s" in w), None)


def _wrap_label(w: dict) -> str:
    """'DDP `name` (its options)', or the command's own exchange by its name."""
    if w["wrapping"] == COMMAND:
        return f"`{w['wrapping']}`"
    opts = ", ".join(f"`{k}={v}`" for k, v in w["options"].items()) or "no options"
    return f"DDP `{w['wrapping']}` ({opts})"


def _regime_batch(st: dict, g: dict) -> int:
    if st["one"].get("batch"):
        return int(st["one"]["batch"])
    return int(_opts(g["regimes"][st["regime"]]["args"])["--batch-size"])


def step_ratio(st: dict, wrapping: dict | None = None) -> float:
    """Steady-state images/s of the N-GPU step over the one-GPU step at the same global batch."""
    return st["one"]["one_gpu_step_s"] / (wrapping or _default_wrapping(st["many"]))["step_s"]


def _pending(data: dict) -> str | None:
    """A note in place of the data-parallel views when this machine's record is older than
    :mod:`.scaling`'s current shape (no step breakdown): none of its numbers are shown, because
    they were trained with the command's defaults of that day, not with the chapter's recipe."""
    if "steps" in data["gpu"]:
        return None
    return ('!!! note "Not yet recorded with the current recipe"\n'
            f"    The data-parallel record of {machine_title(data)} dates from "
            f"{data['machine']['date'][:16].replace('T', ' ')} UTC, before the chapter's recipe and before the step "
            "breakdown and the wide regime were measured, so none of its numbers are shown here. "
            "`gpukit bench cats-vs-dogs-ddp --save` on a machine with two GPUs records them.\n")


@pages.renderer(DDP, "steps")
def _ddp_steps(slug: str, data: dict) -> str:
    if _pending(data):
        return _pending(data)
    g = data["gpu"]
    n = g["gpus"]
    first = g["steps"][0]["one"] if g["steps"] else {}
    timed = f", timed over {first['steps']} steps" if first.get("steps") else ""
    out = [f"{n} GPUs; each step on a synthetic batch already on the "
                     "GPU (bf16, channels_last, torch's SGD, cuDNN timing its algorithms)"
                     f"{timed}, the slowest process's time:"]
    for st in g["steps"]:
        one, many = st["one"], st["many"]
        b = _regime_batch(st, g)
        d = _default_wrapping(many)
        compute = one["one_gpu_half_batch_step_s"]
        rows = [[f"1 GPU, global batch {b}", fmt_time(one["one_gpu_step_s"]), fmt_num(b / one["one_gpu_step_s"])],
                [f"1 GPU, batch {b // n}: the compute of each of {n} GPUs", fmt_time(compute), ""]]
        rows.append([f"**{n} GPUs, {_wrap_label(d)}**", f"**{fmt_time(d['step_s'])}**",
                     f"**{fmt_num(b / d['step_s'])}**"])
        q = _quiet_wrapping(many, d)
        if q is not None:
            if q is not d:
                rows.append([f"{n} GPUs, {_wrap_label(q)}", fmt_time(q["step_s"]),
                             fmt_num(b / q["step_s"])])
            quiet, who = (("the step without the all-reduce", "per-step overhead") if q["wrapping"] == COMMAND
                          else ("DDP step under `no_sync()`", "DDP bookkeeping"))
            rows += [[f"the same without the exchange ({quiet})", fmt_time(q["no_sync_step_s"]), ""],
                     [f"{who}: {quiet} - compute", _signed(q["no_sync_step_s"] - compute), ""],
                     [f"exposed gradient exchange: step - {quiet}",
                      _signed(q["step_s"] - q["no_sync_step_s"]), ""]]
        rows.append([f"all-reduce of the gradients alone ({many['all_reduce_bytes'] / 1e6:.1f} MB, "
                     f"{one['params'] / 1e6:.2f} M fp32 parameters)", fmt_time(many["all_reduce_s"]), ""])
        for w in many["ddp"]:
            if w is not d and w is not q:
                rows.append([f"{n} GPUs, {_wrap_label(w)}", fmt_time(w["step_s"]),
                             fmt_num(b / w["step_s"])])
        best = min(many["ddp"], key=lambda w: w["step_s"])
        r, rb = step_ratio(st, d), step_ratio(st, best)
        line = (f"{n} GPUs give **{r:.2f}x** the images/s of one with the command's exchange (`{d['wrapping']}`)"
                + (f", {rb:.2f}x with `{best['wrapping']}`" if best is not d else "") + ".")
        if "ddp_first_wrap_s" in many:
            line += (f" Wrapping the model in DistributedDataParallel for the first time in a process took "
                     f"{fmt_time(many['ddp_first_wrap_s'])} and imported {many['ddp_first_wrap_modules']:,} modules"
                     + (", torch's compiler (`torch._dynamo`) among them" if many.get("ddp_imports_compiler") else "")
                     + "; the same in a new process costs it again.")
        out.append(f"**`{st['regime']}`**: {st['what']}. {line}\n\n"
                   + pages.collapsed(f"The step of `{st['regime']}`, split into its parts",
                                     table(["one training step", "time", "images/s"], rows, align="lrr")))
    return "\n\n".join(out)


def _one_gpu_seeds(slug: str, args: list[str]) -> list[float]:
    """Test accuracies of the one-GPU seeds of the training benchmark on the same machine, when
    they trained the same recipe as ``args`` (the chapter's regime records one seed per GPU count)."""
    rec = results.load(NAME).get(slug)
    if not rec or "training" not in rec or not rec["training"].get("command"):
        return []
    cmd = _opts(rec["training"]["command"][rec["training"]["command"].index("--epochs"):])
    if any(cmd.get(k) != v for k, v in _opts(args).items()):
        return []
    return [r["test_acc"] for r in rec["training"]["rows"] if r.get("test_acc") is not None]


def _ddp_regimes(slug: str, g: dict, by: dict) -> list[dict]:
    """Per regime run on 1 and N GPUs: mean times to a model, the N-GPU accuracies against the
    one-GPU seeds' spread, and the one-GPU time in the training steps."""
    out = []
    for regime, per in by.items():
        if 1 not in per or len(per) < 2:
            continue
        n = max(per)
        ones, manys = per[1], per[n]
        ref = [r["test_acc"] for r in ones]
        src = f"its {len(ref)} one-GPU seed{'s' if len(ref) > 1 else ''}"
        extra = _one_gpu_seeds(slug, g["regimes"].get(regime, {}).get("args", [])) if len(ref) < 2 else []
        if extra:
            ref, src = ref + extra, f"its one-GPU seed and the {len(extra)} seeds of the training table"
        within = all(min(ref) <= r["test_acc"] <= max(ref) for r in manys) if len(ref) > 1 else None
        steps1 = [r["phases"].get("training steps") for r in ones if r.get("phases")]
        out.append({"regime": regime, "n": n, "ref": ref, "src": src, "within": within,
                    "accs": ", ".join(fmt_pct(r["test_acc"], fraction=True) for r in manys),
                    "t1": _mean(r["time_to_model_s"] for r in ones),
                    "tn": _mean(r["time_to_model_s"] for r in manys),
                    "steps1": _mean(steps1) if steps1 and None not in steps1 else None})
    return out


def _runs_by_regime(g: dict) -> dict:
    by = {}
    for r in g["rows"]:
        if "error" not in r and "skipped" not in r:
            by.setdefault(r["regime"], {}).setdefault(r["gpus"], []).append(r)
    return by


@pages.renderer(DDP, "runs")
def _ddp_runs(slug: str, data: dict) -> str:
    if _pending(data):
        return "The end-to-end runs on one and on two GPUs come with the same record."
    g = data["gpu"]
    rows, by, labels = [], {}, {}
    for r in g["rows"]:
        labels.setdefault(r["regime"], r.get("label") or r["regime"])
        if "error" in r or "skipped" in r:
            err = r.get("error") or r["skipped"]
            err = err[0] if isinstance(err, list) and err else err
            what = "failed" if "error" in r else "skipped"
            rows.append([f"`{r['regime']}`", r["gpus"], r["seed"], "-", "-", "-", f"{what}: {err}"])
            continue
        by.setdefault(r["regime"], {}).setdefault(r["gpus"], []).append(r)
        agree = "yes" if r.get("ranks_agree") else ("-" if r["gpus"] == 1 else "**NO**")
        rows.append([f"`{r['regime']}`", r["gpus"], r["seed"],
                     f"{fmt_pct(r['test_acc'], fraction=True)} ({_ci(r['test_ci'])})", fmt_time(r["time_to_model_s"]),
                     fmt_num(r["images_per_s"]), agree])
    lines = []
    multi = [r for per in by.values() for k, rs in per.items() if k > 1 for r in rs]
    if multi:
        lines.append(f"- {sum(bool(r.get('ranks_agree')) for r in multi)} of {len(multi)} multi-GPU runs "
                     "ended with identical weights on every process.")
    for f in _ddp_regimes(slug, g, by):
        acc_line = (f"{f['n']}-GPU test accuracy ({f['accs']}) "
                    f"{'within' if f['within'] else 'outside'} the spread of {f['src']} "
                    f"({fmt_pct(min(f['ref']), fraction=True)} to {fmt_pct(max(f['ref']), fraction=True)})" if f["within"] is not None else
                    f"{f['n']}-GPU test accuracy ({f['accs']}) against one seed on one GPU "
                    f"({fmt_pct(f['ref'][0], fraction=True)}), with no seed spread to compare with")
        bound = ""
        if f["steps1"] is not None:
            t1, st, n = f["t1"], f["steps1"], f["n"]
            bound = (f" Even with the training steps {n} times faster and every other phase unchanged, the "
                     f"one-GPU time to a model ({fmt_time(st)} of it in the steps) would shrink by at most "
                     f"{t1 / (t1 - st + st / n):.2f}x.")
        lines.append(f"- `{f['regime']}`: time to a model {fmt_time(f['t1'])} on 1 GPU, {fmt_time(f['tn'])} on "
                     f"{f['n']} (means): **{f['t1'] / f['tn']:.2f}x**; {acc_line}.{bound}")
    return ("`torchrun --standalone --nproc_per_node=N -m gpukit.cli train cats-vs-dogs` with every "
            "recipe setting on the command line, in a fresh process per run. The regimes trained "
            + "; ".join(f"`{k}`: {v}" for k, v in labels.items()) + ".\n\n"
            + ("\n".join(lines) + "\n\n" if lines else "")
            + pages.collapsed("Every run: test half with its 95 % interval, time to a model from the "
                              "command's start, steady images/s of all processes together",
                              table(["regime", "GPUs", "test half (95 % interval)", "seed", "time to model",
                                     "images/s", "same weights"],
                                    [[r[0], r[1], r[3], r[2], *r[4:]] for r in rows], "lrrrrrl")))


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
    if "steps" not in g:
        return [pages.Target("Cats vs dogs, data parallel", "recorded with the current recipe",
                             "not recorded", None)]
    n = g["gpus"]
    out = []
    wide = [st for st in g["steps"] if st["regime"] != "chapter"]
    for st in wide:
        r = step_ratio(st)
        out.append(pages.Target(f"Cats vs dogs `{st['regime']}`: steady images/s of {n} GPUs over one",
                                f">= {DDP_IMAGES_TARGET}x", f"{r:.2f}x", r >= DDP_IMAGES_TARGET))
    if not wide:
        out.append(pages.Target(f"Cats vs dogs, wide regime: steady images/s of {n} GPUs over one",
                                f">= {DDP_IMAGES_TARGET}x", "not recorded", None))
    by = _runs_by_regime(g)
    multi = [r for per in by.values() for k, rs in per.items() if k > 1 for r in rs]
    if multi:
        ok = sum(bool(r.get("ranks_agree")) for r in multi)
        out.append(pages.Target("Cats vs dogs, data parallel: identical weights on every process",
                                "every multi-GPU run", f"{ok} of {len(multi)}", ok == len(multi)))
    for f in _ddp_regimes(data["machine"].get("slug", ""), g, by):
        fast = f["t1"] / f["tn"] >= DDP_TIME_TARGET
        met = None if f["within"] is None else (fast and f["within"])
        out.append(pages.Target(f"Cats vs dogs `{f['regime']}`: time to a model, 1 GPU over {f['n']}, at "
                                "the same accuracy", f">= {DDP_TIME_TARGET}x",
                                f"{f['t1'] / f['tn']:.2f}x, accuracy "
                                + ("not comparable" if f["within"] is None else
                                   "within" if f["within"] else "outside") + " the one-GPU spread", met))
    return out
