"""Cats and dogs photos kept on the GPU and augmented there (finding and decoding them:
:mod:`gpukit.cats_vs_dogs.photos`, whose names are importable from here too)."""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from PIL import Image

from .photos import (CLASSES, IMAGE_SUFFIXES, MEAN, STD, DataError, Dataset, Split,  # noqa: F401
                     decode_all, default_data_dir, find_dataset, halves, limit, load_image,
                     oxford_pets, seeded_split, store_bytes, store_size_for)


@dataclass
class Store:
    """Decoded photos as a uint8 ``(N, 3, S, S)`` tensor and int64 labels, on one device."""

    images: torch.Tensor
    labels: torch.Tensor
    paths: list[str]

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def subset(self, idx: list[int]) -> "Store":
        """The photos at ``idx`` (a copy on the same device)."""
        at = torch.tensor(idx, dtype=torch.int64, device=self.labels.device)
        return Store(self.images[at], self.labels[at], [self.paths[i] for i in idx])


def build_store(split: Split, size: int, device, workers: int | None = None,
                decoded: tuple | None = None) -> tuple[Store, list]:
    """Decode a split once (or take ``decoded``, what :func:`decode_all` returned for it) and
    move it to ``device`` as uint8 NCHW; returns (store, skipped)."""
    arr, ok, bad = decoded if decoded is not None else decode_all(split.paths, size, workers)
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
    # Made once per device: building them per batch would copy from the host every
    # step, and a copy from pageable host memory waits for the GPU to catch up.
    return (torch.tensor(MEAN, dtype=dtype).view(1, 3, 1, 1).to(device),
            torch.tensor(STD, dtype=dtype).view(1, 3, 1, 1).to(device))


def normalise(x: torch.Tensor) -> torch.Tensor:
    """float 0..255 NCHW -> zero-mean unit-variance, channels_last."""
    mean, std = _mean_std(x.device, x.dtype)
    return ((x - mean) / std).contiguous(memory_format=torch.channels_last)


def augment(images: torch.Tensor, size: int,
            generator: torch.Generator | None = None, *,
            scale: tuple[float, float] = (0.25, 1.0),
            ratio: tuple[float, float] = (3 / 4, 4 / 3),
            flip: bool = True, jitter: float = 0.2) -> torch.Tensor:
    """Random resized crop + horizontal flip + brightness/contrast jitter, whole batch.

    ``images`` is uint8 ``(B, 3, S, S)`` on any device. One affine sampling grid per
    photo does the crop, the resize to ``size x size`` and the flip in one
    ``grid_sample`` call: no Python loop over the batch, nothing leaves the device.
    """
    b, dev = images.shape[0], images.device
    r = torch.rand(b, 7, device=dev, generator=generator)
    area = scale[0] + (scale[1] - scale[0]) * r[:, 0]
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    aspect = torch.exp(log_lo + (log_hi - log_lo) * r[:, 1])
    # crop width and height, as fractions of the photo
    w = torch.sqrt(area * aspect).clamp(max=1.0)
    h = torch.sqrt(area / aspect).clamp(max=1.0)
    cx = (1 - w) * (2 * r[:, 2] - 1)  # crop centre in grid coordinates (-1..1)
    cy = (1 - h) * (2 * r[:, 3] - 1)
    sign = torch.where(r[:, 4] < 0.5, -1.0, 1.0) if flip else torch.ones_like(w)
    theta = torch.zeros(b, 2, 3, device=dev)
    theta[:, 0, 0], theta[:, 0, 2] = w * sign, cx
    theta[:, 1, 1], theta[:, 1, 2] = h, cy
    grid = F.affine_grid(theta, [b, 3, size, size], align_corners=False)
    x = F.grid_sample(images.float(), grid, mode="bilinear",
                      padding_mode="reflection", align_corners=False)
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
        x = F.interpolate(x, size=(size, size), mode="bilinear", antialias=True,
                          align_corners=False)
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


def timed_store(split: Split, size: int, device, workers=None):
    t0 = time.perf_counter()
    store, bad = build_store(split, size, device, workers)
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()
    return store, bad, time.perf_counter() - t0
