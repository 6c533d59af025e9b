"""Nsight Compute (``ncu``) from Python: find it, run it on one kernel, read its numbers back.

:func:`profile` runs ``ncu`` with a fixed set of sections on a fresh Python process that
launches one kernel of an earlier chapter a few times (:mod:`.targets`); ``ncu`` skips the first
launches (the compile and a warm-up) and profiles the next one. The report (``.ncu-rep``) is
kept; :func:`parse_raw_csv` reads ``ncu --import REPORT --csv --page raw --print-units base``
(one row per profiled kernel, one column per metric) and :func:`key_metrics` picks the few
numbers a reader needs. :func:`parse_source_csv` reads the report's source page as SASS (one
row per machine instruction: how often it executed, where the sampled warps stalled) and
:func:`sass_summary` turns it into the instruction mix and the hottest instructions. :class:`NcuError` carries a one-line reason and its fix: ``ncu``
missing, counters not permitted, no kernel matched.
"""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
import sys
import time

from gpukit.tools import find_ncu  # noqa: F401  (part of this module's API)

#: the sections every profile collects (``ncu --list-sections`` names them)
SECTIONS = ("SpeedOfLight", "MemoryWorkloadAnalysis", "Occupancy", "LaunchStats",
            "WarpStateStats", "SchedulerStats", "SourceCounters", "InstructionStats",
            "ComputeWorkloadAnalysis")
#: metrics asked for by name as well, so that the summary never depends on what a section holds
METRICS = ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
           "dram__throughput.avg.pct_of_peak_sustained_elapsed",
           "sm__throughput.avg.pct_of_peak_sustained_elapsed",
           "sm__warps_active.avg.pct_of_peak_sustained_active",
           "launch__registers_per_thread",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")
PERMISSION_URL = "https://developer.nvidia.com/ERR_NVGPUCTRPERM"
MISSING = ("ncu (Nsight Compute) was not found on PATH, in /usr/local/cuda/bin or "
           "/opt/nvidia/nsight-compute: add the CUDA toolkit's bin folder to PATH "
           "(export PATH=/usr/local/cuda/bin:$PATH), set GPUKIT_NCU=/path/to/ncu, or install "
           "Nsight Compute (https://developer.nvidia.com/nsight-compute)")
PERMISSION = ("ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM): run it as "
              "root/administrator, or load the NVIDIA driver with the option "
              f"NVreg_RestrictProfilingToAdminUsers=0 (see {PERMISSION_URL})")


