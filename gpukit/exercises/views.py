"""The chapter's tables and pictures: the puzzles themselves, their scores, their speed."""

from __future__ import annotations

import functools

from .. import pages
from ..pages import fmt_num, fmt_time, table
from .diagrams import svg
from .meta import TEXTS, text




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
    """Every puzzle: the reference's check (on a GPU: its percentage of its roof; without one:
    the simulator's check and its time), the minimum score and what it teaches, folded."""
    rows = []
    sim = data["sim"]
    if "gpu" in data:
        gpu = {r["puzzle"]: r for r in data["gpu"]["rows"]}
        for p, r in zip(TEXTS, sim["rows"]):
            g = gpu.get(p.num, {})
            pct = "no roof (one block)" if p.roof is None and g.get("ok") else _pct(g)
            rows.append([f"[{p.num}. {p.title}](#{anchor(p)})", pct + pages.dagger(g),
                         _score(r["minimum"]), p.teaches])
        body = (table(["puzzle", "reference, % of roof", "minimum score", "teaches"], rows, "lrcl")
                + "\n\nA score is the most global reads / global writes / shared-memory "
                  "accesses of any one thread." + pages.flag_note(list(gpu.values())))
        return _sim_line(sim) + "\n\n" + pages.collapsed("The twenty puzzles: minimum scores and "
                                                        "the references' speed", body)
    for p, r in zip(TEXTS, sim["rows"]):
        check = "passes" if r["ok"] else f"FAILS: {r['message']}"
        rows.append([f"[{p.num}. {p.title}](#{anchor(p)})", f"{check}, {fmt_time(r['seconds'])}",
                     _score(r["minimum"]), p.teaches])
    body = (table(["puzzle", "reference on the simulator", "minimum score", "teaches"], rows, "lrcl")
            + f"\n\n<small>No GPU on this machine: the simulator's checks only, at the small sizes "
              f"of seed {sim['seed']}. The first check of a process includes numba's set-up.</small>")
    return _sim_line(sim) + "\n\n" + pages.collapsed("The twenty puzzles on the simulator", body)


#: what the targets ask of the reference solutions
TARGET_ALL = "all of them"
_FULL = "References verified again at full size on a GPU"
_TIMED = "Puzzles with a roof timed against it"


@pages.targets("exercises")
def targets(data: dict) -> list[pages.Target]:
    """The chapter's targets, with the measured values and verdicts, from the record."""
    sim = data["sim"]
    n = len(sim["rows"])
    at_min = sum(1 for r in sim["rows"] if r["ok"] and r["score"] == r["minimum"])
    out = [pages.Target("Reference solutions passing the simulator's checker at their "
                        "puzzle's minimum score", f"{TARGET_ALL} ({n})", f"{at_min} of {n}",
                        at_min == n)]
    g = data.get("gpu")
    if g is None:
        return out + [pages.Target(name, TARGET_ALL, "not recorded", None)
                      for name in (_FULL, _TIMED)]
    full = sum(1 for r in g["rows"] if r["ok"])
    timed = sum(1 for r in g["rows"] if r["ok"] and r.get("percent_of_roof") is not None)
    roofed = sum(1 for p in TEXTS if p.roof is not None)
    return out + [
        pages.Target(_FULL + " (outputs start as NaN, checked against NumPy in float64)",
                     f"{TARGET_ALL} ({n})",
                     f"{full} of {n}", full == n),
        pages.Target(_TIMED + " in the same run",
                     f"{TARGET_ALL} ({roofed})", f"{timed} of {roofed}", timed == roofed)]


@pages.renderer("exercises", "gpu")
def speed(slug: str, data: dict) -> str:
    """The reference solutions at full size on a GPU: the roofs, then every row, folded."""
    g = data["gpu"]
    roofs = g["roofs"]
    rows = []
    for r in g["rows"]:
        if not r["ok"]:
            rows.append([f"{r['puzzle']}. {r['title']}", "failed", "-", "-", "-", r["message"]])
            continue
        rows.append([f"{r['puzzle']}. {r['title']}" + pages.dagger(r), _pct(r), _rate(r),
                     fmt_time(r["median_s"]), fmt_time(r["first_call_s"]), _size(r)])
    head = (f"The roofs were measured in the same run: device copy "
            f"{fmt_num(roofs.get('copy_gbs'))} GB/s ({roofs.get('copy_timer')}), FP32 peak "
            f"{fmt_num(roofs.get('fp32_tflops'), 1)} TFLOP/s (SMs x FP32 lanes x 2 x clock, "
            "from the machine record).")
    body = table(["puzzle", "% of roof", "rate", "a call", "first call (compiles)", "size"],
                 rows, "lrrrrr") + pages.flag_note(g["rows"])
    return head + "\n\n" + pages.collapsed("Every reference at full size: rate, time, size", body)


