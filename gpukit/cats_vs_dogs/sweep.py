"""How the recipe was chosen, honestly: variants trained with several seeds, judged on one half
of the validation photos, reported on the other.

``python -m gpukit.cats_vs_dogs.sweep --out sweep.json --gpus 2`` trains every variant of
:data:`VARIANTS` once per seed, on the photos decoded once per process, the runs dealt to one
process per GPU. Each run is evaluated on the *selection* half of the validation photos (what
chooses the variant) and on the *test* half (never used to choose anything; see
:func:`~gpukit.cats_vs_dogs.photos.halves`). :func:`choose` picks the best mean on the selection
half; the chapter reports that variant's test half. Each process writes its runs after each one,
so an interrupted sweep keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: the results name of the sweep's record
NAME = "cats_vs_dogs_sweep"

#: name -> changes to the recipe (``TrainConfig`` fields); "recipe" is the command's defaults
VARIANTS = {
    "recipe": {},
    "lr0.1": {"lr": 0.1},
    "lr0.025": {"lr": 0.025},
    "no-average": {"ema": 0.0},
    "smoothing0.2": {"label_smoothing": 0.2},
    "crop0.35": {"crop_scale": 0.35},
}


def choose(runs: list[dict]) -> dict:
    """Per variant: mean accuracy on each half over its seeds; the choice is the best mean on
    the selection half (the test half plays no part in it)."""
    table = []
    for name in dict.fromkeys(r["variant"] for r in runs):
        mine = [r for r in runs if r["variant"] == name]
        table.append({"name": name, "changes": mine[0]["changes"], "seeds": [r["seed"] for r in mine],
                      "selection_mean": statistics.mean(r["selection_acc"] for r in mine),
                      "test_mean": statistics.mean(r["test_acc"] for r in mine),
                      "test_min": min(r["test_acc"] for r in mine),
                      "test_max": max(r["test_acc"] for r in mine),
                      "median_s": statistics.median(r["wall_s"] for r in mine)})
    best = max(table, key=lambda t: t["selection_mean"]) if table else None
    return {"rows": table, "chosen": best and best["name"]}


def _train_share(args) -> int:
    """The runs of this process (every ``--share K/N``-th), on its GPU."""
    from ..device import machine_record
    from . import data as D
    from .data import default_data_dir
    from .loop import TrainConfig, fit, pick_device
    k, n = (int(x) for x in args.share.split("/"))
    root = args.data or default_data_dir()
    t0 = time.perf_counter()
    dev = pick_device("auto")
    base = TrainConfig(data=str(root), progress=False, limit=args.limit).resolved()
    ds = D.find_dataset(base.data)
    train, bad = D.build_store(D.limit(ds.train, base.limit), base.store_size, dev)
    val, bad_val = D.build_store(D.limit(ds.val, base.limit), base.store_size, dev)
    plan = [(name, seed) for name in args.variants for seed in args.seeds][k::n]
    runs = []
    record = {"benchmark": "cats_vs_dogs_sweep", "machine": machine_record(), "base": base.__dict__,
              "share": args.share, "runs": runs}
    for name, seed in plan:
        if time.perf_counter() - t0 > args.budget_s:
            print(f"budget spent: skipping {name} seed {seed}", flush=True)
            continue
        change = dict(VARIANTS[name], **({"epochs": args.epochs} if args.epochs else {}))
        cfg = TrainConfig(**{**base.__dict__, **change, "seed": seed,
                             "out": f"/tmp/gpukit_sweep_{os.getpid()}_{name}_{seed}.pt"})
        r = fit(cfg, log=lambda *a, **k: None, stores=(train, val, bad + bad_val))
        os.unlink(cfg.out)
        runs.append({"variant": name, "changes": VARIANTS[name], "seed": seed, "val_acc": r["val_acc"],
                     "selection_acc": r["selection_acc"], "test_acc": r["test_acc"],
                     "n_selection": r["n_selection"], "n_test": r["n_test"], "wall_s": r["wall_s"],
                     "train_s": r["train_s"], "images_per_s": r["images_per_s"], "epochs": cfg.epochs,
                     "gpu_share": args.share})
        print(f"{name:<14} seed {seed}: selection {100 * r['selection_acc']:.1f} %  "
              f"test {100 * r['test_acc']:.1f} %  wall {r['wall_s']:.1f} s", flush=True)
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(record, fh, indent=1)
    return 0


def save(data: dict, machine: dict, out: str | None) -> str:
    """Write the sweep's record through :mod:`gpukit.results`, stamped with the schema, the
    machine and the code's commit: to ``out`` when given, else to the machine's results folder."""
    from .. import results
    if out is None:
        return str(results.save(NAME, data, machine=machine))
    with tempfile.TemporaryDirectory() as tmp:
        path = results.save(NAME, data, root=Path(tmp), machine=machine)
        shutil.move(str(path), out)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--data", default=None)
    p.add_argument("--budget-s", type=float, default=500.0, help="start no run after this long")
    p.add_argument("--out", default=None,
                   help="JSON file to write (default: results/<machine>/cats_vs_dogs_sweep.json)")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--epochs", type=int, default=0, help="override every variant's epochs (quick checks)")
    p.add_argument("--gpus", type=int, default=1, help="one process per GPU, runs dealt in turn")
    p.add_argument("--share", default=None, help=argparse.SUPPRESS)  # K/N: one process's runs
    args = p.parse_args(argv)
    if args.share:
        return _train_share(args)
    t0 = time.perf_counter()
    stem = args.out or os.path.join(tempfile.gettempdir(), f"gpukit_sweep_{os.getpid()}.json")
    procs = []
    for k in range(args.gpus):
        env = dict(os.environ)
        if args.gpus > 1:
            env["CUDA_VISIBLE_DEVICES"] = str(k)
        cmd = [sys.executable, "-m", "gpukit.cats_vs_dogs.sweep", "--share", f"{k}/{args.gpus}",
               "--out", f"{stem}.{k}", "--variants", *args.variants, "--seeds", *map(str, args.seeds),
               "--budget-s", str(args.budget_s), "--limit", str(args.limit), "--epochs", str(args.epochs)]
        if args.data:
            cmd += ["--data", args.data]
        procs.append(subprocess.Popen(cmd, env=env))
    codes = [proc.wait() for proc in procs]
    parts = []
    for k in range(args.gpus):
        if os.path.exists(f"{stem}.{k}"):
            with open(f"{stem}.{k}", encoding="utf-8") as fh:
                parts.append(json.load(fh))
            os.unlink(f"{stem}.{k}")
    if not parts:
        print(f"the sweep trained nothing (exit codes {codes})", file=sys.stderr)
        return 1
    runs = [r for part in parts for r in part["runs"]]
    record = {"base": parts[0]["base"], "variants": {k: VARIANTS[k] for k in args.variants},
              "seeds": args.seeds, "gpus": args.gpus, "wall_s": time.perf_counter() - t0,
              "runs": runs, "sweep": choose(runs)}
    save(record, parts[0]["machine"], args.out)
    for row in record["sweep"]["rows"]:
        print(f"{row['name']:<14} selection {100 * row['selection_mean']:.1f} %  test "
              f"{100 * row['test_mean']:.1f} % ({len(row['seeds'])} seeds)")
    print(f"chosen on the selection half: {record['sweep']['chosen']}; {time.perf_counter() - t0:.0f} s")
    return 0 if all(c == 0 for c in codes) else 1


if __name__ == "__main__":
    sys.exit(main())
