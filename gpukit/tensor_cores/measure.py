"""The benchmark of the chapter: what ``gpukit bench tensor-cores --save`` records.

``run(n, repeat)`` returns three parts:

* ``accuracy``: what rounding the inputs to each precision costs, against a float64
  reference, as a function of K (CPU, :mod:`.numerics`);
* ``gpu``: the library's roofs for each precision at n^3; every rung of the bf16
  ladder checked at awkward shapes and at n^3, timed at n^3 against cuBLAS in the same
  run, then over a size sweep (sizes up to ``GRAPH_MAX`` replayed from a CUDA graph);
  the fp8 paths against cuBLASLt fp8. A rung that fails is recorded with its error and
  left out of the tables; the others go on.

Every output is poisoned with NaN before it is checked.
"""

from __future__ import annotations

import sys
import time
import traceback

from .. import bench, device
from .meta import (ACCURACY_K, AWKWARD, FP8_KERNELS, FP8_LIBRARY, GRAPH_MAX, HEADLINE,
                   LIBRARY, RUNGS, SWEEP)
from .numerics import U_FP8_ACC, accuracy_table, check_product

DEFAULT_N = HEADLINE
#: kernels named here (comma-separated) are left out of the run and listed as skipped
SKIP_ENV = "GPUKIT_TENSOR_CORES_SKIP"


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def _inputs(m, n, k, seed=0):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn((m, k), generator=g, device="cuda").to(torch.bfloat16)
    w = torch.randn((n, k), generator=g, device="cuda").to(torch.bfloat16)
    return a, w


def _poisoned(m, n):
    import torch
    return torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")


def _timed(fn, flops, repeat, *, graph=False, name=""):
    """bench() of fn; with ``graph`` a CUDA graph of 10 calls is timed per replay."""
    import torch
    if not graph:
        return bench.bench(fn, timer="torch", name=name, warmup=3, repeat=repeat,
                           flops=flops)
    fn()
    torch.cuda.synchronize()
    calls = 10
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):                   # warm up on the capture stream
        fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    t = bench.bench(g.replay, timer="torch", name=name, warmup=3, repeat=repeat,
                    flops=flops * calls)
    t.batch = calls
    return t


def _row(t, **extra):
    """The row of ``t``, whose samples may each time ``t.batch`` calls replayed from a graph:
    its median is one call's, and the whole timing is kept under ``timing``."""
    return bench.row(t, only=("first_call_s", "tflops", *bench.FLAGS),
                     median_s=t.median_s / t.batch, timing=bench.row(t), **extra)


# ------------------------------------------------------------------------ roofs

def roofs(n: int, repeat: int) -> list[dict]:
    """The library's n^3 product in each precision (random data, TF32 only for tf32)."""
    import torch
    rows = []
    flops = 2.0 * n**3
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn((n, n), generator=g, device="cuda")
    y = torch.randn((n, n), generator=g, device="cuda")
    old = torch.backends.cuda.matmul.allow_tf32
    try:
        for prec, dtype in (("fp32", torch.float32), ("tf32", torch.float32),
                            ("bf16", torch.bfloat16), ("fp16", torch.float16)):
            torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
            a, b = x.to(dtype), y.to(dtype)
            t = _timed(lambda: torch.mm(a, b.t()), flops, repeat, name=prec)
            rows.append(_row(t, precision=prec, library="cuBLAS"))
            log(f"roof {prec}: {t.tflops:.0f} TFLOP/s")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    one = torch.ones((), device="cuda")
    for prec, fa, fb, fast in (("e4m3", torch.float8_e4m3fn, torch.float8_e4m3fn, True),
                               ("e4m3-fp32-acc", torch.float8_e4m3fn,
                                torch.float8_e4m3fn, False),
                               ("e5m2", torch.float8_e5m2, torch.float8_e4m3fn, True)):
        try:
            a, b = x.to(fa), y.to(fb)
            t = _timed(lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one,
                                                out_dtype=torch.bfloat16,
                                                use_fast_accum=fast),
                       flops, repeat, name=prec)
            rows.append(_row(t, precision=prec, library="cuBLASLt", fast_accum=fast))
            log(f"roof {prec}: {t.tflops:.0f} TFLOP/s")
        except Exception as exc:                       # a pairing this build lacks
            rows.append({"precision": prec, "library": "cuBLASLt",
                         "error": f"{type(exc).__name__}: {exc}"[:300]})
    return rows


# ------------------------------------------------------------------------ ladder

def check_kernel(kernel: str, shapes=AWKWARD, fp8: bool = False) -> list[dict]:
    """Run ``kernel`` at each shape on fresh random inputs, poisoned output; check."""
    import torch
    from .kernels import linear, linear_fp8, quantize
    out = []
    for i, (m, n, k) in enumerate(shapes):
        a, w = _inputs(m, n, k, seed=100 + i)
        c = _poisoned(m, n)
        if fp8:
            a8, sa = quantize(a)
            w8, sw = quantize(w)
            linear_fp8(a8, sa, w8, sw, kernel=kernel, out=c)
            torch.cuda.synchronize()
            err = check_product(c, a8.double() * sa.double(), w8.double() * sw.double(),
                                what=f"{kernel} {m}x{n}x{k}", acc_u=U_FP8_ACC)
        else:
            linear(a, w, kernel=kernel, out=c)
            torch.cuda.synchronize()
            err = check_product(c, a, w, what=f"{kernel} {m}x{n}x{k}")
        out.append({"m": m, "n": n, "k": k, "error": err})
    return out


