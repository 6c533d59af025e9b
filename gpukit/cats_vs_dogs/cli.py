"""``gpukit train cats-vs-dogs`` and ``gpukit predict``.

Under torchrun the same command trains data-parallel::

    torchrun --nproc_per_node=4 -m gpukit.cli train cats-vs-dogs --data DIR

torch is imported inside the command functions only, so ``gpukit --help`` stays instant.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def register(sub) -> None:
    from ..cli import positive_int
    train = sub.add_parser("train", help="train a network (cats vs dogs photos)",
                           description="Train a network on your photos, on the GPU when there is one.")
    tasks = train.add_subparsers(dest="task", metavar="TASK")
    train.set_defaults(func=_no_task(train))
    p = tasks.add_parser("cats-vs-dogs", help="cats vs dogs from scratch (or from ImageNet weights)",
                         description="Train the cats-vs-dogs classifier; a checkpoint is written "
                                     "after every epoch and on Ctrl-C.")
    p.add_argument("--data", required=True,
                   help="photo folder (train/+validation/ with cats/ dogs/, PetImages/, or "
                        "cat.N.jpg files), or 'oxford-pets:DIR' to download Oxford-IIIT Pet there")
    p.add_argument("--epochs", type=positive_int, default=250)
    p.add_argument("--img-size", type=positive_int, default=128, help="training crop size (px)")
    p.add_argument("--batch-size", type=positive_int, default=256, help="global batch size")
    p.add_argument("--lr", type=float, default=0.05, help="peak learning rate at batch 256")
    p.add_argument("--ema", type=float, default=0.995,
                   help="decay of the weight average that is evaluated and kept (0: none)")
    p.add_argument("--width", type=positive_int, default=32, help="channels of the first stage")
    p.add_argument("--crop-scale", type=_fraction, default=0.35,
                   help="smallest area of a training crop, as a fraction of the photo (default %(default)s)")
    p.add_argument("--device", default="auto", help="auto, cuda, cuda:N or cpu")
    p.add_argument("--precision", choices=["auto", "bf16", "fp32"], default="auto")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (adds compile time)")
    p.add_argument("--pretrained", action="store_true",
                   help="start from torchvision's ImageNet ResNet-18 (downloads weights)")
    p.add_argument("--data-mode", choices=["auto", "memory", "stream"], default="auto",
                   help="memory: decode once and keep the photos on the device; stream: decode "
                        "every epoch in loader processes (auto: stream above 8 GiB decoded)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=positive_int, default=None, help="at most N photos per class and split")
    p.add_argument("--out", default="cats_vs_dogs.pt", help="checkpoint file (default %(default)s)")
    p.add_argument("--resume", action="store_true", help="continue from --out if it exists")
    p.add_argument("--no-tta", action="store_true", help="final evaluation without mirror averaging")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--eval-every", type=positive_int, default=10,
                   help="evaluate, checkpoint and print a line every N epochs (default %(default)s)")
    p.add_argument("--cudnn-benchmark", action="store_true",
                   help="let cuDNN time its algorithms at the first step instead of choosing by rule")
    p.add_argument("--report", default=None, help="also write the final report as JSON to this file")
    p.add_argument("--exchange", choices=["after-backward", "overlapped"], default="after-backward",
                   help="under torchrun: average the gradients by one all-reduce after backward "
                        "(default) or in buckets overlapped with backward")
    p.set_defaults(func=_train)

    q = sub.add_parser("predict", help="cat or dog? for photos, with a trained checkpoint",
                       description="Print cat/dog and the probability for each photo.")
    q.add_argument("--checkpoint", required=True, help="file written by `gpukit train`")
    q.add_argument("images", nargs="+", metavar="IMAGE")
    q.add_argument("--device", default="auto")
    q.set_defaults(func=_predict)


def _fraction(text: str) -> float:
    import argparse
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return v


def _no_task(parser):
    def run(args):
        parser.print_help()
        return 2
    return run


class _Bad(Exception):
    """Bad input: one line on stderr, exit status 2 (as gpukit.cli.UserError)."""


def _user_error(msg: str) -> _Bad:
    return _Bad(msg)


def _one_line_errors(fn):
    # Handled here rather than by gpukit.cli.main: under `python -m gpukit.cli` that
    # module runs as __main__ and its UserError is a different class from ours.
    def run(args) -> int:
        try:
            return fn(args)
        except _Bad as exc:
            print(f"gpukit: error: {exc}", file=sys.stderr)
            return 2
    run.__name__ = fn.__name__
    return run


def _process_age() -> float | None:
    """Seconds since this process started (Linux: /proc), or None where that is not known."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            started_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - started_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


