"""Small helpers shared by the tests."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args, env=None, timeout=600):
    """Run `python -m gpukit.cli ARGS` in a subprocess; return the CompletedProcess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "gpukit.cli", *map(str, args)],
                          capture_output=True, text=True, env=full_env, timeout=timeout, cwd=ROOT)


def assert_one_line_error(proc, code=2):
    """Bad input: the given exit code, one line on stderr, no traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]
