"""Cats and dogs photos on disk: find them in four folder layouts, decode them (no torch here).

Four layouts are understood:

* ``cats_and_dogs_filtered``: ``train/{cats,dogs}`` and ``validation/{cats,dogs}``;
* Microsoft's ``PetImages/{Cat,Dog}`` (no split: a seeded, stratified one is made);
* Kaggle's flat ``train/cat.N.jpg`` / ``train/dog.N.jpg`` naming (seeded split);
* torchvision's ``OxfordIIITPet`` with ``target_types="binary-category"`` (downloads itself).

Unreadable, zero-byte, truncated and non-image files are skipped and counted.

This module imports neither torch nor CUDA: ``gpukit train`` starts decoding the photos in
worker processes (:func:`start_decoding`) before it imports torch, so the two overlap.
:mod:`gpukit.cats_vs_dogs.data` keeps the decoded photos on the device and augments them there.
"""

from __future__ import annotations

import os
import random
import re
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

#: The two classes, in label order.
CLASSES = ["cat", "dog"]
_ALIASES = {"cat": 0, "cats": 0, "dog": 1, "dogs": 1}
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp"}
#: ImageNet channel statistics, in 0..255 units (also right for photos in general).
MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)
STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)


class DataError(ValueError):
    """The data directory is missing, empty, or not in a layout we understand."""


def default_data_dir() -> Path | None:
    """$GPUKIT_CATS_DOGS, else .data/ in the project, else ../shared/data/ beside it."""
    env = os.environ.get("GPUKIT_CATS_DOGS")
    if env:
        return Path(env)
    project = Path(__file__).resolve().parents[2]
    for cand in (project / ".data" / "cats_and_dogs_filtered_160",
                 project.parent / "shared" / "data" / "cats_and_dogs_filtered_160"):
        if cand.is_dir():
            return cand
    return None


@dataclass
class Split:
    paths: list[str] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.paths)

    def counts(self) -> list[int]:
        return [self.labels.count(i) for i in range(len(CLASSES))]


@dataclass
class Dataset:
    root: str
    layout: str
    train: Split
    val: Split
    classes: list[str] = field(default_factory=lambda: list(CLASSES))


# --------------------------------------------------------------------- layouts

def _images_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in IMAGE_SUFFIXES)


def _class_dirs(folder: Path) -> dict[int, Path]:
    found: dict[int, Path] = {}
    for p in sorted(folder.iterdir()):
        label = _ALIASES.get(p.name.lower())
        if p.is_dir() and label is not None and label not in found:
            found[label] = p
    return found


def _gather_class_dirs(folder: Path) -> Split:
    dirs = _class_dirs(folder)
    split = Split()
    for label, name in enumerate(CLASSES):
        if label not in dirs:
            raise DataError(f"class {name!r} is missing: no folder {name}s/ (or {name}/, "
                            f"{name.capitalize()}/) in {folder}")
        files = _images_in(dirs[label])
        if not files:
            raise DataError(f"class {name!r} is empty: no image files in {dirs[label]}")
        split.paths += [str(f) for f in files]
        split.labels += [label] * len(files)
    return split


_KAGGLE = re.compile(r"^(cat|dog)[._-]", re.I)


def _gather_flat(folder: Path) -> Split | None:
    split = Split()
    for f in _images_in(folder):
        m = _KAGGLE.match(f.name)
        if m:
            split.paths.append(str(f))
            split.labels.append(_ALIASES[m.group(1).lower()])
    if not split.paths:
        return None
    for label, name in enumerate(CLASSES):
        if label not in split.labels:
            raise DataError(f"class {name!r} is empty: no {name}.N.jpg files in {folder}")
    return split


def seeded_split(split: Split, val_fraction: float, seed: int) -> tuple[Split, Split]:
    """Stratified train/validation split, the same for the same seed on every machine."""
    if not 0 < val_fraction < 1:
        raise DataError(f"the validation fraction must be between 0 and 1, got {val_fraction}")
    train, val = Split(), Split()
    rng = random.Random(seed)
    for label in range(len(CLASSES)):
        paths = sorted(p for p, y in zip(split.paths, split.labels) if y == label)
        rng.shuffle(paths)
        n_val = max(1, round(len(paths) * val_fraction)) if len(paths) > 1 else 0
        val.paths += paths[:n_val]
        val.labels += [label] * n_val
        train.paths += paths[n_val:]
        train.labels += [label] * (len(paths) - n_val)
    return train, val