@_one_line_errors
def _train(args) -> int:
    import time
    began, age = time.perf_counter(), _process_age()
    from . import photos as P
    for path, flag in ((args.report, "--report"), (args.out, "--out")):
        folder = os.path.dirname(os.path.abspath(path)) if path else None
        if folder and not os.path.isdir(folder):   # checked before anything heavy happens
            raise _user_error(f"cannot write {flag} {path!r}: folder {folder!r} does not exist")
    prepared = None
    if not args.data.startswith("oxford-pets:"):
        # Find the photos and start decoding them in worker processes now, before torch is
        # imported: the decoding and the import overlap (the chapter measures both).
        try:
            prepared = P.prepare(args.data, img_size=args.img_size, limit_per_class=args.limit or 0,
                                 seed=args.seed, data_mode=args.data_mode)
        except P.DataError as exc:
            raise _user_error(str(exc)) from None
    t_import = time.perf_counter()
    import torch

    from . import data as D
    from .loop import TrainConfig, fit
    from .run import Interrupted, format_report
    before = {"start-up (Python, gpukit, finding the photos)": (age or 0.0) + t_import - began,
              "import torch": time.perf_counter() - t_import}
    cfg = TrainConfig(data=args.data, epochs=args.epochs, img_size=args.img_size,
                      batch_size=args.batch_size, lr=args.lr, width=args.width, device=args.device,
                      precision=args.precision, compile=args.compile, pretrained=args.pretrained,
                      seed=args.seed, limit=args.limit or 0, out=args.out, resume=args.resume,
                      tta=not args.no_tta, progress=not args.quiet, data_mode=args.data_mode,
                      ema=args.ema, eval_every=args.eval_every, cudnn_benchmark=args.cudnn_benchmark,
                      crop_scale=args.crop_scale, exchange=args.exchange)
    stores = prepared
    try:
        if args.data.startswith("oxford-pets:"):
            ds = D.oxford_pets(args.data.split(":", 1)[1])
            stores = _stores_for(ds, cfg)
        report = fit(cfg, stores=stores, before=before)
    except D.DataError as exc:
        raise _user_error(str(exc)) from None
    except Interrupted as exc:
        print(str(exc), file=sys.stderr)
        return 130
    except torch.OutOfMemoryError:
        raise _user_error(f"GPU out of memory at batch size {args.batch_size}: "
                          "lower --batch-size (or --img-size)") from None
    except OSError as exc:  # no internet for --pretrained, an --out folder that cannot be written...
        raise _user_error(f"{type(exc).__name__}: {exc}".splitlines()[0]) from None
    except (ValueError, RuntimeError) as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "out of memory" in msg.lower():
            msg = f"out of memory at batch size {args.batch_size}: lower --batch-size"
        raise _user_error(msg) from None
    if int(os.environ.get("RANK", "0")) == 0:
        print(format_report(report))
        if args.report:
            import json
            plain = {k: v for k, v in report.items() if k not in ("model", "val_store")}
            plain["process_age_at_start_s"] = age
            with open(args.report, "w", encoding="utf-8") as fh:
                json.dump(plain, fh, indent=1)
    return 0


def _stores_for(ds, cfg):
    import torch

    from . import data as D
    from .loop import pick_device
    c = cfg.resolved()
    dev = pick_device(c.device)
    if dev.type == "cuda" and "LOCAL_RANK" in os.environ:  # under torchrun: this process's GPU
        dev = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    train, bad = D.build_store(D.limit(ds.train, c.limit), c.store_size, dev)
    val, bad_val = D.build_store(D.limit(ds.val, c.limit), c.store_size, dev)
    return train, val, bad + bad_val


@_one_line_errors
def _predict(args) -> int:
    import torch

    from . import data as D
    from .checkpoint import load_for_inference
    from .loop import autocast, pick_device, predict_logits
    for path in args.images:
        if not Path(path).is_file():
            raise _user_error(f"image not found: {path}")
    if not Path(args.checkpoint).is_file():
        raise _user_error(f"checkpoint not found: {args.checkpoint}")
    try:
        dev = pick_device(args.device)
    except RuntimeError as exc:
        raise _user_error(str(exc)) from None
    try:
        model, cfg = load_for_inference(args.checkpoint, dev)
    except Exception as exc:  # a truncated file, a pickle, another program's checkpoint...
        reason = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else type(exc).__name__
        raise _user_error(f"cannot read checkpoint {args.checkpoint}: {reason}") from None
    photos = []
    for path in args.images:
        try:
            photos.append(D.load_image(path, cfg["store_size"]))
        except (OSError, ValueError, SyntaxError) as exc:
            raise _user_error(f"not a readable image: {path} ({type(exc).__name__})") from None
    import numpy as np
    x = torch.from_numpy(np.stack(photos)).permute(0, 3, 1, 2).to(dev)
    amp = autocast(dev, "bf16" if dev.type == "cuda" else "fp32")
    probs = torch.softmax(predict_logits(model, x, cfg["eval_size"], amp=amp, tta=True), dim=1).cpu()
    for path, p in zip(args.images, probs):
        k = int(p.argmax())
        print(f"{path}: {D.CLASSES[k]} ({100 * float(p[k]):.1f} %)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m gpukit.cats_vs_dogs.cli ...`` is ``gpukit ...`` (handy under torchrun)."""
    from ..cli import main as gpukit_main
    return gpukit_main(argv)


if __name__ == "__main__":
    sys.exit(main())
