"""compute-sanitizer (memcheck and racecheck) on every CUDA C matmul kernel.

:func:`sanitize` runs ``compute-sanitizer`` on a child process that launches only the
kernels under test (:func:`sanitize_child`), at small awkward shapes that take the scalar
path and the 16-byte path, and counts the reports that name each kernel.
``gpukit bench matmul`` records its result with the benchmark.

Command line (needs a GPU and the CUDA toolkit, not the results file)::

    python -m gpukit.matmul.sanitize --sanitize                    # sanitizer table on stdout
    python -m gpukit.matmul.sanitize --sanitize-child 08-warptile  # what it runs
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from .check import check_matmul

#: small shapes for the sanitizer: one with the scalar path, two with 16-byte accesses, the
#: last with a block of kernel 12 away from every edge (its unchecked copies)
SANITIZE_SHAPES = ((67, 129, 35), (68, 132, 36), (136, 264, 64))


def find_sanitizer() -> str | None:
    exe = shutil.which("compute-sanitizer")
    if exe:
        return exe
    candidates = [Path("/usr/local/cuda/bin/compute-sanitizer"),
                  Path("/usr/local/cuda/compute-sanitizer/compute-sanitizer")]
    candidates += sorted(Path("/usr/local").glob("cuda-*/bin/compute-sanitizer"), reverse=True)
    candidates += sorted(Path(sys.prefix).glob("lib/python*/site-packages/nvidia/*/bin/compute-sanitizer"))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return None


def sanitize_child(kernels) -> int:
    """Run CUDA C kernels at small awkward shapes (scalar and 16-byte paths) and verify.

    Inputs are made and checked on the host and copied over, so the only kernels this
    process launches on the GPU are the ones under test: whatever the sanitizer reports
    belongs to them.
    """
    import cupy

    from . import kernels as mm
    status = 0
    for kernel in kernels:
        for m, n, k in SANITIZE_SHAPES:
            rng = np.random.default_rng(m)
            a = rng.standard_normal((m, k), dtype=np.float32)
            b = rng.standard_normal((k, n), dtype=np.float32)
            da, db = cupy.asarray(a), cupy.asarray(b)
            out = cupy.asarray(np.full((m, n), np.nan, np.float32))
            try:
                mm.matmul(da, db, kernel=kernel, out=out)
                cupy.cuda.Device().synchronize()
                err = check_matmul(out.get(), a, b, what=kernel)
                vec = mm.vector_ok(m, n, k, (da.data.ptr, db.data.ptr, out.data.ptr))
                print(f"ran {kernel} {m}x{n}x{k} vector_path={vec} err={err:.2e}", flush=True)
            except Exception as exc:
                print(f"FAILED {kernel} {m}x{n}x{k}: {type(exc).__name__}: {exc}", flush=True)
                status = 1
    return status


_SUMMARY = re.compile(r"(ERROR SUMMARY: \d+ errors?|RACECHECK SUMMARY: .*)")


def sanitize(kernels=None, tools=("memcheck", "racecheck"), per_kernel: bool = False,
             timeout: int = 400) -> dict:
    """compute-sanitizer on every CUDA C kernel: one process per tool running all kernels
    (``per_kernel=True``: one process per tool and kernel, slower). Each report line that
    names one of our kernels is counted against it; the tool's summary gives the total."""
    from .kernels import CUDA_C_KERNELS
    kernels = list(kernels or CUDA_C_KERNELS)
    exe = find_sanitizer()
    if exe is None:
        return {"sanitizer": None, "note": "compute-sanitizer not found (PATH, /usr/local/cuda*)",
                "runs": []}
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    groups = [[k] for k in kernels] if per_kernel else [kernels]
    runs = []
    for group in groups:
        target = "all" if group == list(CUDA_C_KERNELS) else ",".join(group)
        for tool in tools:
            args = ["--tool", tool, "--error-exitcode", "99"]
            child = ["-m", "gpukit.matmul.sanitize", "--sanitize-child", target]
            shown = " ".join(["compute-sanitizer", *args, "python", *child])
            t0 = time.perf_counter()
            try:
                p = subprocess.run([exe, *args, sys.executable, *child], capture_output=True,
                                   text=True, timeout=timeout, env=env, cwd=root)
                text, rc = p.stdout + p.stderr, p.returncode
            except subprocess.TimeoutExpired:
                text, rc = f"timed out after {timeout} s", None
            summary = _SUMMARY.findall(text)
            ran = re.findall(r"^ran .*$", text, re.M)
            runs.append({"kernels": group, "tool": tool, "command": shown, "returncode": rc,
                         "seconds": time.perf_counter() - t0,
                         "summary": summary[-1] if summary else None,
                         "errors": _count_errors(text), "ran": ran,
                         "failed": re.findall(r"^FAILED .*$", text, re.M),
                         "per_kernel": {k: {"errors": n, "verified": sum(f"ran {k} " in r for r in ran)}
                                        for k, n in attribute_errors(text, group).items()},
                         "output_tail": text[-1500:]})
            print(f"  {tool:<10}{target:<22}{runs[-1]['summary']}", file=sys.stderr, flush=True)
    return {"sanitizer": exe, "version": _sanitizer_version(exe), "runs": runs,
            "shapes": [list(s) for s in SANITIZE_SHAPES]}


