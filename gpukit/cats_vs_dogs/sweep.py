"""How the training recipe was chosen: several variants, each trained with several seeds.

``python -m gpukit.cats_vs_dogs.sweep --out sweep.json --variants base ema lr0.1-ema`` trains
every named variant of :data:`VARIANTS` once per seed on the photos decoded once, and
writes the accuracy, wall time and images/s of every run (after each run, so an
interrupted sweep keeps what it measured). The chapter shows the table: one seed can
differ from the next by several points, so a variant is judged on its mean.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

#: name -> changes to the recipe (``TrainConfig`` fields).
VARIANTS = {
    "base": {},
    "lr0.1": {"lr": 0.1},
    "ema": {"ema": 0.995},
    "lr0.1-ema": {"lr": 0.1, "ema": 0.995},
    "lr0.05-ema": {"lr": 0.05, "ema": 0.995},
    "lr0.1-ema-wd1e-3": {"lr": 0.1, "ema": 0.995, "weight_decay": 1e-3},
    "lr0.1-ema-ls0.2": {"lr": 0.1, "ema": 0.995, "label_smoothing": 0.2},
    "lr0.1-ema-crop0.35": {"lr": 0.1, "ema": 0.995, "crop_scale": 0.35},
    "lr0.1-ema-350ep": {"lr": 0.1, "ema": 0.995, "epochs": 350},
    "lr0.1-ema-width48": {"lr": 0.1, "ema": 0.995, "width": 48},
}


def main(argv=None) -> int:
    from ..device import machine_record
    from . import data as D
    from .data import default_data_dir
    from .loop import TrainConfig, fit, pick_device
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--data", default=None)
    p.add_argument("--eval-every", type=int, default=25)
    p.add_argument("--budget-s", type=float, default=500.0, help="start no run after this long")
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--epochs", type=int, default=0, help="override every variant's epochs (quick checks)")
    p.add_argument("--throughput", action="store_true", help="also time the step (real vs synthetic)")
    args = p.parse_args(argv)
    root = args.data or default_data_dir()
    if root is None:
        print("no data: set GPUKIT_CATS_DOGS", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    dev = pick_device("auto")
    base = TrainConfig(data=str(root), progress=False, eval_every=args.eval_every, limit=args.limit).resolved()
    ds = D.find_dataset(base.data)
    train, bad = D.build_store(D.limit(ds.train, base.limit), base.store_size, dev)
    val, bad_val = D.build_store(D.limit(ds.val, base.limit), base.store_size, dev)
    runs = []
    record = {"benchmark": "cats_vs_dogs_sweep", "machine": machine_record(), "base": base.__dict__,
              "variants": {k: VARIANTS[k] for k in args.variants}, "runs": runs}
    if args.throughput:
        from .measure import _throughput
        errors: list = []
        record["throughput"] = _throughput(train, base, dev, 30, errors, t_start=t0)
        record["throughput_errors"] = errors
        tp = record["throughput"]
        for r in tp["rows"]:
            print(f"{r['name']:<66} {r['median_s'] * 1e3:8.3f} ms  {r['images_per_s']:>9,.0f} img/s", flush=True)
        print(f"real / synthetic {tp['real_over_synthetic']:.3f}; profile {tp['profile']}", flush=True)
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(record, fh, indent=1)
    for name in args.variants:
        for seed in args.seeds:
            if time.perf_counter() - t0 > args.budget_s:
                print(f"budget spent: skipping {name} seed {seed}", flush=True)
                continue
            change = dict(VARIANTS[name], **({"epochs": args.epochs} if args.epochs else {}))
            cfg = TrainConfig(**{**base.__dict__, **change, "seed": seed,
                                 "out": f"/tmp/gpukit_sweep_{name}_{seed}.pt"})
            r = fit(cfg, log=lambda *a, **k: None, stores=(train, val, bad + bad_val))
            runs.append({"variant": name, "seed": seed, "val_acc": r["val_acc"], "wall_s": r["wall_s"],
                         "train_s": r["train_s"], "images_per_s": r["images_per_s"], "epochs": cfg.epochs,
                         "curve": [[h["epoch"], h.get("val_acc")] for h in r["history"] if "val_acc" in h]})
            print(f"{name:<22} seed {seed}: {100 * r['val_acc']:.1f} %  wall {r['wall_s']:.1f} s  "
                  f"{(r['images_per_s'] or 0):,.0f} img/s", flush=True)
            with open(args.out, "w", encoding="utf-8") as fh:
                json.dump(record, fh, indent=1)
    for name in args.variants:
        accs = [r["val_acc"] for r in runs if r["variant"] == name]
        if accs:
            print(f"{name:<22} mean {100 * statistics.mean(accs):.1f} %  min {100 * min(accs):.1f}  "
                  f"max {100 * max(accs):.1f}  ({len(accs)} seeds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
