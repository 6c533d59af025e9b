"""The three measured takeaways of the card at the top of the chapter (what it teaches
and what to read first are in the front matter of its page)."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_time


@pages.card_renderer("mandelbrot")
def card(data: dict) -> str:
    p = data["gpu"]
    plain = [r for r in p["rows"] if "median_s" in r and not r.get("contract")
             and not r.get("preallocate")]
    f64 = [r for r in plain if r["dtype"] == "float64"]
    best = max(f64, key=lambda r: r["vs_simd"])
    numba = next(r for r in f64 if r["backend"] == "numba-cuda")
    f32 = max((r for r in plain if r["dtype"] == "float32"),
              key=lambda r: r["differing_pixels"])
    cores = data["machine"]["cpu"]["usable_cpus"]
    takeaways = [
        f"On the GPU, `{best['backend']}` draws the image {fmt_num(best['vs_simd'])} times "
        f"faster than a tuned loop on all {cores} CPU cores.",
        f"numba's first GPU call, compiling included, took {fmt_time(numba['first_call_s'])}; "
        f"every call after it took {fmt_time(numba['median_s'])}.",
        f"Switching to float32 changes {100 * f32['differing_fraction']:.2f} % of the pixels "
        "of the float64 image.",
    ]
    return pages.takeaways(takeaways, source=f"measured on {pages.plot_title(data)}")
