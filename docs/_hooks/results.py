"""MkDocs hook: replace ``<!-- results:NAME:VIEW -->`` with a table from results/
(and ``<!-- data:NAME:VIEW -->`` with one from gpukit's data files).

A page that asks for results nobody recorded fails the build, so no chapter
can show a number that has no results file behind it. (``GPUKIT_DRAFT=1`` shows a
warning box instead, for drafting a chapter before its GPU run; CI never sets it.)

Where several blocks of one section come from the same results file, their shared caption is
shown once, under the last of them. A chapter card (``<!-- results:NAME:card -->``) is the
lines of the page's front matter (``learn``, ``needs``, ``level``) above the card view's
takeaways (:func:`gpukit.pages.card`); its ``<!-- reading-time -->`` becomes the page's reading
time. On executed example pages, a long printed log keeps its first and last lines.
"""

import os
import re

from mkdocs.exceptions import PluginError
from mkdocs.utils.meta import get_data

from gpukit import pages
from gpukit.catalogue import warn_if_stale as on_pre_build  # noqa: F401  (old price data: a warning)

PATTERN = re.compile(r"<!--\s*(results|data):([\w-]+):([\w-]+)\s*-->")
LINKS = re.compile(r"<!--\s*links:all\s*-->")
COMPARE = re.compile(r"<!--\s*compare:all\s*-->")
URL = re.compile(r"https?://[^\s)\]>\"'`|]+")


def on_page_markdown(markdown, page, config, files):
    """Fill in every marker of a page. A results view shows the reference machine's block where
    its marker stands; the captions of all blocks go into one footer of the page that links each
    results file (:func:`provenance_footer`), and the other machines' blocks into one collapsed
    appendix at its end (:func:`other_machines`)."""
    meta = getattr(page, "meta", None) or {}
    if markdown.startswith("---"):      # a page's source read as it is, not through MkDocs
        markdown, found = get_data(markdown)
        meta = {**found, **meta}
    check_card_meta(markdown, meta, page.file.src_uri)
    markdown = chapter_heading(markdown, page.file.src_uri)
    sources: dict[str, str] = {}
    others: list[tuple[str, str, str]] = []

    def substitute(match):
        kind, name, view = match.groups()
        try:
            if kind == "data":
                return with_card(view, pages.render_data(name, view), meta, page.file.src_uri)
            blocks = pages.render_blocks(name, view)
        except pages.MissingResults as exc:
            if os.environ.get("GPUKIT_DRAFT") == "1":  # writing a chapter before its GPU run
                return f'!!! warning "Not measured yet"\n    {exc}\n'
            raise PluginError(f"{page.file.src_uri}: {exc}") from None
        sources.setdefault(blocks[0].source, blocks[0].caption)
        section = section_title(markdown, match.start())
        for b in blocks[1:]:
            sources.setdefault(b.source, b.caption)
            others.append((b.title, section, b.body))
        return with_card(view, blocks[0].body, meta, page.file.src_uri)

    markdown = substitute_markers(markdown, substitute)
    if others:
        markdown = markdown.rstrip() + "\n\n" + other_machines(others)
    if sources:
        markdown = markdown.rstrip() + "\n\n" + provenance_footer(sources, page.file.src_uri)
    if READING_TIME.search(markdown):
        markdown = READING_TIME.sub(f"about {reading_minutes(markdown)} min", markdown)
    markdown = install_markers(markdown, config)
    if COMPARE.search(markdown):
        from gpukit.compare import compare_all
        markdown = COMPARE.sub(lambda m: compare_all() or "(no benchmark was recorded on two machines)", markdown)
    MINUTES[page.file.src_uri] = reading_minutes(markdown)
    if CHAPTER_LIST.search(markdown):
        markdown = CHAPTER_LIST.sub(lambda m: chapter_list(), markdown)
    if SCORECARD.search(markdown):
        markdown = SCORECARD.sub(lambda m: scorecard(), markdown)
    if LINKS.search(markdown):
        markdown = LINKS.sub(lambda m: external_links(config, page.file.src_uri), markdown)
    return markdown


