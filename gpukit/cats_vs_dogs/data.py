"""Cats and dogs photos: find them, decode them once, keep them on the GPU, augment there.

Four layouts are understood:

* ``cats_and_dogs_filtered``: ``train/{cats,dogs}`` and ``validation/{cats,dogs}``;
* Microsoft's ``PetImages/{Cat,Dog}`` (no split: a seeded, stratified one is made);
* Kaggle's flat ``train/cat.N.jpg`` / ``train/dog.N.jpg`` naming (seeded split);
* torchvision's ``OxfordIIITPet`` with ``target_types="binary-category"`` (downloads itself).

Unreadable, zero-byte, truncated and non-image files are skipped and counted.
"""

from __future__ import annotations

import functools
import math
import os
import random
import re
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
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


def decode_all(paths: list[str], size: int, workers: int | None = None):
    """Decode every photo with a thread pool (PIL releases the GIL while decoding).

    Returns ``(images, ok, bad)``: a uint8 array ``(n_ok, size, size, 3)``, the indices of
    the files that decoded, and ``(path, reason)`` for each one skipped.
    """
    workers = workers or min(32, os.cpu_count() or 1)

    def one(path):
        try:
            return load_image(path, size), None
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
            return None, f"{type(exc).__name__}: {exc}"

    out = np.empty((len(paths), size, size, 3), dtype=np.uint8)
    ok, bad = [], []
    with ThreadPoolExecutor(workers) as pool:
        for i, (img, err) in enumerate(pool.map(one, paths, chunksize=16)):
            if err is None:
                out[len(ok)] = img
                ok.append(i)
            else:
                bad.append((paths[i], err))
    return out[:len(ok)], ok, bad
# --8<-- [end:decode]


@dataclass
class Store:
    """Decoded photos as a uint8 ``(N, 3, S, S)`` tensor and int64 labels, on one device."""

    images: torch.Tensor
    labels: torch.Tensor
    paths: list[str]

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def build_store(split: Split, size: int, device, workers: int | None = None) -> tuple[Store, list]:
    """Decode a split once and move it to ``device`` as uint8 NCHW; returns (store, skipped)."""
    arr, ok, bad = decode_all(split.paths, size, workers)
    images = torch.from_numpy(arr).permute(0, 3, 1, 2).contiguous()
    labels = torch.tensor([split.labels[i] for i in ok], dtype=torch.int64)
    if torch.device(device).type == "cuda":
        images = images.pin_memory()
    store = Store(images.to(device, non_blocking=True), labels.to(device),
                  [split.paths[i] for i in ok])
    for label, name in enumerate(CLASSES):
        if not (store.labels == label).any():
            raise DataError(f"class {name!r} has no readable image ({len(bad)} files skipped)")
    return store, bad


def skipped_warning(bad: list, where: str = "") -> str:
    if not bad:
        return ""
    examples = "; ".join(f"{Path(p).name} ({why.split(':')[0]})" for p, why in bad[:3])
    more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
    return f"warning: skipped {len(bad)} unreadable file(s){where}: {examples}{more}"


# --------------------------------------------------------------------- augmentation
# --8<-- [start:augment]
@functools.lru_cache(maxsize=16)
def _mean_std(device: torch.device, dtype: torch.dtype):
    # Made once per device: building them per batch would copy from the host every step,
    # and a copy from pageable host memory waits for the GPU to catch up.
    return (torch.tensor(MEAN, dtype=dtype).view(1, 3, 1, 1).to(device),
            torch.tensor(STD, dtype=dtype).view(1, 3, 1, 1).to(device))


def normalise(x: torch.Tensor) -> torch.Tensor:
    """float 0..255 NCHW -> zero-mean unit-variance, channels_last."""
    mean, std = _mean_std(x.device, x.dtype)
    return ((x - mean) / std).contiguous(memory_format=torch.channels_last)


