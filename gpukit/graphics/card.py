"""The card at the top of the chapter: what it teaches and three measured takeaways."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_ratio, fmt_time

LEARN = [
    "what rasterization and ray tracing compute, and why both are one small program run for "
    "millions of pixels",
    "write a path tracer once and compile it for all CPU cores and for the GPU, with the same "
    "random numbers, so both images agree pixel for pixel",
    "count ray segments per second and compare CPU and GPU on equal work",
    "spot float64 leaking into a float32 kernel in the compiled code, and measure what it costs",
]


@pages.card_renderer("graphics")
def card(data: dict) -> str:
    p = data["gpu"]
    by = {r["name"]: r for r in p["rows"]}
    plain, leaky = by["plain"], by["leaky"]
    takeaways = [
        f"The final scene of *Ray Tracing in One Weekend* at {plain['width']} x {plain['height']}, "
        f"{plain['spp']} samples per pixel, takes {fmt_time(plain['median_s'])} on the GPU (testing every "
        f"sphere; {fmt_time(by['bvh']['median_s'])} with a BVH): "
        f"{fmt_num(plain['segments_per_s'] / 1e6)} M ray segments per second, "
        f"{fmt_ratio(p['vs_all_cores'], 0)} numba on all {p['cores']} CPU cores.",
        f"One sample per pixel at {by['1 spp']['width']} x {by['1 spp']['height']} runs at "
        f"{fmt_num(1 / by['1 spp']['median_s'])} frames per second; "
        f"the noise falls as 1/√spp, from an RMSE of {p['progressive']['rows'][0]['rmse']:.3f} at 1 spp.",
        f"Two Python literals (`2.0 *`, `4.0 *`) in the hit test put "
        f"{p['ptx_f64']['leaky']['outside_sincos']} float64 instructions in the kernel's PTX (the float32 "
        f"kernel has {p['ptx_f64']['plain']['outside_sincos']}, not counting libdevice's sin/cos); its time is "
        f"{fmt_ratio(leaky['median_s'] / plain['median_s'], 2)} the float32 kernel's.",
    ]
    return pages.card(LEARN, ["vector_add", "mandelbrot"], takeaways, source=f"measured on {pages.plot_title(data)}")
