"""The chapter's tables and plots, from ``profiling.json`` (streams, managed memory, the PyTorch
profiler) and ``profiles.json`` (Nsight Compute's metrics and SASS summaries of a few kernels)."""

from __future__ import annotations

from .. import pages, results
from ..pages import NotRecorded, fmt_num, fmt_ratio, fmt_time, table
from . import diagrams
from .meta import makespan, model_timeline

# ================================================================ profiling.json


def _gpu(data: dict) -> dict:
    return data["gpu"]          # a CPU machine has no "gpu" part: NotRecorded


@pages.renderer("profiling", "stages")
def stages(slug: str, data: dict) -> str:
    g = _gpu(data)
    rows = [[s["name"], fmt_time(s["median_s"]), fmt_num(s.get("gbs"), 1) if s.get("gbs") else "-"]
            for s in g["stages"]]
    return (f"{fmt_num(g['bytes'] / 2**30, 2)} GiB of float32 each way; polynomial of degree "
            f"{g['degree']} ({fmt_num(g['flops_per_byte'])} FLOPs per byte copied); the GPU reports "
            f"{g['copy_engines']} copy engines.\n\n"
            + table(["step, whole array, alone", "median time", "GB/s"], rows)
            + "\n\nIdeal bound for the pinned job, "
            + ("max(copy in, kernel, copy out)" if g["copy_engines"] >= 2 else "max(copy in + copy out, kernel)")
            + f": **{fmt_time(g['ideal_s'])}**; the three one after the other: {fmt_time(g['serial_sum_s'])}.")


#: the chapter's target for the pipelined job: at least this share of its ideal bound
#: (the bound's time over the job's)
TARGET_SHARE = 0.90


@pages.renderer("profiling", "runs")
def runs(slug: str, data: dict) -> str:
    g = _gpu(data)
    by = {r["name"]: r for r in g["rows"]}
    serial = by["serial, pinned"]
    rows = [[r["name"], fmt_time(r["median_s"]), fmt_ratio(r["vs_ideal"], 2),
             fmt_ratio(serial["median_s"] / r["median_s"], 2)] for r in g["rows"]]
    check = ("equal to the serial result, bit for bit" if g["pipelined_equals_serial"]
             else "DIFFERENT from the serial result")
    text = (table(["whole job (copy in, kernel, copy out)", "end to end", "vs ideal bound",
                   "speed-up vs serial pinned"], rows)
            + f"\n\nMedian of host-clock times from issuing the first copy to the end of the last; "
              f"every run checked before timing: largest relative error {g['max_rel_err']:.1e} against "
              f"float64, pipelined output {check}.")
    page = by.get("serial, pageable")
    one = next((r for r in g["rows"] if r["pinned"] and r["streams"] == 1 and r["chunks"] > 1), None)
    piped = _best_pipelined(g)
    page_piped = next((r for r in g["rows"] if not r["pinned"] and r["streams"] > 1), None)
    lines = []
    if page:
        lines.append(f"Serial from pageable memory took {fmt_ratio(page['median_s'] / serial['median_s'], 2)} "
                     "the pinned time: the price of copying from pageable memory.")
    if one:
        lines.append(f"{one['chunks']} chunks on one stream took {fmt_ratio(one['median_s'] / serial['median_s'], 2)} "
                     "the one-chunk time: chunking alone overlaps nothing.")
    if page and page_piped:
        lines.append(f"Pipelined from pageable memory ran {fmt_ratio(page['median_s'] / page_piped['median_s'], 2)} "
                     f"faster than serial from pageable memory, and {fmt_ratio(page_piped['vs_ideal'], 2)} the "
                     "ideal bound: most of the overlap is lost.")
    if piped:
        lines.append(f"Pipelined from pinned memory ran {fmt_ratio(serial['median_s'] / piped['median_s'], 2)} "
                     f"faster than serial, {fmt_ratio(piped['vs_ideal'], 2)} the ideal bound.")
    return text + ("\n\n" + "\n".join(f"- {x}" for x in lines) if lines else "")


def _best_pipelined(g: dict) -> dict | None:
    """The table's fastest pipelined run from pinned memory."""
    return min((r for r in g["rows"] if r["pinned"] and r["streams"] > 1), key=lambda r: r["median_s"],
               default=None)


def _fastest_pipelined(g: dict) -> dict | None:
    """The fastest pipelined run recorded anywhere: the sweep's runs and the table's pinned
    runs on several streams, by their time over the ideal bound."""
    piped = [r for r in g["rows"] if r["pinned"] and r["streams"] > 1]
    return min(list(g.get("sweep") or []) + piped, key=lambda r: r["vs_ideal"], default=None)


