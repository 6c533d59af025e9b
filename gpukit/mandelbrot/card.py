"""The card at the top of the chapter: what it teaches and three measured takeaways."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_time

LEARN = [
    "compute the Mandelbrot set with NumPy, with numba on one core and on all cores, and on the "
    "GPU with numba, CuPy and torch, and check that every image is the same to the last pixel",
    "measure the first call (import, GPU context, compiling) apart from the calls after it",
    "why a decorator many tutorials use never ran on a GPU",
    "why a GPU draws a slightly different picture unless you ask for exact arithmetic",
]


@pages.card_renderer("mandelbrot")
def card(data: dict) -> str:
    p = data["gpu"]
    plain = [r for r in p["rows"] if "median_s" in r and not r.get("contract") and not r.get("preallocate")]
    f64 = [r for r in plain if r["dtype"] == "float64"]
    best = max(f64, key=lambda r: r["vs_simd"])
    numba = next(r for r in f64 if r["backend"] == "numba-cuda")
    cold, warm = (next(c for c in p["cache"] if c["case"].startswith(w)) for w in ("empty", "warm"))
    f32 = max((r for r in plain if r["dtype"] == "float32"), key=lambda r: r["differing_pixels"])
    fma = max((r for r in p["rows"] if r.get("contract") and "median_s" in r), key=lambda r: r["differing_pixels"])
    takeaways = [
        f"On {p['size']} x {p['size']} pixels in float64, `{best['backend']}` on the GPU is "
        f"{fmt_num(best['vs_simd'])}x faster than a tuned SIMD loop on all CPU cores, and its image is "
        + ("identical" if best["differing_pixels"] == 0 else f"{best['differing_pixels']:,} pixels off") + ".",
        f"numba's first GPU call took {fmt_time(numba['first_call_s'])} against {fmt_time(numba['median_s'])} "
        f"for each call after it; with `cache=True`, the first call in a new process drops from "
        f"{fmt_time(cold['first_call_s'])} (compiling) to {fmt_time(warm['first_call_s'])} (loading).",
        f"float32 changes {f32['differing_pixels']:,} pixels ({100 * f32['differing_fraction']:.2f} %) of "
        f"the float64 image; float64 with fused multiply-adds still changes {fma['differing_pixels']:,}.",
    ]
    return pages.card(LEARN, ["vector_add", "timing"], takeaways, source=f"measured on {pages.plot_title(data)}")
