"""The card at the top of the chapter: what it teaches and three measured takeaways."""

from __future__ import annotations

from gpukit import pages, results
from gpukit.pages import fmt_ratio, fmt_time

LEARN = [
    "run Nsight Compute (`ncu`) on one kernel and read the few numbers that say what limits it",
    "read the PyTorch profiler's kernel table and how busy the GPU was during a training step",
    "overlap copies with kernels on CUDA streams with pinned memory, and measure the result "
    "against its ideal bound",
    "what pageable and managed (unified) memory cost on the same job",
]

#: the chapter's target for the pipelined job (the same as the page's target view)
TARGET_VS_IDEAL = 1.2


def _horner(reference: str) -> str | None:
    """The profile of numba's Horner loop against the FP32 peak, where both were recorded."""
    prof = results.load("profiles").get(reference)
    why = results.load("why_gpus").get(reference)
    rows = (prof or {}).get("gpu", {}).get("rows") or []
    r = next((x for x in rows if x["name"] == "why-gpus-horner"), None)
    peak = ((why or {}).get("hardware", {}).get("gpu") or {}).get("peak_tflops")
    if not r or not peak or not r.get("tflops"):
        return None
    best = max((x for x in (why.get("poly_kernels") or {}).get("rows", []) if x.get("elems")),
               key=lambda x: x["tflops"], default=None)
    text = (f"Nsight Compute found numba's Horner loop busy rather than waiting: SM throughput "
            f"{r['sm_pct']:.0f} % of peak, yet its multiply-adds ran at {100 * r['tflops'] / peak:.1f} % of the "
            "FP32 peak")
    if best:
        text += f"; the unrolled CUDA C kernel of the why-GPUs chapter reached {best['tflops']:.1f} TFLOP/s"
    return text + " (from `profiles.json` and `why_gpus.json`)."


@pages.card_renderer("profiling")
def card(data: dict) -> str:
    g = data["gpu"]
    rows = {r["name"]: r for r in g["rows"]}
    serial = rows["serial, pinned"]
    piped = min((r for r in g["rows"] if r["pinned"] and r["streams"] > 1), key=lambda r: r["median_s"])
    best = min(g["sweep"], key=lambda s: s["vs_ideal"])
    met = min(best["vs_ideal"], piped["vs_ideal"]) <= TARGET_VS_IDEAL
    page = rows["serial, pageable"]
    takeaways = [
        f"Copy in, kernel and copy out of {g['bytes'] / 2**30:.0f} GiB took {fmt_time(serial['median_s'])} "
        f"one after the other; in {piped['chunks']} chunks on {piped['streams']} streams, "
        f"{fmt_time(piped['median_s'])}: {fmt_ratio(serial['median_s'] / piped['median_s'], 2)} faster, "
        f"{fmt_ratio(piped['vs_ideal'], 2)} the ideal bound (best of the chunk sweep "
        f"{fmt_ratio(best['vs_ideal'], 2)}): the {fmt_ratio(TARGET_VS_IDEAL, 1)} target was "
        f"{'met' if met else 'missed'}.",
    ]
    horner = _horner(results.reference_machine())
    if horner:
        takeaways.append(horner)
    managed = {r["name"]: r for r in g.get("managed", {}).get("rows", []) if "error" not in r}
    text = (f"From pageable memory the serial job took {fmt_ratio(page['median_s'] / serial['median_s'], 2)} "
            "the pinned time")
    faults, pre = managed.get("managed, page faults"), managed.get("managed, prefetched")
    if faults and pre:
        text += (f"; managed memory, {fmt_ratio(faults['median_s'] / serial['median_s'], 2)} with page "
                 f"faults and {fmt_ratio(pre['median_s'] / serial['median_s'], 2)} with prefetching")
    takeaways.append(text + ".")
    t = g.get("torch", {})
    if len(takeaways) < 3 and "busy" in t:
        takeaways.append(f"During a small CNN's training step the profiler's device intervals covered "
                         f"{100 * t['busy']:.0f} % of the profiled span.")
    return pages.card(LEARN, ["vector_add", "timing", "matmul"], takeaways,
                      source=f"measured on {pages.plot_title(data)}")
