"""The chapter's tables: vector add on the GPU and the CPU, copies, and the launch pitfalls."""

from __future__ import annotations

from .. import pages
from ..pages import (NotRecorded, dagger, fmt_num, fmt_time, flag_note, machine_title, marked,
                     renderer, table)
from .meta import NO_OUT, NO_OUT_BEFORE, NUMBA_TARGET_GOAL, VEC16
from . import diagrams  # noqa: F401  (registers the "timeline" view)


@renderer("vector_add", "gpu")
def _vector_add_gpu(slug: str, data: dict) -> str:
    g = data["gpu"]
    rows = []
    for r in g["rows"]:
        rows.append([marked(r), fmt_num(r.get("pct_of_torch_add"), 1) + " %", fmt_num(r["gbs"]),
                     fmt_time(r["median_s"]), fmt_time(r.get("host_median_s")),
                     fmt_time(r["first_call_s"])])
    head = (f"**{machine_title(data)}**, {g['n']:,} float32 elements "
            f"({3 * g['n'] * 4 / 1e9:.1f} GB moved per add)\n\n")
    return head + table(["implementation", "of torch.add", "GB/s", "median", "host per call",
                         "first call"], rows) + flag_note(g["rows"])




def _allocates(r: dict) -> bool:
    return bool(r.get("allocates")) or r["name"] in (NO_OUT, NO_OUT_BEFORE)


def public_default(g: dict) -> dict | None:
    """The public API's default numba row with ``out=``: the 16-byte kernel where recorded,
    else (records made before it) the grid-stride loop, then the default."""
    rows = {r["name"]: r for r in g["rows"]}
    return rows.get(VEC16) or rows.get("numba.cuda grid-stride")


@renderer("vector_add", "numba-api")
def _vector_add_numba_api(slug: str, data: dict) -> str:
    """numba through the public API: its share of torch.add and its host time per call, with
    ``out=`` (the table's rows) and without (a row of its own, where recorded)."""
    g = data["gpu"]
    rows = [r for r in g["rows"] if r.get("backend") == "numba-cuda"]
    torch = next((r for r in g["rows"] if r.get("backend") == "torch"), None)
    given = [r for r in rows if not _allocates(r) and not r.get("direct")]
    if not given or torch is None or torch.get("host_median_s") is None:
        raise NotRecorded("numba rows")
    share = sorted(r["pct_of_torch_add"] for r in given)
    host = sorted(r["host_median_s"] for r in given)
    text = (f"Called through `vector_add` with `out=`, back to back, numba's kernels reach "
            f"{_span(share, '{:.0f}')} % of `torch.add`, and each call costs "
            f"{_span([fmt_time(h) for h in host])} of host time against torch's "
            f"{fmt_time(torch['host_median_s'])}.")
    direct = next((r for r in rows if r.get("direct")), None)
    vec = next((r for r in rows if r["name"] == VEC16), None)
    if direct and vec:
        text += (f" The same 16-byte kernel launched as `kernel[blocks, threads](x, y, out)`, "
                 f"where numba types the three arrays on every call, costs "
                 f"{fmt_time(direct['host_median_s'])} of host time per call; through "
                 f"`vector_add`, which checks the arrays (kind, shape, dtype, layout, alignment) "
                 f"and tells numba their types, {fmt_time(vec['host_median_s'])}.")
    alloc = next((r for r in rows if _allocates(r) and r.get("pooled") is not False), None)
    fresh = next((r for r in rows if r.get("pooled") is False), None)
    if alloc and alloc.get("pooled"):
        text += (f" Without `out=`, the natural call, the result comes from gpukit's pool of "
                 f"device buffers (a buffer returns to it when its array is dropped): "
                 f"{alloc['pct_of_torch_add']:.0f} % of `torch.add`, "
                 f"{fmt_time(alloc['host_median_s'])} of host time per call.")
        if fresh:
            text += (f" With a new `cuda.device_array` for the result on every call, which is what "
                     f"numba does without a pool, {fresh['pct_of_torch_add']:.0f} % and "
                     f"{fmt_time(fresh['host_median_s'])} of host time per call.")
    elif alloc:
        text += (f" Without `out=`, the natural call, it reaches {alloc['pct_of_torch_add']:.0f} % of "
                 f"`torch.add`: numba allocates the result in device memory on every call, "
                 f"{fmt_time(alloc['host_median_s'])} of host time per call.")
    else:
        text += (" Without `out=`, the natural call, numba allocates the result in device memory "
                 "on every call, which costs far more host time than the launch (this record has "
                 "no row for it yet).")
    return text


@pages.targets("vector_add")
def targets(data: dict) -> list[pages.Target]:
    row = public_default(data["gpu"])
    value = None if row is None else row.get("pct_of_torch_add")
    return [pages.Target("vector add, numba through the public API with out=, back to back "
                         + ("(16-byte vectors, the default)" if row and row["name"] == VEC16
                            else "(grid-stride loop, the default then)"),
                         f">= {NUMBA_TARGET_GOAL:.0f} % of torch.add",
                         "not recorded" if value is None else f"{value:.1f} %",
                         None if value is None else value >= NUMBA_TARGET_GOAL)]


def _span(values: list, form: str = "{}") -> str:
    """``a-b`` from the smallest to the largest of sorted values (one value if they agree)."""
    lo, hi = form.format(values[0]), form.format(values[-1])
    return lo if lo == hi else f"{lo} to {hi}"


@renderer("vector_add", "gpu-plot")
def _vector_add_gpu_plot(slug: str, data: dict) -> str:
    """The same rows as bars: how close each implementation gets to a plain device copy."""
    from .. import pages
    g = data["gpu"]
    # the kernel[...] launch is the 16-byte kernel again: its bar would repeat that one
    rows = [r for r in g["rows"] if r.get("gbs") and not r.get("direct")]
    copy = next((r["gbs"] for r in rows if r["name"] == "device copy"), None)
    rows = [r for r in rows if r["name"] != "device copy"]
    # each name above its bar, not beside it: the plot keeps its width on a phone
    fig, ax = pages.figure(height=0.72 * len(rows) + 1.4)
    top = max(r["gbs"] for r in rows + ([{"gbs": copy}] if copy else []))
    for y, r in enumerate(rows):
        ax.barh(y, r["gbs"], color="#2e7d32", height=0.42)
        ax.text(0, y - 0.26, r["name"], va="bottom")
        ax.text(r["gbs"], y, f"{r['gbs']:,.0f}" + dagger(r) + " ",
                va="center", ha="right", color="white")
    if copy:
        ax.axvline(copy, color="#d32f2f", linestyle="--", linewidth=1.2)
        ax.text(copy, -0.85, f"device copy {copy:,.0f}", ha="right", va="bottom",
                color="#d32f2f")
    ax.set_xlim(0, top * 1.05)
    ax.set_ylim(len(rows) - 0.5, -1.0)
    ax.set_yticks([])
    ax.set_xlabel("GB/s, three arrays per add")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    return '<figure class="gpukit-plot">\n' + pages.svg(fig) + "\n</figure>"


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
    rows = [[r["name"], fmt_num(r["gbs"], 1), fmt_time(r["median_s"]),
             fmt_num(r.get("pct_of_copy"), 0) + " %" if r.get("pct_of_copy") else "-"] for r in c["rows"]]
    head = f"**{cpu['model']}** ({cpu['usable_cpus']} cores usable), {c['n']:,} float32 elements\n\n"
    return head + table(["implementation", "GB/s", "median", "of the one-thread copy"], rows)