CARD_MARKER = re.compile(r"<!--\s*(?:results|data):[\w-]+:card\s*-->")


def check_card_meta(markdown: str, meta: dict, src_uri: str) -> None:
    """A page with a card marker has the card's lines in its front matter, and a page with those
    lines has a card marker: either alone fails the build, naming the page."""
    if CARD_MARKER.search(markdown):
        with_card("card", "", meta, src_uri)       # raises if the front matter makes no card
        return
    keys = [k for k in ("learn", "needs", "level") if k in meta]
    if keys:
        raise PluginError(f"{src_uri}: the front matter has {', '.join(f'`{k}:`' for k in keys)} "
                          "for a card, but the page has no card marker (<!-- results:NAME:card -->)")


def with_card(view: str, body: str, meta: dict, src_uri: str) -> str:
    """A ``card`` view's takeaways under the fixed lines of the page's front matter; any other
    view's Markdown as it is."""
    if view != "card":
        return body
    try:
        return pages.card(meta, body, page=src_uri)
    except pages.CardError as exc:
        raise PluginError(str(exc)) from None


HEADING = re.compile(r"^(#{1,6}) +(.+?)\s*(?:\{[^}]*\})?\s*$", re.M)
CAPTION = re.compile(r"<small>Measured on (.*?)(?:\. Source: `[^`]*`)?\.</small>", re.S)
READING_TIME = re.compile(re.escape(pages.READING_TIME))
SCORECARD = re.compile(r"<!--\s*scorecard:all\s*-->")
CHAPTER_LIST = re.compile(r"<!--\s*chapters:all\s*-->")
#: page file -> its reading time in minutes, filled as the pages are read; the home page's list
#: of chapters shows them (its placeholders are filled once every page was read, on_post_page)
MINUTES: dict[str, int] = {}
MINUTES_TOKEN = "GPUKIT-MINUTES:"


def chapter_list() -> str:
    """The home page's table of the numbered chapters: title, what you learn, level, reading time."""
    from gpukit import results as res
    rows = []
    for c in res.CHAPTERS:
        n = res.number(c.slug)
        if n is None:
            continue
        rows.append([str(n), f"[{c.title}]({c.page})", c.summary, c.level or "",
                     f"{MINUTES_TOKEN}{c.page}"])
    return pages.table(["", "chapter", "you will learn", "level", "reading time"], rows, "rlllr")


def on_post_page(output, page, config):
    """Fill the reading times into the home page's list of chapters (every page was read by now)."""
    if MINUTES_TOKEN not in output:
        return output
    return re.sub(re.escape(MINUTES_TOKEN) + r"([\w.-]+\.md)",
                  lambda m: f"{MINUTES[m.group(1)]} min" if m.group(1) in MINUTES else "?", output)
#: reading speeds: prose, words in tables, lines of code (a reader follows code line by line)
WORDS_PER_MINUTE, TABLE_WORDS_PER_MINUTE, CODE_LINES_PER_MINUTE = 200, 120, 12


def chapter_titles() -> dict[str, str]:
    """Page file -> the title the site shows: ``N. Title`` from :data:`gpukit.results.CHAPTERS`."""
    from gpukit import results as res
    out = {}
    for c in res.CHAPTERS:
        n = res.number(c.slug)
        out[c.page] = f"{n}. {c.title}" if n else c.title
    return out


def chapter_heading(markdown: str, src_uri: str) -> str:
    """A chapter page's first heading becomes its numbered title from the list of chapters."""
    title = chapter_titles().get(src_uri)
    if title is None:
        return markdown
    return re.sub(r"(?m)^# .*$", lambda m: f"# {title}", markdown, count=1)


def on_nav(nav, config, files):
    """The navigation shows each chapter as ``N. Title``, in the order of the list of chapters."""
    titles = chapter_titles()
    for page in nav.pages:
        if page.file.src_uri in titles:
            page.title = titles[page.file.src_uri]
    return nav


