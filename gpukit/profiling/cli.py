"""``gpukit profile NAME``: Nsight Compute on one kernel of an earlier chapter, summarised."""

from __future__ import annotations

import json
import os
import tempfile

from ..cli import UserError


def register(sub) -> None:
    p = sub.add_parser("profile", help="profile one kernel of a chapter with Nsight Compute (ncu)",
                       description="Run Nsight Compute on one kernel of an earlier chapter (the launch "
                                   "after its compile and a warm-up), print the few numbers that "
                                   "matter and save the full report (.ncu-rep) and a JSON of them.")
    p.add_argument("name", nargs="?", help="which kernel (see --list)")
    p.add_argument("--list", action="store_true", help="list the kernels and exit")
    p.add_argument("--out", default="gpukit-profiles", metavar="DIR",
                   help="folder for NAME.ncu-rep and NAME.json (default: gpukit-profiles)")
    p.set_defaults(func=_main)


def check_folder(path: str) -> str:
    """An existing or creatable folder we can write to; fails before any profiling."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise UserError(f"--out {path!r} is a file, not a folder")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(path) and not os.path.isdir(parent):
        raise UserError(f"cannot create --out {path!r}: folder {parent!r} does not exist")
    probe_in = path if os.path.isdir(path) else parent
    try:
        fd, probe = tempfile.mkstemp(dir=probe_in)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UserError(f"cannot write to {probe_in!r}: {exc.strerror or exc}") from None
    return path


def _main(args) -> int:
    from . import ncu
    from .targets import TARGETS, WARMUP
    if args.list:
        width = max(map(len, TARGETS))
        for name, t in TARGETS.items():
            print(f"{name:<{width}}  {t.label} (chapter {t.chapter}, {t.bound}-bound)")
        return 0
    if not args.name:
        raise UserError("name a kernel to profile, or --list to see them")
    if args.name not in TARGETS:
        raise UserError(f"unknown kernel {args.name!r}; choose one of {', '.join(TARGETS)} "
                        "(gpukit profile --list)")
    check_folder(args.out)
    if ncu.find_ncu() is None:
        raise UserError(ncu.MISSING)
    from .. import device
    if not device.has_gpu():
        raise UserError("profiling needs an NVIDIA GPU and none was found (run `gpukit doctor`)")
    os.makedirs(args.out, exist_ok=True)
    t = TARGETS[args.name]
    tmp = os.path.join(args.out, f".{args.name}.partial")
    try:
        res = ncu.run([args.name, WARMUP], t.regex, WARMUP, tmp)
    except ncu.NcuError as exc:
        if os.path.exists(tmp + ".ncu-rep"):
            os.unlink(tmp + ".ncu-rep")          # nothing half-written stays behind
        raise UserError(str(exc)) from None
    report = os.path.join(args.out, f"{args.name}.ncu-rep")
    os.replace(res["report"], report)
    k = res["kernels"][0]
    key = ncu.key_metrics(k["metrics"])
    record = {"name": args.name, "label": t.label, "kernel": k["name"], "block": k["block"],
              "grid": k["grid"], "command": res["command"], **key, "sass": res.get("sass"),
              "sass_error": res.get("sass_error"), "metrics": k["metrics"]}
    from ..files import atomic_write
    path = os.path.join(args.out, f"{args.name}.json")
    atomic_write(path, lambda fh: json.dump(record, fh, indent=1))
    for line in ncu.summary_lines(f"{t.label}: {k['name'][:90]}", key):
        print(line)
    extra = ncu.sass_line(res.get("sass"))
    if extra:
        print(extra)
    elif res.get("sass_error"):
        print(f"  instructions        not read: {res['sass_error']}")
    print(f"full report: {report} (open it with ncu-ui, or `ncu --import {report} --page details`)")
    print(f"key metrics: {path}")
    return 0
