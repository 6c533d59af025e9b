"""The chapter's tables and plots, drawn from ``results/<machine>/tensor_cores.json``.

Imports only :mod:`gpukit.pages`, :mod:`gpukit.results` and the chapter's ``meta``.
A rung that failed its checks on a machine is left out of that machine's tables (the
results file keeps the error).
"""

from __future__ import annotations

from gpukit import pages

from .meta import (FP8_KERNELS, FP8_LIBRARY, FP8_LIBRARY_LABEL, FP8_TARGET, LIBRARY,
                   LIBRARY_LABEL, PRECISIONS, RUNGS, SLUG, TARGETS)

LABELS = {**{k: v[0] for k, v in RUNGS.items()}, LIBRARY: LIBRARY_LABEL,
          **{k: v[0] for k, v in FP8_KERNELS.items()}, FP8_LIBRARY: FP8_LIBRARY_LABEL}
WRITTEN = {**{k: v[1] for k, v in RUNGS.items()}, LIBRARY: "library",
           **{k: v[1] for k, v in FP8_KERNELS.items()}, FP8_LIBRARY: "library"}
ROOF_LABELS = {"fp32": "fp32, CUDA cores (cuBLAS)", "tf32": "tf32 (cuBLAS)",
               "bf16": "bf16 (cuBLAS)", "fp16": "fp16 (cuBLAS)",
               "e4m3": "fp8 e4m3 (cuBLASLt)",
               "e4m3-fp32-acc": "fp8 e4m3, sums promoted to fp32 (cuBLASLt)",
               "e5m2": "fp8 e5m2 x e4m3 (cuBLASLt)"}


def passed(row: dict) -> bool:
    """A row that was checked at every awkward shape and at the timed size."""
    return bool(row.get("ok")) and row.get("tflops") is not None


def ladder_rows(gpu: dict) -> dict[str, dict]:
    return {r["kernel"]: r for r in gpu["ladder"] if passed(r)}


def fp8_rows(gpu: dict) -> dict[str, dict]:
    return {r["kernel"]: r for r in gpu["fp8"] if passed(r)}


def roof(gpu: dict, precision: str) -> dict | None:
    return next((r for r in gpu["roofs"] if r.get("precision") == precision
                 and r.get("tflops")), None)


@pages.renderer(SLUG, "roofs")
def render_roofs(slug: str, data: dict) -> str:
    gpu = data["gpu"]
    fp32 = roof(gpu, "fp32")
    rows = []
    for r in gpu["roofs"]:
        if not r.get("tflops"):
            continue
        ratio = r["tflops"] / fp32["tflops"] if fp32 else None
        rows.append([ROOF_LABELS.get(r["precision"], r["precision"]),
                     pages.fmt_num(r["tflops"]), pages.fmt_ratio(ratio),
                     pages.fmt_time(r["median_s"])])
    n = gpu["n"]
    head = (f"**{pages.machine_title(data)}**, one {n:,} x {n:,} x {n:,} product on random "
            "data, median of repeated calls timed with CUDA events.\n\n")
    return head + pages.table(["precision (library)", "TFLOP/s", "x fp32", "median"], rows)


@pages.renderer(SLUG, "accuracy")
def render_accuracy(slug: str, data: dict) -> str:
    acc = data["accuracy"]
    ks = acc["ks"]
    table = acc["table"]
    precisions = [p for p in PRECISIONS if any(r["precision"] == p for r in table)]
    rows = []
    for p in precisions:
        cells = {r["k"]: r for r in table if r["precision"] == p}
        bound = max(cells[k]["bound"] for k in ks)
        rows.append([PRECISIONS[p][0], f"{cells[ks[0]]['unit_roundoff']:.1e}",
                     *[f"{cells[k]['max']:.1e}" for k in ks], f"{bound:.1e}"])
    return pages.table(["inputs", "unit roundoff", *[f"K = {k:,}" for k in ks],
                               "bound"], rows)