@pages.renderer("profiling", "bound")
def bound(slug: str, data: dict) -> str:
    """How close the pipelined job came to its ideal bound, and what fill and drain explain."""
    g = _gpu(data)
    piped = _best_pipelined(g)
    best = min(g["sweep"], key=lambda s: s["vs_ideal"])
    tied = [s for s in g["sweep"] if fmt_ratio(s["vs_ideal"], 2) == fmt_ratio(best["vs_ideal"], 2)]
    where = " and ".join(f"{s['chunks']} chunks on {s['streams']} streams" for s in tied)
    text = ""
    if piped:
        text += (f"The pipelined run of the table above ({piped['chunks']} chunks on {piped['streams']} "
                 f"streams) took {fmt_ratio(piped['vs_ideal'], 2)} the bound; ")
    text += (f"the best of the sweep, {fmt_ratio(best['vs_ideal'], 2)} at {where} "
             f"({fmt_time(best['median_s'])} against {fmt_time(g['ideal_s'])}).")
    stage = {st["name"]: st["median_s"] for st in g["stages"]}
    if piped and g["copy_engines"] >= 2 and all(k in stage for k in ("copy in, pinned", "kernel", "copy out, pinned")):
        t_in, t_k, t_out = stage["copy in, pinned"], stage["kernel"], stage["copy out, pinned"]
        model = makespan(model_timeline(piped["chunks"], t_in, t_k, t_out, pipelined=True))
        text += (f"\n\nFill and drain alone: the schedule of an ideal GPU (one copy engine per direction, "
                 f"each step as fast as when it ran alone, {piped['chunks']} equal chunks) would end at "
                 f"{fmt_time(model)}, {fmt_ratio(model / g['ideal_s'], 2)} the bound. The measured run took "
                 f"{fmt_time(piped['median_s'] - model)} longer than that schedule.")
    return text


@pages.targets("profiling")
def _targets(data: dict) -> list[pages.Target]:
    """The pipelined job at 90 % of its ideal bound or better, judged on the reference record."""
    name = "Profiling: pipelined copy-kernel-copy job, share of its ideal bound"
    goal = f">= {100 * TARGET_SHARE:.0f} %"
    g = data.get("gpu")
    if not g or not g.get("sweep"):
        return [pages.Target(name, goal, "not recorded", None)]
    best = _fastest_pipelined(g)["vs_ideal"]
    value = f"{100 / best:.1f} %"
    both = g.get("together")
    if both:
        stage = {st["name"]: st["median_s"] for st in g["stages"]}
        bound = max(both["copies_s"], stage.get("kernel", 0.0))
        value += (f" ({100 * bound / (best * g['ideal_s']):.0f} % of the bound with both copies "
                  "at once)")
    return [pages.Target(name, goal, value, 1 / best >= TARGET_SHARE)]


@pages.renderer("profiling", "together")
def together(slug: str, data: dict) -> str:
    """The steps side by side: both copies at once, and both with the kernel, against alone."""
    g = _gpu(data)
    both = g.get("together")
    if not both:
        raise NotRecorded("together")
    stage = {st["name"]: st for st in g["stages"]}
    t_in, t_out = stage["copy in, pinned"], stage["copy out, pinned"]
    bound = max(both["copies_s"], stage["kernel"]["median_s"])
    best = _fastest_pipelined(g)["median_s"]
    rows = [["copy in, alone", fmt_time(t_in["median_s"]), f"{t_in['gbs']:.1f}"],
            ["copy out, alone", fmt_time(t_out["median_s"]), f"{t_out['gbs']:.1f}"],
            ["copy in, while copying out", fmt_time(both["copy_in_s"]), f"{both['copy_in_gbs']:.1f}"],
            ["copy out, while copying in", fmt_time(both["copy_out_s"]), f"{both['copy_out_gbs']:.1f}"],
            ["both copies at once, end to end", fmt_time(both["copies_s"]), ""],
            ["both copies and the kernel at once", fmt_time(both["all_three_s"]), ""]]
    return (table(["whole array", "time", "GB/s"], rows, "lrr")
            + f"\n\nWhile copying out, a copy in moved {100 * both['copy_in_gbs'] / t_in['gbs']:.0f} % of "
              f"its GB/s alone, and a copy out while copying in {100 * both['copy_out_gbs'] / t_out['gbs']:.0f} %. "
              f"With both directions busy, the copies alone take {fmt_time(both['copies_s'])}, "
              f"{fmt_ratio(both['copies_s'] / g['ideal_s'], 2)} the ideal bound, and "
              f"{fmt_time(both['all_three_s'])} with the kernel beside them. Against that bound, "
              f"{fmt_time(bound)}, the best pipelined run ({fmt_time(best)}) reached "
              f"{100 * bound / best:.0f} %; against the ideal bound, {100 * g['ideal_s'] / best:.0f} %."
            + (f" Unless the two copies can finish sooner than when started together, no "
               f"arrangement of chunks and streams can bring the job closer to the ideal bound than "
               f"{100 * g['ideal_s'] / bound:.0f} % on this machine." if bound > g["ideal_s"] else ""))


@pages.renderer("profiling", "records")
def records(slug: str, data: dict) -> str:
    """Which host and which code made each of the chapter's two records on this machine."""
    if slug != results.reference_machine():
        raise NotRecorded(slug)
    lines = []
    for name, what in (("profiling", "streams, managed memory, the PyTorch profiler"),
                       ("profiles", "Nsight Compute")):
        rec = data.other(name)
        if not rec:
            continue
        m, code = rec["machine"], rec.get("code") or {}
        gpu = (m.get("gpu") or {}).get("name", "no GPU")
        cpu = m.get("cpu") or {}
        commit = (code.get("commit") or "unknown")[:7] + (" (modified)" if code.get("dirty") else "")
        lines.append(f"- `{name}.json` ({what}): {gpu}, host {cpu.get('model', '?')} with "
                     f"{cpu.get('usable_cpus', '?')} usable cores, {m.get('date', '')[:10]}, gpukit at "
                     f"{commit}.")
    if not lines:
        raise NotRecorded("records")
    return "\n".join(lines)


@pages.renderer("profiling", "sweep")
def sweep(slug: str, data: dict) -> str:
    g = _gpu(data)
    rows = [[s["chunks"], s["streams"], fmt_time(s["median_s"]), fmt_ratio(s["vs_ideal"], 2)]
            for s in g["sweep"]]
    return pages.collapsed("End to end at every chunk count",
                           table(["chunks", "streams", "end to end", "vs ideal bound"], rows))