def section_title(markdown: str, pos: int) -> str:
    """The title of the last heading before ``pos`` (the page's title when there is none)."""
    found = [m.group(2) for m in HEADING.finditer(markdown, 0, pos)]
    return re.sub(r"[*_`]", "", found[-1]) if found else ""


def substitute_markers(markdown: str, substitute) -> str:
    """Replace every marker with ``substitute(match)``. A marker indented inside a block (an
    admonition, a list item) gets what replaces it indented the same way."""
    def indented(match):
        text = substitute(match)
        line_start = markdown.rfind("\n", 0, match.start()) + 1
        indent = markdown[line_start:match.start()]
        if indent.strip() or not indent:
            return text
        return "\n".join((indent + line if line.strip() else line) if i else line
                         for i, line in enumerate(text.split("\n")))
    return PATTERN.sub(indented, markdown)


def other_machines(others: list[tuple[str, str, str]]) -> str:
    """One collapsed appendix with every block measured on a machine other than the reference
    one, grouped by machine, each block under the title of the section it belongs to."""
    by_machine: dict[str, list[tuple[str, str]]] = {}
    for machine, section, body in others:
        by_machine.setdefault(machine, []).append((section, body))
    parts = []
    for machine, blocks in by_machine.items():
        inner = "\n\n".join(f"**{section}**\n\n{body}" if section else body for section, body in blocks)
        parts.append(pages.collapsed(f"Measured on {machine} ({len(blocks)} "
                                     f"{'result' if len(blocks) == 1 else 'results'})", inner))
    return ('<div class="gpukit-appendix" markdown="1" data-search-exclude>\n\n**Other machines**\n\n'
            "The same measurements on other machines, for comparison.\n\n"
            + "\n\n".join(parts) + "\n\n</div>")


def provenance_footer(sources: dict[str, str], this_page: str) -> str:
    """The page's one footer: each results file its numbers came from (a link to the file the
    site serves), with the machine, driver, date and code version it was measured with."""
    up = "../" * this_page.count("/")
    items = []
    for source, caption in sources.items():
        m = CAPTION.search(caption)
        what = m.group(1) if m else re.sub(r"<[^>]+>", "", caption)
        items.append(f"- [`{source}`]({up}{source}): {what}")
    return ('<div class="gpukit-provenance" markdown="1" data-search-exclude>\n\n'
            "**Where these numbers come from.** Every number on this page was read from a results "
            "file when the site was built; none was typed. The files, and what measured them:\n\n"
            + "\n".join(items)
            + f"\n\nThe project's targets and whether they were met: [the scorecard]({up}scorecard.md)."
            "\n\n</div>")


def scorecard() -> str:
    """Every target of every chapter with its goal, measured value, verdict and date."""
    from gpukit import results as res
    pages._load_modules()
    ref = res.reference_machine()
    rows, counts = [], {True: 0, False: 0, None: 0}
    for c in res.CHAPTERS:
        names = [n for n in pages.TARGETS if n == c.slug or n.startswith(c.slug + "_")]
        for name in names:
            found = res.load(name)
            if ref not in found:
                continue
            data = found[ref]
            for t in pages.TARGETS[name](pages.Record(data)):
                verdict = {True: "met", False: "**missed**", None: "not judged"}[t.met]
                counts[t.met] += 1
                rows.append([pages.chapter_link(c.slug), t.name, t.goal, t.value, verdict,
                             data["machine"].get("date", "")[:10]])
    if not rows:
        return "(no chapter has recorded targets yet)"
    head = (f"{counts[True]} targets met, {counts[False]} missed, {counts[None]} not judged, "
            f"on the reference machine ({ref}).\n\n")
    return head + pages.table(["chapter", "target", "goal", "measured", "verdict", "date"], rows, "llllll")


INCLUDE = re.compile(r'--8<--\s+"([^":]+)(?::([\w-]+))?"')


