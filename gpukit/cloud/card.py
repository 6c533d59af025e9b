"""The card at the top of the chapter: what it teaches and three takeaways from the data files."""

from __future__ import annotations

from gpukit import pages

from . import data
from .advisor import GIB

LEARN = [
    "what AWS rents for training, inference and graphics, and the cheaper ways to rent a GPU",
    "which GPUs to buy for a desk or a rack, by budget",
    "how much memory a model needs: weights, KV cache, gradients and optimizer state",
    "how fast a model will run and what it will cost, estimated with `gpukit advise`",
]


def _usd(x: float) -> str:
    return f"${x:,.2f}" if x < 100 else f"${x:,.0f}"


@pages.data_renderer("cloud", "card")
def card() -> str:
    from .views import rule_cases
    rented = [r for r in data.instances() if r["stack"] == "cuda" and r.get("price_per_hour")]
    cheap = min(rented, key=lambda r: r["price_per_hour"])
    dear = max(rented, key=lambda r: r["price_per_hour"])
    h100 = min((r for r in rented if "H100" in r["accelerator"]), key=lambda r: r["price_per_hour"])
    memory = {label: got for label, got, *_ in rule_cases()}
    weights = next(v for k, v in memory.items() if "weights" in k)
    training = next(v for k, v in memory.items() if "training" in k)
    listed = [g for g in data.gpus() if g.get("price_usd")]
    first = min(listed, key=lambda g: g["price_usd"])
    most = max(listed, key=lambda g: (g["memory_gib"], -g["price_usd"]))
    takeaways = [
        f"{len(rented)} NVIDIA instance sizes with an on-demand price run from {_usd(cheap['price_per_hour'])} "
        f"an hour (`{cheap['name']}`, {cheap['accelerator']}) to {_usd(dear['price_per_hour'])} "
        f"(`{dear['name']}`, {dear['accelerator_count']} x {dear['accelerator']}); "
        f"the cheapest {h100['accelerator']} ({h100['accelerator_count']} in `{h100['name']}`): "
        f"{_usd(h100['price_per_hour'])} an hour.",
        f"A 7-billion-parameter model needs {weights / GIB:,.0f} GiB for its weights in bf16, and "
        f"{training / GIB:,.0f} GiB to train with Adam in mixed precision, {training / weights:.0f} times more.",
        f"The cheapest card with a list price is the {first['name']} ({_usd(first['price_usd'])}, "
        f"{first['memory_gib']:,.0f} GiB); the most memory on one listed card, {most['memory_gib']:,.0f} GiB, "
        f"comes with the {most['name']} at {_usd(most['price_usd'])}.",
    ]
    source = (f"from `gpukit/data/` (AWS prices in {data.instances_doc()['region']}, price list of "
              f"{data.prices_generated()}; launch list prices) and the advisor")
    return pages.card(LEARN, ["why_gpus", "gpu_anatomy"], takeaways, source=source)
