"""The chapter's tables and plots, drawn from its results files."""

from __future__ import annotations

from .. import pages, results
from ..pages import fmt_num, fmt_ratio, fmt_time, table


# ------------------------------------------------------------------ tables for the chapter

def _rows(data: dict) -> tuple[str, dict]:
    part = "gpu" if "gpu" in data else "cpu"
    return part, data[part]


def _label(r: dict) -> str:
    return f"`{r['backend']}`" + (" with FMA" if r.get("contract") else "")


def _plain_f64(p: dict) -> list[dict]:
    """The float64 rows of the main table: no FMA, the output allocated by each call."""
    return [r for r in p["rows"] if r["dtype"] == "float64" and not r.get("contract")
            and not r.get("preallocate")]


@pages.renderer("mandelbrot", "table")
def speed(slug: str, data: dict) -> str:
    part, p = _rows(data)
    rows = []
    for r in _plain_f64(p):
        if "error" in r:
            rows.append([_label(r), f"failed: {r['error']}", "-", "-", "-", "-", "-"])
            continue
        side = int(r["pixels"] ** 0.5)
        name = _label(r) + (f" ({side}²)" if side != p["size"] else "")
        rows.append([name, fmt_ratio(r.get("vs_simd"), 2), fmt_time(r["median_s"]),
                     fmt_time(r["first_call_s"]), fmt_num(r["mpixels_per_s"], 1),
                     fmt_ratio(r.get("vs_1core"), 1), fmt_ratio(r.get("vs_all_cores"), 2)])
    m = data["machine"]
    where = m["gpu"]["name"] + " + " if m.get("gpu") else ""
    same = all(r.get("differing_pixels") == 0 for r in _plain_f64(p) if "error" not in r)
    head = (f"**{where}{m['cpu']['model']} ({m['cpu']['usable_cpus']} cores)**, "
            f"{p['size']} x {p['size']} pixels, {p['max_iter']} iterations, float64"
            + ("; every image identical to the reference" if same else "") + "\n\n")
    body = table(["backend", "vs CPU SIMD", "steady state", "first call", "Mpixel/s",
                  "vs 1 core", "vs CPU scalar"], rows)
    if not same:
        body += "\n\n" + table(["backend", "pixels differing from the reference"],
                                 [[_label(r), f"{r['differing_pixels']:,}"] for r in _plain_f64(p)
                                  if "error" not in r], "lr")
    return head + body


@pages.renderer("mandelbrot", "precision")
def precision(slug: str, data: dict) -> str:
    _, p = _rows(data)
    rows = [[_label(r), r["dtype"], fmt_time(r["median_s"]), fmt_num(r["mpixels_per_s"], 1),
             f"{r['differing_pixels']:,} ({100 * r['differing_fraction']:.3f} %)"]
            for r in p["rows"] if "median_s" in r and r["backend"] not in ("numpy", "numba-cpu-1core")
            and not r.get("preallocate")]
    return table(["backend", "dtype", "steady state", "Mpixel/s", "pixels differing from float64"], rows)


def _alone(p: dict) -> dict:
    """The kernel-alone rows (output allocated once), by (backend, dtype, counter). numba rows
    recorded before the counter option existed ran the 64-bit counter kernels."""
    found = {}
    for r in p["rows"]:
        if r.get("preallocate") and "median_s" in r:
            counter = r.get("counter", "int64") if r["backend"] == "numba-cuda" else None
            found[r["backend"], r["dtype"], counter] = r
    return found


@pages.renderer("mandelbrot", "kernels")
def kernels(slug: str, data: dict) -> str:
    """numba against CuPy on the same kernel, the output allocated once outside the timing:
    numba's earlier kernels (64-bit counter) and the current ones (32-bit counter)."""
    _, p = _rows(data)
    alone = _alone(p)
    if not alone:
        raise pages.NotRecorded("kernels")
    rows = []
    for dtype in ("float32", "float64"):
        cp = alone.get(("cupy", dtype, None))
        for counter, label in (("int64", "64-bit"), ("int32", "32-bit")):
            nb = alone.get(("numba-cuda", dtype, counter))
            if nb and cp:
                rows.append([f"{dtype}, {label} counter", fmt_ratio(nb["median_s"] / cp["median_s"], 2),
                             fmt_time(nb["median_s"]), fmt_time(cp["median_s"]),
                             fmt_time(nb["host_median_s"]), fmt_time(cp["host_median_s"])])
    return table(["numba kernel", "numba / CuPy", "numba", "CuPy", "numba host / call",
                  "CuPy host / call"], rows, "lrrrrr")


def kernel_ratio(p: dict, dtype: str = "float32") -> float | None:
    """numba's current kernel time over CuPy's, output allocated once (None: not recorded)."""
    alone = _alone(p)
    nb, cp = alone.get(("numba-cuda", dtype, "int32")), alone.get(("cupy", dtype, None))
    return nb["median_s"] / cp["median_s"] if nb and cp else None


def _dispatch(c: dict) -> str:
    return c.get("dispatch", "numba")


def _ms(seconds) -> str:
    return "-" if seconds is None else fmt_time(seconds)


