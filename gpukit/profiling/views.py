"""The chapter's tables and plots, from ``profiling.json`` (streams, managed memory, the PyTorch
profiler) and ``profiles.json`` (Nsight Compute's metrics of six kernels)."""

from __future__ import annotations

from .. import pages
from ..pages import NotRecorded, fmt_num, fmt_ratio, fmt_time, table
from . import diagrams

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


@pages.renderer("profiling", "runs")
def runs(slug: str, data: dict) -> str:
    g = _gpu(data)
    serial = next(r for r in g["rows"] if r["name"] == "serial, pinned")
    rows = [[r["name"], fmt_time(r["median_s"]), fmt_ratio(r["vs_ideal"], 2),
             fmt_ratio(serial["median_s"] / r["median_s"], 2)] for r in g["rows"]]
    check = ("equal to the serial result, bit for bit" if g["pipelined_equals_serial"]
             else "DIFFERENT from the serial result")
    return (table(["whole job (copy in, kernel, copy out)", "end to end", "vs ideal bound",
                   "speed-up vs serial pinned"], rows)
            + f"\n\nMedian of host-clock times from issuing the first copy to the end of the last; "
              f"every run checked before timing: largest relative error {g['max_rel_err']:.1e} against "
              f"float64, pipelined output {check}.")


@pages.renderer("profiling", "sweep")
def sweep(slug: str, data: dict) -> str:
    g = _gpu(data)
    rows = [[s["chunks"], s["streams"], fmt_time(s["median_s"]), fmt_ratio(s["vs_ideal"], 2)]
            for s in g["sweep"]]
    return table(["chunks", "streams", "end to end", "vs ideal bound"], rows)


@pages.renderer("profiling", "timeline")
def timeline(slug: str, data: dict) -> str:
    g = _gpu(data)
    t = g["timeline"]
    fig = diagrams.draw([(f"one stream, {len(t['serial']['bars']) // 3} chunks, pinned", t["serial"]["bars"]),
                         (f"{t['pipelined']['streams']} streams, {len(t['pipelined']['bars']) // 3} chunks, "
                          "pinned", t["pipelined"]["bars"])],
                        f"ms after the start event ({pages.plot_title(data)})", scale=1e3)
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
    return (f"On {same} ({fmt_num(m['bytes'] / 2**30, 2)} GiB):\n\n"
            + table(["managed memory", "data to GPU + kernel", "result back to host", "total",
                     "vs serial pinned copies"], rows))


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


@pages.renderer("profiling", "torch")
def torch_view(slug: str, data: dict) -> str:
    t = _gpu(data)["torch"]
    if "error" in t:
        return f"The PyTorch profiler did not run here: `{t['error']}`"
    rows = [[f"`{k['name'][:70]}`", k["calls"], fmt_time(k["device_us"] / 1e6 / t["steps"]),
             f"{100 * k['share']:.1f} %", f"{100 * k['device_us'] / t['span_us']:.1f} %"]
            for k in t["kernels"][:8]]
    phases = [[name, fmt_time(p["cpu_us"] / 1e6 / t["steps"]), fmt_time(p["device_us"] / 1e6 / t["steps"])]
              for name, p in t["phases"].items() if name != "step"]
    return (f"{t['steps']} training steps, batch {t['batch']} of {t['image_size']}x{t['image_size']} "
            f"images, {t['kernel_count'] // t['steps']} GPU operations per step. The GPU was busy "
            f"**{100 * t['busy']:.0f} %** of the profiled span ({fmt_time(t['span_us'] / 1e6 / t['steps'])} "
            f"per step).\n\n"
            + table(["kernel (top by GPU time)", "calls", "GPU time per step", "share of GPU time",
                     "share of the step"], rows)
            + "\n\n" + table(["phase (record_function / NVTX range)", "host time per step",
                              "GPU time per step"], phases))


# ================================================================ profiles.json

def _profiles(data: dict) -> list[dict]:
    rows = data["gpu"]["rows"]
    if not rows:
        raise NotRecorded("rows")        # ncu was missing or refused: nothing measured
    return rows


def _pct(v) -> str:
    return "-" if v is None else f"{v:.1f} %"