@pages.renderer("profiling", "timeline")
def timeline(slug: str, data: dict) -> str:
    g = _gpu(data)
    t = g["timeline"]
    fig = diagrams.draw([(f"one stream, {len(t['serial']['bars']) // 3} chunks", t["serial"]["bars"]),
                         (f"{t['pipelined']['streams']} streams, {len(t['pipelined']['bars']) // 3} chunks",
                          t["pipelined"]["bars"])],
                        "ms after the start event", scale=1e3)
    return pages.svg(fig)


@pages.renderer("profiling", "managed")
def managed(slug: str, data: dict) -> str:
    g = _gpu(data)
    m = g["managed"]
    if "rows" not in m:
        raise NotRecorded("managed")
    pinned = next(r for r in g["rows"] if r["name"] == "serial, pinned")
    rows = []
    for r in m["rows"]:
        if "error" in r:
            rows.append([r["name"], "-", "-", "-", f"failed: {r['error']}"])
            continue
        rows.append([r["name"], fmt_time(r["in_and_kernel_s"]), fmt_time(r["back_s"]),
                     fmt_time(r["median_s"]), fmt_ratio(r["median_s"] / pinned["median_s"], 2)])
    same = "the same array" if m["n"] == g["n"] else f"the first {m['n']:,} elements"
    text = (f"On {same} ({fmt_num(m['bytes'] / 2**30, 2)} GiB):\n\n"
            + table(["managed memory", "data to GPU + kernel", "result back to host", "total",
                     "vs serial pinned copies"], rows))
    ok = {r["name"]: r for r in m["rows"] if "error" not in r}
    faults, pre = ok.get("managed, page faults"), ok.get("managed, prefetched")
    out = next((st for st in g["stages"] if st["name"] == "copy out, pinned"), None)
    if faults and pre:
        text += (f"\n\nPrefetching made the job {fmt_ratio(faults['median_s'] / pre['median_s'], 2)} faster; "
                 f"it still took {fmt_ratio(pre['median_s'] / pinned['median_s'], 2)} the serial job with "
                 "explicit copies from pinned memory.")
        if out and m["n"] == g["n"]:
            text += (f" Its way back (prefetch to the host, then the host's reads) took {fmt_time(pre['back_s'])}, "
                     f"against {fmt_time(out['median_s'])} for a pinned copy out of the same bytes.")
    return text


@pages.renderer("profiling", "baseline")
def baseline(slug: str, data: dict) -> str:
    if "gpu" in data:
        g = data["gpu"]
        b = g["cpu_baseline"]
        best = min((r for r in g["rows"] if r["pinned"]), key=lambda r: r["median_s"])
        rows = [[f"{b['name']}, {b['threads']} threads", f"{b['elements']:,}", fmt_time(b["median_s"]),
                 fmt_num(b["elements_per_s"] / 1e6)],
                [f"GPU, {best['name']} (copies included)", f"{g['n']:,}", fmt_time(best["median_s"]),
                 fmt_num(g["n"] / best["median_s"] / 1e6)]]
        head = f"Polynomial of degree {g['degree']}, float32:\n\n"
    else:
        p = data["cpu"]
        b = p["rows"][0]
        rows = [[f"{b['name']}, {b['threads']} threads", f"{b['elements']:,}", fmt_time(b["median_s"]),
                 fmt_num(b["elements_per_s"] / 1e6)]]
        head = (f"Polynomial of degree {p['degree']}, float32, on a small array (no GPU here; the "
                f"chunked schedule on the host stand-in gave "
                f"{'the same' if p['host_scheduler_equal'] else 'a DIFFERENT'} result as one chunk):\n\n")
    return head + table(["where", "elements", "time", "million elements/s"], rows)


def kernel_name(full: str, width: int = 48) -> str:
    """A kernel's demangled name without return type, template arguments and parameters."""
    name = full.replace("(anonymous namespace)::", "")
    name = name[5:] if name.startswith("void ") else name
    for stop in ("<", "("):
        if stop in name:
            name = name[:name.index(stop)]
    return name if len(name) <= width else name[:width - 3] + "..."


#: the names of the ranges opened around each phase of the training step (not kernels)
PHASES = ("step", "forward", "backward", "optimizer")


