"""The matrix-multiplication benchmark, its checks, the sanitizer runs, and the chapter's tables.

``run(n, repeat)`` (``gpukit bench matmul --save``) verifies and times every kernel of
:mod:`gpukit.kernels.matmul` against cuBLAS fp32 (TF32 off) in the same run, sweeps sizes
for the fastest kernels, closes with what TF32 and bf16 tensor cores give through the
library, and runs ``compute-sanitizer`` (memcheck and racecheck) on every CUDA C kernel.

Command line (none of these needs the results file)::

    python -m gpukit.matmul.measure --sanitize          # sanitizer table on stdout
    python -m gpukit.matmul.measure --sanitize-child 08-warptile   # what it runs
    python -m gpukit.matmul.measure --ptxas gpukit/data/matmul_ptxas.json

How results are checked: every output is poisoned with NaN before the run; the error of
each element is measured against a float64 reference and divided by ``(|A| @ |B|)``, the
scale of the rounding error of any summation order; it must stay below
``error_bound(K)``. At the benchmark size the float64 reference is computed on the GPU
(``cupy.matmul`` in float64); in the size sweep kernels are compared with cuBLAS fp32
under twice the bound.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from .. import bench, device
from ..verify import Mismatch

DEFAULT_N = 4096
AWKWARD = (257, 129, 67)                 # M, N, K: no tile divides any of them
SWEEP = (512, 1024, 2048, 4096, 8192)
#: small shapes for the sanitizer: one with the scalar path, one with 16-byte accesses
SANITIZE_SHAPES = ((67, 129, 35), (68, 132, 36))
#: results-file name of the compiler's register report (recorded where nvcc runs)
PTXAS_NAME = "matmul_ptxas"


# ------------------------------------------------------------------------ checking

def error_bound(k: int) -> float:
    """Largest accepted error of an fp32 matmul element, relative to (|A| @ |B|).

    Rounding errors of a K-term fp32 sum grow like sqrt(K) unit roundoffs for random
    data; 16 sqrt(K) u leaves a wide margin yet still catches one missing term of the
    sum (an error near 1/K of the scale) at every K up to 2**16.
    """
    return 16 * 2.0**-24 * math.sqrt(max(k, 1))


def matmul_error(got, ref, scale, xp=np) -> float:
    """max |got - ref| / scale over all elements; raises Mismatch on NaN or inf."""
    got = got.astype(xp.float64)
    bad = int(xp.count_nonzero(~xp.isfinite(got)))
    if bad:
        raise Mismatch(f"{bad} of {got.size} elements are NaN or inf (never written, or "
                       "computed wrongly)")
    if got.size == 0:
        return 0.0
    tiny = np.finfo(np.float64).tiny
    return float(xp.max(xp.abs(got - ref) / xp.maximum(scale, tiny)))


def check_matmul(got, a, b, *, what: str = "matmul", factor: float = 1.0) -> float:
    """Check ``got`` against ``a @ b`` in float64 on the host; return the error."""
    from ..verify import to_host
    a64, b64 = to_host(a).astype(np.float64), to_host(b).astype(np.float64)
    ref, scale = a64 @ b64, np.abs(a64) @ np.abs(b64)
    host = to_host(got)
    if host.shape != ref.shape:
        raise Mismatch(f"{what}: shape {host.shape} != {ref.shape}")
    try:
        err = matmul_error(host, ref, scale)
    except Mismatch as exc:
        raise Mismatch(f"{what}: {exc}") from None
    bound = factor * error_bound(a64.shape[1])
    if err > bound:
        raise Mismatch(f"{what}: error {err:.3g} (relative to |A| @ |B|) exceeds {bound:.3g}")
    return err


# ------------------------------------------------------------------ the GPU benchmark

def _cupy_inputs(m, n, k, seed):
    import cupy
    rng = cupy.random.default_rng(seed)
    return (rng.standard_normal((m, k), dtype=cupy.float32),
            rng.standard_normal((k, n), dtype=cupy.float32))


def _reference(a, b):
    """float64 product and error scale, computed on the GPU."""
    import cupy
    a64, b64 = a.astype(cupy.float64), b.astype(cupy.float64)
    return a64 @ b64, cupy.abs(a64) @ cupy.abs(b64)


def _check_device(got, ref, scale, k, what, factor=1.0):
    import cupy
    err = matmul_error(got, ref, scale, xp=cupy)
    bound = factor * error_bound(k)
    if err > bound:
        raise Mismatch(f"{what}: error {err:.3g} (relative to |A| @ |B|) exceeds {bound:.3g}")
    return err


def _timer_for(kernel: str) -> str:
    from . import kernels as mm
    return "numba" if kernel in mm.NUMBA_KERNELS else "cupy"


def _sync(kernel: str):
    if _timer_for(kernel) == "numba":
        from numba import cuda
        cuda.synchronize()
    else:
        import cupy
        cupy.cuda.Device().synchronize()


def _registers(kernel: str, m: int, n: int, k: int, vec: bool) -> dict:
    """Registers, shared and local memory per thread of the kernel as compiled here."""
    from . import kernels as mm
    try:
        if kernel in mm.NUMBA_KERNELS:
            fn = mm.numba_launch(kernel, m, n)[0]
            regs = fn.get_regs_per_thread()
            smem = fn.get_shared_mem_per_block()
            local = fn.get_local_mem_per_thread()
            pick = (lambda v: max(v.values()) if isinstance(v, dict) else v)
            threads = math.prod(mm.numba_launch(kernel, m, n)[2])
            return {"registers": pick(regs), "shared_bytes": pick(smem),
                    "local_bytes": pick(local), "threads": threads}
        if kernel == "cublas":
            return {}
        import cupy
        name, grid, block, extra = mm.cuda_c_launch(kernel, m, n, k, vec)
        fn = mm.cupy_module(cupy.cuda.Device().id).get_function(name)
        attrs = getattr(fn, "attributes", {}) or {}
        return {"function": name, "threads": block[0] * block[1],
                "registers": attrs.get("num_regs", getattr(fn, "num_regs", None)),
                "shared_bytes": attrs.get("shared_size_bytes"),
                "local_bytes": attrs.get("local_size_bytes", getattr(fn, "local_size_bytes", None))}
    except Exception as exc:  # a missing attribute must not sink the benchmark
        return {"registers_error": f"{type(exc).__name__}: {exc}"}


def occupancy(registers: int | None, threads: int | None, shared_bytes: int | None,
              gpu: dict | None) -> dict | None:
    """Theoretical blocks and warps per SM allowed by registers, shared memory and threads.

    Registers are allocated per warp in units of 256; each block also reserves 1 KiB of
    shared memory (CUDA occupancy calculator rules for compute capability 9.0).
    """
    if not (registers and threads and gpu):
        return None
    warps = math.ceil(threads / 32)
    regs_per_warp = math.ceil(registers * 32 / 256) * 256
    by_regs = (gpu["registers_per_multiprocessor"] // regs_per_warp) // warps
    by_threads = gpu["max_threads_per_multiprocessor"] // threads
    smem_sm = gpu.get("shared_memory_per_multiprocessor_bytes") or 0
    by_smem = smem_sm // ((shared_bytes or 0) + 1024) if smem_sm else by_threads
    limit = gpu.get("max_blocks_per_multiprocessor") or 32
    blocks = max(0, min(by_regs, by_threads, by_smem, limit))
    max_warps = gpu["max_threads_per_multiprocessor"] // 32
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps,
            "occupancy": blocks * warps / max_warps,
            "limited_by": min((by_regs, "registers"), (by_smem, "shared memory"),
                              (by_threads, "threads"), (limit, "blocks"))[1]}


def _bench_kernel(kernel, a, b, out, flops, repeat, ref, scale, awk):
    """Verify at an awkward shape and at full size, then time; returns a row."""
    import cupy

    from . import kernels as mm
    row = {"name": kernel}
    # 1. awkward shape, first call: compilation (numba) or module load (CUDA C) + a launch
    (aa, ab), (ref_a, scale_a) = awk
    small = cupy.full((aa.shape[0], ab.shape[1]), cupy.nan, dtype=cupy.float32)
    t0 = time.perf_counter()
    mm.matmul(aa, ab, kernel=kernel, out=small)
    _sync(kernel)
    row["first_call_s"] = time.perf_counter() - t0
    row["awkward_shape"] = [aa.shape[0], ab.shape[1], aa.shape[1]]
    row["awkward_err"] = _check_device(small, ref_a, scale_a, aa.shape[1], f"{kernel} awkward")
    # 2. full size, poisoned output
    out.fill(cupy.nan)
    t0 = time.perf_counter()
    mm.matmul(a, b, kernel=kernel, out=out)
    _sync(kernel)
    estimate = time.perf_counter() - t0
    row["max_err"] = _check_device(out, ref, scale, a.shape[1], kernel)
    # 3. steady state: `repeat` calls, fewer (but at least 10) for slow kernels
    reps = repeat if estimate < 0.2 else max(10 if estimate < 1 else 3, min(repeat, int(4 / estimate)))
    ta, tb, tout = a, b, out
    if kernel in mm.NUMBA_KERNELS:
        # wrap the CuPy arrays for numba once, not on every timed call (the wrapping
        # synchronises with CuPy's stream, which would put host time between the events)
        from numba import cuda
        ta, tb, tout = cuda.as_cuda_array(a), cuda.as_cuda_array(b), cuda.as_cuda_array(out)
    timing = bench.bench(lambda: mm.matmul(ta, tb, kernel=kernel, out=tout),
                         timer=_timer_for(kernel), name=kernel, warmup=1 if estimate > 0.05 else 3,
                         repeat=reps, flops=flops)
    d = timing.to_dict()
    d.pop("first_call_s")        # the bench's first call came after compilation: use ours
    d.pop("samples_s")
    row.update(d)
    m, k = a.shape
    n = b.shape[1]
    vec = mm.vector_ok(m, n, k, (a.data.ptr, b.data.ptr, out.data.ptr))
    if kernel in mm.CUDA_C_KERNELS:
        row["vector_path"] = bool(vec) and (mm.CUDA_C_LAUNCH[kernel][4] or
                                            mm.CUDA_C_LAUNCH[kernel][5] is not None)
    row.update(_registers(kernel, m, n, k, vec))
    return row


class _Precision:
    """torch's fp32 matmul precision, set for a block and restored after it."""

    def __init__(self, tf32: bool):
        self.tf32 = tf32

    def __enter__(self):
        import torch
        mm = torch.backends.cuda.matmul
        if hasattr(mm, "fp32_precision"):       # torch >= 2.9: the new API only
            self.old = ("new", mm.fp32_precision)
            mm.fp32_precision = "tf32" if self.tf32 else "ieee"
        else:
            self.old = ("old", mm.allow_tf32)
            mm.allow_tf32 = self.tf32

    def __exit__(self, *exc):
        import torch
        kind, value = self.old
        if kind == "new":
            torch.backends.cuda.matmul.fp32_precision = value
        else:
            torch.backends.cuda.matmul.allow_tf32 = value