@pages.renderer("profiles", "summary")
def summary(slug: str, data: dict) -> str:
    rows = []
    for r in _profiles(data):
        rows.append([r["label"], fmt_time(r["duration_s"]), fmt_num(r["dram_gbs"]), _pct(r["dram_pct"]),
                     _pct(r["sm_pct"]), _pct(r["achieved_occupancy_pct"]),
                     fmt_num(r["registers_per_thread"]), fmt_num(r.get("tflops"), 2) if r.get("tflops") else "-",
                     (r["top_stalls"][0]["reason"].replace("_", " ") if r["top_stalls"] else "-")])
    failed = data["gpu"]["failed"]
    note = ("\n\nNot profiled: " + "; ".join(f"{f['label']} ({f['error']})" for f in failed)) if failed else ""
    p = data["gpu"]
    return (table(["kernel", "duration", "DRAM GB/s", "DRAM % of peak", "SM % of peak",
                   "achieved occupancy", "registers / thread", "TFLOP/s (counted)", "top warp stall"], rows)
            + f"\n\nNsight Compute {p['ncu_version'] or ''}, sections {', '.join(p['sections'])}, clocks "
              f"left as they were (`--clock-control none`); the launch after {p['warmup_launches']} "
              f"earlier ones." + note)


@pages.renderer("profiles", "stalls")
def stalls(slug: str, data: dict) -> str:
    rows = []
    for r in _profiles(data):
        top = ", ".join(f"{s['reason'].replace('_', ' ')} {s['cycles_per_issue']:.1f}" for s in r["top_stalls"][:3])
        rows.append([r["label"], fmt_num(r["cycles_per_issue"], 1), top or "-",
                     fmt_num(r["bank_conflicts"]) if r["bank_conflicts"] is not None else "-"])
    return table(["kernel", "cycles between a warp's instructions", "top stall reasons (cycles each)",
                  "shared-memory bank conflicts"], rows)


@pages.renderer("profiles", "littles-law")
def littles_law(slug: str, data: dict) -> str:
    profiled = _profiles(data)
    gpu = data["machine"]["gpu"]
    slots = gpu["multiprocessors"] * gpu["max_threads_per_multiprocessor"]
    rows = []
    for r in profiled:
        if not r.get("in_flight_bytes_per_thread") or not r.get("achieved_occupancy_pct") or not r.get("dram_gbs"):
            continue
        threads = slots * r["achieved_occupancy_pct"] / 100
        flight = threads * r["in_flight_bytes_per_thread"]
        latency = flight / (r["dram_gbs"] * 1e9)
        rows.append([r["label"], r["in_flight_bytes_per_thread"], f"{threads:,.0f}",
                     f"{flight / 2**20:.1f} MiB", fmt_num(r["dram_gbs"]), fmt_time(latency)])
    if not rows:
        raise NotRecorded("littles-law")
    return table(["kernel", "bytes a thread loads before using them", "resident threads (achieved)",
                  "bytes in flight if all wait at once", "DRAM GB/s (measured)",
                  "latency that would explain it"], rows)


@pages.renderer("profiles", "bytes")
def counted_bytes(slug: str, data: dict) -> str:
    rows = [[r["label"], fmt_num(r["counted_bytes"] / 1e6), fmt_num(r["dram_bytes"] / 1e6) if r["dram_bytes"] else "-",
             fmt_ratio(r["dram_bytes"] / r["counted_bytes"], 2) if r["dram_bytes"] else "-"]
            for r in _profiles(data)]
    return table(["kernel", "MB the work needs (counted)", "MB DRAM moved (ncu)", "ratio"], rows)


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


@pages.renderer("profiles", "readings")
def readings(slug: str, data: dict) -> str:
    """Nsight Compute's rule of thumb applied to each kernel: below 60 % of both the memory and
    the compute peak, a kernel is limited by latency; and what its warps waited for most."""
    lines = []
    for r in _profiles(data):
        dram, sm = r["dram_pct"] or 0.0, r["sm_pct"] or 0.0
        if dram >= 60 and dram >= sm:
            verdict = f"near the memory limit (DRAM {dram:.0f} % of peak)"
        elif sm >= 60:
            verdict = f"near the multiprocessors' limit (SM {sm:.0f} % of peak)"
        else:
            verdict = (f"below 60 % of both peaks (DRAM {dram:.0f} %, SM {sm:.0f} %): by Nsight "
                       "Compute's rule of thumb, limited by latency")
        stall = r["top_stalls"][0] if r["top_stalls"] else None
        why = (f"; its warps waited most for *{STALL_MEANING.get(stall['reason'], stall['reason'])}* "
               f"({stall['cycles_per_issue']:.1f} cycles per instruction issued)" if stall else "")
        lines.append(f"- **{r['label']}**: {verdict}{why}.")
    return "\n".join(lines)
