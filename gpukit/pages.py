"""Page helpers: views of results files, the only way a measured number reaches a page.

The site's build hook replaces ``<!-- results:NAME:VIEW -->`` in a chapter with
``render(NAME, VIEW)`` (and ``<!-- data:NAME:VIEW -->`` with ``render_data``, for
tables built from data files shipped in gpukit). A chapter's views live in its own
``gpukit/<slug>/views.py`` (found through :data:`gpukit.results.CHAPTERS`) and register
themselves with the ``@renderer`` / ``@data_renderer`` decorators.

A view of a machine that did not record a part says so by raising :class:`NotRecorded`
(reading a missing top-level part of the file does that by itself); any other error
fails the build. Every block is followed by a caption naming the hardware, date,
code version and source file. The reference machine's block comes first and open; other
machines' blocks follow, each collapsed under "Also measured on ...". Also here: Markdown
tables, number formats, inline SVG plots, the machine titles that the views share, and
:func:`card`, the box at the top of a chapter (its fixed lines from the page's front matter,
its takeaways from the ``card`` view).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import device, results

RENDERERS: dict[tuple[str, str], Callable[[str, dict], str]] = {}
DATA_RENDERERS: dict[tuple[str, str], Callable[[], str]] = {}

#: core modules with views of their own; the chapters' come from gpukit.results.CHAPTERS
CORE_VIEW_MODULES = ["gpukit.doctor"]


@dataclass
class Target:
    """One target of the project: what was aimed at, the measured value and the verdict."""
    name: str         # what is measured, e.g. "Triton tl.dot, bf16 8192^3"
    goal: str         # the target as words, e.g. ">= 95 % of cuBLAS"
    value: str        # the measured value as shown, e.g. "96.1 %"
    met: bool | None  # None: not judged (not recorded)


#: results name -> fn(data) -> list[Target], drawn from the reference machine's file
TARGETS: dict[str, Callable[[dict], list[Target]]] = {}


def targets(name: str):
    """Register ``fn(data) -> list[Target]`` for results ``name`` (the reference machine's file):
    the chapter's targets, listed with their verdicts on the scorecard page, not in its prose."""
    def deco(fn):
        TARGETS[name] = fn
        return fn
    return deco


class MissingResults(LookupError):
    """No results file holds what a page asks for."""


class NotRecorded(LookupError):
    """This machine's results file does not hold the part a view needs (a CPU machine has no
    GPU rows, say): the view shows nothing for that machine."""


class Record(dict):
    """A results file as loaded, where a missing top-level part raises :class:`NotRecorded`
    instead of KeyError: a view may skip a machine only for a part it did not record, never
    for a typo deeper down.

    ``root`` is the results folder it was read from (None: the project's), so that a view which
    also reads another file (:meth:`other`) reads it from the same folder."""

    root: Path | None = None

    def __getitem__(self, key):
        try:
            return dict.__getitem__(self, key)
        except KeyError:
            raise NotRecorded(key) from None

    @property
    def machine_slug(self) -> str | None:
        """The machine that made the record: the name of its folder under the results root."""
        return (dict.get(self, "machine") or {}).get("slug")

    def other(self, name: str) -> Record | None:
        """The same machine's record of results ``name``, from the same results folder; None
        where that machine did not record it."""
        found = results.load(name, root=self.root).get(self.machine_slug)
        if found is None:
            return None
        record = Record(found)
        record.root = self.root
        return record

    def file(self, name: str) -> bytes:
        """A file saved beside this record (through :data:`gpukit.results.FILES`)."""
        if Path(name).name != name or not self.machine_slug:
            raise ValueError(f"no file {name!r} beside a record of machine {self.machine_slug!r}")
        return (Path(self.root or results.results_dir()) / self.machine_slug / name).read_bytes()


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
    """Where a block's numbers come from: machine, date, code version, file (and any part
    re-measured later, with its own date and commit)."""
    text = f"Measured on {device.describe(data['machine'])}{_code(data.get('code'))}"
    for part, stamp in sorted((data.get("stamps") or {}).items()):
        text += (f"; part `{part}` re-measured {stamp['machine'].get('date', '')[:10]}"
                 f"{_code(stamp.get('code'))}")
    return f"<small>{text}. Source: `results/{slug}/{name}.json`.</small>"


def _code(code: dict | None) -> str:
    if not code or not code.get("commit"):
        return ""
    return f"; gpukit {code['gpukit']} at {code['commit'][:7]}{' (modified)' if code.get('dirty') else ''}"


def machine_title(data: dict, *, cores: bool = True) -> str:
    """The GPU's name, or the CPU model (with its usable cores) on a machine without one."""
    m = data["machine"]
    if m.get("gpu"):
        return m["gpu"]["name"]
    cpu = m["cpu"]
    if cores:
        return f"{cpu['model']} ({cpu['usable_cpus']} cores usable, no GPU)"
    return f"{cpu['model']} (no GPU)"


def plot_title(data: dict) -> str:
    """What a plot's title names: the machine and the date it was measured."""
    return f"{machine_title(data, cores=False)}, {data['machine']['date'][:10]}"


def dagger(row: dict) -> str:
    """`` †`` when a row's call waited for the GPU, `` ‡`` when launching it costs at least half
    its GPU time (both measured by ``gpukit.bench``, see :func:`flag_note`), else ``""``."""
    if row.get("blocks"):
        return " †"
    return " ‡" if row.get("launch_bound") else ""


def marked(row: dict) -> str:
    """A row's name, with its flag (see :func:`dagger`)."""
    return row["name"] + dagger(row)


def flag_note(rows: list[dict]) -> str:
    """The notes under a table whose rows carry a flag of :func:`dagger`, else ``""``.

    Records made before the flags were measured directly carry an older ``host_bound`` key,
    which compared host and event times and was wrong both ways; it is not shown."""
    notes = []
    if any(r.get("blocks") for r in rows):
        notes.append("† The call waits for the GPU: made behind a kernel that keeps the GPU "
                     "busy, it returned only after that kernel ended. Its time is a round trip "
                     "through the host, not the GPU's work alone.")
    if any(r.get("launch_bound") and not r.get("blocks") for r in rows):
        notes.append("‡ Launch-bound: with room in the GPU's queue, launching this call alone "
                     "costs the host at least half of its GPU time, so back to back the GPU "
                     "waits for the host.")
    return "".join("\n\n" + n for n in notes)


def command_block(words: list[str], width: int = 88) -> str:
    """A console block typing the command ``words``, broken with `` \\`` so no line is longer
    than ``width`` columns (a long argument keeps a line of its own)."""
    lines, line = [], "$"
    for word in words:
        if len(line) + 1 + len(word) > width - 2 and line not in ("$", "   "):
            lines.append(line + " \\")
            line = "   "
        line += " " + word
    lines.append(line)
    return "```console\n" + "\n".join(lines) + "\n```"


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


def fmt_pct(value: float | None, digits: int = 1, *, fraction: bool = False) -> str:
    """``61.3 %`` from a percentage (or from a fraction, ``fraction=True``); ``-`` for None."""
    if value is None:
        return "-"
    return f"{100 * value if fraction else value:.{digits}f} %"


def fmt_ratio(value: float | None, digits: int = 1) -> str:
    """A speed ratio such as ``5.1x``; below 1, two significant digits (``0.049x``, not ``0.0x``)."""
    if value is None:
        return "-"
    if 0 < value < 1:
        return f"{value:.2g}x"
    return fmt_num(value, digits) + "x"


#: every plot is drawn this wide (inches) and no text in it is smaller than MIN_FONT_PT: on a
#: 390 px phone the plot shrinks to about 350 px, which keeps every letter at 11 CSS px or more
FIGURE_WIDTH_IN = 5.0
MIN_FONT_PT = 11.5
#: check plots not made by :func:`figure` too (True once every view draws through it)
CHECK_EVERY_FIGURE = True


class FigureError(ValueError):
    """A plot that a phone could not read: text too small, or two labels on top of each other."""


def _unshown_tick_labels(fig) -> set[int]:
    """Ids of the tick labels outside their axis' range: matplotlib keeps them, never draws them."""
    hidden = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            slack = 1e-9 * max(abs(lo), abs(hi), 1.0)
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not lo - slack <= tick.get_loc() <= hi + slack:
                    hidden.update((id(tick.label1), id(tick.label2)))
    return hidden


def figure(nrows: int = 1, ncols: int = 1, *, height: float = 3.4, **kwargs):
    """``(fig, axes)`` from ``plt.subplots``, :data:`FIGURE_WIDTH_IN` wide, with the project's
    type sizes: the one way a view starts a plot (no display needed, text kept as SVG text)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    style = {"font.size": 13, "axes.titlesize": 13, "axes.labelsize": 13, "xtick.labelsize": 12.5,
             "ytick.labelsize": 12.5, "legend.fontsize": 12.5, "figure.titlesize": 13,
             "svg.fonttype": "none", "font.family": ["DejaVu Sans", "sans-serif"]}
    matplotlib.rcParams.update(style)   # also for the legends and labels added after this call
    fig, axes = plt.subplots(nrows, ncols, figsize=(FIGURE_WIDTH_IN, height), **kwargs)
    fig.gpukit_checked = True
    return fig, axes


def name_bars(ax, names: list[str], values: list[float], *, colors=None, unit: str = " %",
              limit: float | None = None) -> None:
    """Horizontal bars, top to bottom in the order given, each with its name written above it and
    its value at its end: on a phone, names as tick labels would widen the plot and shrink its
    type. ``limit`` is the axis' end (default: room for the longest value's label)."""
    n = len(names)
    ys = [2 * (n - 1 - i) for i in range(n)]
    ax.barh(ys, values, height=0.8, color=colors or "#4c72b0")
    top = limit or max(values + [1]) * 1.2
    for y, name, v in zip(ys, names, values):
        ax.text(0, y + 0.55, name, va="bottom", ha="left")
        ax.text(v + top * 0.01, y, f"{v:,.0f}{unit}", va="center")
    ax.set_yticks([])
    ax.set_ylim(-0.8, 2 * n - 0.2)
    ax.set_xlim(0, top)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)


def check_figure(fig) -> None:
    """Raise :class:`FigureError` if ``fig`` is wider than :data:`FIGURE_WIDTH_IN`, holds visible
    text smaller than :data:`MIN_FONT_PT`, or two visible texts whose boxes overlap."""
    width = fig.get_figwidth()
    if width > FIGURE_WIDTH_IN + 1e-6:
        raise FigureError(f"plot is {width:.1f} in wide; at most {FIGURE_WIDTH_IN} in (use pages.figure)")
    fig.draw_without_rendering()   # lay out legends and tick labels before measuring them
    renderer = fig.canvas.get_renderer()
    # what is saved is the tight box around everything drawn: a legend or label outside the axes
    # widens it, and the wider it is, the more a phone shrinks its type
    drawn = fig.get_tightbbox(renderer).width
    if drawn > FIGURE_WIDTH_IN + 0.1:
        raise FigureError(f"what the plot draws is {drawn:.1f} in wide (a legend or label outside "
                          f"the axes?); at most {FIGURE_WIDTH_IN} in, or a phone shrinks its type")
    texts = [t for t in fig.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text"))
             if t.get_visible() and t.get_text().strip() and t.get_figure() is fig]
    boxes = []
    hidden = _unshown_tick_labels(fig)
    for t in texts:
        if id(t) in hidden:
            continue
        if t.get_fontsize() < MIN_FONT_PT - 1e-6:
            raise FigureError(f"text {t.get_text()[:40]!r} is {t.get_fontsize():g} pt; at least {MIN_FONT_PT} pt")
        from matplotlib.text import Text
        box = Text.get_window_extent(t, renderer)    # the text itself, not an annotation's arrow
        if box.width > 0 and box.height > 0:
            boxes.append((t.get_text()[:40], box))
    for i, (a, ba) in enumerate(boxes):
        for b, bb in boxes[i + 1:]:
            overlap_w = min(ba.x1, bb.x1) - max(ba.x0, bb.x0)
            overlap_h = min(ba.y1, bb.y1) - max(ba.y0, bb.y0)
            if overlap_w > 1 and overlap_h > 1:
                raise FigureError(f"labels {a!r} and {b!r} overlap")


def svg(fig) -> str:
    """A matplotlib figure as inline SVG that Markdown passes through untouched, after
    :func:`check_figure`. Text stays text (searchable, and its size measurable in a browser).

    Markdown treats a bare ``<svg>`` as inline HTML and rewrites the ``<style>`` element inside
    it (the plot then shows as an empty box); a ``<div>`` at the start of a line is a raw HTML
    block, kept as it is as long as it has no blank line. The figure is closed.
    """
    import io
    import re

    import matplotlib.pyplot as plt
    buf = io.StringIO()
    try:
        with plt.rc_context({"svg.fonttype": "none"}):
            if getattr(fig, "gpukit_checked", False) or CHECK_EVERY_FIGURE:
                check_figure(fig)
            fig.savefig(buf, format="svg", bbox_inches="tight", facecolor="white")
    finally:
        plt.close(fig)  # the figure is done with: free it
    text = buf.getvalue()
    text = re.sub(r"<metadata>.*?</metadata>", "", text[text.index("<svg"):], flags=re.S)
    text = text.replace("<svg ", '<svg class="gpukit-svg" ', 1)
    body = "\n".join(line for line in text.splitlines() if line.strip())
    return f'<div class="gpukit-plot" markdown="0">\n{body}\n</div>'


def image_uri(image) -> str:
    """An image as a ``data:image/png`` address, to inline it in a page: PNG bytes as they
    are (a file saved beside a record), or an 8-bit array encoded as an optimised PNG."""
    import base64

    from .files import png_bytes
    blob = image if isinstance(image, bytes) else png_bytes(image, optimize=True)
    return "data:image/png;base64," + base64.b64encode(blob).decode()


def _load_modules() -> None:
    import importlib
    for module in CORE_VIEW_MODULES + results.view_modules():
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


@dataclass
class Block:
    """One machine's block of a view: its Markdown, the machine's title and its caption."""
    machine: str
    title: str
    body: str
    caption: str
    source: str          # ``results/<machine>/<name>.json``


def render_blocks(name: str, view: str, *, root: Path | None = None) -> list[Block]:
    """One :class:`Block` per machine that recorded what view ``view`` of results ``name``
    needs: the reference machine (:func:`gpukit.results.reference_machine`) first, then the
    machines with a GPU, then the others. Raises :class:`MissingResults` when there is none."""
    _load_modules()
    fn = RENDERERS.get((name, view))
    if fn is None:
        raise MissingResults(f"no renderer for results {name}:{view}")
    found = results.load(name, root=root)
    ref = results.reference_machine()
    blocks = []
    for slug, data in sorted(found.items(), key=lambda kv: (kv[0] != ref, kv[1]["machine"].get("gpu") is None,
                                                             kv[0])):
        try:
            record = Record(data)
            record.root = root
            body = fn(slug, record)
        except NotRecorded:
            continue  # this machine did not record this part (a CPU machine has no GPU rows)
        if body:
            blocks.append(Block(slug, machine_title(data), body, caption(data, slug, name),
                                f"results/{slug}/{name}.json"))
    if not blocks:
        only = f" (a card reads results/{ref}/{name}.json only)" if view == "card" else ""
        raise MissingResults(f"no results file under results/*/{name}.json has view {view!r}{only}")
    return blocks


def render(name: str, view: str, *, root: Path | None = None) -> str:
    """Markdown for one view of one benchmark, for every machine that recorded it
    (:func:`render_blocks`): each block ends with its caption (inside the box, for a chapter's
    ``card``); every block after the first is collapsed under "Also measured on <machine>".
    The site's pages use the blocks themselves: the first in place, the captions in a footer
    and the other machines in an appendix."""
    inside = "    " if view == "card" else ""   # a card's caption goes inside its box
    out = []
    for b in render_blocks(name, view, root=root):
        block = b.body + "\n\n" + inside + b.caption
        out.append(block if not out else collapsed(f"Also measured on {b.title}", block))
    return "\n\n".join(out)


def collapsed(title: str, markdown: str) -> str:
    """A closed box with ``title`` that opens on a click, holding ``markdown``.

    It looks like Material's ``??? note`` but is written as HTML with ``markdown="1"``: the
    content stays unindented, so raw HTML blocks in it (an inline SVG plot) reach the page
    untouched, which an indented ``???`` block would not guarantee.
    """
    return f'<details class="note" markdown="1">\n<summary>{title}</summary>\n\n{markdown}\n\n</details>'


#: where a chapter card shows the page's reading time; the site build fills it in
READING_TIME = "<!-- reading-time -->"


def chapter_link(slug: str) -> str:
    """A Markdown link to a chapter's page, with the chapter's title (from the list of chapters)."""
    c = results.chapter(slug)
    return f"[{c.title}]({c.page})"


#: a chapter's level, shown on its card and the home page: what a reader should already know
LEVELS = ("first steps", "intermediate", "advanced")


class CardError(ValueError):
    """A chapter page whose card and front matter do not match: a card marker without the
    ``learn`` and ``needs`` of its card, or those without a card marker."""


def _items(lines: list[str], mark: str) -> list[str]:
    return [f"    {mark} {line}" for line in lines]


def takeaways(lines: list[str], *, source: str) -> str:
    """What a chapter's ``card`` view returns: the card's takeaways, sentences whose numbers the
    view computed from results or data (``source`` says where from, as in "measured on NVIDIA
    H200, 2026-11-30"). :func:`card` puts them under the page's own lines."""
    return "\n".join([f"    **Takeaways**, {source}:", "", *_items(lines, "1."), ""])


def card(meta: dict, view: str, *, page: str = "the page") -> str:
    """The card at the top of a chapter: a Material admonition with what the chapter teaches,
    what to know first and its level (the page's front matter ``meta``: ``learn``, ``needs``,
    ``level``), the reading time, and ``view``, the ``card`` view's :func:`takeaways`.

    ``needs`` holds chapter slugs (linked with their titles) or Markdown. Raises
    :class:`CardError`, naming ``page``, when the front matter lacks or garbles a key."""
    def strings(key: str) -> list[str]:
        value = meta.get(key)
        if not value or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CardError(f"{page}: its card needs `{key}:`, a list of lines, in the page's "
                            "front matter (the `---` block above the title)")
        return value

    learn, needs, level = strings("learn"), strings("needs"), meta.get("level")
    if level is not None and level not in LEVELS:
        raise CardError(f"{page}: level {level!r} in the front matter; one of {LEVELS}")
    try:
        first = ", ".join(n if "[" in n or " " in n else chapter_link(n) for n in needs)
    except KeyError as exc:
        raise CardError(f"{page}: `needs:` in the front matter names {exc.args[0]}") from None
    lead = f"**Level:** {level}. " if level else ""
    lines = ['!!! abstract gpukit-card "In this chapter"', "", "    **You will learn**", "",
             *_items(learn, "-"), "",
             f"    {lead}**You need first:** {first}. **Reading time:** {READING_TIME}", ""]
    return "\n".join(lines) + "\n" + view


def card_renderer(name: str):
    """Register ``fn(data) -> Markdown`` (its :func:`takeaways`) as the ``card`` view of results
    ``name``: drawn from the reference machine's file only (the page's prose is written around
    that machine). The site build puts it under the lines of the page's front matter
    (:func:`card`)."""
    def deco(fn):
        def view(slug: str, data: dict) -> str:
            if slug != results.reference_machine():
                raise NotRecorded(slug)
            return fn(data)
        RENDERERS[(name, "card")] = view
        return fn
    return deco


