"""The way in from any copy of the site: install commands, downloadable notebooks, Colab.

The site serves gpukit's own wheel (``dist/`` of the built site, written by the build hook), so
the install command a page shows is ``pip install "gpukit[torch] @ <this site>/dist/<wheel>"``:
the page computes the address from where it is served (a local ``make docs``, GitHub Pages or
any static host), and a build that knows its public address writes it in directly. Beside it, the
install from a clone.

Every example gets a notebook (``notebooks/<slug>.ipynb`` of the built site): a first cell that
installs gpukit the same way, a cell that picks the example's sizes from the memory of the GPU it
finds, then the example's own cells. A build that knows its GitHub repository (``GITHUB_REPOSITORY``
on GitHub Actions, or ``extra.repo_url`` in ``mkdocs.yml``) publishes to the repository's Pages
branch, and each example page gets an "Open in Colab" button for its notebook there. The notebooks
are built and checked for format by the tests; no machine of the project can run them on Colab.
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
PAGES_BRANCH = "gh-pages"              # the branch the Pages workflow publishes the site to
WHEEL_DIR, NOTEBOOK_DIR = "dist", "notebooks"   # folders of the built site
#: what a page or a downloaded notebook shows where the wheel's address goes, until the page
#: (docs/javascripts/gpukit.js) puts in the address it is served from
WHEEL_PLACEHOLDER = "GPUKIT_WHEEL_URL"

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


def pages_url(url: str | None) -> str | None:
    """The GitHub Pages address of the repository ``url`` (None when unknown or not on github.com)."""
    if not url or not url.startswith(GITHUB + "/"):
        return None
    owner, name = url[len(GITHUB) + 1:].split("/")
    return f"https://{owner.lower()}.github.io/{name}/"


def wheel_url(site_url: str, wheel: str) -> str:
    """The address of the wheel a site at ``site_url`` serves."""
    return f"{site_url.rstrip('/')}/{WHEEL_DIR}/{wheel}"


def pip_command(wheel: str, extras: str = "torch") -> str:
    """``pip install`` of gpukit from the wheel at address ``wheel``."""
    return f'pip install "gpukit[{extras}] @ {wheel}"'


def install_markdown(kind: str, url: str | None, wheel: str = WHEEL_PLACEHOLDER) -> str:
    """What ``<!-- install:KIND -->`` shows: ``pip`` (two tabs: from this site's wheel, from a
    clone), ``clone`` (a console line, empty without an address) or ``colab`` (a sentence on the
    Colab buttons, empty without an address). ``wheel`` is the wheel's address, or
    :data:`WHEEL_PLACEHOLDER`, which the page replaces with the address it is served from."""
    if kind == "pip":
        clone = [f"$ git clone {url} && cd {url.rsplit('/', 1)[1]}"] if url else []
        return "\n".join([
            '=== "From this site"', "",
            "    ```console", "    $ pip install \\", f'        "gpukit[torch] @ {wheel}"',
            "    $ gpukit doctor", "    ```", "",
            "    The address is this site's own copy of gpukit's wheel; add `cuda` on an NVIDIA "
            "GPU (`gpukit[cuda,torch]`).", "",
            '=== "From a clone"', "",
            "    ```console", *(f"    {line}" for line in clone),
            "    $ pip install -e '.[torch]'", "    $ gpukit doctor", "    ```", ""])
    if kind == "clone":
        return f"$ git clone {url} && cd {url.rsplit('/', 1)[1]}" if url else ""
    if kind == "colab":
        if not url:
            return ""
        return ("Each example page also has an **Open in Colab** button: the notebook installs "
                "gpukit, sizes the example for the GPU it finds (the free one is usually a 16 GB "
                "T4) and runs it. The project's tests build these notebooks and check their "
                "format; no machine of the project can run them on Colab, so they have not been "
                "run there.")
    raise ValueError(f"unknown install marker {kind!r} (pip, clone or colab)")


def colab_url(slug: str, url: str | None) -> str | None:
    """The "Open in Colab" link of an example's notebook on the repository's Pages branch, or
    None when the repository is unknown or not on github.com."""
    if not url or not url.startswith(GITHUB + "/") or slug not in slugs():
        return None
    return f"{COLAB}/{url[len(GITHUB) + 1:]}/blob/{PAGES_BRANCH}/{NOTEBOOK_DIR}/{slug}.ipynb"


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
    from .results import reference_machine, results_dir
    path = results_dir() / reference_machine() / "notebooks" / f"{slug}.ipynb"
    return json.loads(path.read_text(encoding="utf-8"))["metadata"]["gpukit"]["machine"]


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _code(text: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": _lines(text)}


def _markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": _lines(text)}


def build(slug: str, wheel: str = WHEEL_PLACEHOLDER, url: str | None = None) -> dict:
    """The notebook (nbformat 4) of ``examples/<slug>.py``, whose first cell installs gpukit
    from the wheel at address ``wheel``; ``url`` is the repository, linked when known."""
    from . import notebook

    script = PROJECT / "examples" / f"{slug}.py"
    text = script.read_text(encoding="utf-8")
    cells = notebook.parse(text)
    if not cells or cells[-1]["kind"] != "code" or not cells[-1]["source"].rstrip().endswith(SCRIPT_MAIN):
        raise ValueError(f"{script.name}: its last cell does not end in the usual call of main()")
    cells[-1] = {"kind": "code", "source": cells[-1]["source"].rstrip()[:-len(SCRIPT_MAIN)]}
    install = ("# On Colab: Runtime > Change runtime type > a GPU. Then run the cells in order.\n"
               "# This cell installs gpukit from the site this notebook came from.\n"
               f"%{pip_command(wheel)}")
    try:
        gpu = reference_run(slug)["gpu"]
    except (OSError, KeyError, ValueError):
        gpu = None
    if gpu:
        sizes = ("# The example's sizes for this GPU: its run on the site used an "
                 f"{gpu['name']} with {gpu['memory_bytes'] / 2**30:.0f} GiB;\n"
                 "# a GPU with less memory gets the same share of its memory.\n"
                 "import torch\n"
                 "from gpukit.colab import example_args\n\n"
                 'assert torch.cuda.is_available(), "no GPU: Runtime > Change runtime type > a GPU"\n'
                 "gpu = torch.cuda.get_device_properties(0)\n"
                 f'ARGS = example_args("{slug}", gpu.total_memory, reference_memory={gpu["memory_bytes"]})\n'
                 'print(f"{gpu.name}, {gpu.total_memory / 2**30:.1f} GiB: '
                 "running the example with {' '.join(ARGS) or 'its own sizes'}\")")
    else:
        sizes = "ARGS = []   # the example's own sizes"
    source = f"[gpukit]({url})" if url else "gpukit"
    about = (f"This notebook is `examples/{slug}.py` of {source}: the cell above installs gpukit, "
             "the next one picks sizes for the GPU you have, and the rest is the example, which "
             "checks its own results and fails loudly on a wrong one.")
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
    """Every example (``examples/<slug>.py`` ending in the usual call of ``main``): each gets a notebook."""
    return sorted(p.stem for p in (PROJECT / "examples").glob("*.py")
                  if p.read_text(encoding="utf-8").rstrip().endswith(SCRIPT_MAIN))


def dumps(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def write_all(folder: Path, wheel: str = WHEEL_PLACEHOLDER, url: str | None = None) -> list[Path]:
    """Write one notebook per example into ``folder`` (the built site's ``notebooks/``)."""
    from .files import atomic_write
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return [atomic_write(folder / f"{slug}.ipynb", lambda fh, s=slug: fh.write(dumps(build(s, wheel, url))))
            for slug in slugs()]
