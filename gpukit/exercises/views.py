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


@pages.renderer("exercises", "table")
def scores(slug: str, data: dict) -> str:
    """Every puzzle: what it teaches, the minimum score and the reference's simulator check."""
    rows = []
    sim = data["sim"]
    gpu = {r["puzzle"]: r for r in data["gpu"]["rows"]} if "gpu" in data else {}
    for p, r in zip(_puzzles(), sim["rows"]):
        g = gpu.get(p.num, {})
        pct = fmt_num(g.get("percent_of_roof"), 1) + " %" if g.get("percent_of_roof") is not None else "-"
        roof = {"copy": "copy", "fp32": "FP32", None: "none"}[p.roof]
        rows.append([f"[{p.num}. {p.title}](#{anchor(p)})", p.teaches,
                     _score(r["minimum"]), "passes" if r["ok"] else f"FAILS: {r['message']}",
                     fmt_time(r["seconds"]), roof] + ([pct] if gpu else []))
    head = ["puzzle", "teaches", "minimum score (reads / writes / shared)", "reference, simulator",
            "check time", "roof"] + (["reference, % of roof"] if gpu else [])
    where = ("" if gpu else f"\n\n<small>No GPU on this machine: the simulator's checks only, at the "
                            f"small sizes of seed {sim['seed']}. The first check of a process includes "
                            "numba's set-up.</small>")
    return table(head, rows, "llllrl" + ("r" if gpu else "")) + where


@pages.renderer("exercises", "gpu")
def speed(slug: str, data: dict) -> str:
    """The reference solutions at full size on a GPU."""
    g = data["gpu"]
    roofs = g["roofs"]
    rows = []
    for r in g["rows"]:
        if not r["ok"]:
            rows.append([r["puzzle"], r["title"], "-", "-", "-", "-", f"failed: {r['message']}"])
            continue
        size = " x ".join(f"{v:,}" for k, v in r["sizes"].items() if k not in ("tpb", "tile", "threads", "bins"))
        rate = (f"{fmt_num(r['gbs'])} GB/s" if "gbs" in r else f"{fmt_num(r['tflops'], 2)} TFLOP/s"
                if "tflops" in r else "-")
        pct = f"{fmt_num(r['percent_of_roof'], 1)} %" if r.get("percent_of_roof") is not None else "no roof"
        rows.append([r["puzzle"], r["title"] + pages.dagger(r), size, fmt_time(r["first_call_s"]),
                     fmt_time(r["median_s"]), rate, pct])
    head = (f"Roofs measured in the same run: device copy {fmt_num(roofs.get('copy_gbs'))} GB/s "
            f"({roofs.get('copy_timer')}), FP32 peak {fmt_num(roofs.get('fp32_tflops'), 1)} TFLOP/s "
            "(SMs x FP32 lanes x 2 x clock, from the machine record).\n\n")
    return head + table(["#", "puzzle", "size", "first call (compiles)", "steady state", "rate", "% of roof"],
                        rows, "llrrrrr") + pages.host_bound_note(g["rows"])


@pages.renderer("exercises", "plot")
def plot(slug: str, data: dict) -> str:
    """Bars: each reference solution's percentage of its roof on a GPU."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in data["gpu"]["rows"] if r.get("percent_of_roof") is not None]
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    ax.barh([f"{r['puzzle']}. {r['title']}" for r in rows], [r["percent_of_roof"] for r in rows],
            color=["#ef6c00" if r["roof"] == "fp32" else "#1e88e5" for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of roof (blue: device copy bandwidth; orange: FP32 peak)")
    ax.tick_params(axis="y", labelsize=8)
    ax.set_title(f"Reference solutions at full size, {pages.plot_title(data)}", fontsize=10)
    return pages.svg(fig)


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
