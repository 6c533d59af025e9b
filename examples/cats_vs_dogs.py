# %% [markdown]
# # Cats vs dogs: train on the GPU, verify, predict
#
# This script trains `gpukit`'s compact residual network on photos of cats and dogs,
# checks what it computed, and reports accuracy and speed. On a GPU it runs the full
# recipe (2000 photos, 250 epochs at 128 px, bf16). Without one it runs a tiny version
# on the CPU: a few dozen photos, a narrow network, three epochs.
#
# The photos come from `--data`, else `$GPUKIT_CATS_DOGS`, else the project's shared
# `cats_and_dogs_filtered_160` folder; when none exists, a small synthetic set (cats
# reddish, dogs bluish) is drawn so the script still runs anywhere.
#
# Run it: `python examples/cats_vs_dogs.py --json out.json`

# %%
# --8<-- [start:setup]
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from gpukit import device
from gpukit.cats_vs_dogs import (DataError, TrainConfig, autocast, default_data_dir, fit,
                                 load_for_inference, predict_logits, prepare_eval)
# --8<-- [end:setup]

GPU = torch.cuda.is_available()


def synthetic_photos(root: Path, per_class: int = 24) -> Path:
    """A stand-in photo folder in the cats_and_dogs_filtered layout."""
    from PIL import Image
    rng = np.random.default_rng(0)
    for split, n in (("train", per_class), ("validation", per_class // 2)):
        for label, name in enumerate(("cats", "dogs")):
            folder = root / split / name
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(n):
                img = rng.integers(0, 90, (48, 64, 3)).astype(np.uint8)
                img[..., 2 * label] += 150
                Image.fromarray(img).save(folder / f"{name[:-1]}.{i}.jpg", quality=90)
    return root


# %% [markdown]
# ## Train
#
# `fit` decodes every photo once, keeps them as uint8 tensors on the device, augments
# each batch there, writes a checkpoint after every epoch, and returns a report.

# %%
# --8<-- [start:train]
def train(data_dir: str, epochs: int, img_size: int, width: int, batch_size: int, limit: int,
          out: str) -> dict:
    cfg = TrainConfig(data=data_dir, epochs=epochs, img_size=img_size, width=width,
                      batch_size=batch_size, limit=limit, out=out, progress=False)
    return fit(cfg)
# --8<-- [end:train]


# %% [markdown]
# ## Verify
#
# Two checks that can fail: the network's logits in the precision it ran (bf16 on the GPU)
# against the same network in float64 on the CPU, and the checkpoint on disk giving the
# same answers as the network in memory.

# %%
# --8<-- [start:verify]
def verify(report: dict, n: int = 32) -> dict:
    model, val = report["model"], report["val_store"]
    cfg = report["config"]
    dev = next(model.parameters()).device
    photos = val.images[:n]
    amp = autocast(dev, report["precision"])
    got = predict_logits(model, photos, cfg["eval_size"], amp=amp)
    ref_model = load_for_inference(report["checkpoint"], torch.device("cpu"))[0].double()
    x = prepare_eval(photos.cpu().double(), cfg["eval_size"])
    with torch.no_grad():
        ref = ref_model(x)
    err = float((got.cpu().double() - ref).abs().max() / ref.abs().max())
    bound = 5e-2 if report["precision"] == "bf16" else 1e-4
    if not np.isfinite(err) or err > bound:
        raise AssertionError(f"logits differ from the float64 reference by {err:.3g} (bound {bound:g})")
    reloaded = load_for_inference(report["checkpoint"], dev)[0]
    again = predict_logits(reloaded, photos, cfg["eval_size"], amp=amp)
    if not torch.equal(again.argmax(1), got.argmax(1)):
        raise AssertionError("the checkpoint on disk predicts differently from the trained model")
    return {"logits_rel_err": err, "bound": bound}
# --8<-- [end:verify]


# %%
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Train and verify the cats-vs-dogs network.")
    parser.add_argument("--data", help="photo folder (default: $GPUKIT_CATS_DOGS or the shared set)")
    parser.add_argument("--epochs", type=int, default=250 if GPU else 3)
    parser.add_argument("--img-size", type=int, default=128 if GPU else 48)
    parser.add_argument("--width", type=int, default=32 if GPU else 8)
    parser.add_argument("--batch-size", type=int, default=256 if GPU else 16)
    parser.add_argument("--limit", type=int, default=0 if GPU else 24, help="photos per class (0: all)")
    parser.add_argument("--min-acc", type=float, default=0.8 if GPU else 0.0,
                        help="fail below this validation accuracy")
    parser.add_argument("--json", metavar="PATH", help="write the results record here")
    args = parser.parse_args(argv)
    if min(args.epochs, args.img_size, args.width, args.batch_size) < 1 or args.limit < 0:
        parser.error("sizes must be >= 1 (and --limit >= 0)")
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.data or default_data_dir() or synthetic_photos(Path(tmp) / "photos")
        try:
            report = train(str(data_dir), args.epochs, args.img_size, args.width, args.batch_size,
                           args.limit, str(Path(tmp) / "model.pt"))
        except DataError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        try:
            check = verify(report)
            if report["val_acc"] < args.min_acc:
                raise AssertionError(f"validation accuracy {report['val_acc']:.3f} < {args.min_acc}")
        except AssertionError as exc:
            print(f"FAILED: {exc}", file=sys.stderr)
            return 1
    where = device.describe(device.machine_record()) if GPU else "CPU (no GPU): tiny run"
    print(f"cats vs dogs on {where}")
    print(f"{'photos':>8}{'epochs':>8}{'val acc':>10}{'wall s':>9}{'data s':>8}{'img/s':>10}{'rel err':>10}")
    print(f"{report['n_train']:>8}{report['epochs']:>8}{100 * report['val_acc']:>9.1f}%"
          f"{report['wall_s']:>9.1f}{report['load_s']:>8.2f}{(report['images_per_s'] or 0):>10,.0f}"
          f"{check['logits_rel_err']:>10.2g}")
    print("verified: logits match the float64 reference; the checkpoint reproduces the predictions")
    if args.json:
        keep = {k: v for k, v in report.items() if k not in ("model", "val_store")}
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"example": "cats_vs_dogs", "data": str(data_dir), "verify": check, **keep,
                       "machine": device.machine_record()}, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(None if "ipykernel" not in sys.modules else []))