def find_dataset(root: str | os.PathLike, *, val_fraction: float = 0.2, seed: int = 0) -> Dataset:
    """Find the photos under ``root`` in any of the supported folder layouts."""
    root = Path(root)
    if not root.exists():
        raise DataError(f"data directory not found: {root}")
    if not root.is_dir():
        raise DataError(f"not a directory: {root}")
    base = root / "PetImages" if (root / "PetImages").is_dir() else root
    train_dir = base / "train"
    val_dir = next((base / v for v in ("validation", "val") if (base / v).is_dir()), None)
    if train_dir.is_dir() and _class_dirs(train_dir):
        train = _gather_class_dirs(train_dir)
        if val_dir is not None:
            return Dataset(str(root), "cats_and_dogs_filtered", train, _gather_class_dirs(val_dir))
        train, val = seeded_split(train, val_fraction, seed)
        return Dataset(str(root), "class folders, seeded split", train, val)
    if _class_dirs(base):
        train, val = seeded_split(_gather_class_dirs(base), val_fraction, seed)
        return Dataset(str(root), "PetImages", train, val)
    for folder in (train_dir, base):
        if folder.is_dir():
            flat = _gather_flat(folder)
            if flat is not None:
                train, val = seeded_split(flat, val_fraction, seed)
                return Dataset(str(root), "kaggle flat", train, val)
    raise DataError(f"no cat/dog photos found under {root}: expected train/ and validation/ "
                    "with cats/ and dogs/, PetImages/Cat and PetImages/Dog, or cat.N.jpg/dog.N.jpg files")


def oxford_pets(root: str | os.PathLike, *, download: bool = True) -> Dataset:
    """torchvision's Oxford-IIIT Pet, cat vs dog labels ("binary-category"), needs the internet."""
    from torchvision.datasets import OxfordIIITPet
    sets = {}
    for split in ("trainval", "test"):
        ds = OxfordIIITPet(str(root), split=split, target_types="binary-category", download=download)
        # binary-category: 0 = cat, 1 = dog, the same order as CLASSES
        sets[split] = Split([str(p) for p in ds._images], [int(y) for y in ds._bin_labels])
    return Dataset(str(root), "OxfordIIITPet", sets["trainval"], sets["test"])


def limit(split: Split, per_class: int | None, seed: int = 0) -> Split:
    """At most ``per_class`` images of each class (a seeded choice), for quick runs."""
    if not per_class:
        return split
    rng = random.Random(seed)
    out = Split()
    for label in range(len(CLASSES)):
        paths = [p for p, y in zip(split.paths, split.labels) if y == label]
        if len(paths) > per_class:
            paths = sorted(rng.sample(paths, per_class))
        out.paths += paths
        out.labels += [label] * len(paths)
    return out


