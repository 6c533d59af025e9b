"""MkDocs hook: replace ``<!-- results:NAME:VIEW -->`` with a table from results/.

A page that asks for results nobody recorded fails the build, so no chapter
can show a number that has no results file behind it.
"""

import re

from mkdocs.exceptions import PluginError

from gpukit import report

PATTERN = re.compile(r"<!--\s*results:([\w-]+):([\w-]+)\s*-->")


def on_page_markdown(markdown, page, config, files):
    def substitute(match):
        try:
            return report.render(match.group(1), match.group(2))
        except report.MissingResults as exc:
            raise PluginError(f"{page.file.src_uri}: {exc}") from None

    return PATTERN.sub(substitute, markdown)
