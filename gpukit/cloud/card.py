"""The three takeaways of the card at the top of the chapter, from the data files (what
it teaches and what to read first are in the front matter of its page)."""

from __future__ import annotations

from gpukit import pages

from .. import catalogue as data
from .meta import GIB


def _usd(x: float) -> str:
    return f"${x:,.2f}" if x < 100 else f"${x:,.0f}"


def _count(n: int, what: str) -> str:
    return f"one {what} costs" if n == 1 else f"{n} {what}s cost"


@pages.data_renderer("cloud", "card")
def card() -> str:
    from .views import rule_cases
    rented = [r for r in data.instances() if r["stack"] == "cuda" and r.get("price_per_hour")]
    cheap = min(rented, key=lambda r: r["price_per_hour"])
    h100 = min((r for r in rented if "H100" in r["accelerator"]), key=lambda r: r["price_per_hour"])
    memory = {label: got for label, got, *_ in rule_cases()}
    weights = next(v for k, v in memory.items() if "weights" in k)
    training = next(v for k, v in memory.items() if "training" in k)
    listed = [g for g in data.gpus() if g.get("price_usd")]
    first = min(listed, key=lambda g: g["price_usd"])
    takeaways = [
        f"Renting NVIDIA GPU time starts at {_usd(cheap['price_per_hour'])} an hour; "
        f"{_count(h100['accelerator_count'], 'H100')} {_usd(h100['price_per_hour'])} an hour.",
        f"A 7-billion-parameter model needs {weights / GIB:,.0f} GiB for its bf16 weights and "
        f"{training / GIB:,.0f} GiB to train with Adam.",
        f"The cheapest card with a list price costs {_usd(first['price_usd'])} and holds "
        f"{first['memory_gib']:,.0f} GiB.",
    ]
    source = (f"from `gpukit/data/` (AWS prices in {data.instances_doc()['region']}, price list of "
              f"{data.prices_generated()}; launch list prices) and the advisor")
    return pages.takeaways(takeaways, source=source)
