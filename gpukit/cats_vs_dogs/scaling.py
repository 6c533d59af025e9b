"""Data-parallel scaling of the cats-vs-dogs training: the same command on 1 and on N GPUs.

For each regime (the chapter's recipe, and the same recipe with a wider network whose step
is over ten milliseconds), :mod:`.ddp_steps` first splits one step's time into compute, gradient
exchange and fixed cost (part ``steps``); then each training is ``torchrun --standalone
--nproc_per_node=N -m gpukit.cli train cats-vs-dogs`` in a subprocess, with every recipe setting
given as an option (recorded with the row), 1 and N GPUs alternating over the seeds (part
``runs``). Each run is timed on the host from the launcher's start to its exit (``launcher_s``),
the time every end-to-end ratio uses; its ``--report`` gives the accuracy and the time the
workers measured themselves (``time_to_model_s``), and what it prints gives each process's
weight digest. NVLink multicast stays off (NCCL_NVLS_ENABLE=0 and friends), as shared
multi-GPU hosts require.

``python -m gpukit.cats_vs_dogs.scaling --part runs --regimes chapter --save`` records one part
of some regimes and keeps, from the stored record, the other parts and regimes; each part of
each regime carries the date, commit and boot of the machine session that measured it.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from .meta import MULTICAST_OFF, PARTS, REGIMES, SEEDS, SHAPE  # noqa: F401  (public here)


def parse(stdout: str) -> dict:
    """Numbers from the training command's final report."""
    out: dict = {}
    m = re.search(r"validation accuracy ([\d.]+) %", stdout)
    if m:
        out["val_acc"] = float(m.group(1)) / 100
    m = re.search(r"wall time ([\d.]+) s \(data loading ([\d.]+) s, training ([\d.]+) s", stdout)
    if m:
        out["wall_s"], out["load_s"], out["train_s"] = (float(g) for g in m.groups())
    m = re.search(r"([\d,]+) training images/s", stdout)
    if m:
        out["images_per_s"] = float(m.group(1).replace(",", ""))
    out["digests"] = dict(re.findall(r"rank (\d+) weights sha256 ([0-9a-f]{64})", stdout))
    out["ranks_agree"] = len(set(out["digests"].values())) == 1 and bool(out["digests"])
    return out


def train_once(data: str, nproc: int, seed: int, extra: list[str], timeout: int = 600) -> dict:
    """``torchrun --nproc_per_node=nproc gpukit train cats-vs-dogs`` once: its report and digests."""
    import json
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
               "-m", "gpukit.cli", "train", "cats-vs-dogs", "--data", data, "--seed", str(seed),
               "--out", os.path.join(tmp, "ckpt.pt"), "--report", report, "--quiet", *extra]
        env = {**os.environ, **MULTICAST_OFF, "OMP_NUM_THREADS": "4"}
        started = time.time()
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        row = {"gpus": nproc, "seed": seed, "args": extra, "launcher_s": time.perf_counter() - t0,
               "started": started, "returncode": proc.returncode}
        if proc.returncode != 0 or not os.path.exists(report):
            row["error"] = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            return row
        with open(report, encoding="utf-8") as fh:
            r = json.load(fh)
        keep = ("val_acc", "selection_acc", "test_acc", "test_ci", "n_test", "time_to_model_s", "phases",
                "wall_s", "load_s", "train_s", "images_per_s", "epochs", "world_size")
        row.update({k: r.get(k) for k in keep})
        row["epoch_s"] = statistics.median_high([h["seconds"] for h in r["history"][1:]] or [0.0])
        return {**row, **{k: v for k, v in parse(proc.stdout).items() if k in ("digests", "ranks_agree")}}


def recipe_args(**change) -> list[str]:
    """The training options of one run, every recipe setting spelled out (the command's defaults,
    from :class:`~gpukit.cats_vs_dogs.loop.TrainConfig`, then ``change``), so that the results
    file records which recipe it measured, whatever the defaults become later."""
    from .loop import TrainConfig
    opts = {**{k: getattr(TrainConfig(), k) for k in RECIPE}, **change}
    return [a for k in RECIPE for a in (f"--{k.replace('_', '-')}", str(opts[k]))]


#: the settings :func:`recipe_args` spells out, in the order of the command line
RECIPE = ("epochs", "img_size", "width", "batch_size", "lr", "ema", "crop_scale", "eval_every")

#: the results file of the data-parallel record
DDP = "cats_vs_dogs_ddp"


def regime_label(args: list[str], note: str = "") -> str:
    """What a regime trained, read from its options: '128 px, width 32, batch 256, 250 epochs'."""
    o = dict(zip(args[::2], args[1::2]))
    exchange = f", gradients exchanged {o['--exchange']}" if "--exchange" in o else ""
    return (f"{o['--img-size']} px, width {o['--width']}, batch {o['--batch-size']}, "
            f"{o['--epochs']} epochs{exchange}" + note)


