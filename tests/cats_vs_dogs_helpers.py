"""Tiny synthetic photo folders for the training tests (no shared data needed)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.helpers import ROOT


def shared_data() -> Path | None:
    """The real photos: $GPUKIT_CATS_DOGS, else ../shared/data/cats_and_dogs_filtered_160."""
    env = os.environ.get("GPUKIT_CATS_DOGS")
    path = Path(env) if env else ROOT.parent / "shared" / "data" / "cats_and_dogs_filtered_160"
    return path if path.is_dir() else None


needs_shared_data = pytest.mark.skipif(
    shared_data() is None,
    reason="real photos not found: set GPUKIT_CATS_DOGS or put cats_and_dogs_filtered_160 in ../shared/data")


def photo(path: Path, label: int, seed: int, size=(40, 30)) -> Path:
    """A small JPEG whose colour says its class: reddish for cats (0), bluish for dogs (1)."""
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 90, (size[1], size[0], 3)).astype(np.uint8)
    img[..., 0 if label == 0 else 2] += 150
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(img).save(path, quality=90)
    return path


def filtered_layout(root: Path, n_train: int = 12, n_val: int = 6) -> Path:
    for split, n in (("train", n_train), ("validation", n_val)):
        for label, name in enumerate(("cats", "dogs")):
            for i in range(n):
                photo(root / split / name / f"{name[:-1]}.{i}.jpg", label, seed=hash((split, name, i)) % 2**32)
    return root


def oxford_copy(root: Path) -> Path:
    """A miniature of torchvision's OxfordIIITPet folder, so its loader needs no download.

    annotations/{trainval,test}.txt hold "image class species breed"; species 1 = cat, 2 = dog
    (the data set names cat breeds with a capital letter).
    """
    base = root / "oxford-iiit-pet"
    (base / "annotations").mkdir(parents=True)
    splits = (("trainval", ["Bengal_1", "beagle_1", "Bengal_2", "boxer_1"]), ("test", ["beagle_2", "Sphynx_1"]))
    for split, names in splits:
        lines = []
        for i, name in enumerate(names):
            cat = name[0].isupper()
            photo(base / "images" / f"{name}.jpg", 0 if cat else 1, seed=i + 10 * len(name))
            lines.append(f"{name} {1 if cat else 2} {1 if cat else 2} 1")
        (base / "annotations" / f"{split}.txt").write_text("\n".join(lines) + "\n")
    return root