def included_lines(line: str) -> int:
    """How many lines of code a ``--8<-- "path:section"`` line brings into the page."""
    from gpukit.results import PROJECT
    m = INCLUDE.match(line)
    if not m or not (PROJECT / m.group(1)).is_file():
        return 1
    lines = (PROJECT / m.group(1)).read_text(encoding="utf-8").splitlines()
    if m.group(2):
        inside, count = False, 0
        for text in lines:
            if f"[start:{m.group(2)}]" in text:
                inside = True
            elif f"[end:{m.group(2)}]" in text:
                inside = False
            elif inside and text.strip():
                count += 1
        return count
    return sum(1 for text in lines if text.strip())


def reading_minutes(markdown: str) -> int:
    """Minutes to read what a page shows open: prose at :data:`WORDS_PER_MINUTE`, the words of
    its tables at :data:`TABLE_WORDS_PER_MINUTE` and its code at :data:`CODE_LINES_PER_MINUTE`;
    collapsed blocks, plots, footers, HTML tags and comments are left out."""
    text = markdown
    for pattern in (r"<details.*?</details>", r'<div class="gpukit-(?:provenance|appendix)".*?</div>',
                    r"<svg.*?</svg>", r"<!--.*?-->"):
        text = re.sub(pattern, " ", text, flags=re.S)
    prose, table, code, fence, folded = [], [], 0, None, False
    for line in text.splitlines():
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence):
                fence = None
            elif not folded and stripped:
                code += included_lines(stripped) if stripped.startswith("--8<--") else 1
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        if stripped.startswith("???"):    # a collapsed admonition: its content is not read
            folded = True
            continue
        if folded and (line.startswith(("    ", "\t")) or not stripped):
            continue
        folded = False
        if stripped.startswith("|"):
            table.append(line)
        elif not stripped.startswith("--8<--"):
            prose.append(line)

    def words(lines):
        t = "\n".join(lines)
        for pattern in (r"<small>.*?</small>", r"<[^>]+>", r"\]\([^)]*\)"):
            t = re.sub(pattern, " ", t, flags=re.S)
        return len(re.findall(r"[A-Za-z0-9][\w'’.,:%-]*", t))
    minutes = (words(prose) / WORDS_PER_MINUTE + words(table) / TABLE_WORDS_PER_MINUTE
               + code / CODE_LINES_PER_MINUTE)
    return max(1, round(minutes))


# ---- The repository's address, the install commands and the notebooks (gpukit.colab) ----
# ``<!-- install:pip -->``, ``<!-- install:clone -->`` and ``<!-- install:colab -->`` in a page
# become the install from this site's wheel and from a clone, a clone line, and a sentence on the
# Colab buttons (empty when this build knows no repository).
INSTALL = re.compile(r"(?m)^(?P<indent>[ \t]*)<!--\s*install:(?P<kind>\w+)\s*-->")


def on_config(config):
    """A build that knows its GitHub repository (``GITHUB_REPOSITORY`` on Actions, or
    ``extra.repo_url``) links it in the header and takes its Pages address as ``site_url``; a
    build that knows none keeps ``site_url`` unset (no placeholder address anywhere)."""
    from gpukit import colab
    url = colab.repository(config["extra"].get("repo_url"))
    config["extra"]["gpukit_wheel"] = wheel_name()
    if url:
        config["repo_url"] = url
        config["repo_name"] = url.split("/", 3)[3]
        config["site_url"] = config.get("site_url") or colab.pages_url(url)
    return config


def wheel_address(config) -> str:
    """The wheel's address when the build knows where it is published, else the placeholder that
    the page fills in from the address it is served at."""
    from gpukit import colab
    site = config.get("site_url")
    return colab.wheel_url(site, wheel_name()) if site else colab.WHEEL_PLACEHOLDER


