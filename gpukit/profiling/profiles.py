"""``gpukit bench profiles``: Nsight Compute's key metrics for kernels of earlier chapters.

Each kernel of :data:`.targets.RECORDED` is profiled by ``ncu`` in a fresh process (the launch
after the compile and one warm-up); the key metrics of its report are recorded with the bytes
and FLOPs its work needs at least, and the summary of its SASS (the instruction mix and the
instructions where the sampled warps stalled most; ``sass`` is None, with ``sass_error`` saying
why, where ncu could not print the source page). Where ``ncu`` is missing or may not read the counters, every
kernel is recorded under ``failed`` with the reason, and the page's views skip this machine.
"""

from __future__ import annotations

import os
import tempfile

from gpukit import device

from . import ncu
from .targets import RECORDED, TARGETS, WARMUP


def profile_one(name: str, folder: str) -> dict:
    """One target under ncu: its key metrics, or ``{"name", "error"}``."""
    t = TARGETS[name]
    try:
        res = ncu.run([name, WARMUP], t.regex, WARMUP, os.path.join(folder, name))
    except ncu.NcuError as exc:
        return {"name": name, "label": t.label, "error": str(exc), "kind": exc.kind}
    except Exception as exc:  # noqa: BLE001 - one kernel's failure is recorded, the rest go on
        return {"name": name, "label": t.label, "error": f"{type(exc).__name__}: {str(exc)[:300]}",
                "kind": "failed"}
    k = res["kernels"][0]
    key = ncu.key_metrics(k["metrics"])
    if not key["duration_s"]:
        return {"name": name, "label": t.label, "kind": "failed", **key,
                "error": "the report holds no kernel duration (gpu__time_duration.sum)"}
    nbytes, flops = t.work()
    row = {"name": name, "label": t.label, "chapter": t.chapter, "bound": t.bound, "n": t.n,
           "kernel": k["name"][:200], "block": k["block"], "grid": k["grid"], **key,
           "median_s": key["duration_s"], "counted_bytes": nbytes, "counted_flops": flops,
           "in_flight_bytes_per_thread": t.in_flight, "ncu_s": res["seconds"],
           "command": res["command"], "used_named_metrics": res["used_named_metrics"],
           "metrics": len(k["metrics"]), "sass": res.get("sass"), "sass_error": res.get("sass_error")}
    if key["duration_s"]:
        row["counted_gbs"] = nbytes / key["duration_s"] / 1e9
        row["tflops"] = flops / key["duration_s"] / 1e12 if flops else None
    return row


def profile_many(names) -> tuple[list[dict], list[dict]]:
    """Each target under ncu in turn: (rows, failures). Where ncu is missing or may not read
    the counters, the rest fail with the same reason without being tried."""
    rows, failed = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(names):
            row = profile_one(name, tmp)
            (failed if "error" in row else rows).append(row)
            print(f"  {name:<24} " + (f"{row['duration_s'] * 1e6:10.1f} us, DRAM "
                  f"{row['dram_pct'] or 0:.1f} %, issue {row['issue_active_pct'] or 0:.1f} % "
                  f"({row['ncu_s']:.1f} s)" if "error" not in row else f"FAILED: {row['error']}"),
                  flush=True)
            if row.get("kind") in ("missing", "permission"):
                failed += [{"name": m, "label": TARGETS[m].label, "error": row["error"]}
                           for m in names[i + 1:]]
                break
    return rows, failed


def run(n: int | None, repeat: int) -> dict:
    """Every recorded target, profiled; part ``gpu`` on a GPU machine, else ``cpu`` (all failed)."""
    gpu = device.has_gpu() and not device.simulator_enabled()
    exe = ncu.find_ncu()
    rows, failed = [], []
    if exe is None or not gpu:
        reason = ("ncu not available: " + ncu.MISSING) if exe is None else "no NVIDIA GPU on this machine"
        failed = [{"name": name, "label": TARGETS[name].label, "error": reason} for name in RECORDED]
    else:
        rows, failed = profile_many(RECORDED)
    part = {"n": len(RECORDED), "rows": rows, "failed": failed,
            "ncu": exe and os.path.basename(exe), "ncu_version": exe and ncu.version(exe),
            "sections": list(ncu.SECTIONS), "warmup_launches": WARMUP}
    return {"gpu" if gpu else "cpu": part}
