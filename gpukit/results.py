"""Results files: the one project root, the one list of chapters, saving and loading.

A results file is ``results/<machine-slug>/<name>.json``. Every file carries

* ``schema``: the version of this layout (:data:`SCHEMA_VERSION`);
* ``machine``: the machine record of :func:`gpukit.device.machine_record` (GPU, driver,
  versions, CPU, date);
* ``code``: the gpukit version and the git commit that produced it, with a dirty flag.

A file can hold several parts (``"gpu"``, ``"cpu"``, ...). :func:`save_part` re-measures one
part and gives that part its own stamp (``"stamps": {part: {machine, code}}``) instead of
re-stamping the whole file with a new date or driver.

The chapters are listed once, in :data:`CHAPTERS`; the ``gpukit bench`` and ``gpukit results``
commands, the site's renderers and the tests all read that list.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import os
import subprocess
from pathlib import Path

from . import device
from .files import atomic_write

#: version of the results-file layout; bumped when a field changes meaning
SCHEMA_VERSION = 2

#: the project root: the folder holding pyproject.toml, examples/ and results/
#: (for an installed copy without them, the current folder)
PROJECT = Path(__file__).resolve().parents[1]
if not (PROJECT / "pyproject.toml").exists():
    PROJECT = Path.cwd()


class Chapter:
    """One chapter: ``gpukit/<slug>/``, ``docs/<slug with ->.md``, ``examples/<slug>.py``,
    ``tests/test_<slug>.py``, ``results/<machine>/<slug>.json`` and ``gpukit bench <slug with ->``.

    ``benchmarks`` maps a results-file name to ``"module:function"`` inside the chapter's
    folder; the function takes ``(n, repeat)`` and returns a dict of parts. ``multi_gpu``
    benchmarks are left out of ``gpukit results``.
    """

    def __init__(self, slug: str, title: str, benchmarks: dict[str, str] | None = None,
                 multi_gpu: tuple[str, ...] = (), numbered: bool = True, level: str | None = None,
                 summary: str = ""):
        self.slug, self.title, self.numbered = slug, title, numbered
        self.level, self.summary = level, summary   # for the home page's list of chapters
        self.benchmarks = benchmarks if benchmarks is not None else {slug: "measure:run"}
        self.multi_gpu = multi_gpu

    @property
    def package(self) -> str:
        return f"gpukit.{self.slug}"

    @property
    def page(self) -> str:
        return self.slug.replace("_", "-") + ".md"

    def __repr__(self) -> str:
        return f"Chapter({self.slug!r})"


#: every chapter, in reading order: the one list. The site numbers the chapters in this order
#: (the glossary, a reference, is not numbered) and takes each page's title from here.
CHAPTERS: tuple[Chapter, ...] = (
    Chapter("why_gpus", "Why CPUs alone are not enough", level="first steps",
            summary="what a modern CPU really does, and the sizes at which a GPU starts to win"),
    Chapter("graphics", "Why GPUs exist: pixels in parallel", level="intermediate",
            summary="a path tracer on every GPU thread and every CPU core, and what rasterisation is"),
    Chapter("gpu_anatomy", "What a GPU is made of", level="first steps",
            summary="SMs, warps, latency hiding and coalescing, each shown by an experiment"),
    Chapter("installing_cuda", "Installing CUDA and first commands", level="first steps",
            summary="driver, toolkit and wheels, and `gpukit doctor` to find what is broken", benchmarks={}),
    Chapter("vector_add", "Your first kernel: adding two arrays", level="first steps",
            summary="your first kernel in numba, CuPy, CUDA C and torch, checked and timed"),
    Chapter("timing", "Timing GPU code honestly", level="first steps",
            summary="the timing mistakes that give impossible numbers, and the right tools"),
    Chapter("ladder", "One operation at every level", level="intermediate",
            summary="one softmax from PyTorch down to CUDA C: code, compile time and speed"),
    Chapter("mandelbrot", "Mandelbrot: compile time and run time", level="intermediate",
            summary="compile time apart from run time, float32 against float64, a fair CPU"),
    Chapter("matmul", "Matrix multiplication, step by step", level="advanced",
            summary="from a naive kernel to within reach of cuBLAS, with the roofline"),
    Chapter("tensor_cores", "Tensor cores: where the FLOPs are", level="advanced",
            summary="WMMA, mma.sync, wgmma with TMA, Triton and Gluon, and fp8, measured rung by rung",
            benchmarks={"tensor_cores": "measure:run", "tensor_cores_profiles": "profiles:run"}),
    Chapter("profiling", "Profile before you guess", level="intermediate",
            summary="Nsight Compute, the PyTorch profiler, and copies overlapped on streams",
            benchmarks={"profiling": "measure:run", "profiles": "profiles:run"}),
    Chapter("cats_vs_dogs", "Training cats vs dogs", level="intermediate",
            summary="a training run that keeps the GPU busy, timed phase by phase",
            benchmarks={"cats_vs_dogs": "measure:run", "cats_vs_dogs_ddp": "scaling:run",
                        "cats_vs_dogs_originals": "originals:run"},
            multi_gpu=("cats_vs_dogs_ddp",)),
    Chapter("llm_inference", "Running a language model on one GPU", level="intermediate",
            summary="decode is a memory problem, prefill a compute problem: an 8B model measured",
            benchmarks={"llm_inference": "measure:run", "llm_inference_profiles": "profiles:run"}),
    Chapter("simulation", "GPUs beyond machine learning", level="intermediate",
            summary="fluid, gravity and heat, each against the limit it should reach"),
    Chapter("cloud", "GPUs in the cloud and on your desk", level="first steps",
            summary="which instance or card to rent or buy, and the memory a model needs", benchmarks={}),
    Chapter("exercises", "Exercises: twenty GPU puzzles", level="intermediate",
            summary="twenty kernels to write, checked on any machine"),
    Chapter("glossary", "Glossary", benchmarks={}, numbered=False),
)


def number(slug: str) -> int | None:
    """A chapter's number in the reading order (None for the glossary)."""
    n = 0
    for c in CHAPTERS:
        n += c.numbered
        if c.slug == slug:
            return n if c.numbered else None
    raise KeyError(slug)