def install_markers(markdown, config):
    if not INSTALL.search(markdown):
        return markdown
    from gpukit import colab
    url = colab.repository(config["extra"].get("repo_url"))

    def substitute(match):
        text = colab.install_markdown(match.group("kind"), url, wheel_address(config))
        return "\n".join(match.group("indent") + line if line else line for line in text.split("\n"))
    return INSTALL.sub(substitute, markdown)


def example_slug(page) -> str | None:
    """The example a page shows (an executed notebook or an example script), else None."""
    uri = page.file.src_uri
    if uri.startswith("executed/") and uri.endswith(".ipynb"):
        return uri.split("/")[-1][:-6]
    if uri.startswith("examples/") and uri.endswith(".py"):
        return uri.split("/")[-1][:-3]
    return None


def on_page_context(context, page, config, nav):
    """Example pages: ``page.notebook_url`` (the notebook this site serves, whose first cell
    installs gpukit from this site) and ``page.colab_url`` (None unless the build knows its GitHub
    repository); both are used by docs/_overrides/main.html."""
    from gpukit import colab
    slug = example_slug(page)
    page.notebook_slug = slug if slug in colab.slugs() else None
    page.colab_url = colab.colab_url(slug, colab.repository(config["extra"].get("repo_url"))) if slug else None
    return context


def write_notebooks(config, folder) -> None:
    from gpukit import colab
    colab.write_all(folder, wheel_address(config), colab.repository(config["extra"].get("repo_url")))


# A snippet marker line (``# --8<-- [start:name]``) in a notebook page's code: highlighted (in
# spans, maybe indented) or as the plain text the copy button copies.
MARKER_HTML = re.compile(r'(?:<span class="w">[ \t]*</span>|[ \t])*<span class="c1">#[ \t]*--8&lt;--'
                         r'[ \t]*\[(?:start|end):[\w-]+\][ \t]*</span>\n?')
MARKER_TEXT = re.compile(r"(?m)(?:^|(?<=>))[ \t]*#[ \t]*--8&lt;--[ \t]*\[(?:start|end):[\w-]+\][ \t]*\n?")


# A Sphinx role left in a docstring (``:func:`name``` renders as ":func:" before the code span):
# the API page keeps the code span and drops the role.
SPHINX_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj):(?=<code>)")


# A printed output of a notebook cell (mkdocs-jupyter writes each stream as one <pre>).
OUTPUT = re.compile(r'(<div class="jp-RenderedText jp-OutputArea-output[^"]*"[^>]*>\s*<pre>)(.*?)(</pre>)', re.S)
#: an executed page shows a printed log of more lines than this as its first and last lines
LOG_HEAD, LOG_TAIL, LOG_SLACK = 12, 10, 5


def trim_log(text: str, source: str) -> str:
    """A long printed log (a training run prints one line per epoch) as its first
    :data:`LOG_HEAD` and last :data:`LOG_TAIL` lines, with a line saying how many were left out
    and where the whole log is. Text with markup in it (coloured output) is left whole, since
    a cut could split a tag."""
    lines = text.splitlines()
    if len(lines) <= LOG_HEAD + LOG_TAIL + LOG_SLACK or "<" in text:
        return text
    hidden = len(lines) - LOG_HEAD - LOG_TAIL
    note = (f'<span class="gpukit-trimmed">... {hidden:,} lines not shown (the whole output is in '
            f"{source}) ...</span>")
    return "\n".join(lines[:LOG_HEAD] + [note] + lines[-LOG_TAIL:]) + ("\n" if text.endswith("\n") else "")


def on_page_content(html, page, config, files):
    """Example pages: drop the snippet markers, which only tell the chapters what to include.
    Executed example pages: trim long printed logs (:func:`trim_log`). Every page: drop the
    Sphinx roles that docstrings carry into the API reference.

    The logs are trimmed here rather than boxed with a maximum height in CSS: a box would hide
    a run's summary, printed last, behind a scroll bar, and would still ship every line."""
    if page.file.src_uri.startswith(("executed/", "examples/")):
        html = MARKER_TEXT.sub("", MARKER_HTML.sub("", html))
    if page.file.src_uri.startswith("executed/"):
        from pathlib import Path

        from gpukit.results import PROJECT
        path = Path(page.file.abs_src_path).resolve()
        source = path.relative_to(PROJECT).as_posix() if path.is_relative_to(PROJECT) else "the notebook"
        html = STDERR.sub("", html)
        html = OUTPUT.sub(lambda m: m.group(1) + trim_log(m.group(2), source) + m.group(3), html)
        html = output_first(html)
    return SPHINX_ROLE.sub("", html)