def session() -> dict:
    """What identifies the machine session that measures: the date, the code's commit and the
    boot of the machine (two parts measured between the same boots share one)."""
    import datetime

    from .. import results
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            boot = fh.read().strip()
    except OSError:
        boot = None
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "code": results.code_record(), "boot": boot}


def alternating(seeds: int, gpus: int) -> list[tuple[int, int]]:
    """The order of one regime's runs: (GPU count, seed), 1 and ``gpus`` alternating seed by
    seed, so that a drift over the session (a warmer disk cache, a busier host) meets both."""
    return [(nproc, seed) for seed in range(seeds) for nproc in (1, gpus)]


def _say(row: dict, name: str) -> str:
    if "error" in row:
        return f"failed: {row['error']}"
    return (f"test {100 * row['test_acc']:.1f} %, {row['images_per_s'] or 0:,.0f} img/s, launcher "
            f"{row['launcher_s']:.1f} s (workers {row['time_to_model_s']:.1f} s), ranks agree "
            f"{row.get('ranks_agree')}")


def record(regimes: list[str], seeds: int, parts=PARTS, *, budget: float = 900.0,
           data: str | None = None, gpus: int | None = None, warmup: bool = True,
           exchange: str | None = None) -> dict:
    """Measure ``parts`` of ``regimes``: the ``gpu`` block of the record.

    ``budget`` (seconds) bounds the whole: a run that would end past it, judged by the last run
    of the same regime and GPU count (or the longest run so far), is recorded as skipped
    instead of started, so the command always finishes and saves what it measured. Before a
    regime's runs, one short untimed training on all GPUs (``warmup``) loads what the first
    run would otherwise load cold. ``exchange`` (``overlapped``) is given to every training
    as ``--exchange``; without it the command's default exchange trains. Each row is also
    printed as it ends.
    """
    import json

    if gpus is None:
        import torch
        gpus = torch.cuda.device_count()
    if gpus < 2:
        raise RuntimeError(f"the scaling benchmark needs at least 2 GPUs; this machine has {gpus}")
    if data is None:
        from .data import default_data_dir
        data = str(default_data_dir())
    from .ddp_steps import measure_regime
    t0 = time.perf_counter()
    steps, rows, last, sessions = [], [], {}, {}

    def fits(estimate: float) -> bool:
        return time.perf_counter() - t0 + estimate <= budget

    for name in regimes:
        change, what = REGIMES[name]
        args = recipe_args(**change) + (["--exchange", exchange] if exchange else [])
        o = dict(zip(args[::2], args[1::2]))
        sessions[name] = {}
        if "steps" in parts and fits(last.get("steps", 60.0)):
            print(f"  {name}: step breakdown ...", flush=True)
            s0 = time.perf_counter()
            st = measure_regime(int(o["--img-size"]), int(o["--width"]), int(o["--batch-size"]), gpus)
            last["steps"] = time.perf_counter() - s0
            steps.append({"regime": name, "what": what, **st})
            sessions[name]["steps"] = session()
            print("gpukit-ddp-steps " + json.dumps(steps[-1]), flush=True)
        if "runs" not in parts:
            continue
        sessions[name]["runs"] = session()
        if warmup and fits(last.get("warmup", 30.0)):
            w0 = time.perf_counter()
            train_once(data, gpus, 0, recipe_args(**{**change, "epochs": 1, "eval_every": 1})
                       + args[len(recipe_args()):])
            last["warmup"] = sessions[name]["runs"]["warmup_s"] = time.perf_counter() - w0
        for order, (nproc, seed) in enumerate(alternating(seeds, gpus)):
            runs = [v for k, v in last.items() if isinstance(k, tuple)]
            guess = last.get((name, nproc)) or last.get((name, 1)) or max(runs, default=0.0)
            base = {"gpus": nproc, "seed": seed, "args": args, "regime": name, "order": order,
                    "label": regime_label(args)}
            if not fits(guess):
                rows.append({**base, "skipped": f"time budget ({budget:.0f} s)"})
                print(f"  {name}: {nproc} GPU(s), seed {seed}: skipped, the time budget is spent")
                continue
            row = {**train_once(data, nproc, seed, args), **base}
            last[(name, nproc)] = row["launcher_s"]
            rows.append(row)
            print(f"  {name}: {nproc} GPU(s), seed {seed}: {_say(row, name)}", flush=True)
            print("gpukit-ddp-row " + json.dumps(row), flush=True)
    return {"shape": SHAPE, "n": seeds, "seeds": seeds, "gpus": gpus, "budget_s": budget,
            "steps": steps,
            "regimes": {k: {"what": REGIMES[k][1], "sessions": sessions[k],
                            "args": recipe_args(**REGIMES[k][0])
                            + (["--exchange", exchange] if exchange else [])} for k in regimes},
            "rows": [{**r, "name": f"{r['regime']}, {r['gpus']} GPU(s), seed {r['seed']}",
                      "median_s": r.get("launcher_s") or 0.0} for r in rows]}