def chapter(slug: str) -> Chapter:
    for c in CHAPTERS:
        if c.slug == slug:
            return c
    raise KeyError(f"no chapter {slug!r}; chapters: {', '.join(c.slug for c in CHAPTERS)}")


def bench_name(results_name: str) -> str:
    """The ``gpukit bench`` name of a results file: its name with ``-`` for ``_``."""
    return results_name.replace("_", "-")


def benchmarks() -> dict[str, tuple[str, str]]:
    """``gpukit bench`` name -> (results-file name, ``"gpukit.<slug>.module:function"``)."""
    out = {}
    for c in CHAPTERS:
        for name, target in c.benchmarks.items():
            out[bench_name(name)] = (name, f"{c.package}.{target}")
    return out


def multi_gpu_benchmarks() -> set[str]:
    return {bench_name(n) for c in CHAPTERS for n in c.multi_gpu}


def resolve(target: str):
    """``"package.module:function"`` -> the function."""
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)


#: the modules of a chapter that register page views, where they exist
VIEW_MODULES = ("views", "card")


def view_modules() -> list[str]:
    """The modules that register a chapter's page views: ``gpukit.<slug>.views`` (tables and
    plots) and ``gpukit.<slug>.card`` (the card at the top of its page), where they exist."""
    mods = []
    for c in CHAPTERS:
        if importlib.util.find_spec(c.package) is None:
            continue
        mods += [f"{c.package}.{m}" for m in VIEW_MODULES
                 if importlib.util.find_spec(f"{c.package}.{m}") is not None]
    return mods