@pages.renderer("profiling", "torch")
def torch_view(slug: str, data: dict) -> str:
    t = _gpu(data)["torch"]
    if "error" in t:
        return f"The PyTorch profiler did not run here: `{t['error']}`"
    steps, span = t["steps"], t["span_us"]
    ranges = [k for k in t["kernels"] if k["name"] in PHASES]
    kernels = [k for k in t["kernels"] if k["name"] not in PHASES]
    seen: dict[str, int] = {}
    rows = []
    for k in kernels[:8]:
        name = kernel_name(k["name"])
        seen[name] = seen.get(name, 0) + 1
        shown = name if seen[name] == 1 else f"{name} (variant {seen[name]})"
        rows.append([f"`{shown}`", k["calls"], fmt_time(k["device_us"] / 1e6 / steps),
                     f"{100 * k['device_us'] / span:.1f} %"])
    text = (f"{steps} training steps, batch {t['batch']} of {t['image_size']}x{t['image_size']} images, "
            f"{fmt_time(span / 1e6 / steps)} per step.\n\n"
            + pages.collapsed("The kernels with the most GPU time",
                              table(["kernel (top by GPU time)", "calls", "GPU time per step",
                                     "share of the step"], rows)))
    if ranges:
        # the device events summed, less the ranges among them: the kernels' and copies' own time
        # (an upper bound: a range the record's top ten left out would still be in the sum)
        own = t["device_us"] - sum(k["device_us"] for k in ranges)
        names = ", ".join(f"`{k['name']}`" for k in ranges)
        text += (f"\n\nThe record's device events also hold the range {names} "
                 f"({fmt_time(sum(k['device_us'] for k in ranges) / 1e6 / steps)} per step): the profiler put "
                 "the range itself on the GPU's timeline. It is not a kernel and is left out of the table. "
                 f"The recorded union of device intervals covered {100 * t['busy']:.0f} % of the span, but it "
                 "includes that range, and so counts the gaps between the phase's kernels as busy. The kernels "
                 f"and copies themselves add up to at most **{100 * own / span:.0f} %** of the span: the GPU "
                 "was idle at least the rest of the time.")
    else:
        text += f"\n\nThe GPU was busy **{100 * t['busy']:.0f} %** of the profiled span."
    empty = [name for name, p in t.get("phases", {}).items() if name != "step" and not p.get("cpu_us")]
    if empty:
        text += (f"\n\nThe record's per-phase totals are not shown: the entries of "
                 f"{' and '.join(f'`{n}`' for n in empty)} hold no host time at all, which cannot be true of "
                 "a phase that launched kernels, so they do not measure what their names say.")
    return text


# ================================================================ profiles.json

def _profiles(data: dict) -> list[dict]:
    rows = data["gpu"]["rows"]
    if not rows:
        raise NotRecorded("rows")        # ncu was missing or refused: nothing measured
    return rows


#: the targets' names in the page's tables (their full labels are in the record)
SHORT = {"vector-add-numba": "vector add, numba", "vector-add-numba-x4": "vector add, numba, 4 loads",
         "vector-add-cupy-raw": "vector add, CuPy raw", "vector-add-cupy-elementwise": "vector add, CuPy elementwise",
         "matmul-warptile": "matmul warptile (CUDA C)", "ladder-softmax-numba": "softmax, numba (ladder)",
         "why-gpus-horner": "Horner, numba (why GPUs)",
         "why-gpus-horner-cuda-c": "Horner, CUDA C, 4 per thread"}


def _name(r: dict) -> str:
    return SHORT.get(r.get("name"), r["label"])


def _peak_tflops(data: pages.Record) -> float | None:
    """The FP32 peak (multiply-add) the why-GPUs chapter recorded for this machine."""
    why = data.other("why_gpus")
    gpu = (why or {}).get("hardware", {}).get("gpu") or {}
    return gpu.get("peak_tflops")


def _occupancy(r: dict) -> str:
    a, t = r["achieved_occupancy_pct"], r.get("theoretical_occupancy_pct")
    return "-" if a is None else f"{a:.0f} ({t:.0f})" if t is not None else f"{a:.0f}"


def _bare(v) -> str:
    return "-" if v is None else f"{v:.1f}"


@pages.renderer("profiles", "summary")
def summary(slug: str, data: dict) -> str:
    rows = []
    for r in _profiles(data):
        rows.append([_name(r), fmt_time(r["duration_s"]), _bare(r["dram_pct"]), _bare(r.get("memory_pct")),
                     _bare(r["sm_pct"]), _occupancy(r),
                     fmt_num(r.get("tflops"), 2) if r.get("tflops") else "-"])
    return table(["kernel", "duration", "DRAM %", "memory %", "SM %", "occupancy %", "TFLOP/s"], rows)


@pages.renderer("profiles", "settings")
def settings(slug: str, data: dict) -> str:
    """How Nsight Compute ran, and the kernels it could not profile."""
    _profiles(data)
    failed = data["gpu"]["failed"]
    note = ("\n\nNot profiled: " + "; ".join(f"{f['label']} ({f['error']})" for f in failed)) if failed else ""
    p = data["gpu"]
    return (f"Nsight Compute {p['ncu_version'] or ''}, sections {', '.join(p['sections'])}, clocks "
            f"left as they were (`--clock-control none`); the launch after {p['warmup_launches']} "
            "earlier ones. TFLOP/s are the FLOPs the work needs, counted from the code, over ncu's "
            "duration." + note)


@pages.renderer("profiles", "stalls")
def stalls(slug: str, data: dict) -> str:
    rows = []
    for r in _profiles(data):
        top = ", ".join(f"{s['reason'].replace('_', ' ')} {s['cycles_per_issue']:.1f}" for s in r["top_stalls"][:3])
        rows.append([_name(r), fmt_num(r["cycles_per_issue"], 1), top or "-",
                     fmt_num(r["bank_conflicts"]) if r["bank_conflicts"] is not None else "-"])
    return pages.collapsed("Stall reasons and bank conflicts, kernel by kernel",
                           table(["kernel", "cycles between a warp's instructions",
                                  "top stall reasons (cycles each)", "shared-memory bank conflicts"], rows))


#: of the 12 bytes per element a vector add moves, the share that is loaded (x and y; out is stored)
LOADED_SHARE = 8 / 12


def _dram_latency_ns(data: pages.Record) -> float | None:
    """The unloaded device-memory load latency the GPU-anatomy chapter measured (pointer chase)."""
    anatomy = data.other("gpu_anatomy")
    rows = (anatomy or {}).get("latency", {}).get("rows") or []
    row = next((r for r in rows if "device memory" in r["name"]), None)
    return row["latency_ns"] if row else None


