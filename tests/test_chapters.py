"""Every chapter, from the one list of chapters (``gpukit.results.CHAPTERS``): its files where the
layout says, a lazy public API, a page whose title and place in the navigation come from the list,
and page markers that name views that exist."""

import json
import re
import subprocess
import sys

import pytest
import yaml

from gpukit import pages, results
from gpukit.results import CHAPTERS
from tests.helpers import ROOT, page_source

WITH_CODE = [c for c in CHAPTERS if c.benchmarks]
HEAVY = ("numba", "cupy", "torch", "triton")


@pytest.mark.parametrize("chapter", WITH_CODE, ids=lambda c: c.slug)
def test_a_chapter_with_a_benchmark_has_its_files_where_the_layout_says(chapter):
    assert (ROOT / "gpukit" / chapter.slug / "__init__.py").is_file()
    assert (ROOT / "examples" / f"{chapter.slug}.py").is_file()
    assert (ROOT / "tests" / f"test_{chapter.slug}.py").is_file()
    assert (ROOT / "docs" / chapter.page).is_file()
    for target in chapter.benchmarks.values():
        module = target.split(":")[0]
        assert (ROOT / "gpukit" / chapter.slug / f"{module}.py").is_file(), target


def test_every_chapter_page_has_the_title_and_the_place_of_the_list():
    for c in CHAPTERS:
        meta, markdown = page_source(ROOT / "docs" / c.page)
        first = markdown.splitlines()[0]
        assert first == f"# {c.title}", (c.page, first)
        assert c.level in pages.LEVELS or not c.numbered, c.slug
        # the card's level and the home page's list say the same
        assert meta.get("level") == c.level, (c.page, meta.get("level"), c.level)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)
    chapters = next(item["Chapters"] for item in config["nav"] if isinstance(item, dict) and "Chapters" in item)
    assert chapters == [c.page for c in CHAPTERS if c.numbered]


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_multi_constructor("", lambda loader, suffix, node: None)


def test_importing_a_chapter_imports_no_gpu_library():
    """A chapter's public API is lazy, and its views and card (which build the site) need no GPU
    library: importing them loads none of numba, CuPy, torch or Triton."""
    packages = [c.package for c in CHAPTERS if (ROOT / "gpukit" / c.slug / "__init__.py").is_file()]
    packages += results.view_modules()
    probe = ("import importlib, json, sys\n"
             f"for name in {packages!r}:\n"
             "    importlib.import_module(name)\n"
             f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == []


MARKER = re.compile(r"<!--\s*results:([\w-]+):([\w-]+)\s*-->")


def test_every_page_marker_names_a_view_that_exists():
    pages._load_modules()
    for page in sorted((ROOT / "docs").glob("*.md")):
        for name, view in MARKER.findall(page.read_text(encoding="utf-8")):
            assert (name, view) in pages.RENDERERS, f"{page.name}: no view {name}:{view}"


#: records made before every save went through gpukit.results, kept until they can be made
#: again (each says why it cannot be now); the test fails once one of them is stamped, so the
#: list only shrinks
UNSTAMPED = {
    "nvidia-h200/cats_vs_dogs_sweep.json": "written by json.dump; re-recording needs two GPUs",
}


def test_every_committed_results_file_is_stamped_and_clean():
    """A record names the code that made it: a schema version and a commit of a clean tree.
    Every machine's folder, not only the reference GPU's: a record made from a modified tree
    cannot be committed."""
    paths = sorted((results.PROJECT / "results").glob("*/*.json"))
    assert paths
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        code = data.get("code") or {}
        stamped = bool(data.get("schema") and code.get("commit") and code.get("dirty") is False)
        key = f"{path.parent.name}/{path.name}"
        assert stamped != (key in UNSTAMPED), (
            f"{key}: {'no schema, commit or clean tree' if not stamped else 'stamped now: drop it from UNSTAMPED'}")


# --------------------------------------------------------------- one-way layers

#: what a chapter's views.py and card.py may import besides the standard library, numpy and
#: matplotlib: the core's pages, results and catalogue (GPU facts), the chapter's own meta, and
#: (a card) its views or (views) the chapter's other view modules
LAYER_OK = {"pages", "results", "meta", "views", "diagrams"}
CORE_OK = ("pages", "results", "catalogue")
#: imports that break the rule today, each to be moved into meta (or the core) later; the test
#: fails on any other, and on an entry no longer needed, so this list only shrinks
LAYER_DEBT = {
}


def _layer_breaks(path) -> set[str]:
    """The imports of a view or card module outside :data:`LAYER_OK`, as written."""
    import ast
    chapter = path.parent.name
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            names = [a.name for a in node.names]
            if node.level == 1:
                parts = [mod] if mod else names
                found |= {"." + p for p in parts if p.split(".")[0] not in LAYER_OK}
            elif node.level == 2:
                parts = [mod] if mod else names
                found |= {".." + p for p in parts if p not in CORE_OK}
            elif mod == "gpukit":
                found |= {"gpukit." + n for n in names if n not in CORE_OK}
            elif mod.startswith("gpukit."):
                if mod not in {f"gpukit.{c}" for c in CORE_OK} | {f"gpukit.{chapter}.meta"}:
                    found.add(mod)
            elif mod.split(".")[0] in ("numba", "cupy", "torch", "triton"):
                found.add(mod)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names
                      if a.name.split(".")[0] in ("numba", "cupy", "torch", "triton", "gpukit")
                      and a.name not in ("gpukit.pages", "gpukit.results")}
    return found


def test_views_and_cards_import_only_pages_results_and_meta():
    seen = set()
    for path in sorted((ROOT / "gpukit").glob("*/*.py")):
        if path.name not in ("views.py", "card.py"):
            continue
        key = f"{path.parent.name}/{path.name}"
        breaks = _layer_breaks(path)
        debt = LAYER_DEBT.get(key, set())
        assert breaks <= debt, f"{key} imports {sorted(breaks - debt)}: move it into meta"
        assert debt <= breaks, f"{key} no longer imports {sorted(debt - breaks)}: drop it from LAYER_DEBT"
        seen.add(key)
    assert set(LAYER_DEBT) <= seen


def test_the_layer_rule_catches_what_it_forbids(tmp_path):
    f = tmp_path / "chapter" / "views.py"
    f.parent.mkdir()
    f.write_text("from .. import pages, results\nfrom .meta import NAME\nfrom . import diagrams\n"
                 "from .measure import run\nimport torch\nfrom gpukit.chapter.meta import X\n"
                 "from gpukit import device\nfrom ..other import thing\n")
    assert _layer_breaks(f) == {".measure", "torch", "gpukit.device", "..other"}
