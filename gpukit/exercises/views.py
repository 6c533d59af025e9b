"""The chapter's tables and pictures: the puzzles themselves, their scores, their speed."""

from __future__ import annotations

from .. import pages
from ..pages import fmt_num, fmt_time, table


def _puzzles():
    from .puzzles import PUZZLES
    return PUZZLES


def anchor(p) -> str:
    """The anchor of a puzzle's heading on the page, ``## N. Title``."""
    from markdown.extensions.toc import slugify
    return slugify(f"{p.num}. {p.title}", "-")


def _score(s: dict | None) -> str:
    return "-" if not s else f"{s['gr']} / {s['gw']} / {s['sh']}"


#: what each roof is called in the tables
ROOF_NAME = {"copy": "copy", "fp32": "FP32 peak"}
#: below this percentage of its roof a reference is listed as far from it
FAR_PERCENT = 25.0
#: size keys that are launch shapes or input ranges, not sizes
_LAUNCH_KEYS = ("tpb", "tile", "threads", "bins", "bx", "by", "span", "offset")


def _pct(r: dict) -> str:
    """``60.9 % of copy``; ``no roof`` for a one-block puzzle; ``-`` when not measured."""
    if not r:
        return "-"
    if not r.get("ok"):
        return "failed"
    if r.get("percent_of_roof") is None:
        return "no roof" if r.get("roof") is None else "-"
    return f"{fmt_num(r['percent_of_roof'], 1)} % of {ROOF_NAME[r['roof']]}"


def _rate(r: dict) -> str:
    if r.get("gbs") is not None:
        return f"{fmt_num(r['gbs'])} GB/s"
    if r.get("tflops") is not None:
        return f"{fmt_num(r['tflops'], 2)} TFLOP/s"
    return "-"


def _size(r: dict) -> str:
    return " x ".join(f"{v:,}" for k, v in r.get("sizes", {}).items() if k not in _LAUNCH_KEYS)


def _blocks(r: dict) -> int:
    g = r.get("grid", 1)
    n = 1
    for v in (g if isinstance(g, list) else [g]):
        n *= v
    return n


def _sim_line(sim: dict) -> str:
    passed = [r for r in sim["rows"] if r["ok"] and r["score"] == r["minimum"]]
    bad = [r for r in sim["rows"] if r not in passed]
    text = (f"On numba's simulator, {len(passed)} of {len(sim['rows'])} reference solutions pass the "
            "checker at their puzzle's minimum score")
    if bad:
        text += "; " + "; ".join(f"puzzle {r['puzzle']}: {r['message'] if not r['ok'] else 'score ' + _score(r['score'])}"
                                 for r in bad)
    return text + "."


@pages.renderer("exercises", "table")
def scores(slug: str, data: dict) -> str:
    """Every puzzle: what it teaches, the minimum score, and the reference's check (on a GPU: its
    percentage of its roof; without one: the simulator's check and its time)."""
    rows = []
    sim = data["sim"]
    if "gpu" in data:
        gpu = {r["puzzle"]: r for r in data["gpu"]["rows"]}
        for p, r in zip(_puzzles(), sim["rows"]):
            g = gpu.get(p.num, {})
            pct = "no roof (one block)" if p.roof is None and g.get("ok") else _pct(g)
            rows.append([f"[{p.num}. {p.title}](#{anchor(p)})", pct + pages.dagger(g), _score(r["minimum"]),
                         p.teaches])
        return (table(["puzzle", "reference at full size, % of its roof", "minimum score (reads / writes / shared)",
                       "teaches"], rows, "lrll")
                + pages.host_bound_note(list(gpu.values())) + "\n\n" + _sim_line(sim))
    for p, r in zip(_puzzles(), sim["rows"]):
        check = "passes" if r["ok"] else f"FAILS: {r['message']}"
        rows.append([f"[{p.num}. {p.title}](#{anchor(p)})", f"{check}, {fmt_time(r['seconds'])}",
                     _score(r["minimum"]), p.teaches])
    return (table(["puzzle", "reference on the simulator, check time",
                   "minimum score (reads / writes / shared)", "teaches"], rows, "lrll")
            + f"\n\n<small>No GPU on this machine: the simulator's checks only, at the small sizes of "
              f"seed {sim['seed']}. The first check of a process includes numba's set-up.</small>")


