"""The chapter's tables, built from gpukit/data/*.yaml and the advisor at site build time.

Nothing here types a price or a spec: every number comes from the data files, from the advisor's
formulas, or from this project's own results (the measured efficiencies).
"""

from __future__ import annotations

from ..pages import data_renderer, table
from . import data

#: Worked examples on the page: serving Llama 3.1 8B in bf16, and Llama 3.1 70B with int4 weights at its
#: full context (the KV cache outgrows the weights).
EXAMPLE_ARGS = ["advise", "--model", "llama-3.1-8b", "--precision", "bf16", "--task", "inference",
                "--seq", "8192", "--batch", "1", "--top", "6"]
KV_EXAMPLE_ARGS = ["advise", "--model", "llama-3.1-70b", "--precision", "int4", "--task", "inference",
                   "--seq", "131072", "--top", "5"]

#: Buying tiers by card list price (USD); a card with no list price appears under "no list price".
TIERS = [("under $500", 0, 500), ("$500 to $1,000", 500, 1000), ("$1,000 to $2,000", 1000, 2000),
         ("$2,000 to $5,000", 2000, 5000)]
#: The context the "largest model it holds" columns assume.
TIER_SEQ = 4096


def _num(x, fmt="{:,.0f}"):
    return "-" if x is None else fmt.format(x)


def _link(url: str | None, text: str = "source") -> str:
    return f"[{text}]({url})" if url else "-"


def _aws(category: str) -> str:
    rows = []
    for r in sorted((r for r in data.instances() if r["category"] == category),
                    key=lambda r: (r["family"], r.get("unit", "instance"), r["accelerator_count"], r["vcpus"] or 0)):
        price = _num(r["price_per_hour"], "{:,.2f}") if r["price_per_hour"] else "no on-demand price"
        links = [_link(r["source"], "spec")]
        if r.get("checked_against"):
            links.append(_link(r["checked_against"], "API"))
        if r.get("price_source"):
            links.append(_link(r["price_source"], "price"))
        name = f"`{r['name']}`" + (" (UltraServer)" if r.get("unit") == "ultraserver" else "")
        rows.append([name, f"{r['accelerator_count']} x {r['accelerator']}", _num(r["accelerator_memory_gib"]),
                     _num(r["vcpus"]), _num(r["memory_gib"]), r["network"] or "-", r["stack"], price,
                     " / ".join(links)])
    notes = [f"- **{r['name']}**: {r['note']}" for r in data.instances()
             if r["category"] == category and r.get("note")]
    return (table(["instance", "accelerators", "accel. memory GiB", "vCPUs", "RAM GiB", "network", "software",
                   f"USD/h ({data.instances_doc()['region']})", "sources"], rows, "llrrrllrl")
            + f"\n\n<small>From `gpukit/data/aws_instances.yaml`: on-demand Linux prices from the AWS price list "
              f"generated {data.prices_generated()}, read {data.instances_doc()['retrieved']}; specs checked against "
              "the EC2 API dump linked as *API*. Check the AWS pricing page before you spend money.</small>"
            + ("\n\n??? note \"Notes on these rows\"\n\n" + "\n".join("    " + n for n in notes) if notes else ""))


@data_renderer("cloud", "aws-training")
def aws_training() -> str:
    return _aws("training")


@data_renderer("cloud", "aws-inference")
def aws_inference() -> str:
    return _aws("inference")


@data_renderer("cloud", "aws-graphics")
def aws_graphics() -> str:
    return _aws("graphics")


def _ratio(g: dict) -> str:
    return "-" if g["fp64_ratio"] is None else f"1:{round(1 / g['fp64_ratio'])}"


def _gpu_row(g: dict) -> list:
    return [g["name"], g["stack"], _num(g["memory_gib"], "{:,.4g}"), _num(g["bandwidth_gbs"]), _num(g["fp32_tflops"], "{:,.1f}"),
            _num(g["tf32_tflops"], "{:,.1f}"), _num(g["bf16_tflops"], "{:,.1f}"), _ratio(g), _num(g["power_w"]),
            _num(g["price_usd"]), _link(g["source"])]


GPU_HEADER = ["GPU", "software", "memory GiB", "bandwidth GB/s", "FP32 TFLOP/s", "TF32 dense", "BF16 dense",
              "FP64:FP32", "power W", "list price USD", "source"]