# --------------------------------------------------------------------- decoding
# --8<-- [start:decode]
def load_image(path: str, size: int) -> np.ndarray:
    """One photo as a ``size x size x 3`` uint8 array: short side resized to ``size``, centre crop.

    Raises OSError (or ValueError) for zero-byte, truncated and non-image files.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Possibly corrupt EXIF data" and friends
        with Image.open(path) as im:
            im.draft("RGB", (size, size))  # JPEG: let the decoder skip detail we would discard
            im = im.convert("RGB")  # decodes now: a truncated file raises here
    w, h = im.size
    scale = size / min(w, h)
    nw, nh = max(size, round(w * scale)), max(size, round(h * scale))
    if (nw, nh) != (w, h):
        im = im.resize((nw, nh), Image.BILINEAR)
    left, top = (nw - size) // 2, (nh - size) // 2
    return np.array(im.crop((left, top, left + size, top + size)))  # writable: torch can wrap it


def _decode_chunk(paths: list[str], size: int):
    """Decode a few photos (in a worker): the readable ones stacked, their indices, the skipped."""
    images, ok, bad = [], [], []
    for i, path in enumerate(paths):
        try:
            images.append(load_image(path, size))
            ok.append(i)
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
            bad.append((path, f"{type(exc).__name__}: {exc}"))
    arr = np.stack(images) if images else np.empty((0, size, size, 3), np.uint8)
    return arr, ok, bad


class Decoding:
    """Lists of photos being decoded in the background; :meth:`result` waits for them.

    Before torch is imported the workers are forked processes: in the chapter's measurement PIL
    on threads scaled poorly (why is not profiled), and processes can run while the main process
    imports torch. A fork is safe then (no CUDA, no threads
    yet), and the decoding overlaps the import of torch. Once torch is loaded, forking is not
    (its thread pools and CUDA state would be copied), so a few threads do the work instead.
    """

    def __init__(self, lists: list[list[str]], size: int, workers: int | None = None):
        import multiprocessing
        import sys
        import time
        from concurrent.futures import ProcessPoolExecutor
        self.started = time.perf_counter()
        self.size, self.lists = size, lists
        self.finished = self.started
        cores = os.cpu_count() or 1
        forking = "torch" not in sys.modules and "fork" in multiprocessing.get_all_start_methods()
        if forking:
            self.workers = workers or min(16, cores)
            self.how = f"{self.workers} processes"
            self.pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"))
        else:
            self.workers = workers or min(4, cores)
            self.how = f"{self.workers} threads"
            self.pool = ThreadPoolExecutor(self.workers)
        self.futures = []
        for paths in lists:
            step = max(1, -(-len(paths) // (4 * self.workers)))     # about four chunks per worker
            chunks = [(k, self.pool.submit(_decode_chunk, paths[k:k + step], size))
                      for k in range(0, len(paths), step)]
            for _, f in chunks:
                f.add_done_callback(self._done)
            self.futures.append(chunks)

    def _done(self, future):
        import time
        self.finished = max(self.finished, time.perf_counter())

    def result(self) -> list[tuple]:
        """Per list: ``(images, ok, bad)``, a uint8 array ``(n_ok, size, size, 3)``, the indices
        of the files that decoded, and ``(path, reason)`` for each one skipped."""
        out = []
        try:
            for chunks in self.futures:
                parts = [(k, f.result()) for k, f in chunks]
                arrays = [a for _, (a, _, _) in parts]
                ok = [k + i for k, (_, idx, _) in parts for i in idx]
                bad = [b for _, (_, _, bs) in parts for b in bs]
                images = (np.concatenate(arrays) if arrays
                          else np.empty((0, self.size, self.size, 3), np.uint8))
                out.append((images, ok, bad))
        finally:
            self.pool.shutdown(wait=True, cancel_futures=True)
        return out

    @property
    def seconds(self) -> float:
        """From the start to the last chunk decoded."""
        return self.finished - self.started


#: Above this many bytes of decoded training photos, ``data_mode="auto"`` streams them.
STREAM_ABOVE = 8 * 2**30
#: Seed of the validation photos' split into a selection half and a test half: fixed, so every
#: run, whatever its own seed, reports on the same test photos.
HOLDOUT_SEED = 2026


def store_size_for(img_size: int) -> int:
    """The square the photos are decoded to for training crops of ``img_size``: 1.25 x, a
    multiple of 8 (the chapter explains why evaluation uses the larger square)."""
    return int(round(img_size * 1.25 / 8) * 8)


def store_bytes(n_images: int, size: int) -> int:
    return n_images * 3 * size * size


def halves(labels: list[int], seed: int = HOLDOUT_SEED) -> tuple[list[int], list[int]]:
    """Split photo indices into two halves with the same share of each class, seeded: the
    *selection* half (what training curves and choices of a recipe look at) and the *test* half
    (reported once at the end, never used to choose anything)."""
    rng = random.Random(seed)
    selection, test = [], []
    for label in sorted(set(labels)):
        idx = [i for i, y in enumerate(labels) if y == label]
        rng.shuffle(idx)
        selection += idx[:len(idx) // 2]
        test += idx[len(idx) // 2:]
    return sorted(selection), sorted(test)


@dataclass
class Prepared:
    """A run's photos, found and being decoded before torch is imported (``gpukit train``)."""

    layout: str
    train: Split
    val: Split
    size: int
    decoding: "Decoding"


def prepare(root, *, img_size: int, limit_per_class: int = 0, seed: int = 0,
            val_fraction: float = 0.2, data_mode: str = "auto") -> Prepared | None:
    """Find the photos and start decoding them in the background; None when the training set
    is to be streamed instead (``data_mode``, or more than :data:`STREAM_ABOVE` decoded)."""
    ds = find_dataset(root, val_fraction=val_fraction, seed=seed)
    train, val = limit(ds.train, limit_per_class, seed), limit(ds.val, limit_per_class, seed)
    size = store_size_for(img_size)
    if data_mode == "stream" or (data_mode == "auto" and store_bytes(len(train), size) > STREAM_ABOVE):
        return None
    return Prepared(ds.layout, train, val, size, start_decoding([train.paths, val.paths], size))


def start_decoding(lists: list[list[str]], size: int, workers: int | None = None) -> Decoding:
    """Start decoding each list of photos to ``size x size`` in the background."""
    return Decoding(lists, size, workers)


def decode_all(paths: list[str], size: int, workers: int | None = None):
    """Decode every photo (see :class:`Decoding`); returns ``(images, ok, bad)``."""
    return Decoding([paths], size, workers).result()[0]
# --8<-- [end:decode]


