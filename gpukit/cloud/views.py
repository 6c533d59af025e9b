"""The chapter's tables, built from gpukit/data/*.yaml and the advisor at site build time.

Nothing here types a price or a spec: every number comes from the data files, from the advisor's
formulas, or from this project's own results (the measured efficiencies).
"""

from __future__ import annotations

from .. import catalogue as data
from . import meta
from ..pages import collapsed, data_renderer, table
from .meta import GIB

#: Worked examples on the page, as the workload ``gpukit advise`` builds from its options and the
#: rows it shows: serving Llama 3.1 8B in bf16, and Llama 3.1 70B with int4 weights at its full
#: context (the KV cache outgrows the weights).
EXAMPLE = (dict(model="llama-3.1-8b", precision="bf16", task="inference", seq=8192, batch=1), 6)
KV_EXAMPLE = (dict(model="llama-3.1-70b", precision="int4", task="inference", seq=131072), 5)

#: Buying tiers by card list price (USD); a card with no list price appears under "no list price".
TIERS = [("under $500", 0, 500), ("$500 to $1,000", 500, 1000), ("$1,000 to $2,000", 1000, 2000),
         ("$2,000 to $5,000", 2000, 5000)]
#: The context the "largest model it holds" columns assume.
TIER_SEQ = 4096


def _num(x, fmt="{:,.0f}"):
    return "-" if x is None else fmt.format(x)


def _link(url: str | None, text: str = "source") -> str:
    return f"[{text}]({url})" if url else "-"


def _aws_rows(category: str) -> list[dict]:
    return sorted((r for r in data.instances() if r["category"] == category),
                  key=lambda r: (r["family"], r.get("unit", "instance"), r["accelerator_count"],
                                 r["vcpus"] or 0))


def _usd_h(r: dict) -> str:
    return _num(r["price_per_hour"], "{:,.2f}") if r["price_per_hour"] else "-"


def _per_accelerator(r: dict) -> str:
    mem = r["accelerator_memory_gib"]
    return "-" if mem is None else _num(mem / r["accelerator_count"], "{:,.4g}")


def _families(rows: list[dict]) -> str:
    """One row per family: its cheapest priced size first, so the price is the second column."""
    fams: dict[str, list[dict]] = {}
    for r in rows:
        fams.setdefault(r["family"], []).append(r)
    body = []
    for fam, sizes in fams.items():
        priced = [r for r in sizes if r["price_per_hour"]]
        low = min(priced, key=lambda r: r["price_per_hour"]) if priced else None
        counts = sorted({r["accelerator_count"] for r in sizes})
        count = str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
        body.append([fam, _usd_h(low) if low else "-", f"{count} x {sizes[0]['accelerator']}",
                     _per_accelerator(sizes[0]), sizes[0]["stack"], len(sizes)])
    return table(["family", f"USD/h from ({data.instances_doc()['region']})", "accelerators",
                  "GiB each", "software", "sizes"], body, "lrlrlr")


def _aws(category: str) -> str:
    rows = _aws_rows(category)
    full = []
    for r in rows:
        links = [_link(r["source"], "spec")]
        if r.get("checked_against"):
            links.append(_link(r["checked_against"], "API"))
        if r.get("price_source"):
            links.append(_link(r["price_source"], "price"))
        name = f"`{r['name']}`" + (" (UltraServer)" if r.get("unit") == "ultraserver" else "")
        full.append([name, _usd_h(r), f"{r['accelerator_count']} x {r['accelerator']}",
                     _num(r["accelerator_memory_gib"]),
                     f"{_num(r['vcpus'])} / {_num(r['memory_gib'])}", r["network"] or "-",
                     " / ".join(links)])
    notes = [f"- **{r['name']}**: {r['note']}" for r in rows if r.get("note")]
    every = (table(["instance", "USD/h", "accelerators", "accel. GiB", "vCPUs / RAM GiB",
                    "network", "sources"], full, "lrlrlll")
             + "\n\n<small>A dash in USD/h: no on-demand price in the price list (the notes say "
               "why). Network: per instance unless the row says otherwise.</small>"
             + ("\n\n**Notes on these rows**\n\n" + "\n".join(notes) if notes else ""))
    return (_families(rows) + "\n\n"
            + collapsed(f"All {len(rows)} sizes: price, host, network and sources", every))


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
    return [g["name"], _num(g["memory_gib"], "{:,.4g}"), _num(g["bandwidth_gbs"]),
            _num(g["bf16_tflops"], "{:,.1f}"), _num(g["fp32_tflops"], "{:,.1f}"),
            _num(g["price_usd"]), _link(g["source"])]