@pages.renderer("mandelbrot", "cache")
def cache(slug: str, data: dict) -> str:
    _, p = _rows(data)
    if not p.get("cache"):
        raise pages.NotRecorded("cache")  # no GPU experiment on this machine
    rows = [[c["case"].split(" (")[0], fmt_time(c["first_call_s"]), _ms(c.get("first_call_gc_s")),
             fmt_time(c["import_s"]), fmt_time(c["context_s"]), fmt_time(c.get("numba_init_s")),
             fmt_time(c["median_s"])]
            for c in p["cache"] if "median_s" in c and "first_call_profile" not in c]
    return table(["fresh process", "first call of this kernel", "of it, garbage collection",
                  "import", "GPU context", "numba's first kernel call", "steady state"], rows)


def warm_first_calls(p: dict, dispatch: str) -> list[float]:
    """First calls of the warm-cache processes (not profiled) that found the kernel ``dispatch``'s
    way, in the order they ran."""
    return [c["first_call_s"] for c in p.get("cache", []) if c["case"].startswith("warm")
            and "first_call_profile" not in c and "first_call_s" in c and _dispatch(c) == dispatch]


@pages.renderer("mandelbrot", "first_call_profile")
def first_call_profile(slug: str, data: dict) -> str:
    _, p = _rows(data)
    profiled = [c for c in p.get("cache", []) if "first_call_profile" in c]
    if not profiled:
        raise pages.NotRecorded("first_call_profile")
    parts = []
    for c in profiled:
        prof = c["first_call_profile"]
        rows = [[f"`{r['function'].replace('numba_cuda/numba/cuda/', '')}`", f"{r['calls']:,}",
                 fmt_time(r["cumulative_s"]), fmt_time(r["own_s"])] for r in prof["cumulative"]]
        body = (f"{fmt_time(prof['wall_s'])} in all (the profiler adds its own overhead); the "
                "functions it spent the most time in, each with its callees, outermost first "
                "(numba-cuda's files under `numba_cuda/numba/cuda/`):\n\n"
                + table(["function", "calls", "with callees", "in itself"], rows, "lrrr"))
        way = ("numba's dispatcher" if _dispatch(c) == "numba"
               else "argument types named once")
        text = (_typing_share(prof) + _collected(c)).strip()
        parts.append((text + "\n\n" if text else "")
                     + pages.collapsed(f"The profile of the first call, warm cache, {way}", body))
    return "\n\n".join(parts)


def _collected(c: dict) -> str:
    """What Python's garbage collector took of a profiled first call (where recorded)."""
    full = c.get("first_call_full_gc_s")
    if full is None:
        return ""
    if not full:
        return " No full garbage collection ran during that call."
    return (f" A full garbage collection ran during that call and took {fmt_time(full)} of it: "
            f"Python visited every one of the process's {c['gc_objects']:,} tracked objects.")


def _typing_share(prof: dict) -> str:
    typing = max((r["cumulative_s"] for r in prof["cumulative"] if r["function"].endswith("(typeof)")), default=None)
    if typing is None:
        return ""
    return (f"\n\nOf the {fmt_time(prof['wall_s'])}, {fmt_time(typing)} ({100 * typing / prof['wall_s']:.0f} %) "
            "went to `typeof`: numba working out the types of the call's arguments to find the "
            "compiled kernel, before anything was loaded.")


def _f64_lanes(machine: dict) -> int:
    """float64 lanes of the widest multiply the CPU offers (from its SIMD flags)."""
    flags = set(machine["cpu"].get("simd") or [])
    return 8 if "avx512f" in flags else 4 if "avx" in flags else 2


def lane_share(counts: dict, machine: dict) -> float | None:
    """The most float64 lanes a loop's multiplies can fill on average, as a share of the
    CPU's widest register: packed multiplies not on 512-bit registers count as 256-bit
    (4 lanes), scalar ones as 1 lane. Counted in the code, not while it ran."""
    total = counts["packed_mul"] + counts["scalar_mul"]
    if not total:
        return None
    wide = counts["packed_mul_512"]
    lanes = wide * 8 + (counts["packed_mul"] - wide) * 4 + counts["scalar_mul"]
    return lanes / total / _f64_lanes(machine)


@pages.renderer("mandelbrot", "simd")
def simd(slug: str, data: dict) -> str:
    _, p = _rows(data)
    if "simd" not in p:
        raise pages.NotRecorded("simd")
    lanes = _f64_lanes(data["machine"])
    rows = []
    for name, v in p["simd"].items():
        share = lane_share(v, data["machine"])
        rows.append([f"`{name}`", "-" if share is None else f"{100 * share:.0f} %",
                     str(v["packed_mul"]), str(v["packed_mul_512"]), str(v["scalar_mul"])])
    return (f"What LLVM compiled the two all-cores loops to on {data['machine']['cpu']['model']} "
            f"(float64 multiplies counted in the machine code; the CPU's widest register holds "
            f"{lanes} float64 lanes):\n\n"
            + table(["loop", "lanes filled, at most", "SIMD", "of them 512-bit", "scalar"],
                    rows, "lrrrr"))