#: the bars' colour for each roof
_COLOUR = {"copy": "#1e88e5", "fp32": "#ef6c00"}


@pages.renderer("exercises", "plot")
def plot(slug: str, data: dict) -> str:
    """Bars: each reference solution's percentage of its roof on a GPU, each puzzle's name
    above its bar, the value at its end (the matmul's roof is the FP32 peak, the others' the
    device copy)."""
    from matplotlib.patches import Patch
    g = data["gpu"]
    rows = [r for r in g["rows"] if r.get("percent_of_roof") is not None]
    fig, ax = pages.figure(height=0.5 * len(rows) + 1.6)
    pages.name_bars(ax, [f"{r['puzzle']}. {r['title']}" for r in rows],
                    [r["percent_of_roof"] for r in rows],
                    colors=[_COLOUR[r["roof"]] for r in rows], limit=100)
    ax.set_xlabel("% of its roof")
    roofs = g["roofs"]
    ax.legend(handles=[Patch(color=_COLOUR["copy"],
                             label=f"device copy, {fmt_num(roofs.get('copy_gbs'))} GB/s"),
                       Patch(color=_COLOUR["fp32"],
                             label=f"FP32 peak, {fmt_num(roofs.get('fp32_tflops'), 1)} TFLOP/s")],
              loc="lower left", bbox_to_anchor=(0, 1.0), ncol=1, frameon=False,
              title="roof", alignment="left")
    out = pages.svg(fig)
    none = [r for r in g["rows"] if r["ok"] and r.get("percent_of_roof") is None]
    if none:
        times = sorted(r["median_s"] for r in none)
        lb = sum(1 for r in none if r.get("launch_bound"))
        flagged = ""
        if any("launch_bound" in r for r in none):     # measured (older records lack it)
            flagged = (", all launch-bound (‡): launching them costs the host more than their "
                       "GPU work" if lb == len(none) else f", {lb} of them launch-bound (‡)")
        out += (f"\n\nLeft out: puzzles {none[0]['puzzle']} to {none[-1]['puzzle']}, one block "
                f"each by their rules and with no roof. Their steady-state times are "
                f"{fmt_time(times[0])} to {fmt_time(times[-1])} a call{flagged}.")
    return out


#: what each reference far from its roof does, measured or read from its code
_FAR = {
    9: ("By its rules the dot product runs one block of {tpb:,} threads, and one block runs on "
        "one [SM](glossary.md#sm) of the GPU's {sms}: this is the puzzle's lesson, not a flaw "
        "of the solution. Many blocks joined by atomics, as in puzzle 11, are what the later "
        "puzzles do instead."),
    10: "One element per thread in {blocks:,} blocks of {tpb}, with a barrier after each of the "
        "tree's steps.",
    11: ("Its reference differs from puzzle 10's only in its last line, one atomic addition to "
         "`out[0]` per block instead of a store per block, and it took {dt} more a call than "
         "puzzle 10's ({t10})."),
    13: "One atomic increment per element, {n:,} of them into {bins} bins in global memory.",
    15: ("Each thread computes one element of `c` from {tile} x {tile} shared tiles, two "
         "shared-memory loads per multiply-add. The [matrix multiplication chapter](matmul.md) "
         "takes the same tiling further (register blocking, wider loads, warp tiling) and "
         "measures each step against cuBLAS."),
    17: ("Each {tile} x {tile} block loads a bordered tile of ({tile} + 2)² elements, so the "
         "halo adds loads, and each thread computes one output."),
}
#: what was not measured about each reference far from its roof: an open question each
_FAR_QUESTION = {
    9: "Does one SM's loads in flight, or its share of the memory system, hold the one-block "
       "dot product where it is?",
    10: "Would each thread summing several elements first (a grid-stride loop, as in puzzle "
        "19), or a warp-shuffle end of the tree (puzzle 20), bring the block reduction closer "
        "to the copy bandwidth?",
    11: "Do the {blocks:,} atomic additions on one address account for all of the {dt} that "
        "the full reduction takes more than puzzle 10? Fewer, fuller blocks (a grid-stride "
        "loop) would make fewer of them.",
    13: "Is it threads colliding on the same bins that holds the histogram back? The usual "
        "remedy, a histogram per block in shared memory joined with one atomic addition per "
        "bin per block, is still to be measured here.",
    15: "How far would the [matrix multiplication chapter](matmul.md)'s steps take this "
        "reference?",
    17: "Would larger tiles, or several outputs per thread, close the stencil's gap?",
}
_FAR_DEFAULT = ("Why does this reference stop here? It was not profiled; the "
                "[profiling chapter](profiling.md) shows how to find out.")