def _gpu_more(g: dict) -> list:
    return [g["name"], g["stack"], _num(g["tf32_tflops"], "{:,.1f}"), _ratio(g),
            _num(g["power_w"])]


GPU_HEADER = ["GPU", "memory GiB", "bandwidth GB/s", "BF16 dense TFLOP/s", "FP32 TFLOP/s",
              "list price USD", "source"]
GPU_MORE_HEADER = ["GPU", "software", "TF32 dense TFLOP/s", "FP64:FP32", "power W"]


@data_renderer("cloud", "gpus")
def gpu_table() -> str:
    gpus = data.gpus()
    notes = [f"- **{g['name']}**: {g['note']}" for g in gpus if g.get("note")]
    conflicts = [f"- **{g['name']}**, {c['field']}: {c['value']:g} instead of "
                 f"{g[c['field']]:g} in [this source]({c['source']}). {c['note']}"
                 for g in gpus for c in g.get("conflicts", [])]
    sized = [g for g in gpus if g.get("memory_gib")]
    small = min(sized, key=lambda g: g["memory_gib"])
    large = max(sized, key=lambda g: g["memory_gib"])
    lead = (f"The data holds {len(gpus)} GPUs and accelerators, from {small['name']} with "
            f"{_num(small['memory_gib'], '{:,.4g}')} GiB to {large['name']} with "
            f"{_num(large['memory_gib'], '{:,.4g}')} GiB; the plot at the top of the page draws "
            "each by memory and bandwidth.")
    main = (table(GPU_HEADER, [_gpu_row(g) for g in gpus], "lrrrrrl")
            + f"\n\n<small>From `gpukit/data/gpus.yaml`, read {data.gpus_doc()['retrieved']}. "
              "A dash is a number that could not be confirmed; the reason is in the notes "
              "below.</small>")
    more = (table(GPU_MORE_HEADER, [_gpu_more(g) for g in gpus], "llrrr")
            + "\n\n**Why some cells are empty, and where the numbers come from**\n\n"
            + "\n".join(notes))
    return (lead + "\n\n" + collapsed(f"Memory, bandwidth, throughput and price of all {len(gpus)}",
                                      main)
            + "\n\n" + collapsed("Software, TF32, FP64 ratio and power, with notes", more)
            + ("\n\n!!! warning \"Sources that disagree\"\n\n"
               + "\n".join("    " + c for c in conflicts) if conflicts else ""))


@data_renderer("cloud", "fp64")
def fp64_summary() -> str:
    """Which GPUs in the data have which FP64:FP32 ratio."""
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
    presets = meta.PRESETS
    best = None
    for name in sorted(presets, key=lambda n: meta.count_params(presets[n])[0]):
        need = (meta.estimate(meta.Workload.from_preset(name, precision=precision, seq=seq)).total_gib
                * meta.HEADROOM)
        if need <= memory_gib:
            best = (name, need)
    return best


def _fits(memory_gib: float, precision: str) -> str:
    best = largest_model(memory_gib, precision)
    return "-" if best is None else f"{best[0]} ({best[1]:,.1f} GiB)"


def _fits_short(memory_gib: float, precision: str) -> str:
    best = largest_model(memory_gib, precision)
    return "-" if best is None else f"{best[0]} ({best[1]:,.1f})"


def _tier_row(label: str, g: dict) -> list:
    price = "-"
    if g.get("price_usd"):
        price = f"{_num(g['price_usd'])} ({g.get('price_date') or '-'})"
    return [label, g["name"], price, _num(g["memory_gib"]), _num(g["bandwidth_gbs"]),
            *(_fits_short(g["memory_gib"], p) for p in ("bf16", "int8", "int4"))]