def _ladder(n: int, repeat: int, kernels, fp8: bool, failures: dict) -> list[dict]:
    import torch
    from .kernels import linear, linear_fp8, quantize
    from .numerics import accumulation_bound
    rows = []
    a, w = _inputs(n, n, n, seed=7)
    if fp8:
        a8, sa = quantize(a)
        w8, sw = quantize(w)
    for kernel in kernels:
        try:
            try:
                checks = check_kernel(kernel, fp8=fp8)
            except Exception as exc:          # recorded; the rung is timed all the same
                failures[kernel] = f"{type(exc).__name__}: {exc}"[:800]
                log(f"{kernel} CHECK FAILED: {failures[kernel]}")
                checks = None
            c = _poisoned(n, n)
            if fp8:      # a new output each call: cuBLASLt's returns its own
                call = lambda: linear_fp8(a8, sa, w8, sw, kernel=kernel)  # noqa: E731
            else:
                call = lambda: linear(a, w, kernel=kernel, out=c)  # noqa: E731
            t = _timed(call, 2.0 * n**3, repeat, name=kernel)
            c.fill_(float("nan"))
            if fp8:
                linear_fp8(a8, sa, w8, sw, kernel=kernel, out=c)
            else:
                call()
            torch.cuda.synchronize()
            if fp8:
                err = check_product(c, a8.double() * sa.double(),
                                    w8.double() * sw.double(), what=kernel,
                                    acc_u=U_FP8_ACC)
            else:
                err = check_product(c, a, w, what=kernel)
            rows.append(_row(t, kernel=kernel, n=n, error=err, checks=checks,
                             ok=checks is not None,
                             bound=accumulation_bound(n, U_FP8_ACC if fp8 else 2.0**-24)))
            log(f"{kernel}: {t.tflops:.0f} TFLOP/s, error {err:.2e}")
        except Exception as exc:
            failures[kernel] = f"{type(exc).__name__}: {exc}"[:800]
            log(f"{kernel} FAILED: {failures[kernel]}")
            log(traceback.format_exc()[-1500:])
    return rows


def _sweep(kernels, sizes, repeat: int, failures: dict) -> list[dict]:
    from .kernels import linear
    rows = []
    for size in sizes:
        a, w = _inputs(size, size, size, seed=size)
        for kernel in kernels:
            if kernel in failures:
                continue
            c = _poisoned(size, size)
            try:
                t = _timed(lambda: linear(a, w, kernel=kernel, out=c), 2.0 * size**3,
                           repeat, graph=size <= GRAPH_MAX, name=kernel)
                check_product(c, a, w, what=f"{kernel} {size}")
                rows.append(_row(t, kernel=kernel, n=size, graph=size <= GRAPH_MAX))
            except Exception as exc:
                rows.append({"kernel": kernel, "n": size,
                             "error": f"{type(exc).__name__}: {exc}"[:300]})
    return rows


#: kernels written here, tried first in a child process: one that faults (a CUDA error
#: ends the process's context) or hangs (a wait that never completes) is left out of the
#: run with its reason, instead of taking the other measurements down with it
PREFLIGHT = ("01-wmma", "02-mma-sync", "03-wgmma-tma", "05-gluon", "fp8-wgmma-tma")
PREFLIGHT_SHAPES = ((17, 33, 65), (300, 200, 1000))


def preflight_child(kernels: list[str]) -> dict:
    """In a fresh process: each kernel at two small shapes, checked; kernel -> "ok" or
    the error."""
    out = {}
    for kernel in kernels:
        try:
            check_kernel(kernel, PREFLIGHT_SHAPES, fp8=kernel.startswith("fp8"))
            out[kernel] = "ok"
        except Exception as exc:  # noqa: BLE001 - the verdict is the record
            out[kernel] = f"{type(exc).__name__}: {exc}"[:400]
    return out


def preflight(kernels, timeout: float = 150) -> dict[str, str]:
    """kernel -> why it is left out, for the kernels that fail or hang in a child
    process. All run in one child first; a kernel that failed there (or all, when the
    child died or timed out) is tried again alone, so that a fault of one does not
    condemn the kernels after it."""
    from .. import proc
    kernels = list(kernels)
    res = proc.run_fresh("gpukit.tensor_cores.measure:preflight_child", kernels,
                         timeout=timeout)
    verdicts = {k: res.get(k) for k in kernels}
    bad = {}
    for kernel in kernels:
        if verdicts[kernel] == "ok":
            continue
        alone = proc.run_fresh("gpukit.tensor_cores.measure:preflight_child", [kernel],
                               timeout=timeout)
        verdict = alone.get(kernel) or f"the process ended: {alone.get('error')}"
        if verdict != "ok":
            bad[kernel] = f"preflight: {verdict}"[:500]
            log(f"{kernel} left out: {bad[kernel]}")
    return bad