@pages.renderer("exercises", "targets")
def targets(slug: str, data: dict) -> str:
    """The chapter's targets, met or missed, from the record."""
    sim, g = data["sim"], data["gpu"]
    n = len(sim["rows"])
    at_min = sum(1 for r in sim["rows"] if r["ok"] and r["score"] == r["minimum"])
    full = sum(1 for r in g["rows"] if r["ok"])
    timed = [r for r in g["rows"] if r["ok"] and r.get("percent_of_roof") is not None]
    roofed = [p for p in _puzzles() if p.roof is not None]

    def mark(ok: bool) -> str:
        return "**met**" if ok else "**missed**"
    rows = [["every reference passes the simulator's checker at its puzzle's minimum score",
             mark(at_min == n), f"{at_min} of {n}"],
            ["every reference verified again at full size on the GPU (outputs start as NaN, checked "
             "against NumPy in float64)", mark(full == n), f"{full} of {n}"],
            ["every puzzle with a roof timed against it in the same run", mark(len(timed) == len(roofed)),
             f"{len(timed)} of {len(roofed)}"]]
    return table(["target", "met?", "measured"], rows, "lcr")


@pages.renderer("exercises", "gpu")
def speed(slug: str, data: dict) -> str:
    """The reference solutions at full size on a GPU."""
    g = data["gpu"]
    roofs = g["roofs"]
    rows = []
    for r in g["rows"]:
        if not r["ok"]:
            rows.append([f"{r['puzzle']}. {r['title']}", "failed", "-", "-", "-", r["message"]])
            continue
        rows.append([f"{r['puzzle']}. {r['title']}" + pages.dagger(r), _pct(r), _rate(r), fmt_time(r["median_s"]),
                     fmt_time(r["first_call_s"]), _size(r)])
    head = (f"Roofs measured in the same run: device copy {fmt_num(roofs.get('copy_gbs'))} GB/s "
            f"({roofs.get('copy_timer')}), FP32 peak {fmt_num(roofs.get('fp32_tflops'), 1)} TFLOP/s "
            "(SMs x FP32 lanes x 2 x clock, from the machine record).\n\n")
    return head + table(["puzzle", "% of roof", "rate", "steady state", "first call (compiles)", "size"],
                        rows, "lrrrrr") + pages.host_bound_note(g["rows"])


