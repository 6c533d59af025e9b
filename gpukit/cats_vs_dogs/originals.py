"""Time to a model on photos of the original download's size, beside the pre-shrunk copy.

The chapter's benchmark trains on a copy of the photos shrunk beforehand to a 160 px short side
(JPEG quality 85). The original download's photos are mostly about 500x374 px, and Kaggle's
archive of the 25,000 training photos they come from is 543.16 MB, about 22 KB a photo
(https://www.kaggle.com/c/dogs-vs-cats/data). Where the originals are not at hand,
:func:`make_standins` makes photos like them from the shrunk copy: each one enlarged (bicubic)
until its long side is :data:`LONG_SIDE` px and saved as a JPEG whose quality is chosen so that
a photo takes :data:`TARGET_BYTES` on average (:func:`quality_for_bytes`), in the same folder
layout. So a stand-in has the original's pixels to decode and about its bytes to read; whether
its decoding takes as long as an original's (an enlarged photo holds less detail) is an open
question: no original was at hand to compare.

:func:`run` then times, in fresh processes, the chapter's ``gpukit train`` recipe on both
folders in turn (shrunk, stand-ins, shrunk, stand-ins: the same seed each time, so only the
photos differ), and the command's decoder on each folder's photos alone.
``gpukit bench cats-vs-dogs-originals --save`` records it; the photos are ``GPUKIT_CATS_DOGS``.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

#: the long side of a stand-in, in pixels (the original photos are mostly about 500x374)
LONG_SIDE = 500
#: the mean size of a stand-in on disk: Kaggle's 543.16 MB (MiB or MB: 21.7 to 22.8 KB a
#: photo) over its 25,000 training photos
TARGET_BYTES = 22_000
#: runs of ``gpukit train`` per folder, alternating between the folders
RUNS = 2
#: the results name
NAME = "cats_vs_dogs_originals"


def _enlarged(im, long: int):
    w, h = im.size
    scale = long / max(w, h)
    return im.resize((max(1, round(w * scale)), max(1, round(h * scale))), 3)   # 3: bicubic


def quality_for_bytes(paths: list[str], target: int, long: int = LONG_SIDE) -> tuple[int, float]:
    """The JPEG quality (1-95) whose stand-ins of ``paths`` take closest to ``target`` bytes
    on average, found by bisection (a photo's size grows with the quality); (quality, mean)."""
    import io

    from PIL import Image
    ims = []
    for p in paths:
        try:
            with Image.open(p) as im:
                ims.append(_enlarged(im.convert("RGB"), long))
        except (OSError, ValueError, SyntaxError):
            pass
    if not ims:
        raise RuntimeError("no readable photo to choose the stand-ins' quality")

    def mean_bytes(q: int) -> float:
        total = 0
        for im in ims:
            buf = io.BytesIO()
            im.save(buf, format="JPEG", quality=q)
            total += buf.tell()
        return total / len(ims)
    lo, hi = 1, 95
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if mean_bytes(mid) < target else (lo, mid)
    return min(((q, mean_bytes(q)) for q in (lo, hi)), key=lambda qb: abs(qb[1] - target))


def _enlarge(job: tuple[str, str, int, int]) -> tuple[int, int] | None:
    """One stand-in (in a worker): the photo at ``src`` enlarged to a long side of ``long``
    px, saved at ``dst``; returns its size. A photo that cannot be read is copied as it is (the
    loader then skips it, as it skips the original) and gives None."""
    import shutil

    from PIL import Image
    src, dst, long, quality = job
    try:
        with Image.open(src) as im:
            im = im.convert("RGB")
    except (OSError, ValueError, SyntaxError):
        shutil.copyfile(src, dst)
        return None
    im = _enlarged(im, long)
    im.save(dst, quality=quality)
    return im.size


def make_standins(src: Path, dst: Path, *, long_side: int = LONG_SIDE,
                  target_bytes: int = TARGET_BYTES, sample: int = 100,
                  workers: int | None = None) -> dict:
    """Copy the photo folder ``src`` to ``dst`` with every JPEG enlarged to ``long_side`` px,
    at the quality that makes the photos take ``target_bytes`` on average (chosen on every
    ``len // sample``-th photo; see the module's note). Returns the quality, the count, the
    bytes on disk and the median size."""
    from concurrent.futures import ProcessPoolExecutor
    photos = [p for p in sorted(Path(src).rglob("*"))
              if p.is_file() and p.suffix.lower() in (".jpg", ".jpeg")]
    if not photos:
        raise RuntimeError(f"no JPEG photos under {src}")
    quality, _ = quality_for_bytes([str(p) for p in photos[::max(1, len(photos) // sample)]],
                                   target_bytes, long_side)
    jobs = []
    for path in photos:
        out = Path(dst) / path.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        jobs.append((str(path), str(out), long_side, quality))
    with ProcessPoolExecutor(max(1, min(len(jobs), workers or os.cpu_count() or 1))) as pool:
        sizes = list(pool.map(_enlarge, jobs, chunksize=32))
    return {"quality": quality, **folder_facts(dst, sizes=[s for s in sizes if s])}


def folder_facts(root: Path, sizes: list | None = None) -> dict:
    """Photos, bytes on disk and the median width x height of a photo folder."""
    from PIL import Image
    files = [p for p in Path(root).rglob("*") if p.suffix.lower() in (".jpg", ".jpeg")]
    if sizes is None:
        sizes = []
        for p in files:
            try:
                with Image.open(p) as im:
                    sizes.append(im.size)
            except (OSError, ValueError, SyntaxError):
                pass
    ws, hs = [s[0] for s in sizes], [s[1] for s in sizes]
    return {"photos": len(files), "bytes": sum(p.stat().st_size for p in files),
            "median_px": [statistics.median(ws), statistics.median(hs)] if sizes else None}


def _decode_rate(root: Path, size: int, repeat: int = 3) -> dict:
    """The training command's decoder (:func:`~gpukit.cats_vs_dogs.photos.decode_all`, worker
    processes started inside the timing) on every photo of ``root``: median of ``repeat``."""
    from . import data as D
    ds = D.find_dataset(root)
    paths = list(ds.train.paths) + list(ds.val.paths)
    times = []
    for _ in range(repeat + 1):                      # the first warms the file cache
        t0 = time.perf_counter()
        D.decode_all(paths, size)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times[1:])
    return {"n": len(paths), "median_s": med, "images_per_s": len(paths) / med, "samples_s": times[1:]}


def run(n: int | None = None, repeat: int = 30, *, data_dir: str | None = None,
        quick: bool | None = None) -> dict:
    """Both folders, side by side (see the module's note). ``n`` runs per folder (default
    :data:`RUNS`); ``quick`` (the default without a GPU) trains the benchmark's tiny recipe."""
    from .measure import _brief, _finish, _launch, recipe, setting, train_command
    root, device, quick = setting(data_dir, quick, "cats-vs-dogs originals")
    runs = n or RUNS
    cfg = recipe(root, quick)
    gpu = 0 if device.type == "cuda" else None
    with tempfile.TemporaryDirectory() as tmp:
        standins = Path(tmp) / "standins"
        print(f"  stand-ins: {LONG_SIDE} px long side, about {TARGET_BYTES:,} bytes a photo ...",
              flush=True)
        t0 = time.perf_counter()
        facts = {"shrunk": folder_facts(root), "standins": make_standins(root, standins)}
        made_s = time.perf_counter() - t0
        folders = {"shrunk": root, "standins": standins}
        decode = {k: _decode_rate(p, cfg.store_size) for k, p in folders.items()}
        trained: dict[str, list] = {k: [] for k in folders}
        for i in range(runs):
            for k, p in folders.items():
                out = Path(tmp) / f"{k}{i}"
                out.mkdir()
                r = _finish(_launch(p, cfg, 0, str(out), gpu))
                trained[k].append(_brief(r))
                print(f"    {k}: time to model {r['time_to_model_s']:.2f} s, photos phase "
                      f"{r['phases'].get('photos (decoding, to the device)', 0):.2f} s", flush=True)
    rows = []
    for k, label in (("shrunk", "the photos as given"), ("standins", "their stand-ins")):
        ttm = [r["time_to_model_s"] for r in trained[k]]
        rows.append({"name": label, "folder": k, "median_s": statistics.median(ttm),
                     "time_to_model_s": ttm, **facts[k], "decode": decode[k], "runs": trained[k]})
    return {"originals": {"n": facts["shrunk"]["photos"], "rows": rows, "long_side": LONG_SIDE,
                          "target_bytes": TARGET_BYTES, "quality": facts["standins"]["quality"], "standins_made_s": made_s, "quick": quick,
                          "cpus": os.cpu_count(), "command": train_command(
                              "DATA", cfg, 0, "OUT.pt", "REPORT.json")[1:]}}
