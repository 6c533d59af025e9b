"""What a reader sees in the built HTML, and what the built site serves.

The site is built once per test session (strict; shared with the browser test) and every page
is scanned for text that rendered wrongly: literal Sphinx roles (``:func:`` from docstrings), a
Markdown table left as raw pipes (an unescaped ``|`` in a header or cell breaks it), and
placeholders where an output should be (``loss ...``, ``(... %)``, ``<this repository>``).

The site serves gpukit's wheel and a notebook per example: the wheel is installed from the
served site into a fresh virtual environment. A second build, on behalf of a made-up GitHub
repository (as GitHub Actions would build it), must link that repository, publish at its Pages
address and give every example page an "Open in Colab" button; the plain build must show none of
that and no made-up address.
"""

import functools
import http.server
import json
import re
import subprocess
import sys
import threading

import pytest

from tests.helpers import shared_site

pytest.importorskip("mkdocs", reason="the docs toolchain is not installed (pip install -e '.[docs]')")

SPHINX_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj|py:\w+):(?:<code>|`)")
RAW_TABLE = re.compile(r"<p>\s*\|[^<\n]*\|\s*(?:\n|<br\s*/?>)\s*\|\s*:?-{2,}")
PLACEHOLDER = re.compile(r"\.\.\.\s*(?:%|M parameters)|\bloss\s+\.\.\.|&lt;this repository&gt;|"
                         r"\(\.\.\.\s*%\)")


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory):
    return shared_site(tmp_path_factory)


@pytest.fixture(scope="module")
def built(site_dir):
    out = site_dir
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


REPO = "example-owner/gpukit-mirror"        # made up: no such repository is needed


@pytest.fixture(scope="module")
def repo_site(tmp_path_factory):
    return shared_site(tmp_path_factory, "site-with-repository", GITHUB_REPOSITORY=REPO,
                       GITHUB_SERVER_URL="https://github.com")


def test_a_build_without_a_repository_shows_no_address_and_no_build_notes(built, site_dir):
    for name, html in built.items():
        for word in ("gpukit.example.org", "OWNER/REPO", "was built without", "This build of the site"):
            assert word not in html, (name, word)
        assert "colab.research.google.com" not in html, name
        assert 'rel="canonical"' not in html, name              # no site_url: no made-up address
    assert "GPUKIT_WHEEL_URL" in built["index.html"]            # the page fills in where it is served
    assert not (site_dir / "sitemap.xml").exists() or "example.org" not in (site_dir / "sitemap.xml").read_text()


def test_a_build_that_knows_its_repository_links_it_everywhere(repo_site):
    pages_url = "https://example-owner.github.io/gpukit-mirror/"
    home = (repo_site / "index.html").read_text(encoding="utf-8")
    assert f'href="https://github.com/{REPO}"' in home                      # the header's link
    assert f'<link rel="canonical" href="{pages_url}"' in home
    assert f"{pages_url}dist/gpukit-" in home and "GPUKIT_WHEEL_URL" not in home
    examples = sorted(repo_site.glob("executed/*/index.html"))
    assert examples
    for page in examples:
        slug = page.parent.name
        html = page.read_text(encoding="utf-8")
        assert (f"https://colab.research.google.com/github/{REPO}/blob/gh-pages/notebooks/{slug}.ipynb"
                in html), slug
        nb = json.loads((repo_site / "notebooks" / f"{slug}.ipynb").read_text(encoding="utf-8"))
        assert f"{pages_url}dist/gpukit-" in "".join(nb["cells"][0]["source"])


def test_every_example_page_offers_its_notebook(built, site_dir):
    examples = [name for name in built if name.startswith("executed/")]
    assert examples
    for name in examples:
        slug = name.split("/")[1]
        assert f'notebooks/{slug}.ipynb"' in built[name], name
        nb = json.loads((site_dir / "notebooks" / f"{slug}.ipynb").read_text(encoding="utf-8"))
        first = "".join(nb["cells"][0]["source"])
        assert '%pip install "gpukit[torch] @ GPUKIT_WHEEL_URL"' in first, slug


def test_every_results_file_a_page_cites_is_served(built, site_dir):
    cited = set()
    for name, html in built.items():
        for href in re.findall(r'href="((?:\.\./)*results/[\w.-]+/[\w.-]+\.json)"', html):
            cited.add(href.lstrip("./"))
    assert cited
    for path in cited:
        assert (site_dir / path).is_file(), path
        assert json.loads((site_dir / path).read_text(encoding="utf-8"))["machine"]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_the_wheel_installs_from_the_served_site_into_a_fresh_environment(site_dir, tmp_path):
    wheels = sorted((site_dir / "dist").glob("gpukit-*.whl"))
    assert len(wheels) == 1
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site_dir)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/dist/{wheels[0].name}"
        venv = tmp_path / "venv"
        # a fresh environment that sees this one's packages (numba, numpy...), not gpukit's source
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True,
                       timeout=300)
        py = venv / "bin" / "python"
        done = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                               f"gpukit @ {url}"], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        probe = ("import gpukit, sys; from gpukit import cli; "
                 "assert '/site-packages/gpukit/' in gpukit.__file__, gpukit.__file__; print(gpukit.__version__)")
        done = subprocess.run([str(py), "-P", "-c", probe], capture_output=True, text=True, timeout=300,
                              cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
        assert done.returncode == 0, done.stderr[-2000:]
        done = subprocess.run([str(venv / "bin" / "gpukit"), "--help"], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
        assert done.returncode == 0 and "doctor" in done.stdout, done.stderr[-2000:]
    finally:
        server.shutdown()