@pages.renderer("profiles", "littles-law")
def littles_law(slug: str, data: dict) -> str:
    profiled = _profiles(data)
    gpu = data["machine"]["gpu"]
    slots = gpu["multiprocessors"] * gpu["max_threads_per_multiprocessor"]
    dram_ns = _dram_latency_ns(data)
    rows = []
    for r in profiled:
        if not r.get("in_flight_bytes_per_thread") or not r.get("achieved_occupancy_pct") or not r.get("dram_gbs"):
            continue
        threads = slots * r["achieved_occupancy_pct"] / 100
        flight = threads * r["in_flight_bytes_per_thread"]
        read_gbs = r["dram_gbs"] * LOADED_SHARE
        latency = flight / (read_gbs * 1e9)
        row = [_name(r), r["in_flight_bytes_per_thread"], f"{threads:,.0f}", f"{flight / 2**20:.1f} MiB",
               fmt_num(read_gbs), fmt_time(latency)]
        if dram_ns:
            row.append(fmt_ratio(latency / (dram_ns * 1e-9), 1))
        rows.append(row)
    if not rows:
        raise NotRecorded("littles-law")
    head = ["kernel", "latency it could absorb", "bytes loaded per thread before use",
            "resident threads", "bytes in flight, all waiting", "read GB/s"]
    rows = [[r[0], r[5], *r[1:5], *r[6:]] for r in rows]
    text = pages.collapsed("Bytes in flight, kernel by kernel",
                           table(head + (["vs one idle load"] if dram_ns else []), rows))
    if dram_ns:
        text += (f"\n\nOne load from device memory on an idle GPU took {dram_ns:,.0f} ns (a pointer chase in "
                 "the [GPU anatomy chapter](gpu-anatomy.md#why-a-gpu-needs-many-warps-littles-law)). "
                 "The last column is the latency each kernel could have absorbed at its measured bandwidth, "
                 "in units of that idle latency.")
    va = data.other("vector_add")
    va_rows = {r["name"]: r for r in ((va or {}).get("gpu", {}).get("rows") or [])}
    vec4, one = va_rows.get("CuPy RawKernel, float4 loads"), va_rows.get("CuPy RawKernel, 1 element/thread")
    if vec4 and one and vec4.get("gbs") and one.get("gbs"):
        text += (f"\n\nNot profiled here: the [vector-add chapter](vector-add.md)'s `float4` RawKernel, whose "
                 f"threads load 16 bytes per instruction, moved {fmt_num(vec4['gbs'])} GB/s there (timed with "
                 f"CUDA events) against {fmt_num(one['gbs'])} GB/s for the one-element RawKernel in the same run.")
    return text


@pages.renderer("profiles", "bytes")
def counted_bytes(slug: str, data: dict) -> str:
    rows = [[_name(r), fmt_num(r["counted_bytes"] / 1e6), fmt_num(r["dram_bytes"] / 1e6) if r["dram_bytes"] else "-",
             fmt_ratio(r["dram_bytes"] / r["counted_bytes"], 2) if r["dram_bytes"] else "-"]
            for r in _profiles(data)]
    rows = [[r[0], r[3], r[1], r[2]] for r in rows]
    return pages.collapsed("Bytes needed and bytes moved, kernel by kernel",
                           table(["kernel", "DRAM moved / needed", "MB needed (counted)",
                                  "MB DRAM moved (ncu)"], rows))


#: what each warp stall reason of Nsight Compute means, in a few words
STALL_MEANING = {
    "long_scoreboard": "a global or local memory load",
    "short_scoreboard": "shared memory or a special function (exp, sqrt)",
    "barrier": "a block barrier (syncthreads)",
    "mio_throttle": "room in the shared-memory / special-function queue",
    "lg_throttle": "room in the global/local memory queue",
    "math_pipe_throttle": "a busy arithmetic unit",
    "wait": "a fixed-latency dependency between instructions",
    "not_selected": "the scheduler (ready, but another ready warp was picked)",
    "selected": "nothing (issuing)",
    "dispatch_stall": "the dispatcher",
    "no_instruction": "instructions to be fetched (instruction cache)",
    "imc_miss": "the constant cache (a miss)",
    "branch_resolving": "a branch target",
    "drain": "stores to drain at exit",
    "membar": "a memory barrier",
    "sleeping": "a sleep",
    "tex_throttle": "room in the texture queue",
    "misc": "other reasons",
}


#: Nsight Compute's rule of thumb: below this share of both the compute and the memory peak
#: (``sm__throughput`` and ``gpu__compute_memory_throughput``), "typically latency issues"
LATENCY_BELOW_PCT = 60
#: and at or above this share of either, "high throughput": the unit is near its limit
HIGH_PCT = 80


