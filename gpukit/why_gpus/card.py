"""The three measured takeaways of the card at the top of the chapter (what it teaches
and what to read first are in the front matter of its page)."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num

from .meta import NAME
from .views import ratio


def _from(data: dict, work: str, backend: str) -> str:
    size = data[work]["crossover"].get(backend)
    return f"from {size:,} elements on" if size else "at no size we tried"


@pages.card_renderer(NAME)
def card(data: dict) -> str:
    pol = data["poly"]
    cores = data["hardware"]["cpu"]["cores_used"]
    over_cores, _ = ratio(pol, "numba-parallel", "gpu-kernel")
    over_python, _ = ratio(pol, "python", "gpu-kernel")
    takeaways = [
        f"Adding arrays, the GPU beats all {cores} CPU cores "
        f"{_from(data, 'saxpy', 'gpu-kernel')}, if the data already lives on the GPU.",
        f"With the copies to the GPU and back counted, adding arrays on the GPU wins "
        f"{_from(data, 'saxpy', 'gpu-pinned')}.",
        f"On heavy arithmetic the GPU is {fmt_num(over_cores, 0)}x faster than all CPU cores; "
        f"against a pure Python loop it looks {fmt_num(over_python, 0)}x faster.",
    ]
    return pages.takeaways(takeaways, source=f"measured on {pages.plot_title(data)}")
