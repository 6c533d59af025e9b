"""Executed example pages: run ``examples/*.py`` cell by cell and store the outputs.

An example script is written in the "percent" format (``# %%`` starts a code cell,
``# %% [markdown]`` a text cell). :func:`execute` runs its code cells one after
another in one namespace, as a notebook kernel would, captures what each cell
prints, and returns a Jupyter notebook (nbformat 4) with those outputs and a first
cell that says where and when it ran. ``gpukit notebooks`` writes them to
``results/<machine>/notebooks/``; the site shows the reference GPU's notebooks,
and a test checks that their code is still the code of the example files.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import subprocess
import sys
import time
import types
from pathlib import Path

from . import device
from .results import PROJECT, code_record



class ExampleFailed(RuntimeError):
    """The example raised, or exited with a non-zero status: nothing is stored."""


def parse(text: str) -> list[dict]:
    """The cells of a percent-format script: ``{"kind": "code"|"markdown", "source": str}``."""
    cells: list[dict] = []
    kind, lines = None, []

    def flush():
        if kind is None:
            return
        body = "\n".join(lines).strip("\n")
        if kind == "markdown":
            body = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in body.splitlines())
        if body.strip():
            cells.append({"kind": kind, "source": body})

    for line in text.splitlines():
        if line.startswith("# %%"):
            flush()
            kind, lines = ("markdown" if "[markdown]" in line else "code"), []
        else:
            if kind is None and line.strip():
                kind = "code"  # text before the first marker is a code cell
            lines.append(line)
    flush()
    return cells


def source_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _stream(name: str, text: str) -> dict:
    return {"output_type": "stream", "name": name, "text": text.splitlines(keepends=True)}


def execute(path: str | Path, argv: list[str] | None = None) -> dict:
    """Run the script's cells in order; the executed notebook as a dict.

    Raises :class:`ExampleFailed` when a cell raises or the script exits non-zero.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    cells = parse(text)
    module = types.ModuleType("__main__")
    module.__file__ = str(path)
    saved_main, saved_argv = sys.modules.get("__main__"), sys.argv
    sys.modules["__main__"], sys.argv = module, [str(path), *(argv or [])]
    nb_cells, count, status = [], 0, 0
    t0 = time.perf_counter()
    try:
        for cell in cells:
            if cell["kind"] == "markdown":
                nb_cells.append({"cell_type": "markdown", "metadata": {}, "source": cell["source"]})
                continue
            count += 1
            out, err = io.StringIO(), io.StringIO()
            failure = None
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    exec(compile(cell["source"], f"{path.name} cell {count}", "exec"), module.__dict__)
                except SystemExit as exc:
                    status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                except BaseException as exc:  # noqa: BLE001 - reported as a failed example
                    failure = f"{type(exc).__name__}: {exc}"
            outputs = [_stream(n, s.getvalue()) for n, s in (("stdout", out), ("stderr", err)) if s.getvalue()]
            nb_cells.append({"cell_type": "code", "execution_count": count, "metadata": {},
                             "outputs": outputs, "source": cell["source"]})
            if failure or status:
                tail = (err.getvalue() or out.getvalue()).strip().splitlines()[-1:]
                raise ExampleFailed(f"{path.name}: cell {count} "
                                    f"{failure or f'exited with status {status}'}"
                                    f"{': ' + tail[0] if tail and not failure else ''}")
    finally:
        sys.argv = saved_argv
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    seconds = time.perf_counter() - t0
    machine = device.machine_record()
    stamp = {"cell_type": "markdown", "metadata": {"gpukit": "stamp"},
             "source": stamp_text(machine, path.name, argv or [], seconds)}
    return {
        "cells": [stamp] + nb_cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python", "version": machine["python"]},
            "gpukit": {"source": f"examples/{path.name}", "source_sha256": source_digest(text),
                       "argv": argv or [], "seconds": seconds, "machine": machine,
                       "code": code_record()},
        },
        "nbformat": 4, "nbformat_minor": 4,  # 4.4: cells without ids are valid
    }


def stamp_text(machine: dict, script: str, argv: list[str], seconds: float) -> str:
    """The first cell of an executed example: where, when, with what, how long (HTML)."""
    import html
    pk = machine.get("packages", {})
    versions = ", ".join(f"{k} {pk[k]}" for k in ("torch", "cupy-cuda13x", "cupy-cuda12x", "numba",
                                                   "numba-cuda", "numpy") if pk.get(k))
    title = f"Executed on {machine['gpu']['name']}" if machine.get("gpu") else "Executed without a GPU"
    command = " ".join(["python", f"examples/{script}", *argv])
    return (f'<div class="admonition info gpukit-stamp"><p class="admonition-title">{html.escape(title)}</p>'
            f"<p>The outputs on this page come from one run of <code>{html.escape(command)}</code> on "
            f"{html.escape(device.describe(machine))}, with Python {machine['python']}, "
            f"{html.escape(versions)}. It took {seconds:.1f} s and every check in it passed. "
            f'<a href="../../examples/{script}">Download the script</a> and run it on your machine.</p></div>')


