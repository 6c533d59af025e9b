"""The three measured takeaways of the card at the top of the chapter (what it teaches
and what to read first are in the front matter of its page)."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_ratio


def _horner(data: pages.Record) -> str | None:
    """The profile of numba's Horner loop against the FP32 peak, where both were recorded."""
    prof, why = data.other("profiles"), data.other("why_gpus")
    rows = (prof or {}).get("gpu", {}).get("rows") or []
    r = next((x for x in rows if x["name"] == "why-gpus-horner"), None)
    peak = ((why or {}).get("hardware", {}).get("gpu") or {}).get("peak_tflops")
    if not r or not peak or not r.get("tflops"):
        return None
    return (f"Nsight Compute found numba's polynomial loop busy, not waiting, yet its "
            f"multiply-adds ran at {100 * r['tflops'] / peak:.0f} % of the GPU's fp32 peak.")


@pages.card_renderer("profiling")
def card(data: dict) -> str:
    g = data["gpu"]
    rows = {r["name"]: r for r in g["rows"]}
    serial = rows["serial, pinned"]
    piped = min((r for r in g["rows"] if r["pinned"] and r["streams"] > 1),
                key=lambda r: r["median_s"])
    page = rows["serial, pageable"]
    takeaways = [
        f"Cut into chunks on several streams, copies and kernels overlap: the job ran "
        f"{fmt_ratio(serial['median_s'] / piped['median_s'], 1)} faster than step after step.",
    ]
    horner = _horner(data)
    if horner:
        takeaways.append(horner)
    takeaways.append(f"Copying from ordinary (pageable) memory made the same job "
                     f"{fmt_ratio(page['median_s'] / serial['median_s'], 1)} slower than from "
                     "pinned memory.")
    t = g.get("torch", {})
    if len(takeaways) < 3 and "busy" in t:
        takeaways.append(f"During a small network's training step the GPU was busy "
                         f"{100 * t['busy']:.0f} % of the time.")
    return pages.takeaways(takeaways, source=f"measured on {pages.plot_title(data)}")