@pages.renderer(SLUG, "ladder")
def render_ladder(slug: str, data: dict) -> str:
    gpu = data["gpu"]
    rows_by = ladder_rows(gpu)
    lib = rows_by.get(LIBRARY)
    rows = []
    for kernel in list(RUNGS) + [LIBRARY]:
        r = rows_by.get(kernel)
        if r is None:
            continue
        pct = 100 * r["tflops"] / lib["tflops"] if lib else None
        rows.append([f"`{kernel}`" + pages.dagger(r), WRITTEN[kernel],
                     pages.fmt_num(r["tflops"]),
                     "-" if pct is None else f"{pct:.1f} %", pages.fmt_time(r["median_s"]),
                     pages.fmt_time(r["first_call_s"]), f"{r['error']:.1e}"])
    n = gpu["n"]
    head = (f"**{pages.machine_title(data)}**, C = A W<sup>T</sup> in bf16 with fp32 "
            f"sums, M = N = K = {n:,}; error: beyond the output's own rounding, relative "
            "to |A| |W|<sup>T</sup>, against float64.\n\n")
    note = pages.flag_note(list(rows_by.values()))
    return head + pages.table(["kernel", "written in", "TFLOP/s", "of cuBLAS", "median",
                               "first call", "error"], rows) + note


@pages.renderer(SLUG, "checks")
def render_checks(slug: str, data: dict) -> str:
    gpu = data["gpu"]
    rows = []
    for r in gpu["ladder"] + gpu["fp8"]:
        if not passed(r) or not r.get("checks"):
            continue
        worst = max(c["error"] for c in r["checks"])
        shapes = ", ".join(f"{c['m']}x{c['n']}x{c['k']}" for c in r["checks"])
        rows.append([f"`{r['kernel']}`", shapes, f"{worst:.1e}"])
    return pages.table(["kernel", "shapes", "largest error"], rows, align="llr")


@pages.renderer(SLUG, "sweep")
def render_sweep(slug: str, data: dict) -> str:
    gpu = data["gpu"]
    shown = set(ladder_rows(gpu))
    sizes = sorted({r["n"] for r in gpu["sweep"]})
    kernels = [k for k in list(RUNGS) + [LIBRARY] if k in shown]
    cell = {(r["kernel"], r["n"]): r for r in gpu["sweep"] if r.get("tflops")}
    rows = []
    for k in kernels:
        rows.append([f"`{k}`", *[pages.fmt_num(cell[(k, s)]["tflops"])
                                 + pages.dagger(cell[(k, s)]) if (k, s) in cell
                                 else "-" for s in sizes]])
    graphs = sorted({r["n"] for r in gpu["sweep"] if r.get("graph")})
    head = (f"**{pages.machine_title(data)}**, TFLOP/s at M = N = K = n; sizes up to "
            f"{max(graphs) if graphs else 0:,} replayed from a CUDA graph of 10 calls.\n\n")
    note = pages.flag_note(list(cell.values()))
    return head + pages.table(["kernel", *[f"n = {s:,}" for s in sizes]], rows) + note


@pages.renderer(SLUG, "fp8")
def render_fp8(slug: str, data: dict) -> str:
    gpu = data["gpu"]
    rows_by = fp8_rows(gpu)
    lt = rows_by.get(FP8_LIBRARY)
    bf16 = ladder_rows(gpu).get(LIBRARY)
    rows = []
    for kernel in list(FP8_KERNELS) + [FP8_LIBRARY]:
        r = rows_by.get(kernel)
        if r is None:
            continue
        pct = 100 * r["tflops"] / lt["tflops"] if lt else None
        rows.append([f"`{kernel}`", WRITTEN[kernel], pages.fmt_num(r["tflops"]),
                     "-" if pct is None else f"{pct:.1f} %",
                     pages.fmt_ratio(r["tflops"] / bf16["tflops"] if bf16 else None),
                     f"{r['error']:.1e}"])
    n = gpu["n"]
    head = (f"**{pages.machine_title(data)}**, C = s<sub>A</sub> s<sub>W</sub> A W<sup>T"
            f"</sup> from e4m3 operands with one scale per tensor, bf16 out, M = N = K = "
            f"{n:,}.\n\n")
    return head + pages.table(["kernel", "written in", "TFLOP/s", "of cuBLASLt fp8",
                               "x cuBLAS bf16", "error"], rows)


@pages.renderer(SLUG, "sanitizer")
def render_sanitizer(slug: str, data: dict) -> str:
    san = data["sanitizer"]
    rows = []
    for r in san["runs"]:
        ran = len(r["ran"]) == len(san["shapes"]) and not r["failed"]
        rows.append([f"`{r['kernel']}`", r["tool"],
                     (r.get("summary") or "no summary") if ran
                     else "the kernel did not run (see the results file)",
                     f"{len(r['ran'])} of {len(san['shapes'])}"])
    if not rows:
        return "compute-sanitizer: not recorded on this machine."
    shapes = ", ".join("x".join(map(str, s)) for s in san["shapes"])
    head = (f"compute-sanitizer {san.get('version') or ''} on each CUDA C kernel at "
            f"{shapes}, each run also checked against float64:\n\n")
    return head + pages.table(["kernel", "tool", "summary", "shapes checked"], rows,
                              align="lllr")