def code_sources(notebook: dict) -> list[str]:
    return [c["source"] if isinstance(c["source"], str) else "".join(c["source"])
            for c in notebook["cells"] if c["cell_type"] == "code"]


def stale(notebook: dict, script: Path) -> str | None:
    """Why a stored notebook no longer shows ``script``'s code (None when it does)."""
    current = [c["source"] for c in parse(script.read_text(encoding="utf-8")) if c["kind"] == "code"]
    stored = code_sources(notebook)
    if len(current) != len(stored):
        return f"{len(stored)} code cells stored, the script now has {len(current)}"
    for i, (a, b) in enumerate(zip(stored, current), 1):
        if a != b:
            return f"code cell {i} differs from {script.name}"
    return None


def refresh_code(notebook: dict, script: Path) -> list[int]:
    """Show ``script``'s current code in a stored notebook whose code cells differ from it only
    in comments and layout (the same program: equal syntax trees), keeping the run's outputs,
    and note it in the notebook's metadata. Returns the numbers of the cells refreshed. Raises
    ValueError when a cell's program changed: its outputs would belong to other code, so the
    example must be run again."""
    import ast
    current = [c["source"] for c in parse(script.read_text(encoding="utf-8")) if c["kind"] == "code"]
    cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    if len(current) != len(cells):
        raise ValueError(f"{script.name}: {len(cells)} code cells stored, the script now has {len(current)}")
    done = []
    for i, (cell, new) in enumerate(zip(cells, current), 1):
        old = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        if old == new:
            continue
        if ast.dump(ast.parse(old)) != ast.dump(ast.parse(new)):
            raise ValueError(f"{script.name}: code cell {i} is another program now; run the example again")
        cell["source"] = new
        done.append(i)
    if done:
        meta = notebook["metadata"].setdefault("gpukit", {})
        meta["code_refreshed"] = {"cells": done, "source_sha256": source_digest(script.read_text(encoding="utf-8")),
                                  "why": "comments and layout only: the same program as the run"}
    return done


def notebooks_dir(slug: str | None = None) -> Path:
    from .results import results_dir
    return results_dir() / (slug or device.gpu_slug()) / "notebooks"


def write(notebook: dict, target: Path) -> Path:
    from .files import atomic_write
    return atomic_write(target, lambda fh: json.dump(notebook, fh, indent=1, ensure_ascii=False))


def run_all(names: list[str] | None = None, out_dir: Path | None = None, *, log=print) -> list[dict]:
    """Execute every example (or the named ones) and store each notebook; one summary row each."""
    scripts = sorted((PROJECT / "examples").glob("*.py"))
    if names:
        unknown = set(names) - {p.stem for p in scripts}
        if unknown:
            from .cli import UserError
            raise UserError(f"no example named {', '.join(sorted(unknown))} "
                            f"(examples: {', '.join(p.stem for p in scripts)})")
        scripts = [p for p in scripts if p.stem in names]
    out_dir = out_dir or notebooks_dir()
    rows = []
    for script in scripts:
        # one fresh process per example: its first calls (compilation, context) are its own
        log(f"  running examples/{script.name} ...")
        t0 = time.perf_counter()
        target = out_dir / f"{script.stem}.ipynb"
        proc = subprocess.run([sys.executable, "-m", "gpukit.notebook", str(script), str(target)],
                              capture_output=True, text=True, cwd=PROJECT)
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            error = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            rows.append({"name": script.stem, "ok": False, "seconds": seconds, "error": error})
            log(f"    FAILED ({seconds:.0f} s): {error}")
            continue
        rows.append({"name": script.stem, "ok": True, "seconds": seconds, "path": str(target)})
        log(f"    ok ({seconds:.0f} s)")
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python -m gpukit.notebook SCRIPT TARGET.ipynb [ARGS...]``: execute one example."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print("usage: python -m gpukit.notebook SCRIPT TARGET.ipynb [ARGS...]", file=sys.stderr)
        return 2
    script, target, args = Path(argv[0]), Path(argv[1]), argv[2:]
    if not script.is_file():
        print(f"error: no script {script}", file=sys.stderr)
        return 2
    try:
        nb = execute(script, args)
    except ExampleFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    write(nb, target)
    print(f"{target} ({nb['metadata']['gpukit']['seconds']:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