@data_renderer("cloud", "gpus")
def gpu_table() -> str:
    rows = [_gpu_row(g) for g in data.gpus()]
    notes = [f"- **{g['name']}**: {g['note']}" for g in data.gpus() if g.get("note")]
    conflicts = [f"- **{g['name']}**, {c['field']}: {c['value']:g} instead of {g[c['field']]:g} in "
                 f"[this source]({c['source']}). {c['note']}" for g in data.gpus() for c in g.get("conflicts", [])]
    return (table(GPU_HEADER, rows, "llrrrrrrrrl")
            + f"\n\n<small>From `gpukit/data/gpus.yaml`, read {data.gpus_doc()['retrieved']}. A dash is a number "
              "that could not be confirmed; the reason is in the notes below.</small>"
            + ("\n\n!!! warning \"Sources that disagree\"\n\n" + "\n".join("    " + c for c in conflicts)
               if conflicts else "")
            + "\n\n??? note \"Why some cells are empty, and where the numbers come from\"\n\n"
            + "\n".join("    " + n for n in notes))


@data_renderer("cloud", "fp64")
def fp64_summary() -> str:
    """Which GPUs in the data have which FP64:FP32 ratio (the page's prose only points here)."""
    groups: dict[float, list[str]] = {}
    for g in data.gpus():
        if g["fp64_ratio"]:
            groups.setdefault(g["fp64_ratio"], []).append(g["name"])
    rows = [[f"1:{round(1 / r)}", ", ".join(names)] for r, names in sorted(groups.items(), reverse=True)]
    unknown = [g["name"] for g in data.gpus() if not g["fp64_ratio"]]
    return (table(["FP64:FP32", "GPUs in the data"], rows, "ll")
            + f"\n\n<small>Not confirmed, so not listed: {', '.join(unknown)}.</small>")


def largest_model(memory_gib: float, precision: str, seq: int = TIER_SEQ) -> tuple[str, float] | None:
    """The largest preset whose inference estimate (with headroom) fits ``memory_gib``, and its need."""
    from .advisor import HEADROOM, Workload, estimate
    from .models import PRESETS, count_params
    best = None
    for name in sorted(PRESETS, key=lambda n: count_params(PRESETS[n])[0]):
        need = estimate(Workload.from_preset(name, precision=precision, seq=seq)).total_gib * HEADROOM
        if need <= memory_gib:
            best = (name, need)
    return best


def _fits(memory_gib: float, precision: str) -> str:
    best = largest_model(memory_gib, precision)
    return "-" if best is None else f"{best[0]} ({best[1]:,.1f} GiB)"


@data_renderer("cloud", "tiers")
def tiers() -> str:
    rows = []
    for label, lo, hi in TIERS:
        for g in sorted(data.gpus(), key=lambda g: g.get("price_usd") or 0):
            if g.get("price_usd") and lo <= g["price_usd"] < hi:
                rows.append([label, g["name"], _num(g["price_usd"]), g.get("price_date") or "-",
                             _num(g["memory_gib"]), _num(g["bandwidth_gbs"]), _num(g["price_usd"] / g["memory_gib"]),
                             _fits(g["memory_gib"], "bf16"), _fits(g["memory_gib"], "int8"),
                             _fits(g["memory_gib"], "int4")])
    for g in data.gpus():
        if not g.get("price_usd") and g["segment"] in ("consumer", "workstation"):
            rows.append([f"no list price ({g['segment']})", g["name"], "-", "-", _num(g["memory_gib"]),
                         _num(g["bandwidth_gbs"]), "-", _fits(g["memory_gib"], "bf16"), _fits(g["memory_gib"], "int8"),
                         _fits(g["memory_gib"], "int4")])
    empty = [label for label, *_ in TIERS if not any(r[0] == label for r in rows)]
    gap = (f"\n\n<small>No card in the data has a launch list price in the tier{'s' if len(empty) > 1 else ''} "
           f"{', '.join(empty)}; cards without a list price in the data are listed apart, under \"no list price\"."
           "</small>"
           if empty else "")
    return (table(["tier", "GPU", "launch price USD", "launched", "memory GiB", "bandwidth GB/s",
                   "USD per GiB", "largest preset in 16 bits", "in 8 bits", "in 4 bits"], rows, "llrlrrrlll") + gap
            + f"\n\n<small>Launch list prices and dates from `gpukit/data/gpus.yaml` (sources in the table above); no "
              "dated street price was found, so none is shown: today's shop prices can be far from these. "
              f"\"Largest preset\" is `gpukit advise` on one card: inference, {TIER_SEQ}-token context, batch 1, "
              "16-bit KV cache, with the headroom (memory needed in brackets).</small>")