def tensor_cores(a, b, ref, scale, repeat) -> list[dict]:
    """cuBLAS through torch: fp32 (TF32 off), TF32 and bf16, at the benchmark size."""
    import torch
    ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
    n = a.shape[0]
    flops = 2.0 * a.shape[0] * a.shape[1] * b.shape[1]
    cases = [("fp32, TF32 off (torch)", torch.float32, False),
             ("TF32 tensor cores (torch)", torch.float32, True),
             ("bf16 tensor cores (torch, fp32 accumulate)", torch.bfloat16, False)]
    rows = []
    for label, dtype, tf32 in cases:
        try:
            x, y = ta.to(dtype), tb.to(dtype)
            with _Precision(tf32):
                got = x @ y
                torch.cuda.synchronize()
                import cupy
                err = matmul_error(cupy.asarray(got.float()), ref, scale, xp=cupy)
                t = bench.bench(lambda: x @ y, timer="torch", name=label, repeat=repeat,
                                flops=flops)
            d = t.to_dict()
            d.pop("samples_s")
            rows.append({"name": label, "dtype": str(dtype).replace("torch.", ""),
                         "tf32": tf32, "n": n, "max_err": err, **d})
        except Exception as exc:
            rows.append({"name": label, "error": f"{type(exc).__name__}: {exc}"})
    return rows