# What a run wrote to its standard error (the runner's warnings, with the paths of the machine
# that ran it): not the example's output, so not shown.
STDERR = re.compile(r'<div class="jp-OutputArea-child">\s*<div class="jp-OutputPrompt[^"]*">\s*</div>\s*'
                    r'<div class="jp-RenderedText jp-OutputArea-output" data-mime-type="application/vnd\.'
                    r'jupyter\.stderr"[^>]*>\s*<pre>.*?</pre>\s*</div>\s*</div>', re.S)
STAMP_END = re.compile(r'(<div class="admonition info gpukit-stamp">.*?</div>)', re.S)


def output_first(html: str) -> str:
    """An executed page shows what its run printed (the last printed output) right under the
    stamp that says where it ran, and the code after it; the output's place at the end of the
    code says where it went."""
    outputs = list(OUTPUT.finditer(html))
    stamp = STAMP_END.search(html)
    if not outputs or not stamp:
        return html
    last = outputs[-1]
    box = ('<div class="admonition example gpukit-output"><p class="admonition-title">What this run '
           f'printed</p><pre>{last.group(2)}</pre></div>')
    moved = '<p class="gpukit-trimmed">(printed at the top of this page)</p>'
    opening = re.sub(r"\s*<pre>$", "", last.group(1))
    html = html[:last.start()] + opening + moved + html[last.end():]
    return html[:stamp.end()] + box + html[stamp.end():]


def on_files(files, config):
    """An example with a stored GPU run is shown as that executed notebook (executed/NAME.ipynb);
    its script stays a plain file beside it, for the download button, not a second page."""
    from mkdocs.structure.files import File

    executed = {f.src_uri.split("/")[-1][:-6] for f in files if f.src_uri.startswith("executed/")
                and f.src_uri.endswith(".ipynb")}
    for f in list(files):
        name = f.src_uri.split("/")[-1][:-3]
        if f.src_uri.startswith("examples/") and f.src_uri.endswith(".py") and name in executed:
            files.remove(f)
            files.append(File(f.src_uri, config["docs_dir"], config["site_dir"], config["use_directory_urls"]))
    # every results file, served beside the pages so that a page's footer links the very file
    # its numbers were read from
    from gpukit.results import PROJECT, results_dir
    root = results_dir()
    if root.is_relative_to(PROJECT):
        for path in sorted(root.glob("*/*.json")):
            files.append(File(path.relative_to(PROJECT).as_posix(), str(PROJECT), config["site_dir"],
                              config["use_directory_urls"]))
    return files


def external_links(config, this_page: str) -> str:
    """Every outside link of every other page (tables included), with the pages citing it."""
    from pathlib import Path

    docs = Path(config["docs_dir"])
    cited: dict[str, set[str]] = {}
    titles = {}
    for md in sorted(docs.glob("*.md")):
        if md.name == this_page:
            continue
        text, meta = get_data(md.read_text(encoding="utf-8"))
        text = PATTERN.sub(lambda m: _expand(*m.groups(), meta, md.name), text)
        text = re.sub(r"<svg.*?</svg>", "", text, flags=re.S)  # plots: XML namespaces, not links
        first = re.search(r"^# (.+)$", text, re.M)
        titles[md.name] = first.group(1).strip() if first else md.stem
        for url in URL.findall(text):
            if url.startswith(("http://127.0.0.1", "http://localhost")):
                continue
            cited.setdefault(url.rstrip(".,;:"), set()).add(md.name)
    rows = [f"| <{url}> | " + ", ".join(f"[{titles[p]}]({p})" for p in sorted(pages)) + " |"
            for url, pages in sorted(cited.items())]
    return "| link | cited on |\n| :-- | :-- |\n" + "\n".join(rows)


