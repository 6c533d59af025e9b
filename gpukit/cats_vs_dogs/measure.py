"""``gpukit bench cats-vs-dogs``: the measurements behind the training chapter, and its tables.

On a GPU, :func:`run` records (about 3-4 minutes on an H200):

* ``training``: ``gpukit train`` with the from-scratch recipe, several seeds, each in a fresh
  process: the time from the command's start to a trained model and where it went, the accuracy
  on the selection and the test half of the validation photos, images/s, per-epoch curves, a
  confusion matrix, a grid of validation photos with predictions (JPEG, base64); with two GPUs,
  two runs at once; cuDNN's timed trial of algorithms against its rule; import times;
* ``throughput``: a training step fed from the GPU-resident photos (index + augment)
  against the same step on synthetic data already on the GPU; torch.compile; and a
  typical tutorial pipeline (ImageFolder + PIL DataLoader, fp32, small CNN) timed
  in the same run;
* ``decode``: JPEG decoding with PIL (one core, threads, processes), torchvision on the CPU
  (one thread, threads), nvJPEG on the GPU (with and without the resize to the stored square);
* ``cpu_vs_gpu``: one epoch of the same model and batch on all CPU cores vs on the GPU.

Without a GPU, :func:`run` does everything on the CPU on a tiny subset (to test the
plumbing and the renderers); such a file says ``"quick": true``.
"""

from __future__ import annotations

import base64
import io
import os
import statistics
import time
from pathlib import Path

from .. import bench
from .meta import TUTORIAL_REPORTED, step_times  # noqa: F401  (public here)


# --------------------------------------------------------------------- helpers

def _timed_steps(fn, device, *, warmup: int, repeat: int, name: str) -> bench.Timing:
    t = bench.bench(fn, timer="torch" if device.type == "cuda" else "cpu", name=name,
                    warmup=warmup, repeat=repeat)
    return t


