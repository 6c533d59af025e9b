"""compute-sanitizer (memcheck and racecheck) on every CUDA C kernel of the chapter.

:func:`sanitize` runs ``compute-sanitizer`` on a child process that launches only the
kernels under test at small shapes (awkward edges included) and checks their results;
the child makes its inputs on the host and copies them over, so every report belongs
to the kernels under test. The report parsing is the matmul chapter's.

Command line (needs a Hopper GPU and the CUDA toolkit)::

    python -m gpukit.tensor_cores.sanitize --sanitize          # table on stdout
    python -m gpukit.tensor_cores.sanitize --sanitize-child all
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from ..matmul.sanitize import _SUMMARY, _count_errors, _sanitizer_version, find_sanitizer

#: the CUDA C kernels and their function names in tensor_cores.cu
CUDA_C = {"01-wmma": "tc_wmma", "02-mma-sync": "tc_mma", "03-wgmma-tma": "tc_wgmma",
          "fp8-wgmma-tma": "tc_wgmma_fp8"}
#: small shapes: one edge tile everywhere, then a second output tile and several k-steps
SHAPES = ((67, 129, 40), (200, 300, 264))


def sanitize_child(kernels) -> int:
    import torch

    from .kernels import linear, linear_fp8, quantize
    from .numerics import U_FP8_ACC, check_product
    status = 0
    for kernel in kernels:
        for m, n, k in SHAPES:
            g = torch.Generator().manual_seed(m)
            a = torch.randn((m, k), generator=g).bfloat16()
            w = torch.randn((n, k), generator=g).bfloat16()
            c = torch.full((m, n), float("nan"), dtype=torch.bfloat16).cuda()
            try:
                if kernel.startswith("fp8"):
                    a8, sa = quantize(a)
                    w8, sw = quantize(w)
                    linear_fp8(a8.cuda(), sa.cuda(), w8.cuda(), sw.cuda(), kernel=kernel,
                               out=c)
                    torch.cuda.synchronize()
                    err = check_product(c.cpu(), a8.double() * sa.double(),
                                        w8.double() * sw.double(), what=kernel,
                                        acc_u=U_FP8_ACC)
                else:
                    linear(a.cuda(), w.cuda(), kernel=kernel, out=c)
                    torch.cuda.synchronize()
                    err = check_product(c.cpu(), a, w, what=kernel)
                print(f"ran {kernel} {m}x{n}x{k} err={err:.2e}", flush=True)
            except Exception as exc:
                print(f"FAILED {kernel} {m}x{n}x{k}: {type(exc).__name__}: {exc}",
                      flush=True)
                status = 1
    return status


def attribute_errors(text: str, kernels) -> dict:
    """How many of the sanitizer's reports name each kernel's CUDA function."""
    counts = {k: 0 for k in kernels}
    lines = text.splitlines()
    start = re.compile(r"^=+ (Invalid|Error|ERROR|Warning|WARN|.*[Hh]azard|Race|Program hit|"
                       r"Uninitialized|Misaligned)")
    for i, line in enumerate(lines):
        if start.match(line):
            for follow in lines[i:i + 6]:
                hit = next((k for k in kernels if re.search(rf"\b{CUDA_C[k]}\b", follow)),
                           None)
                if hit:
                    counts[hit] += 1
                    break
    return counts


def sanitize(kernels=None, tools=("memcheck", "racecheck"), timeout: int = 300) -> dict:
    """One compute-sanitizer process per tool and kernel; reports counted per kernel."""
    kernels = list(kernels or CUDA_C)
    exe = find_sanitizer()
    if exe is None:
        return {"sanitizer": None, "note": "compute-sanitizer not found", "runs": []}
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    runs = []
    for kernel in kernels:
        for tool in tools:
            args = ["--tool", tool, "--error-exitcode", "99"]
            child = ["-m", "gpukit.tensor_cores.sanitize", "--sanitize-child", kernel]
            t0 = time.perf_counter()
            try:
                p = subprocess.run([exe, *args, sys.executable, *child], capture_output=True,
                                   text=True, timeout=timeout, env=env, cwd=root)
                text, rc = p.stdout + p.stderr, p.returncode
            except subprocess.TimeoutExpired:
                text, rc = f"timed out after {timeout} s", None
            summary = _SUMMARY.findall(text)
            runs.append({"kernel": kernel, "tool": tool, "returncode": rc,
                         "command": " ".join(["compute-sanitizer", *args, "python", *child]),
                         "seconds": time.perf_counter() - t0,
                         "summary": summary[-1] if summary else None,
                         "errors": _count_errors(text),
                         "ours": attribute_errors(text, [kernel])[kernel],
                         "ran": re.findall(r"^ran .*$", text, re.M),
                         "failed": re.findall(r"^FAILED .*$", text, re.M),
                         "output_tail": text[-1200:]})
            print(f"  {tool:<10}{kernel:<16}{runs[-1]['summary']}", file=sys.stderr,
                  flush=True)
    return {"sanitizer": exe, "version": _sanitizer_version(exe), "runs": runs,
            "shapes": [list(s) for s in SHAPES]}


def main(argv=None) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="python -m gpukit.tensor_cores.sanitize")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--sanitize-child", metavar="KERNEL")
    g.add_argument("--sanitize", action="store_true")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    if args.sanitize_child:
        names = tuple(CUDA_C) if args.sanitize_child == "all" else (args.sanitize_child,)
        if any(k not in CUDA_C for k in names):
            print(f"error: choose one of {', '.join(CUDA_C)} or 'all'", file=sys.stderr)
            return 2
        return sanitize_child(names)
    result = sanitize()
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    for r in result["runs"]:
        print(f"{r['tool']:<10} {r['kernel']:<16} {r['summary']} ran={len(r['ran'])} "
              f"failed={len(r['failed'])}")
    bad = [r for r in result["runs"] if r["errors"] != 0 or r["failed"] or not r["ran"]]
    return 1 if bad or not result["runs"] else 0


if __name__ == "__main__":
    sys.exit(main())
