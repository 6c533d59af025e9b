"""MkDocs hook: replace ``<!-- results:NAME:VIEW -->`` with a table from results/
(and ``<!-- data:NAME:VIEW -->`` with one from gpukit's data files).

A page that asks for results nobody recorded fails the build, so no chapter
can show a number that has no results file behind it. (``GPUKIT_DRAFT=1`` shows a
warning box instead, for drafting a chapter before its GPU run; CI never sets it.)
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

    markdown = PATTERN.sub(substitute, markdown)
    if COMPARE.search(markdown):
        from gpukit.compare import compare_all
        markdown = COMPARE.sub(lambda m: compare_all() or "(no benchmark was recorded on two machines)", markdown)
    if LINKS.search(markdown):
        markdown = LINKS.sub(lambda m: external_links(config, page.file.src_uri), markdown)
    return markdown


# A snippet marker line (``# --8<-- [start:name]``) in a notebook page's code: highlighted (in
# spans, maybe indented) or as the plain text the copy button copies.
MARKER_HTML = re.compile(r'(?:<span class="w">[ \t]*</span>|[ \t])*<span class="c1">#[ \t]*--8&lt;--'
                         r'[ \t]*\[(?:start|end):[\w-]+\][ \t]*</span>\n?')
MARKER_TEXT = re.compile(r"(?m)(?:^|(?<=>))[ \t]*#[ \t]*--8&lt;--[ \t]*\[(?:start|end):[\w-]+\][ \t]*\n?")


# A Sphinx role left in a docstring (``:func:`name``` renders as ":func:" before the code span):
# the API page keeps the code span and drops the role.
SPHINX_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj):(?=<code>)")


def on_page_content(html, page, config, files):
    """Example pages: drop the snippet markers, which only tell the chapters what to include.
    Every page: drop the Sphinx roles that docstrings carry into the API reference."""
    if page.file.src_uri.startswith(("executed/", "examples/")):
        html = MARKER_TEXT.sub("", MARKER_HTML.sub("", html))
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
