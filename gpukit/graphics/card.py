"""The card at the top of the chapter: what it teaches and three measured takeaways."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_ratio, fmt_time

LEARN = [
    "what rasterization and ray tracing compute, and why both are one small program run for "
    "millions of pixels",
    "write a path tracer once and compile it for all CPU cores and for the GPU, with the same "
    "random numbers, so that the two images can be compared pixel by pixel",
    "count ray segments per second and compare CPU and GPU on equal work, with and without a "
    "bounding volume hierarchy",
    "spot float64 leaking into a float32 kernel in the compiled code, and measure what it costs",
]


def _met(ok: bool) -> str:
    return "meets" if ok else "misses"


@pages.card_renderer("graphics")
def card(data: dict) -> str:
    from .views import GOALS, cpu_note
    p = data["gpu"]
    by = {r["name"]: r for r in p["rows"]}
    plain, leaky, tree = by["plain"], by["leaky"], by["bvh"]
    one = by.get("1 spp, BVH")
    shared = (f", {fmt_time(by['shared']['median_s'])} with the spheres staged in shared memory"
              if "shared" in by else "")
    if one:
        fps = 1 / one["median_s"]
        realtime = (f"One sample per pixel at {one['width']} x {one['height']} with the BVH runs at "
                    f"{fmt_num(fps)} frames per second ({_met(fps >= GOALS['fps_1spp'])} the target of "
                    f"{GOALS['fps_1spp']}).")
    else:                                       # recorded before the 1-spp BVH frame was timed
        realtime = ""
    takeaways = [
        f"The final scene of *Ray Tracing in One Weekend* at {tree['width']} x {tree['height']}, "
        f"{tree['spp']} samples per pixel, takes **{fmt_time(tree['median_s'])}** on the GPU with a BVH, "
        f"{fmt_num(tree['segments_per_s'] / 1e9, 2)} G ray segments per second "
        f"({_met(tree['median_s'] <= GOALS['frame_s'] and tree['segments_per_s'] >= GOALS['segments_per_s'])} "
        f"the 40 ms and 2 G targets); testing every sphere takes {fmt_time(plain['median_s'])}{shared}.",
        (f"Per ray segment, with the same hit test on both sides, the GPU is "
         f"{fmt_ratio(p['vs_all_cores'], 0)} numba on all {p['cores']} CPU cores testing every sphere and "
         f"{fmt_ratio(p['bvh_vs_all_cores_bvh'], 0)} with a BVH ({cpu_note(p)}). " + realtime).strip(),
        f"Two Python literals (`2.0 *`, `4.0 *`) in the hit test put "
        f"{p['ptx_f64']['leaky']['outside_sincos']} float64 instructions in the kernel's PTX (the float32 "
        f"kernel has {p['ptx_f64']['plain']['outside_sincos']}, not counting libdevice's sin/cos) and make "
        f"the frame {fmt_ratio(leaky['median_s'] / plain['median_s'], 2)} as long.",
    ]
    return pages.card(LEARN, ["vector_add", "mandelbrot"], takeaways, source=f"measured on {pages.plot_title(data)}")
