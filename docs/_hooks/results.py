"""MkDocs hook: replace ``<!-- results:NAME:VIEW -->`` with a table from results/
(and ``<!-- data:NAME:VIEW -->`` with one from gpukit's data files).

A page that asks for results nobody recorded fails the build, so no chapter
can show a number that has no results file behind it. (``GPUKIT_DRAFT=1`` shows a
warning box instead, for drafting a chapter before its GPU run; CI never sets it.)

Where several blocks of one section come from the same results file, their shared caption is
shown once, under the last of them. A chapter card's ``<!-- reading-time -->`` becomes the
page's reading time. On executed example pages, a long printed log keeps its first and last
lines.
"""

import os
import re

from mkdocs.exceptions import PluginError

from gpukit import pages
from gpukit.cloud.data import warn_if_stale as on_pre_build  # noqa: F401  (old price data: a warning)

PATTERN = re.compile(r"<!--\s*(results|data):([\w-]+):([\w-]+)\s*-->")
LINKS = re.compile(r"<!--\s*links:all\s*-->")
COMPARE = re.compile(r"<!--\s*compare:all\s*-->")
URL = re.compile(r"https?://[^\s)\]>\"'`|]+")


def on_page_markdown(markdown, page, config, files):
    def substitute(match):
        kind, name, view = match.groups()
        try:
            if kind == "data":
                return pages.render_data(name, view)
            return pages.render(name, view)
        except pages.MissingResults as exc:
            if os.environ.get("GPUKIT_DRAFT") == "1":  # writing a chapter before its GPU run
                return f'!!! warning "Not measured yet"\n    {exc}\n'
            raise PluginError(f"{page.file.src_uri}: {exc}") from None

    markdown = substitute_markers(markdown, substitute)
    if READING_TIME.search(markdown):
        markdown = READING_TIME.sub(f"about {reading_minutes(markdown)} min", markdown)
    markdown = install_markers(markdown, config)
    if COMPARE.search(markdown):
        from gpukit.compare import compare_all
        markdown = COMPARE.sub(lambda m: compare_all() or "(no benchmark was recorded on two machines)", markdown)
    if LINKS.search(markdown):
        markdown = LINKS.sub(lambda m: external_links(config, page.file.src_uri), markdown)
    return markdown


HEADING = re.compile(r"^#{1,6} ", re.M)
CAPTION = re.compile(r"<small>Measured on .*?</small>", re.S)
READING_TIME = re.compile(re.escape(pages.READING_TIME))
WORDS_PER_MINUTE = 200


def substitute_markers(markdown: str, substitute) -> str:
    """Replace every marker with ``substitute(match)``; then, in each run of results markers
    of one section that name the same results file, drop from every block but the last the
    captions that a later block of the run shows too (its provenance is said once, under the run)."""
    matches = list(PATTERN.finditer(markdown))
    blocks = [substitute(m) for m in matches]
    section = [len(HEADING.findall(markdown, 0, m.start())) for m in matches]
    later: set[str] = set()
    for i in range(len(matches) - 1, -1, -1):
        m = matches[i]
        following = matches[i + 1] if i + 1 < len(matches) else None
        same_run = (following is not None and m.group(1) == following.group(1) == "results"
                    and m.group(2) == following.group(2) and section[i] == section[i + 1])
        if not same_run:
            later = set()
        shown = set(CAPTION.findall(blocks[i]))
        blocks[i] = CAPTION.sub(lambda c: "" if c.group(0) in later else c.group(0), blocks[i])
        later |= shown
    out, end = [], 0
    for m, block in zip(matches, blocks):
        out += [markdown[end:m.start()], block]
        end = m.end()
    return "".join(out) + markdown[end:]


def reading_minutes(markdown: str) -> int:
    """Minutes to read a page at :data:`WORDS_PER_MINUTE`, counting its prose only: code blocks,
    tables, plots, captions, other machines' collapsed blocks, HTML tags and comments are left
    out."""
    prose, fence = [], None
    for line in markdown.splitlines():
        stripped = line.strip()
        if fence:
            fence = None if stripped.startswith(fence) else fence
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        if not stripped.startswith(("|", "--8<--")):
            prose.append(line)
    text = "\n".join(prose)
    for pattern in (r"<details.*?</details>", r"<svg.*?</svg>", r"<small>.*?</small>", r"<!--.*?-->",
                    r"<[^>]+>", r"\]\([^)]*\)"):
        text = re.sub(pattern, " ", text, flags=re.S)
    words = re.findall(r"[A-Za-z0-9][\w'’.,:%-]*", text)
    return max(1, round(len(words) / WORDS_PER_MINUTE))


# ---- The repository's address: install commands and "Open in Colab" buttons (gpukit.colab) ----
# ``<!-- install:pip -->``, ``<!-- install:clone -->`` and ``<!-- install:colab -->`` in a page
# become the install from the repository (or from a clone, when this build does not know the
# repository's address); an executed example page gets ``page.colab_url`` for its button.
INSTALL = re.compile(r"(?m)^(?P<indent>[ \t]*)<!--\s*install:(?P<kind>\w+)\s*-->")


def install_markers(markdown, config):
    if not INSTALL.search(markdown):
        return markdown
    from pathlib import Path

    from gpukit import colab
    url = colab.repository(config["extra"].get("repo_url"))
    folder = Path(config["docs_dir"]) / "colab"
    ready = any(colab.colab_url(slug, url, folder) for slug in colab.slugs())

    def substitute(match):
        text = colab.install_markdown(match.group("kind"), url, colab_ready=ready)
        return "\n".join(match.group("indent") + line if line else line for line in text.split("\n"))
    return INSTALL.sub(substitute, markdown)


def on_page_context(context, page, config, nav):
    """Executed example pages: the link of their "Open in Colab" button, None when this build
    does not know the repository or has no Colab notebook made for it (docs/_overrides/main.html)."""
    page.colab_url = None
    if page.file.src_uri.startswith("executed/") and page.file.src_uri.endswith(".ipynb"):
        from pathlib import Path

        from gpukit import colab
        url = colab.repository(config["extra"].get("repo_url"))
        page.colab_url = colab.colab_url(page.file.src_uri.split("/")[-1][:-6], url,
                                         Path(config["docs_dir"]) / "colab")
    return context


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
        html = OUTPUT.sub(lambda m: m.group(1) + trim_log(m.group(2), source) + m.group(3), html)
    return SPHINX_ROLE.sub("", html)


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
        text = md.read_text(encoding="utf-8")
        text = PATTERN.sub(lambda m: _expand(*m.groups()), text)
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


def _expand(kind, name, view):
    try:
        return pages.render_data(name, view) if kind == "data" else pages.render(name, view)
    except pages.MissingResults:
        return ""


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