@data_renderer("cloud", "tiers")
def tiers() -> str:
    rows = []
    for label, lo, hi in TIERS:
        shown = label
        for g in sorted(data.gpus(), key=lambda g: g.get("price_usd") or 0):
            if g.get("price_usd") and lo <= g["price_usd"] < hi:
                rows.append(_tier_row(shown, g))
                shown = ""
    for segment in ("consumer", "workstation"):
        shown = f"no list price ({segment})"
        for g in data.gpus():
            if not g.get("price_usd") and g["segment"] == segment:
                rows.append(_tier_row(shown, g))
                shown = ""
    empty = [label for label, lo, hi in TIERS
             if not any(g.get("price_usd") and lo <= g["price_usd"] < hi for g in data.gpus())]
    gap = (f"\n\n<small>No card in the data has a launch list price in the "
           f"tier{'s' if len(empty) > 1 else ''} {', '.join(empty)}; cards without a list price "
           "in the data are listed apart, under \"no list price\".</small>"
           if empty else "")
    per_gib = ", ".join(f"{g['name']} {_num(g['price_usd'] / g['memory_gib'])}"
                        for g in sorted(data.gpus(), key=lambda g: g.get("price_usd") or 0)
                        if g.get("price_usd") and g.get("memory_gib"))
    return (table(["tier", "GPU", "USD (launched)", "GiB", "GB/s", "largest preset, 16 bits",
                   "8 bits", "4 bits"], rows, "llrrrlll") + gap
            + "\n\n<small>Launch list prices and dates from `gpukit/data/gpus.yaml` (sources in "
              "the GPU tables above); no dated street price was found, so none is shown: today's "
              f"shop prices can be far from these. USD per GiB of memory: {per_gib}. \"Largest "
              f"preset\" is `gpukit advise` on one card: inference, {TIER_SEQ}-token context, "
              "batch 1, 16-bit KV cache, with the headroom (GiB needed in brackets).</small>")


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
            + f"\n\n<small>Rows last read {data.data_as_of()}; the AWS file as a whole "
              f"{data.instances_doc()['retrieved']}. The AWS tables below are from "
              "`gpukit/data/aws_instances.yaml` (on-demand Linux prices): check the AWS pricing "
              "page before you spend money.</small>")


#: the advisor's report is shown wrapped to this many columns (a wider line scrolls sideways)
WRAP = 88


def _page_report(text: str) -> str:
    """The advisor's report for a page: its Markdown tables as tables, its other lines as text
    wrapped to :data:`WRAP` columns (each continuation indented under the line it continues)."""
    import textwrap
    out, prose = [], []

    def flush():
        if prose:
            out.append("```text\n" + "\n".join(prose).strip("\n") + "\n```")
            prose.clear()

    rows: list[str] = []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            flush()
            rows.append(line)
            continue
        if rows:
            out.append("\n".join(rows))
            rows = []
        indent = " " * (len(line) - len(line.lstrip()))
        wrapped = textwrap.wrap(line, WRAP, subsequent_indent=indent + "  ",
                                break_on_hyphens=False) or [""]
        prose.extend(wrapped)
    flush()
    return "\n\n".join(out)


def _workload(example: tuple[dict, int]):
    kw = dict(example[0])
    return meta.Workload.from_preset(kw.pop("model"), **kw)


def _advise(example: tuple[dict, int]) -> str:
    text, _ = meta.report(_workload(example), top=example[1])
    return _page_report(text)


@data_renderer("cloud", "advise-example")
def advise_example() -> str:
    text = _advise(EXAMPLE)
    rows = [ln for ln in text.splitlines()
            if ln.startswith("| ") and not ln.startswith(("| instance", "| :"))]
    lead = ""
    if rows:
        cells = [c.strip() for c in rows[0].strip("|").split("|")]
        lead = (f"The cheapest instance that holds it is `{cells[0]}` ({cells[1]}), at {cells[3]} "
                "USD/h; the advisor's whole answer is in the box.\n\n")
    return lead + collapsed("The advisor's answer", text)


@data_renderer("cloud", "advise-kv-example")
def advise_kv_example() -> str:
    terms = {t.name: t.bytes for t in meta.estimate(_workload(KV_EXAMPLE)).terms}
    lead = (f"The KV cache, {terms['KV cache'] / GIB:,.1f} GiB, is {terms['KV cache'] / terms['weights']:.1f} "
            f"times the int4 weights ({terms['weights'] / GIB:,.1f} GiB).")
    return lead + "\n\n" + collapsed("The advisor's whole answer", _advise(KV_EXAMPLE))


