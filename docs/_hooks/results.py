"""MkDocs hook: replace ``<!-- results:NAME:VIEW -->`` with a table from results/
(and ``<!-- data:NAME:VIEW -->`` with one from gpukit's data files).

A page that asks for results nobody recorded fails the build, so no chapter
can show a number that has no results file behind it.
"""

import re

from mkdocs.exceptions import PluginError

from gpukit import report

PATTERN = re.compile(r"<!--\s*(results|data):([\w-]+):([\w-]+)\s*-->")


def on_page_markdown(markdown, page, config, files):
    def substitute(match):
        kind, name, view = match.groups()
        try:
            if kind == "data":
                return report.render_data(name, view)
            return report.render(name, view)
        except report.MissingResults as exc:
            raise PluginError(f"{page.file.src_uri}: {exc}") from None

    return PATTERN.sub(substitute, markdown)