@pages.targets(SLUG)
def targets(data: dict) -> list[pages.Target]:
    gpu = data.get("gpu")
    out = []
    lib = ladder_rows(gpu).get(LIBRARY) if gpu else None
    for kernel, goal in TARGETS.items():
        r = ladder_rows(gpu).get(kernel) if gpu else None
        name = f"{LABELS[kernel]}, bf16 {gpu['n'] if gpu else 8192}^3"
        if r is None or lib is None:
            failed = bool(gpu) and kernel in gpu.get("failures", {})
            out.append(pages.Target(name, f">= {goal:.0%} of cuBLAS",
                                    "failed" if failed else "not recorded",
                                    False if failed else None))
            continue
        frac = r["tflops"] / lib["tflops"]
        out.append(pages.Target(name, f">= {goal:.0%} of cuBLAS", f"{100 * frac:.1f} %",
                                frac >= goal))
    rows = fp8_rows(gpu) if gpu else {}
    lt = rows.get(FP8_LIBRARY)
    mine = [r for k, r in rows.items() if k != FP8_LIBRARY]
    best = max(mine, key=lambda r: r["tflops"]) if mine else None
    name = "fp8 e4m3, best path" + (f" ({LABELS[best['kernel']]})" if best else "")
    if best is None or lt is None:
        out.append(pages.Target(name, f">= {FP8_TARGET:.0%} of cuBLASLt fp8", "not recorded",
                                None))
    else:
        frac = best["tflops"] / lt["tflops"]
        out.append(pages.Target(name, f">= {FP8_TARGET:.0%} of cuBLASLt fp8",
                                f"{100 * frac:.1f} %", frac >= FP8_TARGET))
    if gpu:
        every = [r for r in gpu["ladder"] + gpu["fp8"]]
        ok = all(passed(r) for r in every) and not gpu.get("failures")
        out.append(pages.Target("every kernel: correct at the awkward shapes, error within "
                                "the bound", "all pass",
                                f"{sum(passed(r) for r in every)} of "
                                f"{len(every) + len(gpu.get('failures', {}))} pass", ok))
    return out


#: the hand-written CUDA C rungs: kernel -> (number on the page, section of tensor_cores.cu)
CUDA_C = {"01-wmma": (1, "wmma"), "02-mma-sync": (2, "mma"), "03-wgmma-tma": (3, "wgmma")}


def _cu_section(name: str) -> str:
    """The lines of tensor_cores.cu between its --8<-- markers ``name``."""
    from pathlib import Path
    text = Path(__file__).with_name("tensor_cores.cu").read_text(encoding="utf-8")
    start = text.index(f"// --8<-- [start:{name}]")
    start = text.index("\n", start) + 1
    return text[start:text.index(f"// --8<-- [end:{name}]")].rstrip()


def render_rung(data: dict, kernel: str) -> str:
    """What one CUDA C rung reached, and its code (the page describes the rung before it)."""
    gpu = data["gpu"]
    rows = ladder_rows(gpu)
    r, lib = rows.get(kernel), rows.get(LIBRARY)
    i, section = CUDA_C[kernel]
    if r is None or lib is None:
        return (f"It was not recorded passing on {pages.machine_title(data)}; its source is "
                f"section `{section}` of `gpukit/tensor_cores/tensor_cores.cu`.")
    pct = 100 * r["tflops"] / lib["tflops"]
    code = (f'```cuda title="gpukit/tensor_cores/tensor_cores.cu ({section})"\n'
            f"{_cu_section(section)}\n```")
    return (f"On {pages.machine_title(data)} at {gpu['n']:,}^3 it reaches "
            f"{pages.fmt_num(r['tflops'])} TFLOP/s, {pct:.1f} % of cuBLAS.\n\n"
            + pages.collapsed(f"The code of rung {i} ({section})", code))


@pages.renderer(SLUG, "wmma")
def render_wmma(slug: str, data: dict) -> str:
    return render_rung(data, "01-wmma")


@pages.renderer(SLUG, "mma")
def render_mma(slug: str, data: dict) -> str:
    return render_rung(data, "02-mma-sync")


@pages.renderer(SLUG, "wgmma")
def render_wgmma(slug: str, data: dict) -> str:
    return render_rung(data, "03-wgmma-tma")


