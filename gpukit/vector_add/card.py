"""The card at the top of the chapter: what it teaches and three measured takeaways."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_time

LEARN = [
    "write `out[i] = x[i] + y[i]` in numba, CuPy (two ways) and CUDA C, and call torch's version",
    "launch a kernel over every element, and check every element against a reference",
    "how close each kernel gets to the memory's bandwidth ceiling",
    "why the copies to and from the GPU decide whether it helps, and how a kernel that never "
    "ran can look infinitely fast",
]


@pages.card_renderer("vector_add")
def card(data: dict) -> str:
    g = data["gpu"]
    kernels = [r for r in g["rows"] if r.get("backend") and r["backend"] != "torch"]
    best = max(kernels, key=lambda r: r["gbs"])
    plain = next(r for r in kernels if r["backend"] == "numba-cuda")
    fastest = min(r["median_s"] for r in g["rows"] if r.get("backend"))
    e2e, pit = g["end_to_end"], g["pitfalls"]
    copy_in = next(c for c in g["copies"] if c["name"] == "host to device, pageable")
    takeaways = [
        f"Your own kernel can match the library: *{best['name']}* moves {fmt_num(best['gbs'])} GB/s, "
        f"{fmt_num(best['pct_of_torch_add'], 1)} % of `torch.add`; the plain *{plain['name']}* kernel "
        f"{fmt_num(plain['gbs'])} GB/s ({fmt_num(plain['pct_of_torch_add'], 1)} %).",
        f"The copies cost far more than the add: with {g['n'] * 4 / 2**30:.0f} GiB arrays in pageable "
        f"host memory, copying them in, adding and copying the result out takes "
        f"{fmt_time(e2e['median_s'])}, the add alone {fmt_time(fastest)} ({e2e['median_s'] / fastest:,.0f}x less); host to device moves "
        f"{fmt_num(copy_in['gbs'], 1)} GB/s.",
        f"A kernel configured but never launched \"takes\" {fmt_time(pit['not_launched_s'])}, which "
        f"would mean {fmt_num(pit['not_launched_gbs'])} GB/s, {fmt_num(pit['not_launched_gbs'] / g['ceiling_gbs'])} "
        f"times the memory's ceiling: check that it ran, and check its output.",
    ]
    return pages.card(LEARN, ["why_gpus", "gpu_anatomy", "[Installing CUDA](installing-cuda.md)"], takeaways,
                      source=f"measured on {pages.plot_title(data)}")