@pages.renderer("profiles", "readings")
def readings(slug: str, data: dict) -> str:
    """Nsight Compute's rule of thumb applied to each kernel (below 60 % of both the busiest memory
    unit's and the multiprocessors' peak: latency), with the useful work it did next to it."""
    peak = _peak_tflops(data)
    lines = []
    for r in _profiles(data):
        mem = r.get("memory_pct") if r.get("memory_pct") is not None else r["dram_pct"]
        mem, sm, dram = mem or 0.0, r["sm_pct"] or 0.0, r["dram_pct"] or 0.0
        if mem < LATENCY_BELOW_PCT and sm < LATENCY_BELOW_PCT:
            verdict = (f"below {LATENCY_BELOW_PCT} % of both peaks (memory {mem:.0f} %, SM {sm:.0f} %): by "
                       "Nsight Compute's rule of thumb, limited by latency")
        elif mem >= sm:
            where = "DRAM" if abs(mem - dram) < 0.5 else "its busiest memory unit"
            side = "near the memory limit" if mem >= HIGH_PCT else "memory side busier"
            verdict = f"{side}: {where} at {mem:.0f} % of peak (SM {sm:.0f} %)"
        else:
            side = "near the multiprocessors' limit" if sm >= HIGH_PCT else "multiprocessors busier"
            verdict = f"{side}: SM at {sm:.0f} % of peak (memory {mem:.0f} %, DRAM {dram:.0f} %)"
        useful = ""
        if sm > mem and r.get("tflops") and peak:
            useful = f"; its counted FLOPs ran at {100 * r['tflops'] / peak:.1f} % of the FP32 peak"
        elif r.get("counted_gbs"):
            useful = f"; the bytes its work needs moved at {fmt_num(r['counted_gbs'])} GB/s"
        stall = r["top_stalls"][0] if r["top_stalls"] else None
        why = (f"; its warps waited most for *{STALL_MEANING.get(stall['reason'], stall['reason'])}* "
               f"({stall['cycles_per_issue']:.1f} cycles per instruction issued)" if stall else "")
        lines.append(f"- **{_name(r)}**: {verdict}{useful}{why}.")
    return pages.collapsed(f"The reading of each of the {len(lines)} kernels", "\n".join(lines))


def _row(data: dict, name: str) -> dict:
    r = next((r for r in _profiles(data) if r["name"] == name), None)
    if r is None:
        raise NotRecorded(name)
    return r


def _stalls(r: dict, count: int = 2) -> str:
    shown = [s for s in r["top_stalls"] if s["reason"] != "selected"][:count]
    return " and ".join(f"*{s['reason'].replace('_', ' ')}* ({s['cycles_per_issue']:.1f})" for s in shown)


@pages.renderer("profiles", "matmul")
def matmul_reading(slug: str, data: dict) -> str:
    """The warptile matmul: what sets its occupancy, and what its stalls and bank conflicts say."""
    r = _row(data, "matmul-warptile")
    gpu = data["machine"]["gpu"]
    regs, block = int(r["registers_per_thread"]), int(r["block_size"])
    per_block = regs * block
    fit = gpu["registers_per_multiprocessor"] // per_block
    warps = fit * block // gpu["warp_size"]
    shared = int(r["shared_per_block_bytes"] or 0)
    # compute capability 8.0 and later reserve 1 KiB of shared memory per block for the system
    by_shared = gpu["shared_memory_per_multiprocessor_bytes"] // (shared + 1024) if shared else None
    peak = _peak_tflops(data)
    lines = [
        f"- **Occupancy.** {regs} registers per thread x {block} threads = {per_block:,} registers per block; "
        f"{fmt_num(gpu['registers_per_multiprocessor'])} per multiprocessor hold {fit} blocks, {warps} warps of "
        f"{gpu['max_warps_per_multiprocessor']}: {100 * warps / gpu['max_warps_per_multiprocessor']:.0f} %, the "
        f"theoretical occupancy ncu reports ({r['theoretical_occupancy_pct']:.0f} %; achieved "
        f"{r['achieved_occupancy_pct']:.0f} %)."
        + (f" Its {shared // 1024} KiB of shared memory per block would allow {by_shared}: the registers set the "
           "limit." if by_shared and by_shared > fit else ""),
        f"- **Few warps, yet busy.** A warp issued an instruction every {r['cycles_per_issue']:.1f} cycles on "
        f"average; the schedulers issued in {r['issue_active_pct']:.0f} % of cycles, and the largest stall "
        f"reasons are {_stalls(r)}: with {warps} warps per multiprocessor, there was mostly a ready warp. "
        f"SM {r['sm_pct']:.0f} % of peak, its busiest memory unit {r['memory_pct']:.0f} %, DRAM "
        f"{r['dram_pct']:.0f} %"
        + (f"; its counted FLOPs ran at {fmt_num(r['tflops'], 1)} TFLOP/s, {100 * r['tflops'] / peak:.0f} % of the "
           "FP32 peak." if peak and r.get("tflops") else "."),
        f"- **Bank conflicts.** ncu counted {fmt_num(r['bank_conflicts'])} shared-memory bank conflicts in the "
        f"launch, yet neither *short scoreboard* nor *mio throttle* (the waits for shared memory) is among "
        f"its top {len(r['top_stalls'])} stall reasons. " + _shared_accesses(r).rstrip(),
    ]
    return "\n".join(lines)


def _family(r: dict, name: str) -> float | None:
    """Warp instructions of one opcode family the kernel executed, from its SASS mix; None where
    the record has no mix or the family is not among its named families."""
    s = r.get("sass") or {}
    share = next((v for f, v in s.get("mix") or [] if f == name), None)
    return share * s["instructions"] if share is not None and s.get("instructions") else None


def _shared_accesses(r: dict) -> str:
    lds, sts = _family(r, "LDS"), _family(r, "STS")
    if lds is None or sts is None or r.get("bank_conflicts") is None:
        return "The record keeps no count of shared-memory accesses to set the conflicts against. "
    count = lds + sts                   # the conflicts counted are those of loads and stores
    return (f"Against the {fmt_num(count)} warp-wide shared-memory loads and stores it executed (`LDS` and "
            f"`STS` in its SASS), that is {fmt_num(r['bank_conflicts'] / count, 2)} conflicts per instruction. ")


