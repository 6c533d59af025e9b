"""Data-parallel scaling of the cats-vs-dogs training: the same command on 1 and on N GPUs.

For each regime (the chapter's recipe, and the same recipe with a wider network whose step
is over ten milliseconds), :mod:`.ddp_steps` first splits one step's time into compute, gradient
exchange and fixed cost; then each training is ``torchrun --standalone --nproc_per_node=N -m
gpukit.cli train cats-vs-dogs`` in a subprocess, with every recipe setting given as an option
(recorded with the row). Its ``--report`` gives the accuracy and the time to a model, and what
it prints gives each process's weight digest. NVLink multicast stays off (NCCL_NVLS_ENABLE=0
and friends), as shared multi-GPU hosts require.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                 "NVSHMEM_DISABLE_NVLS": "1"}


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
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        row = {"gpus": nproc, "seed": seed, "args": extra, "process_s": time.perf_counter() - t0,
               "returncode": proc.returncode}
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

#: name -> (training options changed from the recipe, what it is); ``--lr`` is the peak at batch
#: 256 and the command scales it with the global batch, so batch 512 trains at twice the rate
REGIMES = {
    "chapter": ({}, "the chapter's recipe: 128 px, width 32, global batch 256"),
    "wide": ({"width": 96}, "the chapter's recipe with a network three times as wide (about 9x the "
             "parameters): a longer step"),
    "wide-512": ({"width": 96, "batch_size": 512},
                 "the wide network with a global batch of 512: on two GPUs each gets the 256 photos "
                 "that one GPU gets in the `wide` regime"),
}
#: seeds trained per regime and GPU count (``n`` replaces them): the chapter's regime has its
#: seed spread on one GPU in the training benchmark; the wide ones need their own
SEEDS = {"chapter": 1, "wide": 2, "wide-512": 2}


def regime_label(args: list[str], note: str = "") -> str:
    """What a regime trained, read from its options: '128 px, width 32, batch 256, 250 epochs'."""
    o = dict(zip(args[::2], args[1::2]))
    return (f"{o['--img-size']} px, width {o['--width']}, batch {o['--batch-size']}, "
            f"{o['--epochs']} epochs" + note)


def run(n: int | None, repeat: int) -> dict:
    """Each regime of :data:`REGIMES`: the step's time split into compute, gradient exchange and
    fixed cost (:mod:`.ddp_steps`), then the whole training on 1 GPU and on all visible GPUs,
    ``n`` seeds each (default :data:`SEEDS`).

    ``GPUKIT_BENCH_BUDGET_S`` (default 900) bounds the whole: a run that would end past it,
    judged by the last run of the same regime (or, for a regime's first run, by the longest
    run so far), is recorded as skipped instead of started, so the
    benchmark always finishes and saves what it measured. Each row is also printed as it ends.
    """
    import json

    import torch

    from .data import default_data_dir
    from .ddp_steps import measure_regime
    gpus = torch.cuda.device_count()
    if gpus < 2:
        raise RuntimeError(f"the scaling benchmark needs at least 2 GPUs; this machine has {gpus}")
    budget = float(os.environ.get("GPUKIT_BENCH_BUDGET_S", 900))
    t0 = time.perf_counter()
    data = str(default_data_dir())
    steps, rows, last = [], [], {}

    def fits(estimate: float) -> bool:
        return time.perf_counter() - t0 + estimate <= budget

    for name, (change, what) in REGIMES.items():
        args = recipe_args(**change)
        o = dict(zip(args[::2], args[1::2]))
        if fits(last.get("steps", 30.0)):
            print(f"  {name}: step breakdown ...", flush=True)
            s0 = time.perf_counter()
            st = measure_regime(int(o["--img-size"]), int(o["--width"]), int(o["--batch-size"]), gpus)
            last["steps"] = time.perf_counter() - s0
            steps.append({"regime": name, "what": what, **st})
            print("gpukit-ddp-steps " + json.dumps(steps[-1]), flush=True)
        for nproc in (1, gpus):
            for seed in range(n or SEEDS[name]):
                # the last run like it; before any, the longest run so far (a new regime's first)
                runs = [v for k, v in last.items() if isinstance(k, tuple)]
                guess = last.get((name, nproc)) or last.get((name, 1)) or max(runs, default=0.0)
                if not fits(guess):
                    rows.append({"gpus": nproc, "seed": seed, "args": args, "regime": name,
                                 "label": regime_label(args), "skipped": f"time budget ({budget:.0f} s)"})
                    print(f"  {name}: {nproc} GPU(s), seed {seed}: skipped, the time budget is spent")
                    continue
                row = train_once(data, nproc, seed, args)
                last[(name, nproc)] = row["process_s"]
                row.update(regime=name, label=regime_label(args))
                rows.append(row)
                print(f"  {name}: {nproc} GPU(s), seed {seed}: "
                      + (f"test {100 * row['test_acc']:.1f} %, {row['images_per_s'] or 0:,.0f} img/s, "
                         f"time to model {row['time_to_model_s']:.1f} s, process {row['process_s']:.1f} s, "
                         f"ranks agree {row.get('ranks_agree')}"
                         if "error" not in row else f"failed: {row['error']}"), flush=True)
                print("gpukit-ddp-row " + json.dumps(row), flush=True)
    return {"gpu": {"n": n or max(SEEDS.values()), "gpus": gpus, "budget_s": budget, "steps": steps,
                    "regimes": {k: {"what": w, "args": recipe_args(**c)} for k, (c, w) in REGIMES.items()},
                    "rows": [{**r, "name": f"{r['regime']}, {r['gpus']} GPU(s), seed {r['seed']}",
                              "median_s": r.get("time_to_model_s") or 0.0} for r in rows]}}
