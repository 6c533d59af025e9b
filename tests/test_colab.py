"""The way in from any copy of the site: the repository's address, the install commands (from
the wheel the site serves, and from a clone), the notebooks and the Colab buttons.

The notebooks are built and checked here (valid nbformat 4, the install cell first, every code
cell valid Python, only existing examples); no machine of the project can run them on Colab.
The built site's wheel, installed from a served site into a fresh environment, is tested in
tests/test_built_site.py.
"""

import ast
import importlib.util
import json
import re
import sys
import types

import pytest

from gpukit import colab, notebook
from tests.helpers import ROOT

URL = "https://github.com/example-owner/gpukit-mirror"   # a well-formed address for the tests
T4_BYTES = 15_828_320_256        # what torch reports for Colab's T4 (16 GB, part kept for ECC)


def load_hook():
    pytest.importorskip("mkdocs", reason="the docs toolchain is not installed (pip install -e '.[docs]')")
    spec = importlib.util.spec_from_file_location("gpukit_site_hook", ROOT / "docs" / "_hooks" / "results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def no_actions(monkeypatch):
    """A build outside GitHub Actions (CI sets these for every job)."""
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    monkeypatch.delenv("GITHUB_SERVER_URL", raising=False)


# ---------------------------------------------------------------------- the repository's address

def test_the_address_comes_from_the_setting_or_from_actions():
    assert colab.repository(None, environ={}) is None
    assert colab.repository("", environ={}) is None
    assert colab.repository(URL + ".git/", environ={}) == URL
    actions = {"GITHUB_REPOSITORY": "someone/fork"}
    assert colab.repository(URL, environ=actions) == "https://github.com/someone/fork"   # it overrides
    assert colab.repository(None, environ={**actions, "GITHUB_SERVER_URL": "https://ghe.example.com/"}) \
        == "https://ghe.example.com/someone/fork"
    for bad in ("<this repository>", "github.com/a/b", "https://github.com/only-owner", "https://github.com/a/b/c"):
        with pytest.raises(ValueError):
            colab.repository(bad, environ={})


def test_the_setting_is_read_from_mkdocs_yml(tmp_path):
    assert colab.configured() is None            # the public repository is not named in this checkout
    yml = tmp_path / "mkdocs.yml"
    yml.write_text(f"site_name: x\nextra:\n  repo_url: {URL}\nsite_dir: !ENV [SITE, site]\n", encoding="utf-8")
    assert colab.configured(yml) == URL
    yml.write_text("site_name: x\nextra:\n  repo_url: null\n", encoding="utf-8")
    assert colab.configured(yml) is None


# ------------------------------------------------------------------------- the install commands

WHEEL = "https://example-owner.github.io/gpukit-mirror/dist/gpukit-0.1.0-py3-none-any.whl"


def render(page: str, repo_url, site_url=None) -> str:
    hook = load_hook()
    config = {"extra": {"repo_url": repo_url}, "site_url": site_url}
    return hook.install_markers((ROOT / "docs" / page).read_text(encoding="utf-8"), config)


@pytest.mark.parametrize("page", ["index.md", "installing-cuda.md"])
def test_pages_install_from_the_site_s_wheel_and_from_a_clone(page, no_actions):
    text = render(page, None)
    assert "<!-- install:" not in text
    assert f'$ pip install \\\n        "gpukit[torch] @ {colab.WHEEL_PLACEHOLDER}"' in text   # the page fills it in
    assert "pip install -e '.[torch]'" in text
    for word in ("git+", "OWNER", "example.org", "was built without", "This build of the site"):
        assert word not in text, word                 # no made-up address, no note about the build


@pytest.mark.parametrize("page", ["index.md", "installing-cuda.md"])
def test_a_build_that_knows_its_repository_links_it(page, no_actions):
    text = render(page, URL, colab.pages_url(URL))
    assert f'"gpukit[torch] @ {WHEEL}"' in text                               # its published address
    assert f"$ git clone {URL} && cd gpukit-mirror" in text
    assert "**Open in Colab** button" in text


def test_github_actions_supplies_the_address(monkeypatch):
    monkeypatch.setenv("GITHUB_REPOSITORY", "example-owner/gpukit-mirror")
    monkeypatch.delenv("GITHUB_SERVER_URL", raising=False)
    hook = load_hook()
    config = hook.on_config({"extra": {"repo_url": None}, "site_url": None})
    assert config["repo_url"] == URL and config["site_url"] == "https://example-owner.github.io/gpukit-mirror/"
    assert config["extra"]["gpukit_wheel"] == hook.wheel_name()
    assert f"$ git clone {URL}" in hook.install_markers("<!-- install:clone -->", config)


def test_a_build_without_a_repository_sets_no_address(no_actions):
    hook = load_hook()
    config = hook.on_config({"extra": {"repo_url": None}, "site_url": None})
    assert not config.get("site_url") and not config.get("repo_url")
    assert hook.install_markers("<!-- install:colab -->", config) == ""
    assert hook.install_markers("<!-- install:clone -->", config) == ""


def test_markers_inside_tabs_keep_their_indentation(no_actions):
    text = render("installing-cuda.md", URL)
    assert f"    $ git clone {URL} && cd gpukit-mirror\n" in text               # the cloud tab


# ---------------------------------------------------------------------------- the notebooks

SLUGS = colab.slugs()


def test_every_example_gets_a_notebook():
    examples = sorted(p.stem for p in (ROOT / "examples").glob("*.py"))
    assert SLUGS == examples and SLUGS


def _code_cells(nb):
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("slug", SLUGS)
def test_notebook_is_valid_nbformat_4_with_the_install_cell_first(slug):
    nbformat = pytest.importorskip("nbformat")
    nb = colab.build(slug, WHEEL, URL)
    nbformat.validate(nbformat.from_dict(nb))
    assert nb["nbformat"] == 4
    first = nb["cells"][0]
    assert first["cell_type"] == "code"
    shell = [ln for ln in "".join(first["source"]).splitlines() if not ln.startswith("#")]
    assert shell == [f'%pip install "gpukit[torch] @ {WHEEL}"']
    assert nb["metadata"]["gpukit"]["repo_url"] == URL and nb["metadata"]["accelerator"] == "GPU"


@pytest.mark.parametrize("slug", SLUGS)
def test_notebook_code_is_python_and_only_the_example_s(slug):
    nb = colab.build(slug, WHEEL, URL)
    for source in _code_cells(nb):
        ast.parse("\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith(("!", "%"))))
    meta = nb["metadata"]["gpukit"]
    script = ROOT / meta["source"]
    assert meta["source"] == f"examples/{slug}.py" and script.is_file()
    text = script.read_text(encoding="utf-8")
    assert meta["source_sha256"] == notebook.source_digest(text)
    # every code line of the example (its snippet markers and its script ending aside) is there, in order
    expected = [ln for c in notebook.parse(text) if c["kind"] == "code" for ln in c["source"].splitlines()
                if ln.strip() and "--8<--" not in ln]
    expected = expected[:-2]                                # `if __name__ == "__main__": sys.exit(...)`
    got = [ln for src in _code_cells(nb)[2:-1] for ln in src.splitlines() if ln.strip()]
    assert got == expected
    assert _code_cells(nb)[-1] == colab.NOTEBOOK_MAIN
    for other in re.findall(r"examples/(\w+)\.py", json.dumps(nb)):
        assert (ROOT / "examples" / f"{other}.py").is_file(), other


#: the examples with a reference GPU run, whose notebooks size themselves from it
RECORDED = [s for s in SLUGS if (ROOT / "results" / "nvidia-h200" / "notebooks" / f"{s}.ipynb").is_file()]


@pytest.mark.parametrize("slug", RECORDED)
def test_the_sizes_cell_scales_to_the_gpu_it_finds(slug, monkeypatch):
    cell = _code_cells(colab.build(slug, WHEEL, URL))[1]
    assert "torch.cuda.get_device_properties(0)" in cell and "total_memory" in cell
    fake = types.ModuleType("torch")
    fake.cuda = types.SimpleNamespace(
        is_available=lambda: True,
        get_device_properties=lambda i: types.SimpleNamespace(name="Tesla T4", total_memory=T4_BYTES))
    monkeypatch.setitem(sys.modules, "torch", fake)
    namespace = {}
    exec(compile(cell, f"{slug} sizes cell", "exec"), namespace)
    reference = colab.reference_run(slug)["gpu"]["memory_bytes"]
    assert namespace["ARGS"] == colab.example_args(slug, T4_BYTES, reference)


def test_an_example_without_a_reference_run_keeps_its_own_sizes():
    unrecorded = sorted(set(SLUGS) - set(RECORDED))
    for slug in unrecorded:
        assert _code_cells(colab.build(slug, WHEEL, URL))[1] == "ARGS = []   # the example's own sizes"


def test_sizes_keep_the_reference_s_share_of_memory():
    h200 = colab.reference_run("vector_add")["gpu"]["memory_bytes"]
    assert colab.example_args("vector_add", h200, h200) == []                 # the reference's own sizes
    assert colab.example_args("vector_add", 2 * h200, h200) == []             # never larger
    assert colab.example_args("vector_add", T4_BYTES, h200) == ["--n", str(2**22)]
    assert colab.example_args("matmul", T4_BYTES, h200) == ["--m", "512", "--n", "512", "--k", "512"]
    assert colab.example_args("why_gpus", T4_BYTES, h200) == []               # nothing to scale
    assert colab.example_args("vector_add", 1, h200) == ["--n", str(colab.SMALLEST)]
    with pytest.raises(ValueError):
        colab.example_args("vector_add", 0, h200)


@pytest.mark.parametrize("slug", sorted(colab.SIZES))
def test_scaled_arguments_are_the_example_s_own(slug):
    text = (ROOT / "examples" / f"{slug}.py").read_text(encoding="utf-8")
    for flag, (value, _) in colab.SIZES[slug].items():
        assert f'"{flag}"' in text, f"examples/{slug}.py has no {flag}"
        literal = f"2**{value.bit_length() - 1}" if value > 4096 and value & (value - 1) == 0 else str(value)
        assert literal in text or str(value) in text, f"examples/{slug}.py: its GPU size is no longer {value}"


def test_an_example_without_the_usual_ending_is_refused(tmp_path, monkeypatch):
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "vector_add.py").write_text("# %%\nprint('no main')\n", encoding="utf-8")
    monkeypatch.setattr(colab, "PROJECT", tmp_path)
    with pytest.raises(ValueError, match="main"):
        colab.build("vector_add", WHEEL, URL)


# ------------------------------------------------------------------------------- the buttons

def test_colab_links_point_at_the_pages_branch():
    assert colab.colab_url("vector_add", URL) == (
        "https://colab.research.google.com/github/example-owner/gpukit-mirror/blob/gh-pages/"
        "notebooks/vector_add.ipynb")
    assert colab.colab_url("vector_add", None) is None
    assert colab.colab_url("vector_add", "https://ghe.example.com/a/b") is None     # not on github.com
    assert colab.colab_url("no_such_example", URL) is None


def test_example_pages_get_a_notebook_and_a_colab_button_only_with_a_repository(no_actions):
    hook = load_hook()
    page = types.SimpleNamespace(file=types.SimpleNamespace(src_uri="executed/vector_add.ipynb"))
    chapter = types.SimpleNamespace(file=types.SimpleNamespace(src_uri="vector-add.md"))
    script = types.SimpleNamespace(file=types.SimpleNamespace(src_uri="examples/matmul.py"))
    hook.on_page_context({}, page=page, config={"extra": {"repo_url": None}}, nav=None)
    assert page.colab_url is None and page.notebook_slug == "vector_add"
    hook.on_page_context({}, page=page, config={"extra": {"repo_url": URL}}, nav=None)
    assert page.colab_url.endswith("/example-owner/gpukit-mirror/blob/gh-pages/notebooks/vector_add.ipynb")
    hook.on_page_context({}, page=script, config={"extra": {"repo_url": URL}}, nav=None)
    assert script.notebook_slug == "matmul" and script.colab_url
    hook.on_page_context({}, page=chapter, config={"extra": {"repo_url": URL}}, nav=None)
    assert chapter.colab_url is None and chapter.notebook_slug is None
    template = (ROOT / "docs" / "_overrides" / "main.html").read_text(encoding="utf-8")
    assert "{% if page.colab_url %}" in template and "{% if page.notebook_slug %}" in template