def _far_rows(data: dict) -> list[tuple[dict, dict]]:
    """(row, the fields its notes use) for each reference below :data:`FAR_PERCENT`."""
    g = data["gpu"]
    by = {r["puzzle"]: r for r in g["rows"]}
    sms = data["machine"]["gpu"]["multiprocessors"]
    out = []
    for r in g["rows"]:
        if not r["ok"] or r.get("percent_of_roof") is None or r["percent_of_roof"] >= FAR_PERCENT:
            continue
        s = r["sizes"]
        t10 = by.get(10, {})
        slower = t10.get("ok") and r["median_s"] > t10["median_s"]
        fields = {"tpb": s.get("tpb", 0), "sms": sms, "blocks": _blocks(r), "n": s.get("n", 0),
                  "bins": s.get("bins", 0), "tile": s.get("tile", 0),
                  "t10": fmt_time(t10.get("median_s")) if t10.get("ok") else "-",
                  "dt": fmt_time(r["median_s"] - t10["median_s"]) if slower else "-",
                  "known": r["puzzle"] in _FAR and (r["puzzle"] != 11 or slower)}
        out.append((r, fields))
    return out


@pages.renderer("exercises", "far")
def far(slug: str, data: dict) -> str:
    """The references far from their roof, each with its measured value and what it does."""
    out = []
    for r, f in _far_rows(data):
        note = _FAR[r["puzzle"]].format(**f) if f["known"] else ""
        p = next(p for p in TEXTS if p.num == r["puzzle"])
        out.append(f"- **[{r['puzzle']}. {r['title']}](#{anchor(p)})**: {_pct(r)} ({_rate(r)}, "
                   f"{fmt_time(r['median_s'])} a call). " + note)
    if not out:
        return f"No reference solution stayed below {fmt_num(FAR_PERCENT)} % of its roof."
    return (f"The references below {fmt_num(FAR_PERCENT)} % of their roof:\n\n"
            + "\n".join(line.rstrip() for line in out))


@pages.renderer("exercises", "questions")
def questions(slug: str, data: dict) -> str:
    """What was not measured about the references' speed: one question a line."""
    back = "([far from the roof](#far-from-the-roof))"
    ref = "([the reference solutions](#the-reference-solutions-at-full-size))"
    out = []
    for r, f in _far_rows(data):
        q = _FAR_QUESTION[r["puzzle"]].format(**f) if f["known"] else _FAR_DEFAULT
        out.append(f"- **{r['puzzle']}. {r['title']}** {back}: {q}")
    by = {r["puzzle"]: r for r in data["gpu"]["rows"]}
    if by.get(16, {}).get("ok"):
        out.append(f"- **16. {by[16]['title']}** {ref}: the softmax reads each row twice. Does the "
                   "second read come from the [L2 cache](glossary.md#l2)?")
    if launch_shape(slug, data):
        out.append(f"- **Launch shape** {ref}: would a grid-stride loop lift puzzles 6 to 8 by "
                   "as much as puzzle 19's? Puzzles 6 and 19 move different bytes per element, "
                   "so they do not isolate the launch shape.")
    return "\n".join(out)


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
            f"{_blocks(a):,} blocks of {a['block']}: {_pct(a)}. The two kernels move different "
            "bytes per element (12 and 8), so this pair alone does not isolate the launch shape.")


