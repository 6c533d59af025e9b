"""The way in without a clone: install commands and "Open in Colab" notebooks.

The site's install commands and its "Open in Colab" buttons need the address of the project's
public repository. It comes from one setting, ``extra.repo_url`` in ``mkdocs.yml``; a build on
GitHub Actions uses the repository it builds instead (``GITHUB_REPOSITORY``, which Actions sets).
When neither is known (a build from a local clone), the pages show the install from a clone and no
Colab button: they never show an address nobody gave them.

A Colab notebook is made from an example, ``examples/<slug>.py``: a first cell that installs gpukit
from the repository, a cell that picks the example's sizes from the memory of the GPU it finds,
then the example's own cells, ending in a call of its ``main`` with those sizes. Colab opens a
notebook from the repository on GitHub, not from the site, so the notebooks are committed under
``docs/colab/``: ``python -m gpukit.colab`` writes them for the address in ``mkdocs.yml`` and
``--check`` says whether the committed ones are current. They are built and checked for format
here; no machine of the project can run them on Colab.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from pathlib import Path

from .results import PROJECT

GITHUB = "https://github.com"
COLAB = "https://colab.research.google.com/github"
BRANCH = "main"                        # the branch the Pages workflow publishes
COLAB_DIR = PROJECT / "docs" / "colab"

#: an example's size arguments: flag -> (its value in the reference GPU run, exponent). A GPU with
#: a share s < 1 of the reference GPU's memory runs value * s**exponent, rounded down to a power
#: of two: exponent 1 for element counts, 1/2 for a side of a square (an image, a matrix), so the
#: example takes about the same share of this GPU's memory as it took of the reference GPU's.
SIZES: dict[str, dict[str, tuple[int, float]]] = {
    "gpu_anatomy": {"--n": (2**26, 1.0)},
    "ladder": {"--rows": (8192, 1.0)},
    "mandelbrot": {"--size": (2048, 0.5)},
    "matmul": {"--m": (2048, 0.5), "--n": (2048, 0.5), "--k": (2048, 0.5)},
    "timing": {"--n": (2**26, 1.0)},
    "vector_add": {"--n": (2**26, 1.0)},
}
SMALLEST = 256

#: how every example's last cell ends, and what a Colab notebook runs instead, in a cell of its own
SCRIPT_MAIN = 'if __name__ == "__main__":\n    sys.exit(main(None if "ipykernel" not in sys.modules else []))'
NOTEBOOK_MAIN = ("status = main(ARGS)   # the example's command-line arguments, chosen above\n"
                 'assert status == 0, f"the example failed (exit status {status})"')

_REPO_URL = re.compile(r"^https://[\w.-]+(?::\d+)?/[\w.-]+/[\w.-]+$")
_MARKER = re.compile(r"^[ \t]*#[ \t]*--8<--[ \t]*\[(?:start|end):[\w-]+\][ \t]*$")


# ------------------------------------------------------------------------- the repository

def repository(setting: str | None = None, environ=None) -> str | None:
    """The repository's address, ``https://github.com/OWNER/REPO``, or None when unknown.

    ``GITHUB_REPOSITORY`` (with ``GITHUB_SERVER_URL``), set on GitHub Actions, overrides
    ``setting`` (``extra.repo_url`` of ``mkdocs.yml``). Raises ValueError for an address that is
    not of that form.
    """
    env = os.environ if environ is None else environ
    repo = (env.get("GITHUB_REPOSITORY") or "").strip()
    if repo:
        url = f"{(env.get('GITHUB_SERVER_URL') or GITHUB).strip().rstrip('/')}/{repo}"
    elif setting and str(setting).strip():
        url = str(setting).strip()
    else:
        return None
    url = url.rstrip("/").removesuffix(".git")
    if not _REPO_URL.match(url):
        raise ValueError(f"not a repository address: {url!r} (expected https://github.com/OWNER/REPO)")
    return url


def configured(path: Path = PROJECT / "mkdocs.yml") -> str | None:
    """``extra.repo_url`` of ``mkdocs.yml`` (None when unset)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass
    Loader.add_multi_constructor("", lambda loader, suffix, node: None)  # !ENV, !!python/name: ...
    config = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader) or {}
    value = (config.get("extra") or {}).get("repo_url")
    return str(value) if value else None


def pip_command(url: str, extras: str = "torch") -> str:
    return f'pip install "gpukit[{extras}] @ git+{url}"'