@pages.renderer("profiles", "horner")
def horner_reading(slug: str, data: dict) -> str:
    """numba's Horner loop: its multiprocessors are busy, but little of their work is the counted
    multiply-adds; and what the why-GPUs chapter's CUDA C kernel reached on the same work."""
    r = _row(data, "why-gpus-horner")
    peak = _peak_tflops(data)
    text = (f"numba's Horner kernel: SM **{r['sm_pct']:.1f} %** of peak, DRAM {r['dram_pct']:.1f} %, achieved "
            f"occupancy {r['achieved_occupancy_pct']:.0f} %; the schedulers issued an instruction in "
            f"{r['issue_active_pct']:.0f} % of cycles, a warp every {r['cycles_per_issue']:.1f} cycles, and its "
            f"largest stall reasons are {_stalls(r)} (cycles per instruction issued). "
            f"Its counted multiply-adds ran at {fmt_num(r['tflops'], 2)} TFLOP/s"
            + (f", {100 * r['tflops'] / peak:.1f} % of the FP32 peak of {fmt_num(peak, 1)} TFLOP/s." if peak else "."))
    text += _executed(r)
    why = data.other("why_gpus")
    pk = (why or {}).get("poly_kernels") or {}
    rows = pk.get("rows") or []
    numba = next((x for x in rows if x.get("elems") is None), None)
    best = max((x for x in rows if x.get("elems")), key=lambda x: x["tflops"], default=None)
    if numba and numba.get("ptx", {}).get("fma"):
        ptx = numba["ptx"]
        text += (f" Its PTX, counted in the why-GPUs chapter, holds {ptx['fma']} multiply-adds and "
                 f"{ptx['const_loads']} loads from constant memory"
                 + (": a load for every multiply-add." if ptx["fma"] == ptx["const_loads"] else "."))
    if best:
        text += (f"\n\nThe fix is the [why-GPUs chapter's CUDA C kernel](why-gpus.md#predicting-the-ratio-from-the-hardware) "
                 f"(unrolled, the coefficients as operands, {best['elems']} elements per thread): "
                 f"**{fmt_num(best['tflops'], 1)} TFLOP/s** on the same polynomial there"
                 + (f" ({best['pct_of_peak']:.0f} % of the FP32 peak)" if best.get("pct_of_peak") else "")
                 + ", timed with CUDA events on its own arrays of "
                 f"{pk['n']:,} elements. "
                 + ("Its profile is in the table below." if _has(data, "why-gpus-horner-cuda-c")
                    else "That kernel was not profiled in this record."))
    return text


def _executed(r: dict) -> str:
    """What the kernel's instructions were and which pipe they kept busy, where the record has it."""
    s, text = r.get("sass") or {}, ""
    if s.get("mix") and s.get("ffma_share") is not None:
        named = [(f, v) for f, v in s["mix"] if f != "other"][:4]
        text += (f" Of the {fmt_num(s['instructions'])} warp instructions it executed, **{_share(s['ffma_share'])}** "
                 "were the multiply-adds (`FFMA`); its largest families were "
                 + ", ".join(f"`{f}` {100 * v:.0f} %" for f, v in named) + ".")
    if r.get("pipes"):
        (pipe, pct), *_ = r["pipes"].items()
        text += f" Its busiest execution pipe was the **{pipe.upper()}** pipe, at {pct:.0f} % of its peak."
    return text


def _has(data: dict, name: str) -> bool:
    return any(r["name"] == name for r in _profiles(data))


def _top_stall(r: dict) -> str:
    s = next((s for s in r.get("top_stalls") or [] if s["reason"] != "selected"), None)
    return "-" if s is None else f"{s['reason'].replace('_', ' ')} ({s['cycles_per_issue']:.1f})"


def _busiest_pipe(r: dict, count: int = 1) -> str:
    pipes = list((r.get("pipes") or {}).items())[:count]
    return ", ".join(f"{p.upper()} {v:.0f} %" for p, v in pipes) or "-"


def _share(v) -> str:
    return "-" if v is None else f"{100 * v:.1f} %"


#: the two Horner kernels, before and after the fix, and their names as columns
HORNER = ("why-gpus-horner", "why-gpus-horner-cuda-c")
HORNER_SHORT = {"why-gpus-horner": "numba loop", "why-gpus-horner-cuda-c": "CUDA C, 4 per thread"}


@pages.renderer("profiles", "horner-fix")
def horner_fix(slug: str, data: dict) -> str:
    """numba's Horner loop next to the CUDA C kernel that fixes it: time, useful FLOPs, how much of
    what the multiprocessors executed was the multiply-adds, and what the warps waited for."""
    found = {r["name"]: r for r in _profiles(data) if r["name"] in HORNER}
    if HORNER[0] not in found:
        raise NotRecorded(HORNER[0])
    peak = _peak_tflops(data)
    shown = [found[n] for n in HORNER if n in found]
    # one column per kernel: before and after side by side, narrow enough for a phone
    cells = {"time (ncu)": lambda r: fmt_time(r["duration_s"]),
             "TFLOP/s": lambda r: fmt_num(r.get("tflops"), 2) if r.get("tflops") else "-",
             "of FP32 peak": lambda r: f"{100 * r['tflops'] / peak:.1f} %" if peak and r.get("tflops") else "-",
             "SM % of peak": lambda r: _bare(r["sm_pct"]),
             "FFMA share": lambda r: _share((r.get("sass") or {}).get("ffma_share")),
             "busiest pipe": _busiest_pipe,
             "top stall": _top_stall}
    rows = [[what] + [fn(r) for r in shown] for what, fn in cells.items()]
    return table([""] + [HORNER_SHORT[r["name"]] for r in shown], rows)