def size_sweep(kernels: list[str], sizes=SWEEP, repeat: int = 10) -> list[dict]:
    """TFLOP/s of cuBLAS and the given kernels at each n x n x n size."""
    import cupy

    from . import kernels as mm
    rows = []
    for s in sizes:
        try:
            a, b = _cupy_inputs(s, s, s, seed=s)
            ref = mm.matmul(a, b, kernel="cublas")
            scale = cupy.abs(a) @ cupy.abs(b)
            out = cupy.empty_like(ref)
        except Exception as exc:
            rows.append({"n": s, "error": f"{type(exc).__name__}: {exc}"})
            continue
        for kernel in ["cublas", *kernels]:
            entry = {"n": s, "name": kernel}
            try:
                out.fill(cupy.nan)
                mm.matmul(a, b, kernel=kernel, out=out)
                entry["max_err_vs_cublas"] = _check_device(out, ref, scale, s, kernel, factor=2)
                t = bench.bench(lambda: mm.matmul(a, b, kernel=kernel, out=out),
                                timer=_timer_for(kernel), name=kernel,
                                repeat=repeat if s <= 4096 else max(3, repeat // 2),
                                flops=2.0 * s**3)
                entry.update(median_s=t.median_s, tflops=t.tflops)
            except Exception as exc:
                entry["error"] = f"{type(exc).__name__}: {exc}"
            rows.append(entry)
        a = b = ref = scale = out = None  # free the memory before the next size
        cupy.get_default_memory_pool().free_all_blocks()
    for r in rows:
        base = next((x for x in rows if x["n"] == r["n"] and x.get("name") == "cublas"), None)
        if base and base.get("tflops") and r.get("tflops"):
            r["pct_of_cublas"] = 100 * r["tflops"] / base["tflops"]
    return rows


def gpu_part(n: int = DEFAULT_N, repeat: int = 30, sweep=SWEEP) -> dict:
    import cupy

    from . import kernels as mm
    flops = 2.0 * n**3
    a, b = _cupy_inputs(n, n, n, seed=0)
    ref, scale = _reference(a, b)
    out = cupy.empty((n, n), dtype=cupy.float32)
    m_, n_, k_ = AWKWARD
    aa, ab = _cupy_inputs(m_, n_, k_, seed=1)
    awk = ((aa, ab), _reference(aa, ab))

    t0 = time.perf_counter()
    mm.cupy_module(cupy.cuda.Device().id)
    compile_s = time.perf_counter() - t0
    try:
        copy_gbs = bench.copy_ceiling("cupy").gbs       # the memory roof, same run
    except Exception:
        copy_gbs = None

    rows, failed = [], []         # a kernel that fails its check is recorded, not timed
    for kernel in ("cublas",) + mm.NUMBA_KERNELS + mm.CUDA_C_KERNELS:
        try:
            rows.append(_bench_kernel(kernel, a, b, out, flops, repeat, ref, scale, awk))
            print(f"  {kernel:<22}{rows[-1]['tflops']:8.2f} TFLOP/s", file=sys.stderr, flush=True)
        except Exception as exc:
            failed.append({"name": kernel, "error": f"{type(exc).__name__}: {exc}"})
            print(f"  {kernel:<22}FAILED {failed[-1]['error']}", file=sys.stderr, flush=True)
    cublas = next((r for r in rows if r["name"] == "cublas" and r.get("tflops")), None)
    gpu = device.gpu_properties()
    for r in rows:
        if cublas and r.get("tflops"):
            r["pct_of_cublas"] = 100 * r["tflops"] / cublas["tflops"]
        occ = occupancy(r.get("registers"), r.get("threads"), r.get("shared_bytes"), gpu)
        if occ:
            r["occupancy"] = occ
        if r.get("tflops"):
            # bytes each kernel must at least move: A, B read once, C written once
            r["arithmetic_intensity_min"] = flops / (3 * n * n * 4)
    hand = sorted((r for r in rows if r.get("tflops") and r["name"] != "cublas"),
                  key=lambda r: -r["tflops"])
    best = hand[0]["name"] if hand else None
    sweep_kernels = [r["name"] for r in hand[:2]]
    try:
        sweep_rows = size_sweep(sweep_kernels, sweep, repeat=max(5, repeat // 3)) if sweep else []
    except Exception as exc:
        sweep_rows = [{"n": 0, "error": f"{type(exc).__name__}: {exc}"}]
    try:
        tc = tensor_cores(a, b, ref, scale, repeat=max(5, repeat // 3))
    except Exception as exc:
        tc = [{"name": "torch", "error": f"{type(exc).__name__}: {exc}"}]
    return {"n": n, "dtype": "float32", "flops": flops, "rows": rows, "failed": failed,
            "best_kernel": best, "best_pct_of_cublas": hand[0].get("pct_of_cublas") if hand else None,
            "module_compile_s": compile_s, "cublas_tf32": _tf32_state(),
            "copy_ceiling_gbs": copy_gbs,
            "check": f"max |C - C64| / (|A| @ |B|) <= 16 sqrt(K) 2^-24; C64 = cupy float64 "
                     f"matmul on the GPU; output poisoned with NaN; awkward shape {AWKWARD} too",
            "sweep": sweep_rows, "tensor_cores": tc}


def _tf32_state() -> str:
    return "off (CUPY_TF32 unset)" if os.environ.get("CUPY_TF32", "0") in ("", "0") else "ON"


def cpu_part(n: int, repeat: int = 3) -> dict:
    """NumPy's matmul (its BLAS, on every core): the CPU baseline."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.full((n, n), np.nan, np.float32)
    np.matmul(a, b, out=out)
    err = check_matmul(out, a, b, what="numpy")
    t = bench.bench(lambda: np.matmul(a, b, out=out), timer="cpu", name="NumPy matmul",
                    warmup=1, repeat=repeat, flops=2.0 * n**3)
    d = t.to_dict()
    d.pop("samples_s")
    blas = _blas_name()
    return {"n": n, "rows": [{"name": f"NumPy matmul ({blas}, all cores)", "max_err": err, **d}],
            "blas": blas}


def _blas_name() -> str:
    try:
        cfg = np.show_config(mode="dicts")
        return cfg["Build Dependencies"]["blas"]["name"]
    except Exception:
        return "BLAS"


def run(n: int | None = None, repeat: int = 30) -> dict:
    """The ``gpukit bench matmul`` entry point: GPU part, CPU baseline, sanitizer."""
    data: dict = {}
    if device.has_gpu() and not device.simulator_enabled():
        n = n or DEFAULT_N
        data["gpu"] = gpu_part(n, repeat)
        data["gpu"]["sanitizer"] = sanitize()
        data["cpu"] = cpu_part(n, repeat=3)
    else:
        data["cpu"] = cpu_part(min(n or 1024, 2048), repeat=3)
    return data


# -------------------------------------------------------------------- sanitizer

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
            child = ["-m", "gpukit.matmul.measure", "--sanitize-child", target]
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


# ------------------------------------------------------------- compiler (ptxas) report

_PTXAS_FUNC = re.compile(r"Compiling entry function '(\w+)' for '(\w+)'")
_PTXAS_USED = re.compile(r"Used (\d+) registers.*?(?:(\d+) bytes smem)?$")
_PTXAS_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_ptxas(text: str) -> dict:
    """{function: {registers, shared_bytes, stack_bytes, spill_stores, spill_loads}}."""
    out: dict = {}
    current = None
    for line in text.splitlines():
        if m := _PTXAS_FUNC.search(line):
            current = out.setdefault(m.group(1), {"arch": m.group(2)})
        elif current is not None and (m := _PTXAS_SPILL.search(line)):
            current.update(stack_bytes=int(m.group(1)), spill_stores=int(m.group(2)),
                           spill_loads=int(m.group(3)))
        elif current is not None and (m := _PTXAS_USED.search(line)):
            current.update(registers=int(m.group(1)), shared_bytes=int(m.group(2) or 0))
    return out


def ptxas_report(arch: str = "sm_90") -> dict:
    """``ptxas -v`` for the CUDA C kernels (nvcc) and the numba kernels (their PTX)."""
    import tempfile
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise RuntimeError("nvcc not found: the compiler report needs the CUDA toolkit")
    src = Path(__file__).with_name("matmul.cu")
    cmd = [nvcc, f"-arch={arch}", "-std=c++17", "-Xptxas", "-v", "-c", str(src), "-o", os.devnull]
    text = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    report_ = {"arch": arch, "nvcc": version.strip().splitlines()[-1],
               "command": f"nvcc -arch={arch} -std=c++17 -Xptxas -v -c gpukit/matmul/matmul.cu",
               "cuda_c": parse_ptxas(text)}
    # numba kernels: numba writes PTX for float32 2-D C-contiguous arrays, ptxas reports
    try:
        from numba import cuda, float32

        from . import kernels as mm
        ptxas = shutil.which("ptxas") or str(Path(nvcc).with_name("ptxas"))
        sig = (float32[:, ::1], float32[:, ::1], float32[:, ::1])
        numba_rep = {}
        for name, fn in (("01-naive-numba", mm.naive_kernel), ("02-coalesced-numba", mm.coalesced_kernel),
                         ("03-smem-numba", mm.smem_kernel),
                         ("03b-smem-8x8-numba", mm.smem_kernel_8x8)):
            bounds = fn.targetoptions.get("launch_bounds")
            ptx, _ = cuda.compile_ptx(fn.py_func, sig, cc=(int(arch[3]), int(arch[4:])),
                                      launch_bounds=bounds)
            with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as fh:
                fh.write(ptx)
            try:
                out = subprocess.run([ptxas, f"-arch={arch}", "-v", fh.name, "-o", os.devnull],
                                     capture_output=True, text=True, check=True).stderr
            finally:
                os.unlink(fh.name)
            parsed = parse_ptxas(out)
            numba_rep[name] = next(iter(parsed.values())) if parsed else {}
        report_["numba"] = numba_rep
    except Exception as exc:
        report_["numba_error"] = f"{type(exc).__name__}: {exc}"
    return report_


def write_ptxas_report(root: Path | None = None) -> Path:
    """Record the register report under ``results/<machine>/matmul_ptxas.json``."""
    from gpukit import results
    return results.save(PTXAS_NAME, ptxas_report(), root=root)


def main(argv=None) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="python -m gpukit.matmul.measure",
                                description="matmul sanitizer runs and compiler report")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--sanitize-child", metavar="KERNEL",
                   help="run CUDA C kernels (a name, names joined by commas, or 'all') at "
                        "small shapes and verify them")
    g.add_argument("--sanitize", action="store_true",
                   help="run compute-sanitizer memcheck and racecheck on every CUDA C kernel, "
                        "one process per kernel and tool")
    g.add_argument("--ptxas", action="store_true",
                   help="record the ptxas register report under results/<machine>/ (needs nvcc)")
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
    if args.sanitize:
        result = sanitize(per_kernel=True)
        print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=1))
        bad = [r for r in result["runs"] if r["errors"] != 0 or r["failed"] or not r["ran"]]
        for r in result["runs"]:
            print(f"{r['tool']:<10} {','.join(r['kernels']):<22} {r['summary']}")
        return 1 if bad or not result["runs"] else 0
    path = write_ptxas_report()
    print(f"wrote {path}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