@data_renderer("cloud", "as-of")
def as_of() -> str:
    inst = data.instances()
    priced = sum(1 for r in inst if r.get("price_per_hour"))
    rows = [["AWS instance sizes", len(inst), f"{priced} with an on-demand price, {len(inst) - priced} without "
             "(the reason is in each row's note)", data.instances_doc()["region"]],
            ["GPUs and accelerators", len(data.gpus()),
             f"{sum(1 for g in data.gpus() if g.get('price_usd'))} with a launch list price", "-"]]
    warning = data.staleness_warning()
    age = (f"**AWS prices: from the price list generated {data.prices_generated()}, {data.price_age_text()} when "
           f"this page was built.** The site build warns once it is more than {data.STALE_AFTER_MONTHS} months old.")
    cheap = min((r for r in inst if r.get("price_per_hour")), key=lambda r: r["price_per_hour"])
    cheapest = (f"Cheapest accelerator by the hour in the data: `{cheap['name']}` ({cheap['accelerator']}), "
                f"{cheap['price_per_hour']:,.3f} USD/h.")
    return (age + " " + cheapest + "\n\n" + (f"!!! warning \"Stale prices\"\n    {warning}\n\n" if warning else "")
            + table(["file", "rows", "prices", "region"], rows, "lrll")
            + f"\n\n<small>Rows last read {data.data_as_of()}.</small>")


def _advise(argv: list[str]) -> str:
    import argparse

    from .cli import build, register, report
    parser = argparse.ArgumentParser(prog="gpukit")
    register(parser.add_subparsers())
    args = parser.parse_args(argv)
    text, _ = report(build(args), top=args.top)
    return "```text\n" + text + "\n```"


@data_renderer("cloud", "advise-example")
def advise_example() -> str:
    return _advise(EXAMPLE_ARGS)


@data_renderer("cloud", "advise-kv-example")
def advise_kv_example() -> str:
    return _advise(KV_EXAMPLE_ARGS)


@data_renderer("cloud", "models")
def models() -> str:
    from .models import PRESETS, count_params
    rows = []
    for name, p in PRESETS.items():
        total, active = count_params(p)
        counted = "counted" if p.intermediate else "published"
        window = _num(p.context) + (f" ({_link(p.context_source, 'config')})" if p.context_source else "")
        rows.append([f"`{name}`", f"{total / 1e9:,.2f}", f"{active / 1e9:,.2f}" if active < total else "all",
                     p.layers, p.hidden, p.heads, p.kv_heads, window, counted,
                     _link(p.source, "config") + (f" ({p.source_date})" if p.source_date else "")])
    return (table(["preset", "parameters (billions)", "active per token", "layers", "hidden", "heads", "KV heads",
                   "context (tokens)", "count", "source"], rows, "lrrrrrrrll")
            + "\n\n<small>\"counted\": total and active parameters counted from the config's layer sizes "
              "(`gpukit.cloud.models.count_params`); \"published\": the count the model card gives.</small>")


@data_renderer("cloud", "assumptions")
def assumptions() -> str:
    from . import advisor, machines
    rows = [["a machine fits when its accelerator memory is at least", f"{advisor.HEADROOM:.2f} x the estimate"],
            ["inference workspace", "the largest forward pass: residual stream, MLP or logits (no "
             "attention scores: a fused kernel)"],
            ["memory unit", "GiB (2^30 bytes), as AWS lists accelerator memory"],
            ["compute efficiency where nothing was measured", f"{machines.DEFAULT_EFFICIENCY:.0%} of dense peak"],
            ["bandwidth where nothing was measured", "peak (so decode speeds are upper bounds)"],
            ["GPUs to buy: at most", f"{machines.MAX_GPUS} cards"]]
    rows += [["measured by this project", m] for m in machines.describe_measurements("bf16", machines.measurements())]
    return table(["assumption", "value"], rows, "ll")


@data_renderer("cloud", "advisor-check")
def advisor_check() -> str:
    """The advisor beside what this project measured running a language model (if recorded)."""
    from .advisor import GIB
    from .machines import compare_records, measurements
    header = ["GPU", "model", "weights", "batch", "context", "measured tok/s", "advisor tok/s", "difference",
              "measured peak GiB", "advisor GiB", "difference"]
    rows = compare_records(measurements())
    if not rows:
        return (table(header, [["no run recorded yet"] + ["-"] * (len(header) - 1)], "l" * len(header))
                + "\n\n<small>No language-model run has been recorded yet: once "
                  "`results/<machine>/llm_inference.json` exists, this table puts its measured speed and peak "
                  "memory beside the advisor's estimates.</small>")
    body = [[r["gpu"], f"`{r['model']}`", r["precision"], r["batch"], _num(r["context"]),
             _num(r["measured_tokens_per_s"]), _num(r["estimate_tokens_per_s"]),
             f"{(r['estimate_tokens_per_s'] - r['measured_tokens_per_s']) / r['measured_tokens_per_s']:+.1%}",
             f"{r['measured_peak_bytes'] / GIB:,.2f}", f"{r['estimate_memory_bytes'] / GIB:,.2f}",
             f"{(r['estimate_memory_bytes'] - r['measured_peak_bytes']) / r['measured_peak_bytes']:+.1%}"]
            for r in rows]
    return table(header, body, "lllrrrrrrrr")