@pages.renderer(SLUG + "_profiles", "profiles")
def render_profiles(slug: str, data: dict) -> str:
    rows = []
    for r in data["gpu"]["rows"]:
        tm = r.get("tensor_metrics") or {}
        pipe = tm.get("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active")
        stalls = ", ".join(f"{s['reason']} {s['cycles_per_issue']:.1f}"
                           for s in (r.get("top_stalls") or [])[:2])
        hot = ((r.get("sass") or {}).get("hot") or [{}])[0]
        rows.append([f"`{r['kernel']}`", pages.fmt_time(r["duration_s"]),
                     "-" if pipe is None else f"{pipe:.0f} %",
                     "-" if r.get("achieved_occupancy_pct") is None
                     else f"{r['achieved_occupancy_pct']:.1f} %",
                     pages.fmt_num(r.get("bank_conflicts")), stalls or "-",
                     f"`{hot['sass']}`" if hot.get("sass") else "-"])
    if not rows:
        raise pages.NotRecorded("profiles")
    n = data["gpu"]["rows"][0]["n"]
    head = (f"**{pages.machine_title(data)}**, Nsight Compute on one launch of each rung "
            f"at M = N = K = {n:,} (after a warm-up); stalls in cycles per issued "
            "instruction; hot: the instruction with the most stall samples.\n\n")
    return head + pages.table(["kernel", "duration", "tensor pipe active",
                               "achieved occupancy", "bank conflicts", "top stalls",
                               "hot instruction"], rows, align="lrrrrll")


def _prof(data: dict) -> dict:
    return {r["kernel"]: r for r in data["gpu"]["rows"]}


def _pipe(r: dict) -> float | None:
    return (r.get("tensor_metrics") or {}).get(
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active")


def _stall(r: dict) -> str:
    s = (r.get("top_stalls") or [{}])[0]
    return f"`{s['reason']}`" if s.get("reason") else "-"


def _hot(r: dict) -> str | None:
    hot = ((r.get("sass") or {}).get("hot") or [{}])[0]
    return hot.get("sass")


def _step(a: dict, b: dict) -> str:
    """What changed in the profile from rung ``a`` to rung ``b``, with the speed-up."""
    parts = [f"{a['duration_s'] / b['duration_s']:.1f}x faster"]
    pa, pb = _pipe(a), _pipe(b)
    if pa is not None and pb is not None:
        parts.append(f"tensor pipe busy {pa:.0f} % → {pb:.0f} % of active cycles")
    ca, cb = a.get("bank_conflicts"), b.get("bank_conflicts")
    if ca is not None and cb is not None and ca != cb:
        parts.append(f"shared-memory bank conflicts {ca:,.0f} → {cb:,.0f}")
    if _stall(a) != _stall(b):
        parts.append(f"top stall {_stall(a)} → {_stall(b)}")
    return "; ".join(parts)


@pages.renderer(SLUG + "_profiles", "steps")
def profile_steps(slug: str, data: dict) -> str:
    """Each step of the ladder with what its profile changed (measured facts only)."""
    p = _prof(data)
    pairs = [("01-wmma", "02-mma-sync"), ("02-mma-sync", "03-wgmma-tma")]
    lines = [f"- **`{a}` → `{b}`**: {_step(p[a], p[b])}." for a, b in pairs
             if a in p and b in p]
    best = p.get("03-wgmma-tma")
    for k in ("04-triton", "05-gluon"):
        if best is None or k not in p:
            continue
        text = _step(p[k], best).replace("faster", "faster for the CUDA C kernel", 1)
        hk, hb = _hot(p[k]), _hot(best)
        if hk and hb and hk != hb:
            text += (f"; the hottest instruction is `{hk}` in `{k}` against `{hb}` in "
                     "`03-wgmma-tma`")
        lines.append(f"- **`{k}` against `03-wgmma-tma`**: {text}.")
    if not lines:
        raise pages.NotRecorded("profiles")
    return "\n".join(lines)


@pages.renderer(SLUG + "_profiles", "open-mma")
def open_mma(slug: str, data: dict) -> str:
    """The open question the mma.sync rung's profile leaves (its numbers from the record)."""
    r = _prof(data).get("02-mma-sync")
    if r is None or _pipe(r) is None:
        raise pages.NotRecorded("profiles")
    return (f"- The `mma.sync` rung keeps the tensor pipe busy {_pipe(r):.0f} % of active "
            f"cycles, with {r['achieved_occupancy_pct']:.1f} % achieved occupancy "
            f"({r['registers_per_thread']:.0f} registers per thread) and {_stall(r)} as "
            "its top stall. Whether more warps per SM, or more independent MMAs between "
            "dependent ones, would keep the pipe busier was not measured.")