def gpu_part(n: int = DEFAULT_N, repeat: int = 20, sizes=SWEEP, skip=()) -> dict:
    """The GPU measurements; kernels named in ``skip`` are left out (and listed), and so
    are the kernels that fail :func:`preflight`."""
    import torch
    from .kernels import KERNELS
    started = time.perf_counter()
    failures: dict[str, str] = {k: "skipped" for k in skip}
    failures.update(preflight([k for k in PREFLIGHT if k not in skip]))
    skip = tuple(failures)
    bf16 = [k for k in KERNELS if k not in skip]
    fp8 = [k for k in tuple(FP8_KERNELS) + (FP8_LIBRARY,) if k not in skip]
    part = {"n": n, "roofs": roofs(n, repeat)}
    part["ladder"] = _ladder(n, repeat, bf16, False, failures)
    part["fp8"] = _ladder(n, repeat, fp8, True, failures)
    part["sweep"] = _sweep(bf16, [s for s in sizes if s != n] + [n], max(repeat // 2, 5),
                           failures)
    part["failures"] = failures
    try:
        from .triton_dot import best_config
        part["triton_config"] = best_config()
        part["triton_fp8_config"] = best_config(fp8=True)
    except Exception:
        pass
    part["library"] = LIBRARY
    part["rungs"] = list(RUNGS)
    part["gpu_name"] = torch.cuda.get_device_name()
    part["seconds"] = time.perf_counter() - started
    return part


def run(n: int | None = None, repeat: int = 20, skip=(), sanitizer: bool = True) -> dict:
    """Everything ``gpukit bench tensor-cores`` records. ``accuracy`` runs anywhere; the
    ``gpu`` part (and ``sanitizer``, compute-sanitizer on the CUDA C kernels) needs a
    Hopper GPU (compute capability 9.0) and is left out elsewhere. Kernels in ``skip``
    (or in $GPUKIT_TENSOR_CORES_SKIP) are left out."""
    n = n or DEFAULT_N
    import os
    skip = tuple(skip) or tuple(k for k in os.environ.get(SKIP_ENV, "").split(",") if k)
    parts = {"accuracy": {"n": max(ACCURACY_K), "ks": list(ACCURACY_K), "rows": [],
                          "table": accuracy_table(ACCURACY_K)}}
    if device.has_gpu():
        import torch
        if torch.cuda.is_available() and torch.cuda.get_device_capability() >= (9, 0):
            gpu = gpu_part(n, min(repeat, 20), skip=skip)
            gpu["rows"] = [{"name": r["kernel"], **r} for r in gpu["ladder"] + gpu["fp8"]]
            parts["gpu"] = gpu
            if sanitizer:
                from .sanitize import sanitize
                kernels = [k for k in ("01-wmma", "02-mma-sync", "03-wgmma-tma",
                                       "fp8-wgmma-tma") if k not in gpu["failures"]]
                result = sanitize(kernels, timeout=60)
                parts["sanitizer"] = {"n": 0, "rows": [], **result}
        else:
            log("tensor-cores: the ladder needs a Hopper GPU (sm_90); recording accuracy only")
    return parts


def summary(parts: dict) -> str:
    """A short text table of what ``run`` measured."""
    lines = []
    gpu = parts.get("gpu")
    if gpu:
        lib = next((r for r in gpu["ladder"] if r["kernel"] == LIBRARY), None)
        lt = next((r for r in gpu["fp8"] if r["kernel"] == FP8_LIBRARY), None)
        lines.append(f"{'roof':<22}{'TFLOP/s':>10}")
        for r in gpu["roofs"]:
            lines.append(f"{r['precision']:<22}{r.get('tflops') or 0:>10.0f}")
        lines.append(f"{'kernel (n=' + str(gpu['n']) + ')':<22}{'TFLOP/s':>10}{'of lib':>8}"
                     f"{'error':>10}")
        for rows, ref in ((gpu["ladder"], lib), (gpu["fp8"], lt)):
            for r in rows:
                frac = r["tflops"] / ref["tflops"] if ref else float("nan")
                lines.append(f"{r['kernel']:<22}{r['tflops']:>10.0f}{frac:>8.1%}"
                             f"{r['error']:>10.1e}")
        for k, v in gpu["failures"].items():
            lines.append(f"FAILED {k}: {v[:200]}")
        lines.append(f"gpu part: {gpu['seconds']:.0f} s")
    return "\n".join(lines)


if __name__ == "__main__":
    import json
    import os
    n = int(os.environ.get("TC_N", DEFAULT_N))
    result = run(n, sanitizer=False)
    path = os.environ.get("TC_JSON")
    if path:
        from ..results import _json_default
        with open(path, "w") as fh:
            json.dump(result, fh, indent=1, default=_json_default)
    print(summary(result))
