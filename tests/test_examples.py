"""Run every examples/*.py: small sizes on CPU (simulator), default sizes on a GPU."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def test_there_are_examples():
    assert EXAMPLES


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs_and_verifies(path, tmp_path):
    store = os.environ.get("GPUKIT_NOTEBOOKS_DIR")
    if store:
        # Run it as a notebook (cell by cell, default arguments) and keep the executed
        # notebook: the outputs the site shows are this test's run.
        target = Path(store) / f"{path.stem}.ipynb"
        proc = subprocess.run([sys.executable, "-m", "gpukit.notebook", str(path), str(target)],
                              capture_output=True, text=True, cwd=ROOT, timeout=900)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr
        nb = json.loads(target.read_text())
        assert nb["metadata"]["gpukit"]["machine"]["date"]
        return
    out = tmp_path / "result.json"
    proc = subprocess.run([sys.executable, str(path), "--json", str(out)], capture_output=True,
                          text=True, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    record = json.loads(out.read_text())
    assert record["machine"]["date"]