def install_markdown(kind: str, url: str | None, colab_ready: bool = False) -> str:
    """What ``<!-- install:KIND -->`` shows: ``pip`` (a console block), ``clone`` (one console
    line) or ``colab`` (a sentence on the Colab buttons); the clone form when ``url`` is None."""
    if kind == "pip":
        if url:
            return f"```console\n$ {pip_command(url)}\n$ gpukit doctor\n```\n"
        return ("```console\n$ pip install -e '.[torch]'     # in your clone of the repository\n"
                "$ gpukit doctor\n```\n\n"
                "This copy of the site was built without the repository's address, so it shows the "
                "install from a clone. On the published site this box holds a one-line `pip install` "
                "straight from the repository, which needs no clone.\n")
    if kind == "clone":
        if url:
            return f"$ git clone {url} && cd {url.rsplit('/', 1)[1]}"
        return "# in your clone of the repository (this site was built without its address):"
    if kind == "colab":
        checked = ("The Colab notebooks are built and checked for format by the project's tests; "
                   "no machine of the project can run them on Colab, so they have not been run there.")
        if colab_ready:
            return ("Each executed example page has an **Open in Colab** button: the notebook "
                    "installs gpukit, sizes the example for the GPU it finds (the free one is "
                    "usually a 16 GB T4) and runs it. " + checked)
        return ("This build of the site has no **Open in Colab** buttons: they need the "
                "repository's address and the Colab notebooks made for it, which it did not have. "
                + checked)
    raise ValueError(f"unknown install marker {kind!r} (pip, clone or colab)")


def colab_url(slug: str, url: str | None, folder: Path = COLAB_DIR) -> str | None:
    """The "Open in Colab" link of an example, or None: the repository must be on github.com and
    ``folder/<slug>.ipynb`` must exist, made for that repository."""
    if not url or not url.startswith(GITHUB + "/"):
        return None
    path = Path(folder) / f"{slug}.ipynb"
    if not path.is_file():
        return None
    meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {}).get("gpukit", {})
    if meta.get("repo_url") != url:
        return None
    return f"{COLAB}/{url[len(GITHUB) + 1:]}/blob/{BRANCH}/docs/colab/{slug}.ipynb"


# ------------------------------------------------------------------------------ the notebooks

def example_args(slug: str, total_memory: int, reference_memory: int) -> list[str]:
    """The example's size arguments for a GPU with ``total_memory`` bytes (see :data:`SIZES`);
    ``[]`` (its own sizes) when it has none or this GPU has at least the reference's memory."""
    if total_memory <= 0 or reference_memory <= 0:
        raise ValueError("memory sizes must be > 0")
    share = min(1.0, total_memory / reference_memory)
    if share >= 1.0:
        return []
    args = []
    for flag, (value, exponent) in SIZES.get(slug, {}).items():
        scaled = value * share ** exponent
        args += [flag, str(max(SMALLEST, min(value, 2 ** int(math.log2(scaled)))))]
    return args