def merge(stored: dict | None, new: dict) -> dict:
    """The ``gpu`` block of ``new`` with, from ``stored`` (a record's ``gpu`` block of the same
    shape), every part of a regime that ``new`` did not measure. A stored block of an older
    shape is dropped whole: its numbers were not timed from the launcher."""
    if not stored or stored.get("shape") != SHAPE:
        return new
    out = {**new, "regimes": {}}
    names = list(dict.fromkeys([*stored["regimes"], *new["regimes"]]))
    fresh = {k: set(v.get("sessions", {})) for k, v in new["regimes"].items()}
    steps, rows = [], []
    for name in names:
        parts = fresh.get(name, set())
        src = new["regimes"].get(name) or stored["regimes"][name]
        kept = stored["regimes"].get(name, {}).get("sessions", {})
        sessions = {**{p: kept[p] for p in kept if p not in parts},
                    **new["regimes"].get(name, {}).get("sessions", {})}
        out["regimes"][name] = {**src, "sessions": sessions}
        for part, into, key in (("steps", steps, "steps"), ("runs", rows, "rows")):
            take = new if part in parts else stored
            into += [x for x in take[key] if x["regime"] == name]
    out["steps"], out["rows"] = steps, rows
    out["seeds"] = max([r["seed"] + 1 for r in rows if "seed" in r], default=new["seeds"])
    out["n"] = out["seeds"]
    return out


def run(n: int | None, repeat: int) -> dict:
    """``gpukit bench cats-vs-dogs-ddp``: both parts of every regime of :data:`REGIMES`, ``n``
    seeds each (default :data:`SEEDS`), within ``GPUKIT_BENCH_BUDGET_S`` (default 900 s).

    All of it takes longer than one device command may run (600 s); ``python -m
    gpukit.cats_vs_dogs.scaling`` records it in parts (see :func:`main`)."""
    budget = float(os.environ.get("GPUKIT_BENCH_BUDGET_S", 900))
    return {"gpu": record(list(REGIMES), n or SEEDS, budget=budget)}


def main(argv=None) -> int:
    """``python -m gpukit.cats_vs_dogs.scaling [--part steps|runs] [--regimes ...] [--seeds N]
    [--budget-s S] [--save]``: one command per part and regime keeps each under ten minutes."""
    import argparse

    from ..cli import UserError, finite_float, positive_int

    class Parser(argparse.ArgumentParser):
        def error(self, message):
            raise UserError(message, prog=self.prog)

    p = Parser(prog="python -m gpukit.cats_vs_dogs.scaling",
               description="Record the data-parallel scaling of the cats-vs-dogs training.")
    p.add_argument("--part", choices=[*PARTS, "both"], default="both",
                   help="the step breakdown, the whole runs, or both (default)")
    p.add_argument("--regimes", nargs="+", choices=list(REGIMES), default=list(REGIMES))
    p.add_argument("--seeds", type=positive_int, default=SEEDS,
                   help="seeds per regime and GPU count, 1 and N GPUs alternating (default %(default)s)")
    p.add_argument("--budget-s", type=finite_float, default=560.0,
                   help="start no run that would end after this many seconds (default %(default)s)")
    p.add_argument("--no-warmup", action="store_true", help="no untimed run before a regime's runs")
    p.add_argument("--exchange", choices=["after-backward", "overlapped"], default=None,
                   help="the gradient exchange the runs train with (default: the command's)")
    p.add_argument("--save", action="store_true",
                   help="merge into results/<machine>/cats_vs_dogs_ddp.json (other parts kept)")
    try:
        args = p.parse_args(argv)
        if not args.budget_s > 0:
            raise UserError(f"--budget-s must be > 0, got {args.budget_s}")
        from .data import default_data_dir
        data = default_data_dir()
        if "runs" in (args.part, "both") and (data is None or not data.is_dir()):
            raise UserError("no photos: set GPUKIT_CATS_DOGS to the cats_and_dogs_filtered_160 folder")
        import torch
        if torch.cuda.device_count() < 2:
            raise UserError(f"needs at least 2 GPUs; this machine has {torch.cuda.device_count()}")
    except UserError as exc:
        print(f"{p.prog}: error: {exc}", file=sys.stderr)
        return 2
    parts = PARTS if args.part == "both" else (args.part,)
    g = record(args.regimes, args.seeds, parts, budget=args.budget_s, data=str(data) if data else None,
               warmup=not args.no_warmup, exchange=args.exchange)
    if args.save:
        from .. import device, results
        stored = results.load(DDP).get(device.gpu_slug(), {}).get("gpu")
        print(f"saved {results.save(DDP, {'gpu': merge(stored, g)})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