class NcuError(RuntimeError):
    """ncu could not profile: ``kind`` is "missing", "permission", "no-kernel" or "failed"."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def require_ncu() -> str:
    exe = find_ncu()
    if exe is None:
        raise NcuError("missing", MISSING)
    return exe


def version(exe: str) -> str | None:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.findall(r"Version\s+(\S+)", out)
    return found[-1] if found else (out.strip().splitlines() or [None])[-1]


# --8<-- [start:command]
def command(exe: str, target: str, regex: str, skip: int, report: str,
            metrics: bool = True, base: str | None = "mangled") -> list[str]:
    """The ncu command line that profiles launch ``skip + 1`` of the kernel matching
    ``regex``: the clocks as they are, this kernel only (not the fills around it), after
    the compile and the warm-up launches, one launch."""
    cmd = [exe, "--clock-control", "none",
           "--kernel-name", f"regex:{regex}",
           "--launch-skip", str(skip),
           "--launch-count", "1",
           "--export", report, "--force-overwrite"]
    if base:
        # "mangled": numba's names hold their module
        cmd += ["--kernel-name-base", base]
    for section in SECTIONS:
        cmd += ["--section", section]
    if metrics:
        cmd += ["--metrics", ",".join(METRICS)]
    return cmd + [sys.executable, "-m", "gpukit.proc", target]
# --8<-- [end:command]


def classify(output: str, returncode: int | None) -> NcuError | None:
    """The reason an ncu run failed, read off its output; None when it profiled something."""
    if "ERR_NVGPUCTRPERM" in output:
        return NcuError("permission", PERMISSION)
    if "Traceback (most recent call last)" in output:       # the profiled program itself failed
        last = [ln for ln in output.splitlines() if ln.strip() and not ln.startswith("==")][-1]
        return NcuError("failed", f"the profiled program failed: {last.strip()[:300]}")
    if "No kernels were profiled" in output:
        return NcuError("no-kernel", "ncu profiled no kernel: the name filter matched no launch "
                                     "after the skipped ones")
    if returncode != 0:
        errors = [ln for ln in output.splitlines() if "==ERROR==" in ln]
        last = (errors or [ln for ln in output.splitlines() if ln.strip()] or ["no output"])[-1]
        return NcuError("failed", f"ncu failed (exit {returncode}): {last.strip()[:300]}")
    return None


def run(target_args: list, regex: str, skip: int, report: str, *, timeout: float = 240) -> dict:
    """Profile one kernel; returns ``{"command", "seconds", "output", "report", "kernels", "sass",
    "sass_error"}`` (``sass``: :func:`sass_summary` of the report's source page, or None with
    ``sass_error`` saying why).

    ``report`` is the path without ``.ncu-rep``. Raises :class:`NcuError`. A run that ncu
    refuses for one of our named metrics is tried again with the sections alone; one whose name
    filter matched nothing, with the kernel's demangled name, then its plain function name.
    """
    import json
    exe = require_ncu()
    target = ["gpukit.profiling.targets:launch", json.dumps(target_args)]
    t0 = time.perf_counter()
    # Fallbacks, each tried only when the one before failed for that reason: without our named
    # metrics (a name this ncu does not know), then matching other forms of the kernel's name.
    bases, b, metrics, tried = ("mangled", "demangled", None), 0, True, []
    while True:
        cmd = command(exe, target[0], regex, skip, report, metrics, bases[b]) + [target[1]]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            out, rc = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired:
            raise NcuError("failed", f"ncu did not finish within {timeout:.0f} s") from None
        err = classify(out, rc)
        tried.append(f"{bases[b]}/{'metrics' if metrics else 'sections'}: {err.kind if err else 'ok'}")
        text = str(err).lower()
        if err is not None and err.kind == "failed" and "metric" in text and metrics:
            metrics = False                             # the same name form, sections only
        elif (err is not None and b + 1 < len(bases)
              and (err.kind == "no-kernel" or "kernel-name-base" in text)):
            b += 1                                      # another form of the kernel's name
        else:
            break
    if err is not None:
        raise err
    kernels = parse_raw_csv(import_raw(exe, report + ".ncu-rep"))
    if not kernels:
        raise NcuError("no-kernel", "ncu wrote a report without a profiled kernel")
    sass, sass_error = None, None
    try:                                # the SASS view is a bonus: without it the profile stands
        sass = sass_summary(parse_source_csv(import_source(exe, report + ".ncu-rep")))
    except (NcuError, ValueError, OSError, subprocess.SubprocessError) as exc:
        sass_error = str(exc)[:300]
    return {"sass": sass, "sass_error": sass_error,
            "command": " ".join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd)),
            "seconds": time.perf_counter() - t0, "used_named_metrics": metrics, "attempts": tried,
            "output": "\n".join(ln for ln in out.splitlines() if ln.startswith("==")
                                and "gpukit-proc-result" not in ln)[-2000:],
            "report": report + ".ncu-rep", "kernels": kernels}


def import_source(exe: str, report: str) -> str:
    """The report's source page as SASS, one CSV row per instruction (ncu 2023.2 and later)."""
    cmd = [exe, "--import", report, "--page", "source", "--csv", "--print-source", "sass"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or '"Address"' not in done.stdout:
        last = (done.stderr or done.stdout).strip().splitlines() or ["no output"]
        raise NcuError("failed", f"ncu could not print the source page as SASS: {last[-1][:200]}")
    return done.stdout


def import_raw(exe: str, report: str) -> str:
    """Every metric of a saved report, as CSV (base units: bytes, nanoseconds, ...)."""
    base = [exe, "--import", report, "--csv", "--page", "raw"]
    for cmd in (base + ["--print-units", "base"], base):   # the units are converted either way
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if done.returncode == 0 and '"ID"' in done.stdout:
            return done.stdout
    raise NcuError("failed", f"ncu --import failed: {(done.stderr or done.stdout).strip()[-300:]}")


# ----------------------------------------------------------------- reading ncu's CSV

#: unit -> factor to SI base (seconds, bytes, bytes/second, hertz)
UNITS = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3,
         "second": 1.0, "s": 1.0,
         "byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
         "byte/second": 1.0, "kbyte/second": 1e3, "mbyte/second": 1e6, "gbyte/second": 1e9,
         "tbyte/second": 1e12, "byte/s": 1.0, "gbyte/s": 1e9, "tbyte/s": 1e12,
         "hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}
#: columns of the raw page that describe the launch rather than measure it
ID_COLUMNS = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
              "Block Size", "Grid Size", "Device", "CC")