_REPORT_START = re.compile(r"^=+ (Invalid|Error:|ERROR:|Warning:|WARN|.*[Hh]azard|Race|"
                           r"Program hit|Uninitialized|Misaligned)")


def attribute_errors(text: str, kernels) -> dict:
    """How many of the sanitizer's reports name each kernel (its CUDA function names)."""
    from .kernels import CUDA_C_LAUNCH
    names = {}
    for k in kernels:
        name, *_rest, scalar = CUDA_C_LAUNCH[k]
        for fn in (name, scalar):
            if fn:
                names[fn] = k
    pattern = re.compile(r"\b(" + "|".join(sorted(names, key=len, reverse=True)) + r")\b")
    counts = {k: 0 for k in kernels}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if _REPORT_START.match(line):
            for follow in lines[i:i + 6]:
                m = pattern.search(follow)
                if m:
                    counts[names[m.group(1)]] += 1
                    break
    return counts


def _count_errors(text: str) -> int | None:
    """Errors (and racecheck warnings) from the tool's summary line; None without one."""
    m = re.search(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?\)",
                  text)
    if m:
        return int(m.group(1)) + int(m.group(2))
    m = re.search(r"ERROR SUMMARY: (\d+) error", text)
    return int(m.group(1)) if m else None


def _sanitizer_version(exe: str) -> str | None:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"Version\s+(\S+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1] if out.strip() else None


def main(argv=None) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="python -m gpukit.matmul.sanitize",
                                description="compute-sanitizer runs of the CUDA C matmul kernels")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--sanitize-child", metavar="KERNEL",
                   help="run CUDA C kernels (a name, names joined by commas, or 'all') at "
                        "small shapes and verify them")
    g.add_argument("--sanitize", action="store_true",
                   help="run compute-sanitizer memcheck and racecheck on every CUDA C kernel, "
                        "one process per kernel and tool")
    args = p.parse_args(argv)
    if args.sanitize_child:
        from .kernels import CUDA_C_KERNELS
        names = (CUDA_C_KERNELS if args.sanitize_child == "all"
                 else tuple(args.sanitize_child.split(",")))
        unknown = [k for k in names if k not in CUDA_C_KERNELS]
        if unknown:
            print(f"error: {unknown[0]!r} is not a CUDA C kernel; choose from "
                  f"{', '.join(CUDA_C_KERNELS)} or 'all'", file=sys.stderr)
            return 2
        return sanitize_child(names)
    result = sanitize(per_kernel=True)
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=1))
    bad = [r for r in result["runs"] if r["errors"] != 0 or r["failed"] or not r["ran"]]
    for r in result["runs"]:
        print(f"{r['tool']:<10} {','.join(r['kernels']):<22} {r['summary']}")
    return 1 if bad or not result["runs"] else 0


if __name__ == "__main__":
    sys.exit(main())