def augment(images: torch.Tensor, size: int, generator: torch.Generator | None = None, *,
            scale: tuple[float, float] = (0.25, 1.0), ratio: tuple[float, float] = (3 / 4, 4 / 3),
            flip: bool = True, jitter: float = 0.2) -> torch.Tensor:
    """Random resized crop + horizontal flip + brightness/contrast jitter for a whole batch.

    ``images`` is uint8 ``(B, 3, S, S)`` on any device. One affine sampling grid per
    photo does the crop, the resize to ``size x size`` and the flip in one
    ``grid_sample`` call: no Python loop over the batch, nothing leaves the device.
    """
    b, dev = images.shape[0], images.device
    r = torch.rand(b, 7, device=dev, generator=generator)
    area = scale[0] + (scale[1] - scale[0]) * r[:, 0]
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    aspect = torch.exp(log_lo + (log_hi - log_lo) * r[:, 1])
    w = torch.sqrt(area * aspect).clamp(max=1.0)  # crop width, as a fraction of the photo
    h = torch.sqrt(area / aspect).clamp(max=1.0)
    cx = (1 - w) * (2 * r[:, 2] - 1)  # crop centre in grid coordinates (-1..1)
    cy = (1 - h) * (2 * r[:, 3] - 1)
    sign = torch.where(r[:, 4] < 0.5, -1.0, 1.0) if flip else torch.ones_like(w)
    theta = torch.zeros(b, 2, 3, device=dev)
    theta[:, 0, 0], theta[:, 0, 2] = w * sign, cx
    theta[:, 1, 1], theta[:, 1, 2] = h, cy
    grid = F.affine_grid(theta, [b, 3, size, size], align_corners=False)
    x = F.grid_sample(images.float(), grid, mode="bilinear", padding_mode="reflection",
                      align_corners=False)
    if jitter:
        bright = 1 + jitter * (2 * r[:, 5] - 1)
        contrast = 1 + jitter * (2 * r[:, 6] - 1)
        mean = x.mean(dim=(1, 2, 3), keepdim=True)
        x = ((x - mean) * contrast.view(b, 1, 1, 1) + mean) * bright.view(b, 1, 1, 1)
        x = x.clamp(0, 255)
    return normalise(x)


def prepare_eval(images: torch.Tensor, size: int) -> torch.Tensor:
    """Validation photos: the whole stored square, resized (antialiased) to ``size``."""
    x = images if images.is_floating_point() else images.float()
    if x.shape[-1] != size:
        x = F.interpolate(x, size=(size, size), mode="bilinear", antialias=True, align_corners=False)
    return normalise(x)
# --8<-- [end:augment]


# --------------------------------------------------------------------- streaming (large sets)

class _Files(torch.utils.data.Dataset):
    def __init__(self, split: Split, size: int):
        self.split, self.size = split, size

    def __len__(self):
        return len(self.split)

    def __getitem__(self, i):
        try:
            img = load_image(self.split.paths[i], self.size)
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
            return None
        return torch.from_numpy(img).permute(2, 0, 1), self.split.labels[i]


def _collate(items):
    good = [it for it in items if it is not None]
    if not good:
        return None, None, len(items)
    return (torch.stack([g[0] for g in good]), torch.tensor([g[1] for g in good]),
            len(items) - len(good))


def stream_loader(split: Split, size: int, batch_size: int, *, workers: int, seed: int,
                  sampler=None):
    """For sets too big to keep decoded: worker processes decode uint8 batches, pinned."""
    g = torch.Generator().manual_seed(seed)
    return torch.utils.data.DataLoader(
        _Files(split, size), batch_size=batch_size, shuffle=sampler is None, sampler=sampler,
        generator=g, num_workers=workers, collate_fn=_collate, pin_memory=torch.cuda.is_available(),
        drop_last=True, persistent_workers=workers > 0, prefetch_factor=4 if workers > 0 else None)


def store_bytes(n_images: int, size: int) -> int:
    return n_images * 3 * size * size


def timed_store(split: Split, size: int, device, workers=None):
    t0 = time.perf_counter()
    store, bad = build_store(split, size, device, workers)
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()
    return store, bad, time.perf_counter() - t0