def number(text: str) -> float | None:
    """``"1,234.5"`` -> 1234.5; ``"n/a"``, ``""`` and other words -> None."""
    text = text.strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


def parse_raw_csv(text: str) -> list[dict]:
    """Kernels of ``ncu --csv --page raw`` output: ``[{"id", "name", "block", "grid",
    "metrics": {name: value in SI base units}, "units": {name: unit as printed}}]``.

    Lines before the header (``==PROF==`` progress lines, warnings) are skipped. The second line
    may hold units (its ID column is empty); values may carry thousands separators.
    """
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(ln for ln in lines[start:] if ln.startswith('"')))))
    header, body = rows[0], rows[1:]
    units = [""] * len(header)
    if body and body[0] and body[0][0] == "":
        units, body = body[0], body[1:]
    kernels = []
    for row in body:
        if len(row) != len(header):
            continue
        rec = dict(zip(header, row))
        metrics, printed = {}, {}
        for col, unit, value in zip(header, units, row):
            if col in ID_COLUMNS:
                continue
            v = number(value)
            if v is None:
                continue
            metrics[col] = v * UNITS.get(unit.strip().lower(), 1.0)
            printed[col] = unit
        kernels.append({"id": rec.get("ID"), "name": rec.get("Kernel Name", ""),
                        "block": rec.get("Block Size"), "grid": rec.get("Grid Size"),
                        "metrics": metrics, "units": printed})
    return kernels


# ----------------------------------------------------------------- the source page (SASS)

#: the source page's per-reason sample columns (``stall_long_sb``) -> the reason's name in the
#: raw page's metrics (``smsp__average_warps_issue_stalled_long_scoreboard_...``)
SAMPLE_REASONS = {"long_sb": "long_scoreboard", "short_sb": "short_scoreboard",
                  "math": "math_pipe_throttle", "mio": "mio_throttle", "lg": "lg_throttle",
                  "imc": "imc_miss", "no_inst": "no_instruction", "dispatch": "dispatch_stall",
                  "sleep": "sleeping", "tex": "tex_throttle"}
#: columns the source page must have, and the optional sampling column
SOURCE_NEEDS = ("Address", "Source", "Instructions Executed")
SAMPLES = "Warp Stall Sampling (All Samples)"
#: opcode families shown by name in the mix; the rest are summed as "other"
MIX_TOP = 8


def opcode(sass: str) -> str:
    """The family of one SASS instruction: ``"@!P0 LDS.U.128 R4, [R2]"`` -> ``"LDS"``."""
    words = sass.split()
    if words and words[0].startswith("@"):              # a predicate guards it: @P0, @!PT
        words = words[1:]
    return words[0].split(".")[0].rstrip(";") if words else ""


