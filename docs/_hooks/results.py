"""MkDocs hook: replace ``<!-- results:NAME:VIEW -->`` with a table from results/
(and ``<!-- data:NAME:VIEW -->`` with one from gpukit's data files).

A page that asks for results nobody recorded fails the build, so no chapter
can show a number that has no results file behind it.
"""

import re

from mkdocs.exceptions import PluginError

from gpukit import report

PATTERN = re.compile(r"<!--\s*(results|data):([\w-]+):([\w-]+)\s*-->")
LINKS = re.compile(r"<!--\s*links:all\s*-->")
URL = re.compile(r"https?://[^\s)\]>\"'`|]+")


def on_page_markdown(markdown, page, config, files):
    def substitute(match):
        kind, name, view = match.groups()
        try:
            if kind == "data":
                return report.render_data(name, view)
            return report.render(name, view)
        except report.MissingResults as exc:
            raise PluginError(f"{page.file.src_uri}: {exc}") from None

    markdown = PATTERN.sub(substitute, markdown)
    if LINKS.search(markdown):
        markdown = LINKS.sub(lambda m: external_links(config, page.file.src_uri), markdown)
    return markdown


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
        return report.render_data(name, view) if kind == "data" else report.render(name, view)
    except report.MissingResults:
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
