"""Nsight Compute counters of the best kernels, before and after their newest rungs.

:func:`profile` runs ``ncu`` once on a child process that launches each kernel of
:data:`PROFILED` at n x n x n (one launch each, after a warm-up launch that ncu skips) and
keeps, per kernel, the counters that say where its issue slots go: instructions executed,
how many of them are FFMA, the share of cycles a scheduler issued anything, the warps
resident, the stall reasons and the shared-memory bank conflicts. ``--save`` stores them as
the ``profile`` part of ``results/<machine>/matmul.json``.

Command line (needs a GPU and ncu)::

    python -m gpukit.matmul.profile [--save] [--n 4096]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

#: (kernel before, kernel after) pairs, in the order the page shows them
PAIRS = (("03b-smem-8x8-numba", "03c-regtile-numba"), ("10-warptile-128x256", "12-pipelined"))
PROFILED = tuple(k for pair in PAIRS for k in pair)
#: part of matmul.json that holds the profile
PART = "profile"

METRICS = (
    "gpu__time_duration.sum",
    "smsp__inst_executed.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "sm__cycles_elapsed.avg.per_second",
    "launch__registers_per_thread",
    *(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio"
      for r in ("barrier", "long_scoreboard", "short_scoreboard", "mio_throttle",
                "not_selected", "math_pipe_throttle", "wait", "dispatch_stall",
                "no_instruction", "lg_throttle")),
)


def launch(kernels: list[str], n: int) -> dict:
    """What runs under ncu: two launches of each kernel (ncu profiles the second)."""
    import cupy
    from numba import cuda

    from . import kernels as mm
    from .measure import _cupy_inputs
    a, b = _cupy_inputs(n, n, n, seed=0)
    out = cupy.empty((n, n), dtype=cupy.float32)
    for kernel in kernels:
        args = (a, b, out)
        if kernel in mm.NUMBA_KERNELS:
            args = tuple(cuda.as_cuda_array(x) for x in args)
        for _ in range(2):
            mm.matmul(*args[:2], kernel=kernel, out=args[2])
        cupy.cuda.Device().synchronize()
        cuda.synchronize()
    return {"kernels": kernels, "n": n}


def _regex(kernels) -> str:
    """ncu's name filter for the kernels: their functions' names (numba's carry the
    Python name, mangled)."""
    from . import kernels as mm
    names = []
    for k in kernels:
        if k in mm.NUMBA_KERNELS:
            names.append(mm.numba_launch(k, 1, 1)[0].py_func.__name__)
        else:
            names.append(mm.cuda_c_launch(k, 4096, 4096, 4096, True)[0] + "$")
    return "|".join(names)


def summarise(m: dict) -> dict:
    """The numbers the page shows, from one kernel's metrics (None where ncu gave none)."""
    def get(name):
        return m.get(name)
    inst, ffma = get("smsp__inst_executed.sum"), get(
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum")
    stalls = {}
    prefix, suffix = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
    for name, value in m.items():
        if name.startswith(prefix) and name.endswith(suffix) and value is not None:
            stalls[name[len(prefix):-len(suffix)]] = value
    conflicts = [get(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum")
                 for op in ("ld", "st")]
    return {
        "duration_s": get("gpu__time_duration.sum"),
        "instructions": inst,
        # FFMA counts threads; a warp instruction is 32 of them (every lane on here)
        "ffma_share": ffma / 32 / inst if inst and ffma is not None else None,
        "issue_active_pct": get("smsp__issue_active.avg.pct_of_peak_sustained_active"),
        "warps_active_pct": get("sm__warps_active.avg.pct_of_peak_sustained_active"),
        "fma_pipe_pct": get("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"),
        "sm_pct": get("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        "dram_pct": get("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
        "sm_clock_hz": get("sm__cycles_elapsed.avg.per_second"),
        "registers": get("launch__registers_per_thread"),
        "bank_conflicts": (None if all(c is None for c in conflicts)
                           else sum(c for c in conflicts if c is not None)),
        "stalls": dict(sorted(stalls.items(), key=lambda kv: -kv[1])),
    }


#: ncu's name filter for cuBLAS's SGEMM kernel (its name changes with the library)
CUBLAS_REGEX = "gemm"


def _ncu(exe: str, kernels: list[str], regex: str, n: int, timeout: float):
    """One ncu run over the launches of ``kernels``: (command, profiled launches)."""
    from gpukit.profiling import ncu
    target = ["gpukit.matmul.profile:launch", json.dumps([kernels, n])]
    cmd = [exe, "--clock-control", "none", "--kernel-name", f"regex:{regex}",
           "--kernel-name-base", "function", "--csv", "--page", "raw",
           "--print-units", "base", "--metrics", ",".join(METRICS),
           sys.executable, "-m", "gpukit.proc", *target]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    err = ncu.classify(done.stdout + done.stderr, done.returncode)
    if err is not None:
        raise err
    shown = cmd[1:cmd.index(sys.executable)]
    shown[shown.index("--metrics") + 1] = "<METRICS of gpukit/matmul/profile.py>"
    shown = " ".join(["ncu", *shown, "python -m", "gpukit.proc", target[0],
                      "'" + target[1] + "'"])
    return shown, ncu.parse_raw_csv(done.stdout)


def profile(n: int = 4096, kernels=PROFILED, timeout: float = 300) -> dict:
    """ncu over ``kernels`` (one run), then over cuBLAS (another run, whose failure is
    recorded in its row); ``{"n", "ncu", "command", "seconds", "kernels": [...]}``."""
    from gpukit.profiling import ncu
    exe = ncu.require_ncu()
    kernels = list(kernels)
    t0 = time.perf_counter()
    command, found = _ncu(exe, kernels, _regex(kernels), n, timeout)
    if len(found) != 2 * len(kernels):
        raise ncu.NcuError("failed", f"expected {2 * len(kernels)} profiled launches, "
                                     f"got {len(found)}")
    rows = []
    for i, kernel in enumerate(kernels):
        second = found[2 * i + 1]                      # the launch after the warm-up
        rows.append({"name": kernel, "function": second["name"][:80],
                     **summarise(second["metrics"])})
    try:
        _cmd, found = _ncu(exe, ["cublas"], CUBLAS_REGEX, n, timeout)
        if not found:
            raise ncu.NcuError("no-kernel", "no cuBLAS kernel was profiled")
        last = found[-1]
        rows.append({"name": "cublas", "function": last["name"][:80],
                     **summarise(last["metrics"])})
    except (ncu.NcuError, subprocess.SubprocessError, OSError) as exc:
        rows.append({"name": "cublas", "error": str(exc)[:300]})
    return {"n": n, "ncu": ncu.version(exe), "seconds": time.perf_counter() - t0,
            "command": command, "kernels": rows}


def main(argv=None) -> int:
    from .. import cli, results
    from ..profiling.ncu import NcuError
    parser = cli._Parser(prog="python -m gpukit.matmul.profile",
                         description="ncu counters of the matmul kernels")
    parser.add_argument("--n", type=cli.positive_int, default=4096,
                        help="matrix side (default 4096)")
    parser.add_argument("--save", action="store_true",
                        help=f"store them as the '{PART}' part of results/<machine>/matmul.json")
    try:
        args = parser.parse_args(argv)
        data = profile(args.n)
    except cli.UserError as exc:
        print(f"{exc.prog}: error: {exc}", file=sys.stderr)
        return 2
    except NcuError as exc:
        print(f"python -m gpukit.matmul.profile: {exc}", file=sys.stderr)
        return 1
    for r in data["kernels"]:
        if r.get("error"):
            print(f"{r['name']:<22} {r['error']}")
            continue
        print(f"{r['name']:<22} FFMA share {r['ffma_share'] or 0:6.1%}  issue active "
              f"{r['issue_active_pct'] or 0:5.1f} %  warps {r['warps_active_pct'] or 0:5.1f} %")
    if args.save:
        print(results.save_part("matmul", PART, data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