def parse_source_csv(text: str) -> list[dict]:
    """The rows of ``ncu --import R --page source --csv --print-source sass``: ``[{"address",
    "sass", "executed", "samples", "stalls": {reason: samples}}]`` of the first kernel.

    Lines before the header (``==WARNING==`` lines, the ``"Kernel Name"`` line) are skipped;
    numbers may carry thousands separators; an empty or ``-`` cell counts as 0. ``samples`` is
    None when the page has no sampling column. Raises ValueError when the page lacks a column
    the summary needs.
    """
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"Address"')), None)
    if start is None:
        raise ValueError("not an ncu source page: no header line starting with \"Address\"")
    body = []
    for ln in lines[start:]:
        if ln.startswith('"Kernel Name"'):              # a second kernel's page: not ours
            break
        if ln.startswith('"'):
            body.append(ln)
    rows = list(csv.reader(io.StringIO("\n".join(body))))
    header = rows[0]
    missing = [c for c in SOURCE_NEEDS if c not in header]
    if missing:
        raise ValueError(f"the source page has no column {', '.join(map(repr, missing))}")
    col = {name: i for i, name in enumerate(header)}
    reasons = {name[len("stall_"):]: i for name, i in col.items()
               if name.startswith("stall_") and "(" not in name}

    def num(cells, i):
        v = number(cells[i]) if i is not None and i < len(cells) else None
        return 0.0 if v is None else v
    out = []
    for cells in rows[1:]:
        if len(cells) < len(SOURCE_NEEDS) or not cells[col["Address"]].strip():
            continue
        try:
            address = int(cells[col["Address"]].strip(), 16)
        except ValueError:
            continue
        stalls = {SAMPLE_REASONS.get(r, r): num(cells, i) for r, i in reasons.items()}
        out.append({"address": address, "sass": " ".join(cells[col["Source"]].split()),
                    "executed": num(cells, col["Instructions Executed"]),
                    "samples": num(cells, col[SAMPLES]) if SAMPLES in col else None,
                    "stalls": {k: v for k, v in stalls.items() if v}})
    return out


def sass_summary(rows: list[dict], top: int = 5) -> dict:
    """What a reader needs from the SASS rows of one kernel: ``instructions`` (warp instructions
    executed), ``mix`` (``[[family, share], ...]``, the top :data:`MIX_TOP` families by share of
    executed instructions, then ``"other"``), ``ffma_share``, ``samples`` (warp stall samples, None
    without sampling) and ``hot``: the ``top`` instructions by samples, each with its offset from
    the kernel's first instruction, its text, its share of the samples and its largest reason."""
    if not rows:
        raise ValueError("the source page holds no instruction")
    base = min(r["address"] for r in rows)
    total = sum(r["executed"] for r in rows)
    families: dict[str, float] = {}
    for r in rows:
        if r["executed"]:
            fam = opcode(r["sass"])
            families[fam] = families.get(fam, 0.0) + r["executed"]
    ranked = sorted(families.items(), key=lambda kv: -kv[1])
    mix = [[fam, n / total] for fam, n in ranked[:MIX_TOP]] if total else []
    rest = sum(n for _, n in ranked[MIX_TOP:])
    if total and rest:
        mix.append(["other", rest / total])
    sampled = [r for r in rows if r["samples"]]
    samples = sum(r["samples"] for r in sampled) if all(r["samples"] is not None for r in rows) else None
    hot = []
    for r in sorted(sampled, key=lambda r: -r["samples"])[:top] if samples else []:
        reason = max(r["stalls"].items(), key=lambda kv: kv[1]) if r["stalls"] else (None, 0)
        hot.append({"offset": r["address"] - base, "sass": r["sass"][:80], "executed": r["executed"],
                    "share": r["samples"] / samples, "reason": reason[0],
                    "reason_share": reason[1] / r["samples"] if reason[0] else None})
    return {"instructions": total, "lines": len(rows), "mix": mix,
            "ffma_share": families.get("FFMA", 0.0) / total if total else None,
            "samples": samples, "hot": hot}


STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")


#: instructions executed per pipe, in % of the pipe's peak (Compute Workload Analysis)
PIPE = re.compile(r"^sm__inst_executed_pipe_([a-z0-9]+)\.avg\.pct_of_peak_sustained_active$")


def _first(m: dict, *names):
    return next((m[n] for n in names if n in m), None)


