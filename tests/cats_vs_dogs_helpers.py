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


def two_process_training(tmp_path_factory, exchange: str | None = None) -> dict:
    """``gpukit train cats-vs-dogs`` under torchrun on two gloo processes (2 epochs of a tiny
    model on 16 photos), with ``--exchange`` when given, else the default: its exit status,
    output and checkpoint. Made once per run of the suite for each ``exchange`` (the tests of
    the training and of the exchanges share the run with the default)."""
    import subprocess
    import sys

    from tests.helpers import shared_once

    # every run reads one photo folder (with a folder each, the two exchanges ended on
    # different weights)
    data = shared_once(tmp_path_factory, "two-process-training-photos",
                       lambda tmp: str(filtered_layout(tmp / "data", n_train=16, n_val=4)))

    def make(tmp: Path) -> dict:
        out = tmp / "ddp.pt"
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
               "-m", "gpukit.cli", "train", "cats-vs-dogs", "--data", data, "--epochs", "2",
               "--img-size", "32", "--width", "8", "--batch-size", "8", "--device", "cpu",
               "--out", str(out), "--quiet", *(["--exchange", exchange] if exchange else [])]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=180,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
        return {"returncode": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr,
                "out": str(out)}

    return shared_once(tmp_path_factory, f"two-process-training-{exchange or 'default'}", make)
