"""The card at the top of the chapter: what it teaches and three measured takeaways."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_time

from .measure import NAME

LEARN = [
    "why a clock must wait for the GPU, and how CUDA events time what the GPU did",
    "why the first call and a fresh process are not the kernel's speed",
    "which question a time with or without the copies answers, and why one run tells you little",
    "how caches and zeros flatter a benchmark, and which tools time GPU code right",
]


@pages.card_renderer(NAME)
def card(data: dict) -> str:
    nosync = data["nosync"]
    wrong = next(r for r in nosync["rows"] if r["kind"] == "wrong" and r["name"].startswith("torch"))
    events = next(r for r in nosync["rows"] if r["kind"] == "right" and "events" in r["name"]
                  and r["name"].startswith("torch"))
    first = next(r for r in data["first_call"]["rows"] if r["name"] == "numba-cuda")
    moves = data["transfers"]["rows"]
    kernel = next(r for r in moves if r["question"] == "kernel")
    copies = max((r for r in moves if r["question"] == "answer" and "copies" in r["name"]),
                 key=lambda r: r["median_s"])
    cpu = next((r for r in moves if r["name"].startswith("CPU")), None)
    takeaways = [
        f"A host clock that does not wait read {fmt_time(wrong['median_s'])} for a SAXPY the GPU "
        f"takes {fmt_time(events['median_s'])} for: {fmt_num(wrong['gbs'])} GB/s, "
        f"{fmt_num(wrong['gbs'] / nosync['peak_gbs'])} times the memory's peak. Impossible, so wrong.",
        f"numba's first call took {fmt_time(first['first_call_s'])}, {fmt_num(first['first_over_steady'])} "
        f"times a steady call ({fmt_time(first['median_s'])}); from process start to the first result, "
        f"{fmt_time(first['to_first_result_s'])}.",
        f"The same SAXPY takes {fmt_time(kernel['median_s'])} on data already on the GPU and "
        f"{fmt_time(copies['median_s'])} ({fmt_num(copies['ratio_to_kernel'])}x) from NumPy arrays "
        f"and back" + (f"; on the CPU ({cpu['name'].removeprefix('CPU: ')}), {fmt_time(cpu['median_s'])}"
                       if cpu else "") + ": say which question a time answers.",
    ]
    return pages.card(LEARN, ["vector_add"], takeaways, source=f"measured on {pages.plot_title(data)}")