def key_metrics(m: dict) -> dict:
    """The numbers a reader needs from one kernel's metrics (None where ncu gave none)."""
    duration = _first(m, "gpu__time_duration.sum")
    read, write = _first(m, "dram__bytes_read.sum"), _first(m, "dram__bytes_write.sum")
    dram_bytes = read + write if read is not None and write is not None else None
    stalls = {}
    for name, value in m.items():
        hit = STALL.match(name)
        if hit and "not_issued" not in name and value is not None:
            stalls[hit.group(1)] = value
    top = sorted(stalls.items(), key=lambda kv: -kv[1])[:4]
    pipes = {}
    for name, value in m.items():
        hit = PIPE.match(name)
        if hit and value:
            pipes[hit.group(1)] = value
    conflicts = [_first(m, f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum")
                 for op in ("ld", "st")]
    return {
        "duration_s": duration,
        "dram_bytes": dram_bytes,
        "dram_gbs": dram_bytes / duration / 1e9 if dram_bytes is not None and duration else None,
        "dram_pct": _first(m, "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                           "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
        "memory_pct": _first(m, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
        "sm_pct": _first(m, "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        "achieved_occupancy_pct": _first(m, "sm__warps_active.avg.pct_of_peak_sustained_active"),
        "theoretical_occupancy_pct": _first(m, "sm__maximum_warps_per_active_cycle_pct"),
        "registers_per_thread": _first(m, "launch__registers_per_thread"),
        "block_size": _first(m, "launch__block_size"),
        "grid_size": _first(m, "launch__grid_size"),
        "waves_per_sm": _first(m, "launch__waves_per_multiprocessor"),
        "shared_per_block_bytes": _first(m, "launch__shared_mem_per_block_static"),
        "sm_clock_hz": _first(m, "gpc__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.avg.per_second"),
        "cycles_per_issue": _first(m, "smsp__average_warp_latency_per_inst_issued.ratio"),
        "issue_active_pct": _first(m, "smsp__issue_active.avg.pct_of_peak_sustained_active"),
        "top_stalls": [{"reason": k, "cycles_per_issue": v} for k, v in top],
        "pipes": dict(sorted(pipes.items(), key=lambda kv: -kv[1])) if pipes else None,
        "sm_issue_pct": _first(m, "sm__inst_issued.avg.pct_of_peak_sustained_active",
                               "sm__inst_issued.avg.pct_of_peak_sustained_elapsed"),
        "bank_conflicts": (None if all(c is None for c in conflicts)
                           else sum(c for c in conflicts if c is not None)),
    }


def summary_lines(label: str, k: dict) -> list[str]:
    """A short text summary of :func:`key_metrics` for the terminal."""
    def f(v, fmt):
        return "-" if v is None else format(v, fmt)
    lines = [f"{label}",
             f"  duration            {f(k['duration_s'] and k['duration_s'] * 1e6, ',.1f')} us",
             f"  DRAM throughput     {f(k['dram_pct'], '.1f')} % of peak, {f(k['dram_gbs'], ',.0f')} GB/s",
             f"  SM throughput       {f(k['sm_pct'], '.1f')} % of peak",
             f"  occupancy           {f(k['achieved_occupancy_pct'], '.1f')} % achieved, "
             f"{f(k['theoretical_occupancy_pct'], '.1f')} % theoretical",
             f"  registers/thread    {f(k['registers_per_thread'], '.0f')}"]
    if k["top_stalls"]:
        lines.append("  top warp stalls     " + ", ".join(
            f"{s['reason']} {s['cycles_per_issue']:.1f}" for s in k["top_stalls"]) + " (cycles per issued instruction)")
    if k["bank_conflicts"]:
        lines.append(f"  shared bank conflicts {k['bank_conflicts']:,.0f}")
    if k.get("pipes"):
        lines.append("  busiest pipes       " + ", ".join(
            f"{p} {v:.0f} %" for p, v in list(k["pipes"].items())[:3]) + " (of each pipe's peak)")
    return lines


def sass_line(s: dict | None) -> str | None:
    """One line for the terminal: the FFMA share and the two largest opcode families."""
    if not s or s.get("ffma_share") is None:
        return None
    fams = ", ".join(f"{f} {100 * v:.0f} %" for f, v in s["mix"][:2] if f != "other")
    return (f"  instructions        FFMA {100 * s['ffma_share']:.1f} % of {s['instructions']:,.0f} warp "
            f"instructions executed; largest families {fams}")
