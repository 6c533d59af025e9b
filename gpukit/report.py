"""Markdown tables from results files: the only way a measured number reaches a page.

The site's build hook replaces ``<!-- results:NAME:VIEW -->`` in a chapter with
``render(NAME, VIEW)`` (and ``<!-- data:NAME:VIEW -->`` with ``render_data``, for
tables built from data files shipped in gpukit). A chapter's renderers live in
its own module, listed in ``RENDERER_MODULES``, and register themselves with the
``@renderer`` / ``@data_renderer`` decorators.
Every table is followed by a caption naming the hardware, date and source file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from . import bench, device

RENDERERS: dict[tuple[str, str], Callable[[str, dict], str]] = {}
DATA_RENDERERS: dict[tuple[str, str], Callable[[], str]] = {}

#: Modules that register more renderers (one per chapter); imported on first use.
RENDERER_MODULES = [
    "gpukit.kernels.mandel_bench",
    "gpukit.cloud.render",
    "gpukit.kernels.matmul_bench",
    "gpukit.train.bench",
    "gpukit.train.scaling",
    "gpukit.experiments.crossover",
    "gpukit.experiments.anatomy",
    "gpukit.experiments.pitfalls",
    "gpukit.experiments.ladder",
]


class MissingResults(LookupError):
    """No results file holds what a page asks for."""


def renderer(name: str, view: str):
    def deco(fn):
        RENDERERS[(name, view)] = fn
        return fn
    return deco


def table(header: list[str], rows: list[list], align: str | None = None) -> str:
    """A Markdown table; ``align`` is one letter per column: l, r or c."""
    align = align or "l" + "r" * (len(header) - 1)
    marks = {"l": ":--", "r": "--:", "c": ":-:"}
    lines = ["| " + " | ".join(header) + " |",
             "| " + " | ".join(marks[a] for a in align) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)


def caption(data: dict, slug: str, name: str) -> str:
    return (f"<small>Measured on {device.describe(data['machine'])}. "
            f"Source: `results/{slug}/{name}.json`.</small>")


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def fmt_num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def fmt_ratio(value: float | None, digits: int = 1) -> str:
    """A speed ratio such as ``5.1x``; below 1, two significant digits (``0.049x``, not ``0.0x``)."""
    if value is not None and 0 < value < 1:
        return f"{value:.2g}x"
    return fmt_num(value, digits) + "x"


def svg(fig) -> str:
    """A matplotlib figure as inline SVG that Markdown passes through untouched.

    Markdown treats a bare ``<svg>`` as inline HTML and rewrites the ``<style>`` element inside
    it (the plot then shows as an empty box); a ``<div>`` at the start of a line is a raw HTML
    block, kept as it is as long as it has no blank line. The figure is closed.
    """
    import io
    import re

    import matplotlib.pyplot as plt
    buf = io.StringIO()
    try:
        fig.savefig(buf, format="svg", bbox_inches="tight", facecolor="white")  # readable in dark mode too
    finally:
        plt.close(fig)  # the figure is done with: free it
    text = buf.getvalue()
    text = re.sub(r"<metadata>.*?</metadata>", "", text[text.index("<svg"):], flags=re.S)
    text = text.replace("<svg ", '<svg style="max-width: 100%; height: auto" ', 1)
    body = "\n".join(line for line in text.splitlines() if line.strip())
    return f'<div class="gpukit-plot" markdown="0">\n{body}\n</div>'


def _load_modules() -> None:
    import importlib
    for module in RENDERER_MODULES:
        importlib.import_module(module)


def data_renderer(name: str, view: str):
    """Register a table built from data shipped in gpukit (not from results/)."""
    def deco(fn):
        DATA_RENDERERS[(name, view)] = fn
        return fn
    return deco


def render_data(name: str, view: str) -> str:
    """Markdown for ``<!-- data:NAME:VIEW -->``: a table from gpukit's own data files."""
    _load_modules()
    fn = DATA_RENDERERS.get((name, view))
    if fn is None:
        raise MissingResults(f"no data renderer for {name}:{view}")
    return fn()


def render(name: str, view: str, *, root: Path | None = None) -> str:
    """Markdown for one view of one benchmark, for every machine that recorded it."""
    _load_modules()
    fn = RENDERERS.get((name, view))
    if fn is None:
        raise MissingResults(f"no renderer for results {name}:{view}")
    found = bench.load(name, root=root)
    blocks = []
    for slug, data in sorted(found.items(), key=lambda kv: (kv[1]["machine"].get("gpu") is None, kv[0])):
        try:
            body = fn(slug, data)
        except KeyError:
            continue  # this machine did not record this part (a CPU machine has no GPU rows)
        if body:
            blocks.append(body + "\n\n" + caption(data, slug, name))
    if not blocks:
        raise MissingResults(f"no results file under results/*/{name}.json has view {view!r}")
    return "\n\n".join(blocks)


# ----------------------------------------------------------------- vector add

@renderer("vector_add", "gpu")
def _vector_add_gpu(slug: str, data: dict) -> str:
    g = data["gpu"]
    rows = []
    for r in g["rows"]:
        rows.append([r["name"], fmt_time(r["first_call_s"]), fmt_time(r["median_s"]),
                     fmt_num(r["gbs"]), fmt_num(r.get("pct_of_copy"), 1) + " %",
                     fmt_num(r.get("pct_of_torch_add"), 1) + " %"])
    head = (f"**{data['machine']['gpu']['name']}**, {g['n']:,} float32 elements "
            f"({3 * g['n'] * 4 / 1e9:.1f} GB moved per add)\n\n")
    return head + table(["implementation", "first call", "median", "GB/s", "% of copy",
                         "% of torch.add"], rows)


@renderer("vector_add", "copies")
def _vector_add_copies(slug: str, data: dict) -> str:
    g = data["gpu"]
    rows = [[c["name"], fmt_time(c["median_s"]), fmt_num(c["gbs"], 1)] for c in g["copies"]]
    kernel = min(r["median_s"] for r in g["rows"] if r.get("backend"))
    e2e = g["end_to_end"]
    rows.append(["the fastest add kernel alone", fmt_time(kernel), "-"])
    rows.append([e2e["name"], fmt_time(e2e["median_s"]), "-"])
    head = f"**{data['machine']['gpu']['name']}**, arrays of {g['n'] * 4 / 2**30:.1f} GiB\n\n"
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


# ----------------------------------------------------------------- doctor

@renderer("doctor", "report")
def _doctor(slug: str, data: dict) -> str:
    m = data["machine"]
    title = m["gpu"]["name"] if m.get("gpu") else f"{m['cpu']['model']} (no GPU)"
    return f"**{title}**: `gpukit doctor` exited {0 if data['ok'] else 1}\n\n```text\n{data['report']}\n```"


@renderer("doctor", "commands")
def _doctor_commands(slug: str, data: dict) -> str:
    m = data["machine"]
    title = m["gpu"]["name"] if m.get("gpu") else f"{m['cpu']['model']} (no GPU)"
    blocks = [f"**{title}**"]
    for cmd, text in data["commands"].items():
        blocks.append(f"```console\n$ {cmd}\n{text}\n```")
    return "\n\n".join(blocks)