# ----------------------------------------------------------------- provenance

@functools.cache
def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=PROJECT, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def code_record() -> dict:
    """The gpukit version and the git commit of the code that is running (None outside a checkout).

    ``dirty`` is True when tracked files differ from that commit; ``GPUKIT_COMMIT`` overrides
    both (a copy of the tree without ``.git``, as on a remote GPU machine, passes it in).
    """
    from . import __version__
    env = os.environ.get("GPUKIT_COMMIT")
    if env:
        commit, _, flag = env.partition("+")
        return {"gpukit": __version__, "commit": commit, "dirty": flag == "dirty"}
    commit = _git("rev-parse", "HEAD")
    dirty = None
    if commit:
        status = _git("status", "--porcelain", "--untracked-files=no", "--", "gpukit", "examples")
        dirty = bool(status)
    return {"gpukit": __version__, "commit": commit, "dirty": dirty}


# ----------------------------------------------------------------- files

def results_dir() -> Path:
    """Where results live: $GPUKIT_RESULTS_DIR, else the project's ``results/``."""
    env = os.environ.get("GPUKIT_RESULTS_DIR")
    return Path(env) if env else PROJECT / "results"


def _json_default(obj):
    if hasattr(obj, "to_dict"):  # gpukit.bench.Timing
        return obj.to_dict()
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    raise TypeError(f"cannot store {type(obj).__name__} in a results file")


def _write(path: Path, record: dict) -> Path:
    text = json.dumps(record, indent=1, default=_json_default) + "\n"
    return atomic_write(path, lambda fh: fh.write(text))


#: the key under which a benchmark's data may carry files ({file name: bytes}) that are
#: written beside its JSON when, and only when, the data is saved
FILES = "_files"


def save(name: str, data: dict, *, root: Path | None = None, machine: dict | None = None) -> Path:
    """Write ``data`` with schema, machine and code records to ``results/<slug>/<name>.json``,
    and the files under ``data[FILES]`` beside it."""
    machine = machine or device.machine_record()
    path = Path(root or results_dir()) / machine["slug"] / f"{name}.json"
    data = dict(data)
    files = data.pop(FILES, None) or {}
    for fname in files:
        if Path(fname).name != fname or fname.startswith("."):
            raise ValueError(f"a results file beside {name}.json needs a plain name, got {fname!r}")
    record = {"benchmark": name, "schema": SCHEMA_VERSION, "machine": machine,
              "code": code_record(), **data}
    out = _write(path, record)
    for fname, blob in files.items():
        atomic_write(path.parent / fname, lambda fh, b=blob: fh.write(b), binary=True)
    return out


def save_part(name: str, part: str, value, *, root: Path | None = None,
              machine: dict | None = None) -> Path:
    """Replace one part of an existing results file, stamping only that part.

    The file's own machine and code records stay as they were; the new part's records go
    under ``stamps[part]``. Without an existing file this is :func:`save` of that one part.
    """
    machine = machine or device.machine_record()
    path = Path(root or results_dir()) / machine["slug"] / f"{name}.json"
    if not path.exists():
        return save(name, {part: value}, root=root, machine=machine)
    record = json.loads(path.read_text(encoding="utf-8"))
    record[part] = value
    record.setdefault("stamps", {})[part] = {"machine": machine, "code": code_record()}
    return _write(path, record)


def load(name: str, *, root: Path | None = None) -> dict[str, dict]:
    """All recorded ``<name>.json`` files, keyed by machine slug."""
    root = Path(root or results_dir())
    found = {}
    for path in sorted(root.glob(f"*/{name}.json")):
        found[path.parent.name] = json.loads(path.read_text(encoding="utf-8"))
    return found


def reference_machine() -> str:
    """The machine whose results the site is written around (its executed notebooks too)."""
    return os.environ.get("GPUKIT_REFERENCE", "nvidia-h200")