def _try(label: str, fn, errors: list):
    try:
        return fn()
    except Exception as exc:  # record a failing variant, keep the rest of the run
        errors.append({"part": label, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
        print(f"  {label} failed: {type(exc).__name__}: {str(exc)[:200]}")
        return None


class TutorialCNN:
    """The small fp32 CNN of a typical tutorial (four conv+pool layers, a 512-wide dense layer)."""

    @staticmethod
    def build(size: int):
        from torch import nn
        layers, c = [], 3
        for w in (32, 64, 128, 128):
            layers += [nn.Conv2d(c, w, 3), nn.ReLU(), nn.MaxPool2d(2)]
            c = w
            size = (size - 2) // 2
        return nn.Sequential(*layers, nn.Flatten(), nn.Linear(c * size * size, 512), nn.ReLU(),
                             nn.Linear(512, 2))


# --------------------------------------------------------------------- parts

def _tutorial_pipeline(data_dir: Path, size: int, device, epochs: int, limit: int) -> dict:
    """ImageFolder + PIL transforms in DataLoader workers, fp32 small CNN: images/s."""
    import torch
    from torchvision import datasets, transforms
    tf = transforms.Compose([transforms.Resize((size, size)), transforms.RandomHorizontalFlip(),
                             transforms.ToTensor()])
    ds = datasets.ImageFolder(str(data_dir / "train"), transform=tf)
    if limit:
        ds = torch.utils.data.Subset(ds, list(range(0, len(ds), max(1, len(ds) // (2 * limit)))))
    workers = min(16, os.cpu_count() or 1)
    loader = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True, num_workers=workers,
                                         persistent_workers=True, pin_memory=device.type == "cuda")
    model = TutorialCNN.build(size).to(device)
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    rows = []
    for epoch in range(epochs + 1):  # epoch 0 starts the workers: not counted
        t0, n = time.perf_counter(), 0
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            n += len(y)
        if device.type == "cuda":
            torch.cuda.synchronize()
        rows.append((time.perf_counter() - t0, n))
    # the data path alone: the same loader, no model
    t0, n = time.perf_counter(), 0
    for x, _ in loader:
        n += len(x)
    loader_only = n / (time.perf_counter() - t0)
    steady = rows[1:]
    secs = sorted(s for s, _ in steady)[len(steady) // 2]
    return {"images_per_s": steady[0][1] / secs, "epoch_s": secs, "loader_only_images_per_s": loader_only,
            "workers": workers, "batch_size": 32, "n": steady[0][1]}


def _decode(paths: list[str], size: int, device, errors: list) -> list[dict]:
    """Images/s of each way of decoding the same JPEG files to ``size x size`` (bytes already in
    memory, except for the worker processes, which read their files)."""
    import torch
    import torchvision.io as tio

    from . import data as D
    blobs = [Path(p).read_bytes() for p in paths]
    rows = []
    cores = os.cpu_count() or 1

    def per_s(name, n, fn, note, workers=1):
        fn()  # warm-up (thread pools, nvJPEG handles)
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        rows.append({"name": name, "median_s": dt / n, "images_per_s": n / dt, "n": n, "note": note,
                     "workers": workers})

    few = blobs[:min(len(blobs), 300)]
    per_s("PIL, 1 thread", len(few), lambda: [D.load_image(io.BytesIO(b), size) for b in few],
          "decode + resize + centre crop")
    from concurrent.futures import ThreadPoolExecutor
    for k in sorted({min(4, cores), cores}):
        def pil_threads(k=k):
            with ThreadPoolExecutor(k) as pool:
                list(pool.map(lambda b: D.load_image(io.BytesIO(b), size), blobs, chunksize=16))
        per_s(f"PIL, {k} threads", len(blobs), pil_threads, "decode + resize + centre crop", k)
    # Worker processes: forked only where torch is not loaded, as `gpukit train` does; here torch
    # is loaded, so a fork server (a clean process) makes them, and its start is timed too.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from .photos import _decode_chunk
    workers = min(16, cores)

    def pil_processes():
        ctx = multiprocessing.get_context("forkserver")
        step = -(-len(paths) // (4 * workers))
        with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
            list(pool.map(_decode_chunk, [paths[k:k + step] for k in range(0, len(paths), step)],
                          [size] * len(range(0, len(paths), step))))
    _try("PIL processes", lambda: per_s(f"PIL, {workers} processes (started in the timing)", len(paths),
                                        pil_processes, "read + decode + resize + centre crop", workers),
         errors)
    tensors = [torch.frombuffer(bytearray(b), dtype=torch.uint8) for b in blobs]
    _try("torchvision decode_jpeg cpu", lambda: per_s(
        "torchvision.io.decode_jpeg, CPU, 1 thread", len(few),
        lambda: [tio.decode_jpeg(t) for t in tensors[:len(few)]], "decode only"), errors)

    def tv_threads():
        with ThreadPoolExecutor(cores) as pool:
            list(pool.map(tio.decode_jpeg, tensors, chunksize=16))
    _try("torchvision decode_jpeg cpu threads", lambda: per_s(
        f"torchvision.io.decode_jpeg, CPU, {cores} threads", len(tensors), tv_threads, "decode only",
        cores), errors)
    if device.type == "cuda":
        def gpu():
            out = tio.decode_jpeg(tensors, device="cuda")
            torch.cuda.synchronize()
            return out
        _try("decode_jpeg cuda", lambda: per_s(
            f"torchvision.io.decode_jpeg, GPU (nvJPEG), batch of {len(tensors)}", len(tensors), gpu,
            "decode only; output stays on the GPU"), errors)

        def gpu_square():
            out = fit_square(tio.decode_jpeg(tensors, device="cuda"), size)
            torch.cuda.synchronize()
            return out
        _try("decode_jpeg cuda + resize", lambda: per_s(
            "nvJPEG, then resize + centre crop on the GPU, one photo at a time", len(tensors),
            gpu_square, "decode + resize + centre crop"), errors)
    return rows


def fit_square(images: list, size: int):
    """Decoded CHW uint8 photos of any size (on one device) -> ``(N, 3, size, size)``: short side
    resized to ``size`` (bilinear, antialiased), centre crop; like :func:`~.photos.load_image`."""
    import torch
    import torch.nn.functional as F
    out = torch.empty(len(images), 3, size, size, dtype=torch.uint8, device=images[0].device)
    for i, im in enumerate(images):
        _, h, w = im.shape
        scale = size / min(h, w)
        nh, nw = max(size, round(h * scale)), max(size, round(w * scale))
        if (nh, nw) != (h, w):
            im = F.interpolate(im[None].float(), size=(nh, nw), mode="bilinear", antialias=True,
                               align_corners=False)[0].round().clamp(0, 255).to(torch.uint8)
        top, left = (nh - size) // 2, (nw - size) // 2
        out[i] = im[:, top:top + size, left:left + size]
    return out


def _throughput(store, cfg, device, repeat: int, errors: list, *, t_start: float = 0.0,
                budget_s: float = float("inf")) -> dict:
    """Step time fed from the GPU-resident photos vs synthetic data already on the GPU.

    Both are timed over a run of ``steps`` consecutive steps (an epoch of the recipe), so
    the real pipeline is measured as training uses it: the gather and augmentation of the
    next batch run on a side stream while the current step runs (``loop.prefetched``).
    """
    import torch
    from torch import nn

    from . import data as D
    from .loop import autocast, memory_batches, prefetched, resolve_precision, split_batches, train_step
    from .model import build_model, macs_per_image
    torch.manual_seed(0)
    model = build_model(cfg.width).to(device, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    crit = nn.CrossEntropyLoss(label_smoothing=0.1)
    amp = autocast(device, resolve_precision("auto", device))
    b, s = min(cfg.batch_size, len(store)), cfg.img_size
    steps = max(1, len(store) // b)
    g = torch.Generator(device=device).manual_seed(0)
    x_syn = torch.randn(b, 3, s, s, device=device).contiguous(memory_format=torch.channels_last)
    y_syn = torch.randint(0, 2, (b,), device=device)

    def synthetic():
        for _ in range(steps):
            train_step(model, opt, sched, x_syn, y_syn, criterion=crit, amp=amp)

    def prepare(images, labels):
        return D.augment(images, s, g), labels

    chunk = max(1, cfg.chunk_images // b)  # as the training loop does

    def real(overlap: bool = True):
        order = torch.randperm(len(store), device=device, generator=g)
        chunks = memory_batches(store, order, 0, steps, b, chunk=chunk)
        feed = prefetched(chunks, prepare, device) if overlap else (prepare(*c) for c in chunks)
        for x, y in split_batches(feed, b):
            train_step(model, opt, sched, x, y, criterion=crit, amp=amp)

    def augment_only():
        order = torch.randperm(len(store), device=device, generator=g)
        for images, labels in memory_batches(store, order, 0, steps, b, chunk=chunk):
            prepare(images, labels)

    rows = []
    per_step = lambda t: bench.row(  # noqa: E731
        t, median_s=t.median_s / steps, min_s=t.min_s / steps, max_s=t.max_s / steps,
        per_s={"images_per_s": b * steps})
    for name, fn in [("synthetic batch already on the GPU", synthetic),
                     ("real photos: gather + augment, a chunk ahead on a side stream", real),
                     ("real photos: gather + augment, then the steps (no overlap)", lambda: real(False)),
                     ("augmentation alone (gather, crop, flip, jitter)", augment_only)]:
        t = _timed_steps(fn, device, warmup=3, repeat=max(3, repeat // 3), name=name)
        rows.append(per_step(t))
    # the two main rows again, in the other order, to check the first pair did not drift
    for i, fn in ((1, real), (0, synthetic)):
        t = _timed_steps(fn, device, warmup=1, repeat=max(3, repeat // 3), name=rows[i]["name"])
        rows[i]["second_median_s"] = t.median_s / steps

    def one_step(name, net, x, y, warmup=5, **extra):
        o = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, nesterov=True)
        sc = torch.optim.lr_scheduler.LambdaLR(o, lambda s: 1.0)
        a = extra.pop("amp", amp)
        t = _timed_steps(lambda: train_step(net, o, sc, x, y, criterion=crit, amp=a),
                         device, warmup=warmup, repeat=repeat, name=name)
        rows.append(bench.row(t, per_s={"images_per_s": len(y)}, **extra))

    def settings():
        # What bf16, channels_last and the batch size each bring, on synthetic data.
        tf32 = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
        try:
            one_step("synthetic batch, fp32 (TF32 off)", model, x_syn, y_syn, amp=autocast(device, "fp32"))
        finally:
            torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32
        one_step("synthetic batch, bf16, NCHW layout", build_model(cfg.width).to(device), x_syn.contiguous(), y_syn)
        x2, y2 = torch.cat([x_syn, x_syn]), torch.cat([y_syn, y_syn])
        one_step(f"synthetic batch of {2 * b} (bf16, channels_last)", model,
                 x2.contiguous(memory_format=torch.channels_last), y2)
    if device.type == "cuda":
        _try("precision and layout", settings, errors)

    def compiled():
        one_step("synthetic batch, torch.compile", torch.compile(model), x_syn, y_syn,
                 note="first call = compile time")
    if device.type == "cuda" and time.perf_counter() - t_start < budget_s:
        _try("torch.compile", compiled, errors)
    profile = _try("profile", lambda: _kernel_profile(model, opt, sched, x_syn, y_syn, crit, amp, device),
                   errors) if device.type == "cuda" else None
    macs = macs_per_image(model, s)
    syn_s, real_s = step_times(rows)
    return {"n": b, "batch_size": b, "img_size": s, "steps": steps, "chunk_batches": chunk, "rows": rows,
            "real_over_synthetic": real_s / syn_s, "images_per_s_real": b / real_s,
            "macs_per_image": macs, "train_tflops_real": 3 * 2 * macs * b / real_s / 1e12,
            "profile": profile}


def _kernel_profile(model, opt, sched, x, y, crit, amp, device, steps: int = 5) -> dict:
    """Where a training step's GPU time goes: CUDA time per kind of kernel (torch.profiler)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from .loop import train_step
    for _ in range(3):
        train_step(model, opt, sched, x, y, criterion=crit, amp=amp)
    torch.cuda.synchronize(device)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            train_step(model, opt, sched, x, y, criterion=crit, amp=amp)
        torch.cuda.synchronize(device)
    kinds: dict[str, float] = {}
    launches = 0
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        us = e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
        n = e.name.lower()
        kind = ("convolution (cuDNN / GEMM)" if any(k in n for k in ("conv", "gemm", "xmma", "sm90", "cutlass", "wgrad", "dgrad", "fprop"))
                else "batch norm" if "batch_norm" in n or "bn_" in n or "batchnorm" in n
                else "max pool" if "pool" in n
                else "optimizer (SGD update)" if "foreach" in n or "multi_tensor" in n
                else "memory copy / set" if "memcpy" in n or "memset" in n
                else "element-wise and other")
        kinds[kind] = kinds.get(kind, 0.0) + us
        launches += 1
    total = sum(kinds.values())
    return {"steps": steps, "gpu_time_per_step_s": total / steps / 1e6, "kernels_per_step": launches / steps,
            "by_kind": sorted(([k, v / steps / 1e6] for k, v in kinds.items()), key=lambda kv: -kv[1])}


def _cpu_epoch(train_store, cfg, max_s: float, errors: list) -> dict:
    """One epoch of the same model and batch on every CPU core (fp32 or bf16, whichever is faster)."""
    import torch
    from torch import nn

    from . import data as D
    from .loop import autocast, train_step
    from .model import build_model
    threads_before = torch.get_num_threads()
    cores = os.cpu_count() or 1
    torch.set_num_threads(cores)
    try:
        cpu = torch.device("cpu")
        images, labels = train_store.images.cpu(), train_store.labels.cpu()
        torch.manual_seed(0)
        model = build_model(cfg.width).to(cpu, memory_format=torch.channels_last)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
        crit = nn.CrossEntropyLoss(label_smoothing=0.1)
        b = min(cfg.batch_size, len(images))
        steps = len(images) // b
        g = torch.Generator().manual_seed(0)
        perm = torch.randperm(len(images), generator=g)

        def step(i, amp):
            idx = perm[(i % steps) * b:(i % steps + 1) * b]
            x = D.augment(images[idx], cfg.img_size, g)
            train_step(model, opt, sched, x, labels[idx], criterion=crit, amp=amp)

        trial = {}
        for prec in ("fp32", "bf16"):
            amp = autocast(cpu, prec)
            step(0, amp)  # warm-up
            t0 = time.perf_counter()
            step(1, amp)
            trial[prec] = time.perf_counter() - t0
        prec = min(trial, key=trial.get)
        amp = autocast(cpu, prec)
        run_steps = steps if trial[prec] * steps <= max_s else max(1, int(max_s / trial[prec]))
        t0 = time.perf_counter()
        for i in range(run_steps):
            step(i, amp)
        dt = time.perf_counter() - t0
        epoch_s = dt * steps / run_steps
        return {"epoch_s": epoch_s, "steps_timed": run_steps, "steps_per_epoch": steps,
                "extrapolated": run_steps < steps, "precision": prec, "threads": cores,
                "step_s_fp32": trial["fp32"], "step_s_bf16": trial["bf16"],
                "images_per_s": run_steps * b / dt}
    finally:
        torch.set_num_threads(threads_before)


def photo_grid(store, model, cfg, device, n: int = 24, cols: int = 6, tile: int = 112) -> str:
    """A JPEG grid of validation photos with the model's answer under each, as base64."""
    import torch
    from PIL import Image, ImageDraw, ImageFont

    from . import data as D
    from .loop import autocast, predict_logits, resolve_precision
    g = torch.Generator().manual_seed(1)
    pick = torch.randperm(len(store), generator=g)[:n].to(store.labels.device)
    amp = autocast(device, resolve_precision("auto", device))
    logits = predict_logits(model, store.images[pick], cfg.eval_size, amp=amp, tta=cfg.tta)
    probs = torch.softmax(logits, 1).cpu()
    imgs = store.images[pick].cpu().permute(0, 2, 3, 1).numpy()
    truth = store.labels[pick].cpu().tolist()
    rows = (len(imgs) + cols - 1) // cols
    bar = 22
    canvas = Image.new("RGB", (cols * tile, rows * (tile + bar)), "white")
    draw = ImageDraw.Draw(canvas)
    try:
        font = ImageFont.load_default(size=15)
    except Exception:  # Pillow < 10.1, or built without FreeType
        font = ImageFont.load_default()
    for i, (img, p, t) in enumerate(zip(imgs, probs, truth)):
        x0, y0 = (i % cols) * tile, (i // cols) * (tile + bar)
        canvas.paste(Image.fromarray(img).resize((tile, tile), Image.BILINEAR), (x0, y0))
        k = int(p.argmax())
        colour = (20, 120, 40) if k == t else (200, 30, 30)
        if k != t:
            draw.rectangle([x0, y0, x0 + tile - 1, y0 + tile + bar - 1], outline=colour, width=3)
        draw.text((x0 + 5, y0 + tile + 3), f"{D.CLASSES[k]} {100 * float(p[k]):.0f}%",
                  fill=colour, font=font)
    buf = io.BytesIO()
    canvas.save(buf, format="JPEG", quality=82, optimize=True)
    return base64.b64encode(buf.getvalue()).decode("ascii")


# --------------------------------------------------------------------- time to a trained model

def recipe_options(cfg) -> list[str]:
    """The ``gpukit train cats-vs-dogs`` options that give ``cfg``'s run (every recipe setting
    spelled out, so the results file records what was measured whatever the defaults become)."""
    opts = ["--epochs", cfg.epochs, "--img-size", cfg.img_size, "--width", cfg.width,
            "--batch-size", cfg.batch_size, "--lr", cfg.lr, "--ema", cfg.ema,
            "--crop-scale", cfg.crop_scale, "--eval-every", cfg.eval_every]
    if cfg.limit:
        opts += ["--limit", cfg.limit]
    return [str(o) for o in opts]


def train_command(root, cfg, seed: int, out: str, report: str) -> list[str]:
    import sys
    return [sys.executable, "-m", "gpukit", "train", "cats-vs-dogs", "--data", str(root), "--seed",
            str(seed), "--out", out, "--report", report, "--quiet", *recipe_options(cfg)]


def _launch(root, cfg, seed: int, folder: str, gpu: int | None):
    """Start ``gpukit train`` for one seed in a fresh process (on GPU ``gpu`` alone)."""
    import subprocess
    env = dict(os.environ)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(gpu)
    out, rep = os.path.join(folder, f"seed{seed}.pt"), os.path.join(folder, f"seed{seed}.json")
    proc = subprocess.Popen(train_command(root, cfg, seed, out, rep), env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc, out, rep, time.perf_counter()


def _finish(launched, timeout: float = 600) -> dict:
    """Wait for a run of :func:`_launch`: its report, with the process's own wall time."""
    import json
    proc, out, rep, t0 = launched
    stdout, stderr = proc.communicate(timeout=timeout)
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not os.path.exists(rep):
        tail = (stderr or stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"gpukit train exited with {proc.returncode}: {tail[0][:300]}")
    with open(rep, encoding="utf-8") as fh:
        r = json.load(fh)
    r["process_s"] = wall                       # measured from outside: spawn to exit
    r["checkpoint_bytes"] = os.path.getsize(out)
    return r


def _time_to_model(root, cfg, seeds: int, gpus: int, folder: str) -> dict:
    """``gpukit train`` from a fresh process, one seed after another on one GPU; then, with two
    GPUs, two more seeds at once, one on each, for the experiments per hour of two GPUs."""
    runs = []
    for seed in range(seeds):
        print(f"  gpukit train, seed {seed} ...", flush=True)
        r = _finish(_launch(root, cfg, seed, folder, 0 if gpus else None))
        print(f"    test {100 * r['test_acc']:.1f} %, time to model {r['time_to_model_s']:.1f} s, "
              f"process {r['process_s']:.1f} s", flush=True)
        runs.append(r)
    pair = None
    if gpus >= 2:
        print("  two runs at once, one per GPU ...", flush=True)
        t0 = time.perf_counter()
        launched = [_launch(root, cfg, seeds + k, folder, k) for k in range(2)]
        both = [_finish(x) for x in launched]
        wall = time.perf_counter() - t0
        one = statistics.median_high(r["process_s"] for r in runs)
        pair = {"wall_s": wall, "runs": [_brief(r) for r in both], "one_run_median_s": one,
                "throughput_ratio": 2 * one / wall, "seeds": [seeds, seeds + 1]}
        print(f"    both done in {wall:.1f} s: {pair['throughput_ratio']:.2f}x the runs per hour", flush=True)
    return {"runs": runs, "pair": pair}


def _brief(r: dict) -> dict:
    """What the page needs of one run's report."""
    keys = ("val_acc", "selection_acc", "test_acc", "test_ci", "n_test", "n_selection", "n_val",
            "time_to_model_s", "phases", "process_s", "wall_s", "load_s", "train_s", "images_per_s",
            "decoding", "epochs", "confusion", "checkpoint_bytes", "process_age_at_start_s")
    return {k: r.get(k) for k in keys} | {"seed": r["config"]["seed"]}


def cudnn_probe(benchmark: bool) -> dict:
    """In a fresh process: the first training steps and the steady step of the recipe's network
    on a synthetic batch, with cuDNN timing its algorithms (``benchmark``) or choosing by rule."""
    import torch

    from .ddp_steps import synthetic_step
    from .model import build_model
    torch.backends.cudnn.benchmark = benchmark
    torch.manual_seed(0)
    m = build_model(32).to("cuda", memory_format=torch.channels_last)
    step = synthetic_step(m, m.parameters(), 256, 128, weight_decay=0.0)
    first = []
    for _ in range(3):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        first.append(time.perf_counter() - t0)
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(200):
        step()
    torch.cuda.synchronize()
    return {"benchmark": benchmark, "first_steps_s": first, "step_s": (time.perf_counter() - t0) / 200}


def _cudnn(errors: list) -> list[dict]:
    """:func:`cudnn_probe` with and without cuDNN's timed trial, each in a fresh process."""
    import json
    import subprocess
    import sys
    rows = []
    for bench in (False, True):
        code = (f"import json; from gpukit.cats_vs_dogs.measure import cudnn_probe; "
                f"print('gpukit-cudnn ' + json.dumps(cudnn_probe({bench})))")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("gpukit-cudnn ")]
        if not line:
            errors.append({"part": f"cudnn probe {bench}", "error": (proc.stderr or "no output")[-300:]})
            continue
        r = json.loads(line[0].split(" ", 1)[1])
        rows.append({"name": "cuDNN times its algorithms (benchmark=True)" if bench else
                     "cuDNN chooses by rule (benchmark=False)", "median_s": r["step_s"], **r})
    return rows


def _import_times() -> dict:
    """Seconds to import torch, then torchvision, in a fresh process."""
    import json
    import subprocess
    import sys
    code = ("import time, json; t = time.perf_counter(); import torch; a = time.perf_counter() - t; "
            "t = time.perf_counter(); import torchvision; b = time.perf_counter() - t; "
            "print('gpukit-imports ' + json.dumps({'torch': a, 'torchvision': b}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("gpukit-imports ")]
    return json.loads(line[0].split(" ", 1)[1]) if line else {}


# --------------------------------------------------------------------- the benchmark

def coverage(data: dict) -> int:
    """How much a results file covers: trained seeds, and the full (not quick) recipe counting
    above a quick run. ``gpukit bench --save`` never replaces a file with one that covers less."""
    t = data.get("training") or {}
    return len(t.get("rows") or []) + (0 if t.get("quick", True) else 100)


def setting(data_dir: str | None, quick: bool | None, what: str):
    """(photo folder, device, quick) of a benchmark: ``data_dir`` or ``GPUKIT_CATS_DOGS``;
    quick unless told otherwise where there is no GPU. RuntimeError without photos."""
    from .data import default_data_dir
    from .loop import pick_device
    root = Path(data_dir) if data_dir else default_data_dir()
    if root is None or not root.is_dir():
        raise RuntimeError(f"{what}: no data; set GPUKIT_CATS_DOGS to the "
                           "cats_and_dogs_filtered_160 folder")
    device = pick_device("auto")
    return root, device, device.type != "cuda" if quick is None else quick


def recipe(root, quick: bool, overrides: dict | None = None):
    """The benchmark's training recipe on the photos under ``root``: the command's defaults,
    or with ``quick`` a tiny one (2 epochs of a narrow network on 24 photos a class), with
    ``overrides`` on top; resolved."""
    from .loop import TrainConfig
    base = (TrainConfig(data=str(root), epochs=2, img_size=48, width=8, batch_size=16, limit=24,
                        progress=False) if quick else TrainConfig(data=str(root), progress=False))
    return TrainConfig(**{**base.__dict__, **(overrides or {})}).resolved()


def run(n: int | None = None, repeat: int = 30, *, data_dir: str | None = None,
        quick: bool | None = None, budget_s: float = 280.0, overrides: dict | None = None) -> dict:
    """Everything the chapter shows. ``n`` = number of seeds (default 3), each trained by
    ``gpukit train`` in a fresh process so that its time to a model counts everything.

    ``overrides`` changes the training recipe, e.g. ``{"epochs": 300, "width": 48}``.
    ``GPUKIT_BENCH_BUDGET_S`` in the environment replaces ``budget_s``: torch.compile and the
    CPU epoch start only while enough of it is left.
    """
    budget_s = float(os.environ.get("GPUKIT_BENCH_BUDGET_S", budget_s))
    from . import data as D
    t_run = time.perf_counter()
    root, device, quick = setting(data_dir, quick, "cats-vs-dogs benchmark")
    # three seeds, or one within a short budget (``gpukit results`` gives one)
    seeds = n or (1 if quick or budget_s < 150 else 3)
    base = recipe(root, quick, overrides)
    errors: list[dict] = []
    print(f"cats-vs-dogs benchmark on {device}{' (quick, tiny subset)' if quick else ''}")

    # 1. Time to a trained model: ``gpukit train`` in a fresh process, one seed after another,
    #    then (two GPUs) two at once; seed 0's checkpoint is kept for the photo grid.
    import tempfile

    import torch
    gpus = torch.cuda.device_count() if device.type == "cuda" else 0
    with tempfile.TemporaryDirectory() as folder:
        ttm = _time_to_model(root, base, seeds, gpus, folder)
        from .checkpoint import load_for_inference
        model0, _ = load_for_inference(os.path.join(folder, "seed0.pt"), device)
    runs = ttm["runs"]
    first = runs[0]
    ds = D.find_dataset(root)
    val_store = D.build_store(D.limit(ds.val, base.limit), base.store_size, device)[0]
    # accuracy without the mirror averaging, and at the training size, for the first seed
    from .loop import autocast, evaluate, resolve_precision
    amp = autocast(device, resolve_precision("auto", device))
    variants = {"no_tta": evaluate(model0, val_store, base.eval_size, amp=amp)["acc"],
                "at_train_size": evaluate(model0, val_store, base.img_size, amp=amp, tta=base.tta)["acc"]}
    grid = _try("photo grid", lambda: photo_grid(val_store, model0, base, device), errors)
    rows = [{"name": f"seed {r['config']['seed']}", "median_s": r["time_to_model_s"], **_brief(r)}
            for r in runs]
    training = {
        "n": first["n_train"], "n_val": first["n_val"], "rows": rows, "config": base.__dict__,
        "params": first["params"], "history": first["history"], "confusion": first["confusion"],
        "tta": base.tta, "precision": first["precision"], "variants_seed0": variants,
        "grid_jpeg_base64": grid, "pair": ttm["pair"], "command": train_command(
            "DATA", base, 0, "OUT.pt", "REPORT.json")[1:],
        "tutorial_reported": TUTORIAL_REPORTED, "quick": quick, "errors": errors,
    }
    if device.type == "cuda":
        print("  cuDNN: timed trial against its rule ...", flush=True)
        training["cudnn"] = _cudnn(errors)
    training["imports"] = _import_times()
    data = {"training": training}

    # 2. Steady-state step: real photos vs synthetic data; the tutorial pipeline.
    train_store = D.build_store(D.limit(D.find_dataset(root).train, base.limit), base.store_size, device)[0]
    print("  step time: real vs synthetic ...", flush=True)
    tp = _try("throughput", lambda: _throughput(train_store, base, device, repeat if not quick else 3,
                                                errors, t_start=t_run,
                                                # a quick run leaves out torch.compile (its compile
                                                # alone takes tens of seconds)
                                                budget_s=0.0 if quick else 0.7 * budget_s), errors)
    if tp:
        print("  tutorial pipeline ...", flush=True)
        tut = _try("tutorial pipeline", lambda: _tutorial_pipeline(
            root, base.img_size, device, epochs=1 if quick else 3, limit=base.limit), errors)
        tp["tutorial_measured"] = tut
        tp["tutorial_reported"] = TUTORIAL_REPORTED
        data["throughput"] = tp

    # 3. Decoding.
    print("  JPEG decoding ...", flush=True)
    paths = D.limit(D.find_dataset(root).train, base.limit).paths
    dec = _try("decode", lambda: _decode(paths, base.store_size, device, errors), errors)
    if dec:
        data["decode"] = {"n": len(paths), "rows": dec, "store_size": base.store_size,
                          "load_s_seed0": first["load_s"]}

    # 4. One epoch on all CPU cores vs one on the GPU, same model and batch.
    print("  one epoch on the CPU ...", flush=True)
    left = budget_s - (time.perf_counter() - t_run)
    cpu = _try("cpu epoch", lambda: _cpu_epoch(train_store, base, max(10.0, min(120.0, left - 20)),
                                               errors), errors)
    if cpu:
        epochs = [h["seconds"] for h in first["history"] if not h.get("partial")]
        gpu_epoch = sorted(epochs[1:] or epochs)[len(epochs[1:] or epochs) // 2]
        data["cpu_vs_gpu"] = {
            "n": first["n_train"], "device": str(device), "cpu": cpu, "gpu_epoch_s": gpu_epoch,
            "ratio": cpu["epoch_s"] / gpu_epoch,
            "rows": [{"name": f"one epoch on {device} ({first['precision']})", "median_s": gpu_epoch},
                     {"name": f"one epoch on {cpu['threads']} CPU cores ({cpu['precision']})",
                      "median_s": cpu["epoch_s"]}]}
    training["total_s"] = time.perf_counter() - t_run
    print(f"  done in {training['total_s']:.0f} s")
    return data