#: Published rules of thumb the advisor is checked against (tests/test_cloud.py holds it to 10 %).
RULES = [
    ("7B model, weights in bf16", dict(params=7e9, precision="bf16", task="inference", layers=32, hidden=4096),
     "weights", 14e9, "2 bytes per parameter: a 7B model needs about 14 GB",
     "https://blog.eleuther.ai/transformer-math/"),
    ("7B model, full training, AdamW, mixed precision", dict(params=7e9, precision="bf16", task="full"),
     "weights + grads + Adam", 126e9, "18 bytes per parameter (6 weights, 4 fp32 gradients, 8 AdamW): "
     "126 GB for 7B", "https://huggingface.co/docs/transformers/model_memory_anatomy"),
    ("Llama-2-7B KV cache, 4096 tokens, batch 1, fp16", dict(model="llama-2-7b", precision="fp16",
     task="inference", seq=4096), "KV cache", 2e9, "about 2 GB for Llama 2 7B at 4096 tokens",
     "https://developer.nvidia.com/blog/mastering-llm-techniques-inference-optimization/"),
]


def rule_cases():
    """(label, advisor bytes, rule bytes, rule text, url) for each rule of thumb."""
    from .advisor import Workload, estimate
    out = []
    for label, kw, term, rule, text, url in RULES:
        kw = dict(kw)
        w = Workload.from_preset(kw.pop("model"), **kw) if "model" in kw else Workload(**kw)
        got = next(t.bytes for t in estimate(w).terms if t.name == term)
        out.append((label, got, rule, text, url))
    return out


@data_renderer("cloud", "rules")
def rules() -> str:
    from .advisor import GIB
    rows = [[label, f"{got / GIB:,.2f}", f"{rule / GIB:,.2f}", f"{(got - rule) / rule:+.1%}", f"[{text}]({url})"]
            for label, got, rule, text, url in rule_cases()]
    return table(["case", "advisor GiB", "rule of thumb GiB", "difference", "rule and source"], rows, "lrrrl")


#: marker and colour of each segment in the catalogue plot
SEGMENT_STYLE = {"consumer": ("o", "#2e7d32"), "workstation": ("s", "#1565c0"),
                 "data-centre": ("D", "#c62828"), "cloud-only": ("^", "#6a1b9a")}


@data_renderer("cloud", "catalogue-plot")
def catalogue_plot() -> str:
    """Every GPU and accelerator of the data file by memory and memory bandwidth: the two numbers
    that decide what model fits and how fast it decodes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..pages import svg
    gpus = [g for g in data.gpus() if g.get("memory_gib") and g.get("bandwidth_gbs")]
    fig, ax = plt.subplots(figsize=(7.2, 4.6))
    for segment, (marker, colour) in SEGMENT_STYLE.items():
        pts = [g for g in gpus if g.get("segment") == segment]
        if pts:
            ax.scatter([g["memory_gib"] for g in pts], [g["bandwidth_gbs"] for g in pts], marker=marker,
                       color=colour, s=36, label=segment, zorder=3, edgecolors="white", linewidths=0.6)
    import math

    from matplotlib.ticker import FuncFormatter, LogLocator
    labelled: list[tuple[float, float]] = []
    for g in sorted(gpus, key=lambda g: (-g["bandwidth_gbs"], -g["memory_gib"])):
        x, y = math.log10(g["memory_gib"]), math.log10(g["bandwidth_gbs"])
        if any(abs(x - a) < 0.12 and abs(y - b) < 0.06 for a, b in labelled):
            continue               # a neighbour is labelled already: the table below names it
        labelled.append((x, y))
        short = (g["name"].replace("GeForce ", "").replace("NVIDIA ", "").replace(" Blackwell", "")
                 .replace(" Server Edition", " SE").replace(" Generation", ""))
        ax.annotate(short, (g["memory_gib"], g["bandwidth_gbs"]), xytext=(4, 3), textcoords="offset points",
                    fontsize=6.5, color="#333")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:,.0f}")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10, subs=(1, 2, 5)))
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_xlabel("memory (GiB)")
    ax.set_ylabel("memory bandwidth (GB/s)")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="upper left", frameon=False)
    ax.set_title(f"Accelerators in gpukit/data/gpus.yaml (data as of {data.gpus_doc()['retrieved']}); "
                 "a point without a label sits next to a labelled one", fontsize=8.5)
    return svg(fig)