@data_renderer("cloud", "models")
def models() -> str:
    rows = []
    for name, p in meta.PRESETS.items():
        total, active = meta.count_params(p)
        counted = "counted" if p.intermediate else "published"
        source = _link(p.source, "config") + (f" ({p.source_date})" if p.source_date else "")
        if p.context_source:
            source += f", {_link(p.context_source, 'context')}"
        rows.append([f"`{name}`", f"{total / 1e9:,.2f}",
                     f"{active / 1e9:,.2f}" if active < total else "all",
                     f"{p.layers} / {p.hidden}", f"{p.heads} / {p.kv_heads}", _num(p.context),
                     f"{source}; {counted}"])
    sizes = sorted(meta.count_params(p)[0] for p in meta.PRESETS.values())
    lead = (f"The advisor knows {len(meta.PRESETS)} models, from {sizes[0] / 1e9:,.1f} to "
            f"{sizes[-1] / 1e9:,.0f} billion parameters.")
    body = (table(["preset", "params (billions)", "active per token", "layers / hidden",
                   "heads / KV heads", "context (tokens)", "source"], rows, "lrrrrrl")
            + "\n\n<small>\"counted\": total and active parameters counted from the config's "
              "layer sizes (`gpukit.cloud.models.count_params`); \"published\": the count the "
              "model card gives.</small>")
    return lead + "\n\n" + collapsed("The presets, with their configs", body)


@data_renderer("cloud", "assumptions")
def assumptions() -> str:
    rows = [["a machine fits when its accelerator memory is at least", f"{meta.HEADROOM:.2f} x the estimate"],
            ["inference workspace", "the largest forward pass: residual stream, MLP or logits (no "
             "attention scores: a fused kernel)"],
            ["memory unit", "GiB (2^30 bytes), as AWS lists accelerator memory"],
            ["compute efficiency where nothing was measured", f"{meta.DEFAULT_EFFICIENCY:.0%} of dense peak"],
            ["bandwidth where nothing was measured", "peak (so decode speeds are upper bounds)"],
            ["GPUs to buy: at most", f"{meta.MAX_GPUS} cards"]]
    rows += [["measured by this project", m] for m in meta.describe_measurements("bf16", meta.measurements())]
    return table(["assumption", "value"], rows, "ll")


@data_renderer("cloud", "advisor-check")
def advisor_check() -> str:
    """The advisor beside what this project measured running a language model (if recorded)."""
    header = ["GPU", "model, weights", "batch x context", "tok/s measured", "advisor",
              "its efficiency from", "peak GiB measured", "advisor"]
    rows = meta.compare_records(meta.measurements())
    if not rows:
        return (table(header, [["no run recorded yet"] + ["-"] * (len(header) - 1)], "l" * len(header))
                + "\n\n<small>No language-model run has been recorded yet: once "
                  "`results/<machine>/llm_inference.json` exists, this table puts its measured speed and peak "
                  "memory beside the advisor's estimates.</small>")

    def diff(est, got):
        return f"{(est - got) / got + 0.0:+.1%}".replace("-0.0%", "+0.0%")  # no minus on a zero

    body = [[r["gpu"], f"`{r['model']}` {r['precision']}", f"{r['batch']} x {_num(r['context'])}",
             _num(r["measured_tokens_per_s"]),
             f"{_num(r['estimate_tokens_per_s'])} ({diff(r['estimate_tokens_per_s'], r['measured_tokens_per_s'])})",
             r.get("basis", "-"), f"{r['measured_peak_bytes'] / GIB:,.2f}",
             f"{r['estimate_memory_bytes'] / GIB:,.2f} "
             f"({diff(r['estimate_memory_bytes'], r['measured_peak_bytes'])})"]
            for r in rows]
    return (table(header, body, "lllrrlrr")
            + "\n\n<small>In brackets: how far the advisor is from the measurement. Each speed "
              "estimate leaves that row's own measurement out of the efficiencies it uses.</small>")


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
    out = []
    for label, kw, term, rule, text, url in RULES:
        kw = dict(kw)
        w = meta.Workload.from_preset(kw.pop("model"), **kw) if "model" in kw else meta.Workload(**kw)
        got = next(t.bytes for t in meta.estimate(w).terms if t.name == term)
        out.append((label, got, rule, text, url))
    return out