def reference_run(slug: str) -> dict:
    """The machine record of the reference GPU's executed notebook of ``slug``."""
    from .results import results_dir
    path = results_dir() / "nvidia-h200" / "notebooks" / f"{slug}.ipynb"
    return json.loads(path.read_text(encoding="utf-8"))["metadata"]["gpukit"]["machine"]


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _code(text: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": _lines(text)}


def _markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": _lines(text)}


def build(slug: str, url: str) -> dict:
    """The Colab notebook (nbformat 4) of ``examples/<slug>.py`` for the repository ``url``."""
    from . import notebook

    url = repository(url, environ={})
    script = PROJECT / "examples" / f"{slug}.py"
    text = script.read_text(encoding="utf-8")
    cells = notebook.parse(text)
    if not cells or cells[-1]["kind"] != "code" or not cells[-1]["source"].rstrip().endswith(SCRIPT_MAIN):
        raise ValueError(f"{script.name}: its last cell does not end in the usual call of main()")
    cells[-1] = {"kind": "code", "source": cells[-1]["source"].rstrip()[:-len(SCRIPT_MAIN)]}
    gpu = reference_run(slug)["gpu"]
    install = ("# Runtime > Change runtime type: a GPU (the free one is usually a T4). Then run the cells\n"
               "# in order. This cell installs gpukit and its dependencies from the project's repository.\n"
               f"!{pip_command(url)}")
    sizes = ("# The example's sizes for this GPU: its run on the site used an "
             f"{gpu['name']} with {gpu['memory_bytes'] / 2**30:.0f} GiB;\n"
             "# a GPU with less memory gets the same share of its memory (a 16 GB T4: about a tenth).\n"
             "import torch\n"
             "from gpukit.colab import example_args\n\n"
             'assert torch.cuda.is_available(), "no GPU: Runtime > Change runtime type > a GPU, then run again"\n'
             "gpu = torch.cuda.get_device_properties(0)\n"
             f'ARGS = example_args("{slug}", gpu.total_memory, reference_memory={gpu["memory_bytes"]})\n'
             'print(f"{gpu.name}, {gpu.total_memory / 2**30:.1f} GiB: '
             "running the example with {' '.join(ARGS) or 'its own sizes'}\")")
    about = (f"This notebook is `examples/{slug}.py` of [gpukit]({url}), made by `gpukit.colab`: the "
             "cell above installs gpukit, the next one picks sizes for the GPU Colab gave you, and "
             "the rest is the example, which checks its own results and fails loudly on a wrong "
             "one.\n\nThe project's tests build this notebook and check its format; no machine of "
             "the project can run it on Colab, so a run here has not been checked by anyone yet.")
    body = []
    for cell in cells:
        if cell["kind"] == "markdown":
            body.append(_markdown(cell["source"]))
        else:
            kept = "\n".join(line for line in cell["source"].splitlines() if not _MARKER.match(line))
            if kept.strip():
                body.append(_code(kept.strip("\n")))
    return {
        "cells": [_code(install), _markdown(about), _code(sizes), *body, _code(NOTEBOOK_MAIN)],
        "metadata": {
            "accelerator": "GPU",
            "colab": {"gpuType": "T4", "provenance": []},
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
            "gpukit": {"source": f"examples/{slug}.py", "source_sha256": notebook.source_digest(text),
                       "repo_url": url},
        },
        "nbformat": 4, "nbformat_minor": 4,
    }


def slugs() -> list[str]:
    """The examples that have an executed page (a reference GPU run): each gets a notebook."""
    from .results import results_dir
    return sorted(p.stem for p in (results_dir() / "nvidia-h200" / "notebooks").glob("*.ipynb")
                  if (PROJECT / "examples" / f"{p.stem}.py").is_file())


def dumps(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def stale(url: str | None, folder: Path = COLAB_DIR) -> list[str]:
    """Why the notebooks in ``folder`` are not what :func:`write_all` would write (empty: current)."""
    folder = Path(folder)
    stored = {p.stem: p for p in folder.glob("*.ipynb")}
    if url is None:
        return [f"{p.name}: mkdocs.yml sets no extra.repo_url" for p in stored.values()]
    problems = [f"{name}.ipynb: no executed example of that name" for name in sorted(set(stored) - set(slugs()))]
    for slug in slugs():
        if slug not in stored:
            problems.append(f"{slug}.ipynb: missing")
        elif stored[slug].read_text(encoding="utf-8") != dumps(build(slug, url)):
            problems.append(f"{slug}.ipynb: differs from examples/{slug}.py or from {url}")
    return problems


def write_all(url: str, folder: Path = COLAB_DIR) -> list[Path]:
    """Write one notebook per executed example into ``folder``; remove any other notebook there."""
    from .files import atomic_write
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    keep = slugs()
    for old in folder.glob("*.ipynb"):
        if old.stem not in keep:
            old.unlink()
    return [atomic_write(folder / f"{slug}.ipynb", lambda fh, s=slug: fh.write(dumps(build(s, url))))
            for slug in keep]


def main(argv: list[str] | None = None) -> int:
    """``python -m gpukit.colab [--check]``: write (or check) ``docs/colab/`` for the address in
    ``mkdocs.yml``."""
    argv = sys.argv[1:] if argv is None else argv
    url = repository(configured(), environ={})
    if "--check" in argv:
        problems = stale(url)
        for line in problems:
            print(f"stale: {line}", file=sys.stderr)
        return 1 if problems else 0
    if url is None:
        print("error: set extra.repo_url in mkdocs.yml (https://github.com/OWNER/REPO) first: "
              "the notebooks install gpukit from it", file=sys.stderr)
        return 2
    for path in write_all(url):
        print(path.relative_to(PROJECT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
