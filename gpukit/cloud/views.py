"""The chapter's tables, built from gpukit/data/*.yaml at site build time (no typed prices)."""

from __future__ import annotations

from ..pages import data_renderer, table
from . import data

#: Worked example on the page: Llama-2-7B served in bf16 with a 4096-token context.
EXAMPLE_ARGS = ["advise", "--model", "llama-2-7b", "--precision", "bf16", "--task", "inference",
                "--seq", "4096", "--batch", "1", "--flops", "1e18", "--top", "6"]

#: Buying tiers by card list price (USD); a card with no list price appears under "no list price".
TIERS = [("under $500", 0, 500), ("$500 to $1,000", 500, 1000), ("$1,000 to $2,000", 1000, 2000),
         ("$2,000 to $5,000", 2000, 5000)]


def _num(x, fmt="{:,.0f}"):
    return "-" if x is None else fmt.format(x)


def _link(url: str | None, text: str = "source") -> str:
    return f"[{text}]({url})" if url else "-"


def _aws(category: str) -> str:
    rows = []
    for r in sorted((r for r in data.instances() if r["category"] == category),
                    key=lambda r: (r["family"], r["accelerator_count"], r["vcpus"])):
        rows.append([f"`{r['name']}`", f"{r['accelerator_count']} x {r['accelerator']}",
                     _num(r["accelerator_memory_gib"]), r["vcpus"], _num(r["memory_gib"]), r["network"] or "-",
                     _num(r["price_per_hour"], "{:,.2f}") if r["price_per_hour"] else "not recorded",
                     _link(r["source"], "spec") + " / " + _link(r.get("price_source"), "price")])
    return (table(["instance", "accelerators", "accel. memory GiB", "vCPUs", "RAM GiB", "network",
                   f"USD/h ({data.instances_doc()['region']})", "sources"], rows, "llrrrlrl")
            + f"\n\n<small>From `gpukit/data/aws_instances.yaml`, retrieved {data.data_as_of()}. "
              "On-demand Linux prices as stored in the linked public pages; check the AWS pricing page "
              "before you spend money.</small>")


@data_renderer("cloud", "aws-training")
def aws_training() -> str:
    return _aws("training")


@data_renderer("cloud", "aws-inference")
def aws_inference() -> str:
    return _aws("inference")


@data_renderer("cloud", "aws-graphics")
def aws_graphics() -> str:
    return _aws("graphics")


def _gpu_row(g: dict) -> list:
    return [g["name"], _num(g["memory_gb"]), _num(g["bandwidth_gbs"]), _num(g["fp32_tflops"], "{:,.1f}"),
            _num(g["tf32_tflops"], "{:,.1f}"), _num(g["bf16_tflops"], "{:,.1f}"),
            "-" if g["fp64_ratio"] is None else f"1:{round(1 / g['fp64_ratio'])}", _num(g["power_w"]),
            _num(g["price_usd"]), _link(g["source"])]


GPU_HEADER = ["GPU", "memory GB", "bandwidth GB/s", "FP32 TFLOP/s", "TF32 dense", "BF16 dense", "FP64:FP32",
              "power W", "list price USD", "source"]


@data_renderer("cloud", "gpus")
def gpu_table() -> str:
    rows = [_gpu_row(g) for g in data.gpus()]
    notes = "\n".join(f"- **{g['name']}**: {g['note']}" for g in data.gpus() if g.get("note"))
    return (table(GPU_HEADER, rows, "lrrrrrrrrl")
            + f"\n\n<small>From `gpukit/data/gpus.yaml`, retrieved {data.gpus_doc()['retrieved']}. "
              "A dash is a number that could not be confirmed; the reason is in the notes below.</small>"
              f"\n\n??? note \"Why some cells are empty\"\n\n" + "\n".join("    " + ln for ln in notes.splitlines()))


@data_renderer("cloud", "tiers")
def tiers() -> str:
    rows = []
    for label, lo, hi in TIERS:
        for g in sorted(data.gpus(), key=lambda g: g.get("price_usd") or 0):
            if g.get("price_usd") and lo <= g["price_usd"] < hi:
                per_gb = g["price_usd"] / g["memory_gb"]
                rows.append([label, g["name"], _num(g["price_usd"]), _num(g["memory_gb"]),
                             _num(g["bandwidth_gbs"]), _num(per_gb, "{:,.0f}")])
    for g in data.gpus():
        if not g.get("price_usd"):
            rows.append([f"no list price ({g['segment']})", g["name"], "-", _num(g["memory_gb"]),
                         _num(g["bandwidth_gbs"]), "-"])
    return (table(["tier", "GPU", "list price USD", "memory GB", "bandwidth GB/s", "USD per GB of memory"],
                  rows, "llrrrr")
            + f"\n\n<small>Data as of {data.data_as_of()}, from `gpukit/data/gpus.yaml`.</small>")


@data_renderer("cloud", "as-of")
def as_of() -> str:
    inst = data.instances()
    priced = sum(1 for r in inst if r.get("price_per_hour"))
    rows = [["AWS instance sizes", len(inst), f"{priced} with a recorded price", data.instances_doc()["region"]],
            ["GPU models", len(data.gpus()), f"{sum(1 for g in data.gpus() if g.get('price_usd'))} with a list price",
             "-"]]
    return (f"**Data as of {data.data_as_of()}.**\n\n"
            + table(["file", "rows", "prices", "region"], rows, "lrll"))


@data_renderer("cloud", "advise-example")
def advise_example() -> str:
    from .cli import build, report, register
    import argparse
    parser = argparse.ArgumentParser(prog="gpukit")
    register(parser.add_subparsers())
    args = parser.parse_args(EXAMPLE_ARGS)
    text, _ = report(build(args), flops=float(args.flops), top=args.top)
    return "```text\n" + text + "\n```"


#: Published rules of thumb the advisor is checked against (tests/test_cloud.py holds it to 10 %).
RULES = [
    ("7B model, weights in bf16", dict(params=7e9, precision="bf16", task="inference", layers=32, hidden=4096),
     "weights", 14e9, "2 bytes per parameter: a 7B model needs about 14 GB",
     "https://blog.eleuther.ai/transformer-math/"),
    ("7B model, full training, Adam, mixed precision", dict(params=7e9, precision="bf16", task="full"),
     "weights + grads + Adam", 112e9, "16 bytes per parameter: about 112 GB for 7B",
     "https://blog.eleuther.ai/transformer-math/"),
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
    rows = [[label, f"{got / 1e9:,.2f}", f"{rule / 1e9:,.2f}", f"{(got - rule) / rule:+.1%}", f"[{text}]({url})"]
            for label, got, rule, text, url in rule_cases()]
    return table(["case", "advisor GB", "rule of thumb GB", "difference", "rule and source"], rows, "lrrrl")