@pages.renderer("mandelbrot", "simd_caveat")
def simd_caveat(slug: str, data: dict) -> str:
    """The SIMD loop's lane share, next to the GPU's lead over it (reference machine)."""
    _, p = _rows(data)
    if "simd" not in p or "numba-cpu-simd" not in p["simd"] or "gpu" not in data:
        raise pages.NotRecorded("simd")
    share = lane_share(p["simd"]["numba-cpu-simd"], data["machine"])
    best = max((r for r in _plain_f64(p) if "vs_simd" in r), key=lambda r: r["vs_simd"])
    if share is None:
        raise pages.NotRecorded("simd")
    return (f"The GPU's {fmt_ratio(best['vs_simd'], 0)} lead is over a CPU loop that fills at most "
            f"{100 * share:.0f} % of its multiply lanes; a loop filling all of them could do up to "
            f"{fmt_num(1 / share, 1)}x more multiplies per instruction.")


@pages.renderer("mandelbrot", "pitfall")
def pitfall(slug: str, data: dict) -> str:
    _, p = _rows(data)
    import textwrap
    t = p["target_backend"]
    lines = [f"numba {t['numba']}", f"@jit(target_backend='cuda') -> {t['decorated']}",
             f"calling it -> {t.get('called', 'not reached')}"]
    text = "\n".join(textwrap.fill(line, 88, subsequent_indent="    ") for line in lines)
    return f"```text\n{text}\n```"


@pages.data_renderer("mandelbrot", "fp64")
def fp64() -> str:
    from gpukit import catalogue as data
    rows = []
    for g in data.gpus():
        ratio, fp32 = g.get("fp64_ratio"), g.get("fp32_tflops")
        if not ratio or not fp32:
            continue
        rows.append([g["name"], fmt_num(fp32, 1), f"1:{round(1 / ratio)}", fmt_num(fp32 * ratio, 2),
                     f"[vendor]({g['source']})"])
    ratios = [round(1 / g["fp64_ratio"]) for g in data.gpus()
              if g.get("fp64_ratio") and g.get("fp32_tflops")]
    body = (table(["GPU", "FP32 TFLOP/s", "FP64 : FP32", "FP64 TFLOP/s", "source"], rows, "lrrrl")
            + f"\n\n<small>From `gpukit/data/gpus.yaml`, data as of {data.data_as_of()}; "
              "peak rates without tensor cores.</small>")
    return (f"Across these {len(rows)} GPUs, FP64 runs at between 1:{min(ratios)} and "
            f"1:{max(ratios)} of the FP32 rate.\n\n"
            + pages.collapsed("Every GPU's FP32 and FP64 peak", body))


@pages.renderer("mandelbrot", "gallery")
def gallery(slug: str, data: dict) -> str:
    """The two pictures drawn when the chapter was recorded, from the PNG files beside its
    record (the reference machine's; a record made before them says so)."""
    if slug != results.reference_machine():
        raise pages.NotRecorded(slug)
    _, p = _rows(data)
    if not p.get("gallery"):
        return ("*The two pictures are not recorded yet: `gpukit bench mandelbrot --save` "
                "draws them.*")
    figures = [f'<figure style="margin:0">'
               f'<img src="{pages.image_uri(data.file(g["png"]))}" width="340" height="340" '
               f'alt="{g["caption"]}"><figcaption>{g["caption"]}</figcaption></figure>'
               for g in p["gallery"]]
    return ('<div style="display:flex;flex-wrap:wrap;gap:1em;justify-content:center">'
            + "".join(figures) + "</div>")


#: the largest share of pixels a float64 backend may differ from the reference by
IDENTICAL = 0
#: numba's float32 kernel alone over CuPy's, at most
KERNEL_RATIO = 1.10
#: the first call of the numba kernel in a fresh process whose on-disk cache is warm, at most
FIRST_CALL_S = 0.030


@pages.targets("mandelbrot")
def targets(data: dict) -> list[pages.Target]:
    import statistics
    p = data["gpu"]
    rows = [r for r in _plain_f64(p) if "differing_pixels" in r]
    worst = max(rows, key=lambda r: r["differing_pixels"])
    found = [pages.Target("Mandelbrot, every float64 backend against the float64 reference",
                          "identical images (0 pixels differ)",
                          f"{worst['differing_pixels']:,} pixels differ at most",
                          worst["differing_pixels"] <= IDENTICAL)]
    ratio = kernel_ratio(p)
    found.append(pages.Target("Mandelbrot, numba float32 kernel alone against CuPy's",
                              f"<= {KERNEL_RATIO:.2f}x CuPy's time",
                              "not recorded yet" if ratio is None else fmt_ratio(ratio, 2),
                              None if ratio is None else ratio <= KERNEL_RATIO))
    firsts = warm_first_calls(p, "resolved")
    first = statistics.median(firsts) if firsts else None
    found.append(pages.Target("Mandelbrot, numba first call in a fresh process, warm cache "
                              "(median of the processes)", f"<= {FIRST_CALL_S * 1e3:.0f} ms",
                              "not recorded yet" if first is None else fmt_time(first),
                              None if first is None else first <= FIRST_CALL_S))
    return found
