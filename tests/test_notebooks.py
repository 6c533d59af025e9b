"""Executed example pages: the stored GPU outputs, their stamps, and the executor itself."""

import json
import subprocess
import sys

import pytest
import yaml

from gpukit import notebook
from tests.helpers import ROOT

STORED = sorted((ROOT / "results").glob("*/notebooks/*.ipynb"))
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
REFERENCE = ROOT / "results" / "nvidia-h200" / "notebooks"


def test_the_reference_gpu_has_stored_runs():
    assert any(p.parent == REFERENCE for p in STORED)


@pytest.mark.parametrize("path", STORED, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_stored_notebook_shows_the_code_of_its_example(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    meta = nb["metadata"]["gpukit"]
    script = ROOT / meta["source"]
    assert script.is_file(), f"{path.name}: its example {meta['source']} is gone"
    why = notebook.stale(nb, script)
    assert why is None, f"{path}: {why}; run `gpukit results --only {script.stem}` on a GPU again"
    # the stamp: first cell, naming the GPU, driver, versions and date of this very run
    stamp = nb["cells"][0]
    assert stamp["metadata"].get("gpukit") == "stamp"
    machine = meta["machine"]
    assert machine["date"][:10] in stamp["source"]
    if path.parent.parent.name.startswith("nvidia"):
        assert machine["gpu"]["name"] in stamp["source"]
        assert machine["cuda"]["driver"] in stamp["source"]
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            assert "Traceback" not in "".join(out.get("text", []))


def _nav_examples():
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    for section in config["nav"]:
        if isinstance(section, dict) and any("Examples" in k for k in section):
            return [list(e.values())[0] for e in list(section.values())[0]]
    raise AssertionError("no Examples section in the nav")


def test_every_example_is_in_the_nav_executed_when_a_gpu_run_is_stored():
    entries = _nav_examples()
    for script in EXAMPLES:
        stored = (REFERENCE / f"{script.stem}.ipynb").exists()
        want = f"executed/{script.stem}.ipynb" if stored else f"examples/{script.name}"
        assert want in entries, f"the nav should list {want}"
    assert len(entries) == len(EXAMPLES)


SCRIPT = '''# %% [markdown]
# # A tiny example
#
# Text of the first cell.

# %%
import sys
total = sum(range(5))
print("total", total)

# %% [markdown]
# ## Second part

# %%
def main(argv=None):
    print("argv", argv if argv is not None else sys.argv[1:])
    return 0 if total == 10 else 1


if __name__ == "__main__":
    sys.exit(main())
'''


def test_parse_splits_code_and_text_cells():
    cells = notebook.parse(SCRIPT)
    assert [c["kind"] for c in cells] == ["markdown", "code", "markdown", "code"]
    assert cells[0]["source"].startswith("# A tiny example")
    assert "Text of the first cell." in cells[0]["source"]
    assert cells[1]["source"].startswith("import sys")


def test_execute_captures_each_cell_and_stamps_the_run(tmp_path):
    script = tmp_path / "tiny.py"
    script.write_text(SCRIPT)
    nb = notebook.execute(script, ["--flag"])
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert "".join(code[0]["outputs"][0]["text"]) == "total 10\n"
    assert "argv ['--flag']" in "".join(code[1]["outputs"][0]["text"])
    assert nb["cells"][0]["metadata"]["gpukit"] == "stamp"
    assert "python examples/tiny.py --flag" in nb["cells"][0]["source"]
    assert notebook.stale(nb, script) is None
    script.write_text(SCRIPT.replace("range(5)", "range(6)"))
    assert "code cell 1 differs" in notebook.stale(nb, script)


@pytest.mark.parametrize("old, new, message", [
    ("range(5)", "range(4)", "exited with status 1"),           # a failed self-check
    ("total = sum(range(5))", "total = 1 / 0", "ZeroDivisionError"),  # an exception in a cell
])
def test_a_failing_example_stores_nothing(tmp_path, old, new, message):
    script = tmp_path / "bad.py"
    script.write_text(SCRIPT.replace(old, new))
    target = tmp_path / "out" / "bad.ipynb"
    proc = subprocess.run([sys.executable, "-m", "gpukit.notebook", str(script), str(target)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 1
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not target.exists()


def test_results_command_rejects_unknown_names():
    proc = subprocess.run([sys.executable, "-m", "gpukit", "results", "--only", "no-such-thing"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "gpukit results: error: unknown benchmark or example: no-such-thing"



def test_results_command_runs_examples_first_and_budgets_training(monkeypatch, tmp_path, capsys):
    """The examples run before the benchmarks; the training benchmark gets its time budget."""
    import argparse

    from gpukit import notebook as nbmod
    from gpukit import record as runall
    monkeypatch.setenv("GPUKIT_RESULTS_DIR", str(tmp_path))
    monkeypatch.delenv("GPUKIT_BENCH_BUDGET_S", raising=False)
    calls = []

    def fake_step(cmd, env=None):
        calls.append((cmd[3:], (env or {}).get("GPUKIT_BENCH_BUDGET_S")))
        return True, 0.0, ""

    def fake_examples(names, log=print):
        calls.append((["examples", *names], None))
        return [{"name": n, "ok": n != "vector_add", "seconds": 1.0, "error": "AssertionError: x"}
                for n in names]
    monkeypatch.setattr(runall, "_step", fake_step)
    monkeypatch.setattr(nbmod, "run_all", fake_examples)
    args = argparse.Namespace(only=["matmul", "cats-vs-dogs", "vector_add"], no_examples=False,
                              no_benchmarks=False)
    assert runall._results(args) == 1          # the failed example fails the run
    assert calls == [(["examples", "matmul", "vector_add"], None),
                     (["bench", "matmul", "--save"], None),
                     (["bench", "cats-vs-dogs", "--save"], str(runall.BUDGETS["cats-vs-dogs"]))]
    summary = capsys.readouterr().out.split("| step")[1]
    assert "example vector_add | FAILED" in summary and "bench cats-vs-dogs | ok" in summary
    assert not list(tmp_path.rglob("results_run.json"))   # a partial run records no run time


def test_a_stored_run_shows_new_code_only_when_it_is_the_same_program(tmp_path):
    """Comments and layout may be refreshed in a stored run (its outputs still belong to that
    program); any change of the program itself is refused: the example must run again."""
    script = tmp_path / "demo.py"
    script.write_text("# %%\nx = 1   # one\nprint(x)\n", encoding="utf-8")
    nb = {"cells": [{"cell_type": "code", "source": "x = 1   # one\nprint(x)", "outputs": []}],
          "metadata": {"gpukit": {}}}
    script.write_text("# %%\n# one, on its own line\nx = 1\nprint(x)\n", encoding="utf-8")
    assert notebook.refresh_code(nb, script) == [1]
    assert notebook.stale(nb, script) is None and nb["metadata"]["gpukit"]["code_refreshed"]["cells"] == [1]
    script.write_text("# %%\nx = 2\nprint(x)\n", encoding="utf-8")
    with pytest.raises(ValueError, match="another program"):
        notebook.refresh_code(nb, script)
    assert "x = 1" in nb["cells"][0]["source"]                     # left as the run showed it