@pages.renderer("profiles", "horner-change")
def horner_change(slug: str, data: dict) -> str:
    """What changed from numba's Horner loop to the CUDA C kernel: time and instructions."""
    found = {r["name"]: r for r in _profiles(data) if r["name"] in HORNER}
    if HORNER[0] not in found:
        raise NotRecorded(HORNER[0])
    before, after = found[HORNER[0]], found.get(HORNER[1])
    if after is None:
        return ("The CUDA C kernel is not in this record: `gpukit profile why-gpus-horner-cuda-c` "
                "profiles it.")
    lines = []
    if before["n"] == after["n"] and before.get("duration_s") and after.get("duration_s"):
        lines.append(f"On the same {before['n']:,} elements, the CUDA C kernel took "
                     f"{fmt_ratio(after['duration_s'] / before['duration_s'], 3)} numba's time "
                     f"({fmt_ratio(before['duration_s'] / after['duration_s'], 1)} faster).")
    sb, sa = before.get("sass") or {}, after.get("sass") or {}
    if sb.get("instructions") and sa.get("instructions"):
        lines.append(f"It executed {fmt_num(sa['instructions'])} warp instructions against numba's "
                     f"{fmt_num(sb['instructions'])}: {fmt_ratio(sb['instructions'] / sa['instructions'], 1)} "
                     "fewer for the same polynomial on the same elements.")
    lc, ff = _family(before, "LDC"), _family(before, "FFMA")
    if lc and ff:
        lines.append(f"numba's kernel executed {fmt_num(lc / ff, 2)} constant loads (`LDC`) per multiply-add "
                     "(`FFMA`).")
    if not lines:
        return "The record holds neither the two kernels' times on the same elements nor their instructions."
    return "\n".join(f"- {x}" for x in lines)


def _no_sass(data: dict) -> str:
    errors = {r.get("sass_error") for r in _profiles(data) if r.get("sass_error")}
    why = f" (ncu: {'; '.join(sorted(errors))})" if errors else ""
    return ("This record holds no instruction statistics: it was made before the source page was read, or "
            f"ncu could not print it{why}. `gpukit bench profiles --save` records them.")


@pages.renderer("profiles", "mix")
def instruction_mix(slug: str, data: dict) -> str:
    """What each kernel executed: its opcode families by share of the warp instructions, and the
    pipes that executed them."""
    rows = []
    for r in _profiles(data):
        s = r.get("sass") or {}
        if not s.get("mix"):
            continue
        ffma = s.get("ffma_share")
        first = [f"**FFMA {100 * ffma:.1f}**"] if ffma is not None else []
        fams = ", ".join(first + [f"{f} {100 * v:.0f}" for f, v in s["mix"]
                                  if f not in ("other", "FFMA") and v >= 0.005])
        rows.append([f"{_name(r)} ({fmt_num(s['instructions'] / 1e6)} M)", fams or "-", _busiest_pipe(r, 3)])
    if not rows:
        return _no_sass(data)
    return pages.collapsed("Instruction mix and busiest pipes, kernel by kernel", table(
        ["kernel (warp instructions)", "families, % of instructions", "busiest pipes, % of peak"],
        rows, align="lll")
            + "\n\nM: millions of warp instructions executed. A family is the SASS mnemonic without its modifiers "
              "(`FFMA.FTZ` counts as `FFMA`); families under 0.5 % of the instructions are left out. Pipes: the "
              "instructions each execution pipe executed, in % of its peak (Nsight Compute's compute workload "
              "analysis).")


#: how many of the hottest instructions the SASS view shows, for matmul and for the others
HOT_MATMUL, HOT_OTHER = 5, 3


@pages.renderer("profiles", "sass")
def hot_sass(slug: str, data: dict) -> str:
    """The source view as SASS: the instructions where the sampled warps were found most often,
    and why they were waiting there; matmul first, then the two Horner kernels."""
    order = ["matmul-warptile", *HORNER]
    blocks = []
    for r in sorted((r for r in _profiles(data) if r["name"] in order), key=lambda r: order.index(r["name"])):
        s = r.get("sass") or {}
        if not s.get("hot"):
            continue
        count = HOT_MATMUL if r["name"] == "matmul-warptile" else HOT_OTHER
        warps = (r["grid_size"] * r["block_size"] / 32 if r.get("grid_size") and r.get("block_size")
                 else None)
        rows = [[f"{h['offset']:#06x}", f"`{h['sass']}`",
                 fmt_num(h["executed"] / warps, 0 if h["executed"] % warps == 0 else 2) if warps else "-",
                 _share(h["share"]),
                 "-" if not h.get("reason") else f"{h['reason'].replace('_', ' ')} ({100 * h['reason_share']:.0f} %)"]
                for h in s["hot"][:count]]
        top = sum(h["share"] for h in s["hot"][:count])
        blocks.append(f"**{_name(r)}**: {fmt_num(s['samples'])} warp samples over {s['lines']:,} SASS "
                      f"instructions; these {len(rows)} hold {_share(top)} of them.\n\n"
                      + table(["offset", "SASS", "per warp", "samples", "top reason"], rows, align="llrrl"))
    if not blocks:
        return _no_sass(data)
    return pages.collapsed("The hottest SASS instructions of each kernel", "\n\n".join(blocks) + "\n\nOffset: bytes from the kernel's first instruction. Per warp: how often "
            "each warp executed the instruction, on average. Samples: the instruction's share of the kernel's warp "
            "samples. Top reason: the state most of its samples found the warp in, with its share of them.")
