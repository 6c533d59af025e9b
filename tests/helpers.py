"""Small helpers shared by the tests."""

import os
import re
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


_FRONT_MATTER = re.compile(r"^-{3}[ \t]*\n(.*?\n)(?:\.{3}|-{3})[ \t]*\n", re.DOTALL)


def page_source(path) -> tuple[dict, str]:
    """A docs page as MkDocs reads it: its YAML front matter (``page.meta``) and its Markdown.

    Parsed here with PyYAML, not MkDocs, so that page tests also run where the docs toolchain is
    not installed (the GPU machine); test_pages checks it agrees with MkDocs on every page.
    """
    import yaml
    text = Path(path).read_text(encoding="utf-8")
    found = _FRONT_MATTER.match(text)
    if found:
        meta = yaml.safe_load(found.group(1))
        if isinstance(meta, dict):
            return meta, text[found.end():].lstrip("\n")
    return {}, text


def build_cuda_emulator(source: str, tmp_dir: str) -> str:
    """Compile a C++ harness that runs CUDA C kernels on the CPU (AddressSanitizer on).

    Skips the calling test when g++ is missing or has no C++20 <barrier>; fails it when the
    harness itself does not build.
    """
    import shutil

    import pytest
    if shutil.which("g++") is None:
        pytest.skip("g++ not found: the CPU emulator of the CUDA C kernels needs it")
    probe = Path(tmp_dir) / "has_barrier.cpp"
    probe.write_text("#include <barrier>\nint main() { std::barrier<> b(1); b.arrive_and_wait(); }\n")
    if subprocess.run(["g++", "-std=c++20", "-pthread", str(probe), "-o", f"{tmp_dir}/has_barrier"],
                      capture_output=True).returncode != 0:
        pytest.skip("this g++ has no C++20 <barrier>, which the emulator of the CUDA C kernels needs")
    exe = f"{tmp_dir}/harness"
    # any other failure to build is a failure of the test (a moved kernel file, say), not a skip
    proc = subprocess.run(["g++", "-std=c++20", "-O1", "-g", "-fsanitize=address", "-Wno-unknown-pragmas",
                           "-pthread", source, "-o", exe], capture_output=True, text=True)
    assert proc.returncode == 0, f"the CUDA emulator harness did not build:\n{proc.stderr[-2000:]}"
    return exe


def run_without_gpu(target: str, *args, timeout: float = 900):
    """``target(*args)`` ("package.module:function") in a fresh process that sees no GPU (the
    numba simulator, CUDA devices hidden): a CPU run that is the same on a GPU machine."""
    from gpukit import proc
    result = proc.run_fresh(target, *args, env=proc.NO_GPU, timeout=timeout)
    assert not (isinstance(result, dict) and set(result) == {"error", "process_s"}), result
    return result


def run_in_triton_interpreter(target: str, *args, timeout: float = 600):
    """``target(*args)`` in a fresh process with Triton's CPU interpreter on and no GPU.

    Triton 3.6's interpreter turns a scalar argument used as a ``range`` bound into a
    one-element array and calls ``int`` on it, which numpy 2.4 refuses ("only 0-dimensional
    arrays can be converted to Python scalars"; Triton 3.8 squeezes first). With that pair
    the calling test is skipped, saying so; any other error is returned for it to fail on.
    """
    import pytest

    from gpukit import proc
    result = proc.run_fresh(target, *args, env={**proc.NO_GPU, "TRITON_INTERPRET": "1"},
                            timeout=timeout)
    if isinstance(result, dict) and "only 0-dimensional arrays" in str(result.get("error")):
        import numpy
        import triton
        pytest.skip(f"Triton {triton.__version__}'s interpreter cannot take a scalar loop bound "
                    f"under numpy {numpy.__version__}")
    return result


def _run_and_save(target: str, args: list, name: str, root: str):
    """In the child of :func:`cpu_results_file`: run, save with this (GPU-less) machine's record."""
    from gpukit import results
    data = results.resolve(target)(*args)
    results.save(name, data, root=root)
    data.pop(results.FILES, None)       # saved beside the record, not in it
    return data


def cpu_results_file(target: str, args: list, name: str, root) -> dict:
    """Run a chapter's benchmark without a GPU in a fresh process and save it under ``root``
    as ``name``; returns what was saved (as JSON reads it back)."""
    return run_without_gpu("tests.helpers:_run_and_save", target, list(args), name, str(root))


def build_site(out, **env_vars) -> None:
    """``mkdocs build --strict`` of the project into ``out``; fails the calling test on an error.
    ``env_vars`` are set for the build (``GITHUB_REPOSITORY="owner/name"``, say)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", **env_vars}
    if "GITHUB_REPOSITORY" not in env_vars:
        env.pop("GITHUB_REPOSITORY", None)
        env.pop("GITHUB_SERVER_URL", None)
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _shared_root(tmp_path_factory) -> Path:
    """The folder of this test session that every pytest-xdist worker sees."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent                      # the folder the workers' own folders share
    return root


def shared_once(tmp_path_factory, name: str, make):
    """``make(folder)`` run once per test session, whichever pytest-xdist worker asks first
    (under a lock; the others wait), and its JSON result read back by every later ask.

    ``folder`` is an empty folder that all workers see, for the files ``make`` writes; a
    module-scoped fixture of its own would run once in each worker that takes a test of the
    module. A ``make`` that fails leaves nothing behind: the next ask runs it again."""
    import fcntl
    import json
    import shutil
    root = _shared_root(tmp_path_factory)
    out = root / f"shared-{name}"
    done = out / ".result.json"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            if out.exists():
                shutil.rmtree(out)              # a run that failed half-way
            out.mkdir()
            value = make(out)
            done.write_text(json.dumps(value), encoding="utf-8")
    return json.loads(done.read_text(encoding="utf-8"))


def shared_site(tmp_path_factory, name: str = "site", **env_vars):
    """The site built once per test session, shared by every test and every pytest-xdist worker
    that asks for the same ``name`` (the first to ask builds it, under a lock; the others wait)."""
    shared_once(tmp_path_factory, name, lambda out: build_site(out, **env_vars))
    return _shared_root(tmp_path_factory) / f"shared-{name}"
