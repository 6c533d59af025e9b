"""The chapter's tables: vector add on the GPU and the CPU, copies, and the launch pitfalls."""

from __future__ import annotations

from ..pages import host_bound_note, marked, fmt_num, fmt_time, machine_title, renderer, table
from . import diagrams  # noqa: F401  (registers the "timeline" view)


@renderer("vector_add", "gpu")
def _vector_add_gpu(slug: str, data: dict) -> str:
    g = data["gpu"]
    rows = []
    for r in g["rows"]:
        rows.append([marked(r), fmt_time(r["first_call_s"]), fmt_time(r["median_s"]),
                     fmt_num(r["gbs"]), fmt_num(r.get("pct_of_copy"), 1) + " %",
                     fmt_num(r.get("pct_of_torch_add"), 1) + " %"])
    head = (f"**{machine_title(data)}**, {g['n']:,} float32 elements "
            f"({3 * g['n'] * 4 / 1e9:.1f} GB moved per add)\n\n")
    return head + table(["implementation", "first call", "median", "GB/s", "% of copy",
                         "% of torch.add"], rows) + host_bound_note(g["rows"])


@renderer("vector_add", "copies")
def _vector_add_copies(slug: str, data: dict) -> str:
    g = data["gpu"]
    rows = [[c["name"], fmt_time(c["median_s"]), fmt_num(c["gbs"], 1)] for c in g["copies"]]
    kernel = min(r["median_s"] for r in g["rows"] if r.get("backend"))
    e2e = g["end_to_end"]
    rows.append(["the fastest add kernel alone", fmt_time(kernel), "-"])
    rows.append([e2e["name"], fmt_time(e2e["median_s"]), "-"])
    head = f"**{machine_title(data)}**, arrays of {g['n'] * 4 / 2**30:.1f} GiB\n\n"
    return head + table(["operation", "median", "GB/s"], rows)


@renderer("vector_add", "pitfalls")
def _vector_add_pitfalls(slug: str, data: dict) -> str:
    p = data["gpu"]["pitfalls"]
    ceiling = data["gpu"]["ceiling_gbs"]
    rows = [
        ["kernel configured but never launched (`kernel[blocks, threads]`)", fmt_time(p["not_launched_s"]),
         fmt_num(p["not_launched_gbs"])],
        ["launched, clock stopped without synchronising", fmt_time(p["no_sync_s"]), fmt_num(p["no_sync_gbs"])],
        ["launched and timed with CUDA events (median)", fmt_time(p["events_s"]),
         fmt_num(3 * data["gpu"]["n"] * 4 / p["events_s"] / 1e9)],
        ["device copy ceiling, for comparison", "-", fmt_num(ceiling)],
    ]
    return table(["what was timed", "time", "implied GB/s"], rows)


@renderer("vector_add", "cpu")
def _vector_add_cpu(slug: str, data: dict) -> str:
    c = data["cpu"]
    cpu = data["machine"]["cpu"]
    rows = [[r["name"], fmt_time(r["median_s"]), fmt_num(r["gbs"], 1),
             fmt_num(r.get("pct_of_copy"), 0) + " %" if r.get("pct_of_copy") else "-"] for r in c["rows"]]
    head = f"**{cpu['model']}** ({cpu['usable_cpus']} cores usable), {c['n']:,} float32 elements\n\n"
    return head + table(["implementation", "median", "GB/s", "% of host copy"], rows)
