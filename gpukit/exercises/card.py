"""The card at the top of the chapter: what it teaches and three measured takeaways."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num

LEARN = [
    "write twenty small CUDA kernels in numba, from one thread per element to warp shuffles",
    "guards, blocks, shared memory and barriers, reductions, scans, atomics, tiles, coalescing",
    "check each one on numba's simulator, with every memory access counted, and on a GPU against its roof",
]


@pages.card_renderer("exercises")
def card(data: dict) -> str:
    g = data["gpu"]
    sim = data["sim"]
    ok = [r for r in g["rows"] if r.get("percent_of_roof") is not None]
    copy = [r for r in ok if r["roof"] == "copy"]
    best = max(copy, key=lambda r: r["percent_of_roof"])
    worst = min(copy, key=lambda r: r["percent_of_roof"])
    half = [r for r in copy if r["percent_of_roof"] >= 50]
    passed = sum(1 for r in sim["rows"] if r["ok"] and r["score"] == r["minimum"])
    failed = [str(r["puzzle"]) for r in g["rows"] if not r["ok"]]
    takeaways = [
        f"{passed} of {len(sim['rows'])} reference solutions pass the checker on the simulator, each "
        "with the minimum score its puzzle states"
        + (f"; at full size on the GPU, puzzle {', '.join(failed)} failed." if failed else
           ", and all of them again at full size on the GPU."),
        f"They are teaching solutions, not tuned ones: {len(half)} of the {len(copy)} memory-bound "
        f"references reach at least half the device copy bandwidth, the best, puzzle {best['puzzle']} "
        f"({best['title'].lower()}), at {fmt_num(best['percent_of_roof'], 1)} %, and the lowest, puzzle "
        f"{worst['puzzle']} ({worst['title'].lower()}), {fmt_num(worst['percent_of_roof'], 1)} %.",
    ]
    mm = [r for r in ok if r["roof"] == "fp32"]
    if mm:
        takeaways.append(f"The shared-memory tiled matmul reaches {fmt_num(mm[0]['tflops'], 2)} TFLOP/s, "
                         f"{fmt_num(mm[0]['percent_of_roof'], 1)} % of the FP32 peak.")
    else:
        takeaways.append(f"The {len(sim['rows'])} simulator checks took {fmt_num(sim['process_s'], 1)} s "
                         "in one process, numba's start-up included.")
    return pages.card(LEARN, ["vector_add", "matmul"], takeaways, source=f"measured on {pages.plot_title(data)}")