def _expand(kind, name, view, meta, src_uri):
    try:
        text = pages.render_data(name, view) if kind == "data" else pages.render(name, view)
    except pages.MissingResults:
        return ""
    return with_card(view, text, meta, src_uri)


def on_shutdown():
    # MkDocs' logging State object is sometimes destroyed after the logging module during
    # interpreter exit (here, once numba is loaded), printing a harmless "Exception ignored"
    # traceback. Silence exactly that one; everything else still reaches the default hook.
    import sys

    default = sys.unraisablehook

    def hook(unraisable):
        if getattr(unraisable.object, "__qualname__", "") == "State.__del__":
            return
        default(unraisable)

    sys.unraisablehook = hook


# ---- The wheel: the site serves gpukit itself, so a reader installs it from wherever the site is ----
#: where the built site keeps the wheel, and the notebooks of the example pages
WHEEL_DIR, NOTEBOOK_DIR = "dist", "notebooks"


def build_wheel(dest) -> str:
    """Build gpukit's wheel into the folder ``dest`` from a clean copy of the package (so no
    stale build folder can leak old files into it); return the wheel's file name."""
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from gpukit.results import PROJECT
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(PROJECT / name, src / name)
        shutil.copytree(PROJECT / "gpukit", src / "gpukit",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        out = Path(tmp) / "out"
        cmd = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index", "-w", str(out), str(src)]
        try:
            import setuptools  # noqa: F401  (present: build without fetching it again)
            cmd.insert(-1, "--no-build-isolation")
        except ImportError:
            cmd.remove("--no-index")
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        wheels = sorted(out.glob("gpukit-*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            raise PluginError("could not build the gpukit wheel: " + (done.stderr.strip().splitlines() or ["?"])[-1])
        Path(dest).mkdir(parents=True, exist_ok=True)
        shutil.copy2(wheels[0], Path(dest) / wheels[0].name)
        return wheels[0].name


def wheel_name() -> str:
    """The file name of the wheel this build serves (gpukit's version, pure Python)."""
    from gpukit import __version__
    return f"gpukit-{__version__}-py3-none-any.whl"


#: Material's search adds a trailing wildcard to every word of a query, and lunr does not stem a
#: word with a wildcard: "coalescing*" never meets the stem "coalesc" of the indexed "coalesced".
#: The built search worker is changed to look each word up both ways: stemmed, and as a prefix.
SEARCH_WILDCARD = "?r:`${r}*`)"
SEARCH_BOTH_WAYS = "?r:`${r} ${r}*`)"


def stem_search_words(site) -> None:
    workers = sorted((site / "assets" / "javascripts" / "workers").glob("search.*.min.js"))
    if len(workers) != 1:
        raise PluginError(f"expected one search worker, found {len(workers)}")
    text = workers[0].read_text(encoding="utf-8")
    if text.count(SEARCH_WILDCARD) != 1:
        raise PluginError("Material's search worker changed: its query words can no longer be stemmed "
                          f"(no single {SEARCH_WILDCARD!r} in {workers[0].name})")
    workers[0].write_text(text.replace(SEARCH_WILDCARD, SEARCH_BOTH_WAYS), encoding="utf-8")


def on_post_build(config):
    """Serve gpukit's wheel and one notebook per example beside the pages; let search stem the
    words of a query (:func:`stem_search_words`)."""
    from pathlib import Path
    site = Path(config["site_dir"])
    stem_search_words(site)
    name = build_wheel(site / WHEEL_DIR)
    if name != wheel_name():
        raise PluginError(f"the wheel is {name}, the pages name {wheel_name()}")
    write_notebooks(config, site / NOTEBOOK_DIR)
