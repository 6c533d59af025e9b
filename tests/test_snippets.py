"""The first Python code block of every chapter runs where gpukit is not installed.

A reader who copies a chapter's first block into a file has NumPy with numba, CuPy or torch, and
not this project. So each such block runs here in a fresh interpreter that cannot import gpukit:

* ``python -P``, started in an empty temporary folder, with the project's checkout taken out of
  ``PYTHONPATH`` (other entries stay: a machine may carry its packages there) and neither the
  working folder nor a script folder on ``sys.path``, so the project's checkout is not on it;
* before the block runs, a finder placed first on ``sys.meta_path`` refuses ``gpukit`` and every
  ``gpukit.*`` module with ``ModuleNotFoundError``. It is asked before any other finder, the
  editable install's included, so gpukit stays hidden wherever it is installed. The test checks
  that the hiding is what stops it: from the project's root, where ``import gpukit`` works in a
  plain interpreter, it fails behind the finder;
* ``NUMBA_ENABLE_CUDASIM`` is removed from the environment, so the block itself must find out that
  there is no GPU and switch numba to its simulator, as a reader's copy would.

Without a GPU the blocks run on numba's simulator or torch on the CPU. Under
``GPUKIT_REQUIRE_GPU=1`` they must run on the GPU: a block that imported numba must not have
switched to the simulator, one that imported torch must have used CUDA.

The blocks are read the way ``pytest docs --codeblocks`` reads them (pytest-codeblocks), and the
first one whose language is Python must be a plain ````` ```python ````` block: a titled block is an
include of the project's code, which neither that plugin nor a reader can run on its own.
"""

import ast
import json
import os
from pathlib import Path
import subprocess
import sys
import time

import pytest
from pytest_codeblocks.main import extract_from_file

from gpukit.results import CHAPTERS
from tests.helpers import ROOT

REQUIRE_GPU = os.environ.get("GPUKIT_REQUIRE_GPU") == "1"
RESULT = "snippet-test-result:"

#: every chapter with a benchmark has code on its page (the cloud chapter and the glossary have none)
EXPECTED = {c.slug.replace("_", "-") for c in CHAPTERS if c.benchmarks}

BOOT = r'''
import importlib.abc, json, os, runpy, sys

class HideGpukit(importlib.abc.MetaPathFinder):
    """gpukit is not installed, as far as this interpreter can tell."""
    def find_spec(self, name, path=None, target=None):
        if name == "gpukit" or name.startswith("gpukit."):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden by the snippet test)", name=name)
        return None

sys.meta_path.insert(0, HideGpukit())
assert not [m for m in sys.modules if m.split(".")[0] == "gpukit"], "gpukit was imported at start-up"
runpy.run_path(sys.argv[1], run_name="__main__")
report = {"gpukit": sorted(m for m in sys.modules if m.split(".")[0] == "gpukit"),
          "numba": "numba" in sys.modules, "torch": "torch" in sys.modules,
          "simulator": os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")}
if report["torch"]:
    import torch
    report["torch_cuda"] = torch.cuda.is_initialized()
print("''' + RESULT + '''" + json.dumps(report))
'''


def chapter_pages():
    return {c.slug.replace("_", "-"): ROOT / "docs" / f"{c.slug.replace('_', '-')}.md" for c in CHAPTERS}


def python_blocks(page):
    return [b for b in extract_from_file(page) if b.syntax.split(" ")[0] == "python"]


PAGES = {name: page for name, page in chapter_pages().items() if python_blocks(page)}


def run_hidden(code: str, tmp_path, cwd=None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter with gpukit hidden: in the empty folder ``tmp_path`` with
    neither it nor the checkout on ``sys.path`` (or, given ``cwd``, there with it on the path)."""
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    if cwd is None:
        keep = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                if p and Path(p).resolve() != ROOT.resolve()]
        env["PYTHONPATH"] = os.pathsep.join(keep)
    flags = ["-P"] if cwd is None else []
    return subprocess.run([sys.executable, *flags, "-c", BOOT, str(script)], cwd=cwd or tmp_path,
                          env=env, capture_output=True, text=True, timeout=timeout)


def report_of(proc) -> dict:
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT)]
    assert proc.returncode == 0 and lines, f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return json.loads(lines[-1][len(RESULT):])


def test_every_chapter_with_code_is_checked():
    assert EXPECTED <= set(PAGES), sorted(EXPECTED - set(PAGES))


def test_the_hiding_is_what_stops_gpukit(tmp_path):
    plain = subprocess.run([sys.executable, "-c", "import gpukit.kernels"], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0, plain.stderr          # importable from the project's root...
    for code in ("import gpukit", "from gpukit.kernels import vector_add", "import gpukit.device"):
        for cwd in (ROOT, None):                         # ...and not behind the finder, there or here
            hidden = run_hidden(code, tmp_path, cwd=cwd)
            assert hidden.returncode != 0
            assert "ModuleNotFoundError" in hidden.stderr and "hidden by the snippet test" in hidden.stderr


@pytest.mark.parametrize("name", sorted(PAGES))
def test_first_python_block_is_a_plain_runnable_block(name):
    first = python_blocks(PAGES[name])[0]
    assert first.syntax == "python", (
        f"docs/{name}.md: the first Python block (line {first.lineno}) is `{first.syntax}`, an include "
        "of the project's code; put a self-contained ```python block before it")
    imported = set()
    for node in ast.walk(ast.parse(first.code)):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert "gpukit" not in imported, f"docs/{name}.md line {first.lineno} imports gpukit"
    assert "assert" in first.code, f"docs/{name}.md line {first.lineno}: the block checks nothing"


@pytest.mark.parametrize("name", sorted(PAGES))
def test_first_python_block_runs_without_gpukit(name, tmp_path):
    first = python_blocks(PAGES[name])[0]
    t0 = time.perf_counter()
    report = report_of(run_hidden(first.code, tmp_path))
    seconds = time.perf_counter() - t0
    assert report["gpukit"] == [], report
    if REQUIRE_GPU:
        if report["numba"]:
            assert not report["simulator"], f"{name}: numba ran on its simulator on a GPU machine"
        if report["torch"]:
            assert report["torch_cuda"], f"{name}: torch never used CUDA on a GPU machine"
    else:
        if report["numba"]:
            import gpukit.device
            assert report["simulator"] or gpukit.device.has_gpu(), f"{name}: no GPU and no simulator"
    print(f"{name}: {seconds:.1f} s, {report}")
