"""Data-parallel scaling of the cats-vs-dogs training: the same command on 1 and on N GPUs.

Each run is ``torchrun --standalone --nproc_per_node=N -m gpukit.cli train cats-vs-dogs``
in a subprocess, with every recipe setting given as an option (recorded with the row); this
module parses what the command prints (accuracy, wall time, images/s, each rank's weight
digest) and records it. NVLink multicast stays off
(NCCL_NVLS_ENABLE=0 and friends), as shared multi-GPU hosts require.
"""

from __future__ import annotations

import os
import re
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
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
               "-m", "gpukit.cli", "train", "cats-vs-dogs", "--data", data, "--seed", str(seed),
               "--out", os.path.join(tmp, "ckpt.pt"), "--quiet", *extra]
        env = {**os.environ, **MULTICAST_OFF, "OMP_NUM_THREADS": "4"}
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        row = {"gpus": nproc, "seed": seed, "args": extra, "process_s": time.perf_counter() - t0,
               "returncode": proc.returncode}
        if proc.returncode != 0:
            row["error"] = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            return row
        return {**row, **parse(proc.stdout)}


def recipe_args(**change) -> list[str]:
    """The training options of one run, every recipe setting spelled out (the command's defaults,
    from :class:`~gpukit.cats_vs_dogs.loop.TrainConfig`, then ``change``), so that the results
    file records which recipe it measured, whatever the defaults become later."""
    from .loop import TrainConfig
    opts = {**{k: getattr(TrainConfig(), k) for k in RECIPE}, **change}
    return [a for k in RECIPE for a in (f"--{k.replace('_', '-')}", str(opts[k]))]


#: the settings :func:`recipe_args` spells out, in the order of the command line
RECIPE = ("epochs", "img_size", "width", "batch_size", "lr", "ema")


def regime_label(args: list[str], note: str = "") -> str:
    """What a regime trained, read from its options: '128 px, width 32, lr 0.05, weight average 0.995'."""
    o = dict(zip(args[::2], args[1::2]))
    ema = float(o["--ema"])
    return (f"{o['--img-size']} px, width {o['--width']}, lr {o['--lr']}, "
            + (f"weight average {o['--ema']}" if ema else "no weight average") + note)


def run(n: int | None, repeat: int) -> dict:
    """1 GPU vs all visible GPUs, ``n`` seeds each (default 2), plus one larger-image regime."""
    import torch

    from .data import default_data_dir
    gpus = torch.cuda.device_count()
    if gpus < 2:
        raise RuntimeError(f"the scaling benchmark needs at least 2 GPUs; this machine has {gpus}")
    data = str(default_data_dir())
    seeds = list(range(n or 2))
    rows = []
    for args, note, regime_seeds in ((recipe_args(), "", seeds),
                                     (recipe_args(img_size=144, width=64, epochs=60), " (a longer step)",
                                      seeds[:1])):
        regime = regime_label(args, note)
        for nproc in (1, gpus):
            for seed in regime_seeds:
                row = train_once(data, nproc, seed, args)
                row["regime"] = regime
                rows.append(row)
                print(f"  {regime}: {nproc} GPU(s), seed {seed}: "
                      + (f"acc {row.get('val_acc', 0):.4f}, {row.get('images_per_s', 0):,.0f} img/s, "
                         f"wall {row.get('wall_s', 0):.1f} s, ranks agree {row.get('ranks_agree')}"
                         if "error" not in row else f"failed: {row['error']}"), flush=True)
    return {"gpu": {"n": len(seeds), "gpus": gpus, "rows": [
        {**r, "name": f"{r['regime']}, {r['gpus']} GPU(s), seed {r['seed']}",
         "median_s": r.get("wall_s", 0.0)} for r in rows]}}