@data_renderer("cloud", "rules")
def rules() -> str:
    rows = [[label, f"{got / GIB:,.2f}", f"{rule / GIB:,.2f}", f"{(got - rule) / rule:+.1%}", f"[{text}]({url})"]
            for label, got, rule, text, url in rule_cases()]
    return table(["case", "advisor GiB", "rule of thumb GiB", "difference", "rule and source"], rows, "lrrrl")


#: marker and colour of each segment in the catalogue plot
SEGMENT_STYLE = {"consumer": ("o", "#2e7d32"), "workstation": ("s", "#1565c0"),
                 "data-centre": ("D", "#c62828"), "cloud-only": ("^", "#6a1b9a")}


def _short(name: str) -> str:
    for word in ("GeForce ", "NVIDIA ", "AMD ", " Blackwell", " Server Edition", " Generation",
                 " SXM", " (GB10)", " (Blackwell GPU)", " 16 GB", " 32 GB"):
        name = name.replace(word, "")
    return name


def _label_candidates(gpus: list[dict]) -> list[dict]:
    """The points worth a name, most telling first: each segment's largest and smallest memory,
    then the largest bandwidth."""
    out: list[dict] = []
    for segment in SEGMENT_STYLE:
        pts = [g for g in gpus if g.get("segment") == segment]
        if pts:
            out += [max(pts, key=lambda g: (g["memory_gib"], g["bandwidth_gbs"])),
                    min(pts, key=lambda g: (g["memory_gib"], g["bandwidth_gbs"]))]
    out.append(max(gpus, key=lambda g: g["bandwidth_gbs"]))
    seen: set[str] = set()
    return [g for g in out if not (g["name"] in seen or seen.add(g["name"]))]


@data_renderer("cloud", "catalogue-plot")
def catalogue_plot() -> str:
    """Every GPU and accelerator of the data file by memory and memory bandwidth: the two numbers
    that decide what model fits and how fast it decodes. A few points are named where the name
    fits without touching another; the GPU tables name the rest."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    from ..pages import figure, svg
    gpus = [g for g in data.gpus() if g.get("memory_gib") and g.get("bandwidth_gbs")]
    fig, ax = figure(height=3.9)
    for segment, (marker, colour) in SEGMENT_STYLE.items():
        pts = [g for g in gpus if g.get("segment") == segment]
        if pts:
            ax.scatter([g["memory_gib"] for g in pts], [g["bandwidth_gbs"] for g in pts],
                       marker=marker, color=colour, s=40, label=segment, zorder=3,
                       edgecolors="white", linewidths=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:,.0f}")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10, subs=(1, 3)))
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_xlim(min(g["memory_gib"] for g in gpus) / 1.6, max(g["memory_gib"] for g in gpus) * 1.6)
    ax.set_ylim(min(g["bandwidth_gbs"] for g in gpus) / 1.6,
                max(g["bandwidth_gbs"] for g in gpus) * 1.8)
    ax.set_xlabel("memory (GiB)")
    ax.set_ylabel("bandwidth (GB/s)")
    ax.grid(True, which="major", alpha=0.25)
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.01, 1, 0.2), mode="expand", ncol=2,
              frameon=False, handletextpad=0.2, borderaxespad=0)
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    taken = [t.get_window_extent(renderer) for t in ax.get_xticklabels() + ax.get_yticklabels()
             if t.get_visible() and t.get_text()]
    marks = ax.transData.transform([(g["memory_gib"], g["bandwidth_gbs"]) for g in gpus])
    for g in _label_candidates(gpus):
        right = g["memory_gib"] < 60
        text = ax.annotate(_short(g["name"]), (g["memory_gib"], g["bandwidth_gbs"]),
                           xytext=(6 if right else -6, 4), textcoords="offset points",
                           ha="left" if right else "right", color="#333")
        box = text.get_window_extent(renderer)
        hits_mark = any(box.x0 - 3 < x < box.x1 + 3 and box.y0 - 3 < y < box.y1 + 3
                        for x, y in marks)
        outside = (box.x0 < inside.x0 or box.x1 > inside.x1 or box.y0 < inside.y0
                   or box.y1 > inside.y1)
        if outside or hits_mark or any(box.overlaps(t) for t in taken):
            text.remove()
        else:
            taken.append(box)
    return svg(fig)