@pages.renderer("exercises", "plot")
def plot(slug: str, data: dict) -> str:
    """Bars: each reference solution's percentage of its roof on a GPU, sized for a phone: each
    puzzle's name above its bar, the value at its end."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    g = data["gpu"]
    rows = [r for r in g["rows"] if r.get("percent_of_roof") is not None]
    colour = {"copy": "#1e88e5", "fp32": "#ef6c00"}
    fig, ax = plt.subplots(figsize=(5.2, 0.42 * len(rows) + 1.2))
    for y, r in enumerate(rows):
        v = r["percent_of_roof"]
        ax.barh(y, v, height=0.42, color=colour[r["roof"]])
        ax.text(0, y - 0.3, f"{r['puzzle']}. {r['title']}", fontsize=10, va="bottom")
        ax.text(v + 1, y, f"{fmt_num(v, 1)} %", fontsize=10, va="center")
    ax.set_ylim(len(rows) - 0.5, -0.95)
    ax.set_xlim(0, 100)
    ax.set_yticks([])
    ax.spines[["left", "right", "top"]].set_visible(False)
    ax.tick_params(axis="x", labelsize=10)
    ax.set_xlabel("% of roof", fontsize=10)
    roofs = g["roofs"]
    ax.legend(handles=[Patch(color=colour["copy"], label=f"device copy, {fmt_num(roofs.get('copy_gbs'))} GB/s"),
                       Patch(color=colour["fp32"], label=f"FP32 peak, {fmt_num(roofs.get('fp32_tflops'), 1)} TFLOP/s")],
              loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=1, fontsize=10, frameon=False)
    ax.set_title(f"Reference solutions at full size\n{pages.plot_title(data)}", fontsize=11, pad=44)
    out = pages.svg(fig)
    none = [r for r in g["rows"] if r["ok"] and r.get("percent_of_roof") is None]
    if none:
        times = sorted(r["median_s"] for r in none)
        hb = sum(1 for r in none if r.get("host_bound"))
        flagged = ("all flagged host-bound (†): they time the launch more than the kernel" if hb == len(none)
                   else f"{hb} of them flagged host-bound (†)")
        out += (f"\n\nLeft out: puzzles {none[0]['puzzle']} to {none[-1]['puzzle']}, one block each by "
                f"their rules and with no roof. Their steady-state times, {fmt_time(times[0])} to "
                f"{fmt_time(times[-1])} a call, are {flagged}.")
    return out


_FAR = {
    9: ("By its rules the dot product runs one block of {tpb:,} threads, and one block runs on one "
        "[SM](glossary.md#sm) of the GPU's {sms}: this is the puzzle's lesson, not a flaw of the "
        "solution. Whether one SM's "
        "loads in flight or its share of the memory system is what holds it there was not measured; "
        "many blocks joined by atomics, as in puzzle 11, are what the later puzzles do instead."),
    10: ("One element per thread in {blocks:,} blocks of {tpb}, with a barrier after each of the "
         "tree's steps. Open questions, not measured here: would each thread summing several elements "
         "first (a grid-stride loop, as in puzzle 19), or a warp-shuffle end of the tree (puzzle 20), "
         "bring it closer to the copy bandwidth?"),
    11: ("Its reference differs from puzzle 10's only in its last line, one atomic addition to "
         "`out[0]` per block instead of a store per block, and it took {dt} more a call than puzzle "
         "10's ({t10}). Whether the {blocks:,} atomics on one address account for all of that was not "
         "profiled; fewer, fuller blocks (a grid-stride loop) would make fewer of them."),
    13: ("One atomic increment per element, {n:,} of them into {bins} bins in global memory. That "
         "threads colliding on the same bins is what holds it back is a likely cause, not a measured "
         "one; the usual remedy, still to be measured here, is a histogram per block in shared "
         "memory, joined with one atomic addition per bin per block."),
    15: ("Each thread computes one element of `c` from {tile} x {tile} shared tiles, two "
         "shared-memory loads per multiply-add. The [matrix multiplication chapter](matmul.md) takes "
         "the same tiling further (register blocking, wider loads, warp tiling) and measures each step "
         "against cuBLAS; how far those steps would take this reference was not measured here."),
    17: ("Each {tile} x {tile} block loads a bordered tile of ({tile} + 2)² elements, so the halo adds "
         "loads, and each thread computes one output. Whether larger tiles or several outputs per "
         "thread would close the gap was not measured."),
}
_FAR_DEFAULT = ("Why this reference stops here was not profiled; the [profiling chapter](profiling.md) "
                "shows how to find out.")


@pages.renderer("exercises", "far")
def far(slug: str, data: dict) -> str:
    """The references far from their roof, each with its measured value and its open questions."""
    g = data["gpu"]
    by = {r["puzzle"]: r for r in g["rows"]}
    sms = data["machine"]["gpu"]["multiprocessors"]
    out = []
    for r in g["rows"]:
        if not r["ok"] or r.get("percent_of_roof") is None or r["percent_of_roof"] >= FAR_PERCENT:
            continue
        s = r["sizes"]
        t10 = by.get(10, {})
        fields = {"tpb": s.get("tpb", 0), "sms": sms, "blocks": _blocks(r), "n": s.get("n", 0),
                  "bins": s.get("bins", 0), "tile": s.get("tile", 0), "t": fmt_time(r["median_s"]),
                  "t10": fmt_time(t10.get("median_s")) if t10.get("ok") else "-",
                  "dt": fmt_time(r["median_s"] - t10["median_s"]) if t10.get("ok") else "-"}
        note = _FAR.get(r["puzzle"], _FAR_DEFAULT)
        if r["puzzle"] == 11 and not (t10.get("ok") and r["median_s"] > t10["median_s"]):
            note = _FAR_DEFAULT
        out.append(f"- **{r['puzzle']}. {r['title']}**: {_pct(r)} ({_rate(r)}, {fmt_time(r['median_s'])} a "
                   f"call). " + note.format(**fields))
    if not out:
        return f"No reference solution stayed below {fmt_num(FAR_PERCENT)} % of its roof."
    return (f"The references below {fmt_num(FAR_PERCENT)} % of their roof:\n\n" + "\n".join(out))


@pages.renderer("exercises", "launch")
def launch_shape(slug: str, data: dict) -> str:
    """Puzzle 19 against puzzle 6: the same kind of kernel, two launch shapes, measured."""
    by = {r["puzzle"]: r for r in data["gpu"]["rows"]}
    a, b = by.get(6, {}), by.get(19, {})
    if not (a.get("ok") and b.get("ok") and a.get("percent_of_roof") and b.get("percent_of_roof")):
        return ""
    top = max((r for r in data["gpu"]["rows"] if r.get("percent_of_roof") is not None),
              key=lambda r: r["percent_of_roof"])
    lead = "The highest bar is puzzle 19's saxpy" if top["puzzle"] == 19 else "Puzzle 19's saxpy"
    return (f"{lead}, a grid-stride loop over {_blocks(b):,} blocks of "
            f"{b['block']} threads: {_pct(b)}. Puzzle 6 adds 10 with one thread per element, "
            f"{_blocks(a):,} blocks of {a['block']}: {_pct(a)}. The two kernels move different bytes "
            "per element (12 and 8), so this pair does not isolate the launch shape; whether a "
            "grid-stride loop would lift puzzles 6 to 8 by as much is an open question.")


@pages.data_renderer("exercises", "flow")
def flow() -> str:
    """How a check works, as a picture."""
    steps = ["your kernel\n(a @cuda.jit file)", "fresh random inputs\n(seed printed)",
             "outputs filled\nwith NaN", "simulator: every\naccess counted", "compare, rules,\nscore",
             "on a GPU: full size,\ntimed, % of roof"]
    w, h, gap, vgap = 200, 64, 36, 34
    parts = []
    for i, text in enumerate(steps):
        row, col = divmod(i, 3)
        x, y = 10 + col * (w + gap), 10 + row * (h + vgap)
        parts.append(f'<rect x="{x}" y="{y}" rx="8" width="{w}" height="{h}" fill="{"#e3f2fd" if i < 5 else "#fff3e0"}" '
                     f'stroke="#1e88e5" stroke-width="1.5"/>')
        for j, line in enumerate(text.split("\n")):
            parts.append(f'<text x="{x + w / 2}" y="{y + 27 + 18 * j}" text-anchor="middle" font-size="15" '
                         f'font-family="sans-serif">{line}</text>')
        if col:
            parts.append(f'<line x1="{x - gap + 2}" y1="{y + h / 2}" x2="{x - 6}" y2="{y + h / 2}" '
                         f'stroke="#555" stroke-width="2" marker-end="url(#arrow)"/>')
        elif row:
            parts.append(f'<path d="M{10 + 2 * (w + gap) + w / 2},{y - vgap} v{vgap / 2} H{x + w / 2} v{vgap / 2 - 6}" '
                         f'fill="none" stroke="#555" stroke-width="2" marker-end="url(#arrow)"/>')
    width, height = 10 + 3 * (w + gap) - gap + 10, 2 * (h + vgap)
    return ('<div class="gpukit-plot" markdown="0">\n'
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" style="max-width: 100%; height: auto; background: white" role="img" '
            'aria-label="how a check works">\n<defs><marker id="arrow" markerWidth="8" markerHeight="8" '
            'refX="6" refY="3" orient="auto"><path d="M0,0 L6,3 L0,6 z" fill="#555"/></marker></defs>\n'
            + "\n".join(parts) + "\n</svg>\n</div>")


def _puzzle_view(num: int):
    def view() -> str:
        from .pictures import svg
        from .puzzles import find
        p = find(num)
        rules = "\n".join(f"- {r}" for r in p.rules)
        return (f"{p.task}\n\n{svg(num)}\n\n**Rules.**\n\n{rules}\n\n"
                f"Your kernel is `{p.kernel}({', '.join(p.args)})`; the checker launches it.\n\n"
                f'```python title="gpukit/exercises/starters/{p.file} (the starter)"\n'
                f'--8<-- "gpukit/exercises/starters/{p.file}"\n```\n\n'
                f'??? tip "Hint 1"\n    {p.hints[0]}\n\n??? tip "Hint 2"\n    {p.hints[1]}\n\n'
                f'??? success "Solution"\n    ```python title="gpukit/exercises/solutions/{p.file}"\n'
                f'    --8<-- "gpukit/exercises/solutions/{p.file}"\n    ```\n')
    return view


for _n in range(1, 21):
    pages.data_renderer("exercises", f"p{_n:02d}")(_puzzle_view(_n))
