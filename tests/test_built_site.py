"""What a reader sees in the built HTML: no leftovers of the writing process.

Builds the site once (strict) and scans every page for text that rendered wrongly: literal
Sphinx roles (``:func:`` from docstrings), a Markdown table left as raw pipes (an unescaped
``|`` in a header or cell breaks it), and placeholders where an output should be
(``loss ...``, ``(... %)``, ``<this repository>``).
"""

import re

import pytest

from tests.helpers import build_site

pytest.importorskip("mkdocs", reason="the docs toolchain is not installed (pip install -e '.[docs]')")

SPHINX_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj|py:\w+):(?:<code>|`)")
RAW_TABLE = re.compile(r"<p>\s*\|[^<\n]*\|\s*(?:\n|<br\s*/?>)\s*\|\s*:?-{2,}")
PLACEHOLDER = re.compile(r"\.\.\.\s*(?:%|M parameters)|\bloss\s+\.\.\.|&lt;this repository&gt;|"
                         r"\(\.\.\.\s*%\)")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("built")
    build_site(out)
    pages = {p.relative_to(out).as_posix(): p.read_text(encoding="utf-8")
             for p in sorted(out.rglob("index.html"))
             if not p.relative_to(out).as_posix().startswith(("assets/", "search/"))}
    assert len(pages) > 10
    return pages


def _hits(pages, pattern):
    return {name: sorted(set(m.group(0) for m in pattern.finditer(html)))[:3]
            for name, html in pages.items() if pattern.search(html)}


def test_no_literal_sphinx_roles(built):
    prose = {name: re.sub(r"<pre.*?</pre>", "", html, flags=re.S) for name, html in built.items()}
    assert not _hits(prose, SPHINX_ROLE)      # code blocks may quote docstrings as they are


def test_no_markdown_table_left_as_raw_pipes(built):
    assert not _hits(built, RAW_TABLE)


def test_no_placeholders_where_output_belongs(built):
    assert not _hits(built, PLACEHOLDER)


def test_the_checks_catch_what_they_look_for():
    assert SPHINX_ROLE.search("see :func:<code>gpukit.bench.bench</code>")
    assert RAW_TABLE.search("<p>| a | b |\n| :-- | --: |\n| 1 | 2 |</p>")
    assert PLACEHOLDER.search("my_cat.jpg: cat (... %)") and PLACEHOLDER.search("epoch 3 loss ...")
    assert not PLACEHOLDER.search("for i in range(n): ...")