@pages.data_renderer("exercises", "flow")
def flow() -> str:
    """How a check works, as a picture: six steps in two columns, read as a snake, narrow
    enough that a phone shows its 16 px type at 11 CSS px or more."""
    steps = ["your kernel\n(a @cuda.jit file)", "fresh random inputs\n(seed printed)",
             "outputs filled\nwith NaN", "simulator: every\naccess counted",
             "compare, rules,\nscore", "on a GPU: full size,\ntimed, % of roof"]
    w, h, gap, vgap = 190, 60, 40, 30
    arrow = 'stroke="#555" stroke-width="2" marker-end="url(#arrow)"'
    parts = []
    for i, text in enumerate(steps):
        row = i // 2
        col = i % 2 if row % 2 == 0 else 1 - i % 2
        x, y = 10 + col * (w + gap), 10 + row * (h + vgap)
        fill = "#e3f2fd" if i < 5 else "#fff3e0"
        parts.append(f'<rect x="{x}" y="{y}" rx="8" width="{w}" height="{h}" fill="{fill}" '
                     'stroke="#1e88e5" stroke-width="1.5"/>')
        for j, line in enumerate(text.split("\n")):
            parts.append(f'<text x="{x + w / 2}" y="{y + 25 + 19 * j}" text-anchor="middle" '
                         f'font-size="16" font-family="sans-serif">{line}</text>')
        if i % 2:
            x0, x1 = (10 + w, 10 + w + gap) if row % 2 == 0 else (10 + w + gap, 10 + w)
            sx, ex = (x0 + 2, x1 - 6) if x1 > x0 else (x0 - 2, x1 + 6)
            parts.append(f'<line x1="{sx}" y1="{y + h / 2}" x2="{ex}" y2="{y + h / 2}" {arrow}/>')
        elif i:
            parts.append(f'<line x1="{x + w / 2}" y1="{y - vgap + 2}" x2="{x + w / 2}" '
                         f'y2="{y - 6}" {arrow}/>')
    rows = (len(steps) + 1) // 2
    width, height = 20 + 2 * w + gap, 20 + rows * h + (rows - 1) * vgap
    return ('<div class="gpukit-plot" markdown="0">\n'
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" style="max-width: min(100%, {width}px); '
            'height: auto; background: white" role="img" aria-label="how a check works">\n'
            '<defs><marker id="arrow" markerWidth="8" markerHeight="8" refX="6" refY="3" '
            'orient="auto"><path d="M0,0 L6,3 L0,6 z" fill="#555"/></marker></defs>\n'
            + "\n".join(parts) + "\n</svg>\n</div>")


def puzzle(num: int) -> str:
    """Puzzle ``num`` on the page: what it teaches and its task, open; the picture, the rules,
    the starter, the hints and the solution folded under one line."""
    p = text(num)
    rules = "\n".join(f"- {r}" for r in p.rules)
    inner = (f"{svg(num)}\n\n**Rules.**\n\n{rules}\n\n"
             f"Your kernel is `{p.kernel}({', '.join(p.args)})`; the checker launches it.\n\n"
             f'```python title="gpukit/exercises/starters/{p.file} (the starter)"\n'
             f'--8<-- "gpukit/exercises/starters/{p.file}"\n```\n\n'
             f'??? tip "Hint 1"\n    {p.hints[0]}\n\n??? tip "Hint 2"\n    {p.hints[1]}\n\n'
             f'??? success "Solution"\n'
             f'    ```python title="gpukit/exercises/solutions/{p.file}"\n'
             f'    --8<-- "gpukit/exercises/solutions/{p.file}"\n    ```')
    return (f"*Teaches: {p.teaches}.* {p.task}\n\n"
            + pages.collapsed(f"Puzzle {num}: picture, rules, starter, hints, solution", inner))


for _t in TEXTS:          # one view per puzzle, ``<!-- data:exercises:p01 -->`` and on
    pages.data_renderer("exercises", f"p{_t.num:02d}")(functools.partial(puzzle, _t.num))
