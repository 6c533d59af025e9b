"""The chapter's tables and plots, drawn from its results files."""

from __future__ import annotations

import math

from .. import pages
from ..pages import fmt_num, fmt_ratio, fmt_time, table
from .meta import BASE, CPU_ROWS, VARIANTS, label as short


def _part(data: dict) -> dict:
    return data["gpu"] if "gpu" in data else data["cpu"]


def cpu_rows(p: dict) -> list[dict]:
    """The CPU rows: all cores first, then one core."""
    return [r for r in p["rows"] if r["name"] in CPU_ROWS]


def gpu_rows(p: dict) -> list[dict]:
    rows = [r for r in p["rows"] if r["name"] in VARIANTS]
    if not rows:
        raise pages.NotRecorded("gpu rows")
    return rows


def _where(data: dict) -> str:
    m = data["machine"]
    return (m["gpu"]["name"] + " and " if m.get("gpu") else "") + \
        f"{m['cpu']['model']} ({m['cpu']['usable_cpus']} cores)"


def _figure(uri: str, caption: str, width: int | None = None) -> str:
    size = f' style="max-width:{width}px;width:100%"' if width else ' style="max-width:100%"'
    return (f'<figure style="margin:0"><img src="{uri}"{size} alt="{caption}">'
            f"<figcaption>{caption}</figcaption></figure>")


@pages.renderer("graphics", "hero")
def hero(slug: str, data: dict) -> str:
    p = _part(data)
    if "hero" in p:
        h = p["hero"]
        text = (f"{h['width']} x {h['height']} pixels, {h['spp']} samples per pixel, up to "
                f"{p['depth']} segments per path, {p['scene']['spheres']} spheres, each tested by "
                f"every ray; scaled down (full frame: results/{slug}/{h['png']})")
        return _figure(h["image"], text, 640)
    r = cpu_rows(p)[0]
    return _figure(p["cpu_image"], f"The final scene, {r['width']} x {r['height']} pixels, {r['spp']} samples "
                   f"per pixel, rendered on all CPU cores ({p['scene']['spheres']} spheres)", 480)


def _speed_row(r: dict, label: str) -> list:
    return [label, fmt_num(r["segments_per_s"] / 1e6, 1), fmt_time(r["median_s"]),
            fmt_time(r["first_call_s"]), f"{r['width']} x {r['height']}, {r['spp']}",
            fmt_num(r["tests_per_s"] / 1e9, 2) if "tests_per_s" in r else "-"]


@pages.renderer("graphics", "speed")
def speed(slug: str, data: dict) -> str:
    p = _part(data)
    chosen = [r for r in p["rows"] if r["name"] in ("numba-cpu", "numba-cpu-1core", "numba-cpu-bvh", "plain", "bvh")]
    label = {r["name"]: ("GPU, " if r["name"] in VARIANTS else "") + short(r["name"]) for r in chosen}
    rows = [_speed_row(r, label[r["name"]]) for r in chosen]
    head = (f"**{_where(data)}**, the final scene ({p['scene']['spheres']} spheres), up to "
            f"{p['depth']} segments per path, float32\n\n")
    gpu = any(r["backend"] == "numba-cuda" for r in p["rows"])
    note = ("\n\n*first call*: the first run, with any compiling still to do"
            + (" (the brute-force CUDA kernel was compiled earlier, for the image check)"
               if gpu else "")
            + "; *steady state*: the median of the runs after it. Segments per sample, the mean "
            "length of a path: " + ", ".join(f"{fmt_num(r['segments_per_sample'], 3)} "
                                            f"({label[r['name']]})" for r in chosen) + ".")
    return head + table(["numba", "M segments/s", "steady state", "first call", "image, spp",
                         "G tests/s"], rows, "lrrrrr") + note


@pages.renderer("graphics", "cpu")
def cpu(slug: str, data: dict) -> str:
    p = _part(data)
    by = {r["name"]: r for r in cpu_rows(p)}
    allc, one = by["numba-cpu"], by["numba-cpu-1core"]
    return (f"On {p['cores']} cores the all-cores version traces {fmt_ratio(p['cpu_speedup'], 1)} as many "
            f"segments per second as one core ({fmt_num(allc['segments_per_s'] / 1e6, 2)} M against "
            f"{fmt_num(one['segments_per_s'] / 1e6, 2)} M; the one-core run renders {one['width']} x "
            f"{one['height']} pixels at {one['spp']} spp to stay short): a parallel efficiency of "
            f"**{fmt_num(100 * p['cpu_efficiency'])} %**. Its compiled code has "
            f"{p['cpu_llvm_vector_ops']} instructions on vector types in LLVM's IR: each core traces one "
            "path at a time with scalar instructions, and the SIMD units of the cores stay unused."
            + _balance(p))


def _balance(p: dict) -> str:
    b = p.get("cpu_balance")
    if not b:                                   # recorded before rows were dealt out
        return ""
    return (f" Counting a pixel's ray segments as its work, the busiest of {b['threads']} threads gets "
            f"{fmt_ratio(b['dealt_max_over_mean'], 2)} the mean with the rows dealt out one by one, as "
            f"the tracer does, against {fmt_ratio(b['runs_max_over_mean'], 2)} with each thread taking a "
            f"run of consecutive rows (prange's own split), which would cap the efficiency at "
            f"{fmt_num(100 / b['runs_max_over_mean'])} %.")


def cpu_note(p: dict) -> str:
    """What every GPU / CPU ratio rests on: the CPU tracer's scalar code and its parallel
    efficiency on all cores."""
    return (f"CPU: scalar code, {fmt_num(100 * p['cpu_efficiency'])} % parallel efficiency on "
            f"{p['cores']} cores")


def _vs(r: dict, base: dict) -> float:
    """How many times ``base``'s segments per second ``r`` traces."""
    return r["segments_per_s"] / base["segments_per_s"]


def _x(value: float) -> str:
    """A ratio near 1 with two decimals (``0.91x``, ``1.79x``)."""
    return f"{value:.2f}x"


def _faster(before: float, after: float) -> str:
    """``1.79x faster`` or ``1.12x slower``: how a time ``after`` compares with ``before``."""
    return f"{_x(before / after)} faster" if after < before else f"{_x(after / before)} slower"


def _same_image(diff: float) -> str:
    return ("the same image (largest difference 0)" if diff == 0
            else f"an image whose largest difference from it is {diff:.2g}")


@pages.renderer("graphics", "ratio")
def ratio(slug: str, data: dict) -> str:
    p = data["gpu"]
    by = {r["name"]: r for r in p["rows"]}
    plain, allc = by["plain"], by["numba-cpu"]
    text = (f"Per ray segment, the brute-force GPU kernel is **{fmt_ratio(p['vs_all_cores'], 0)}** the speed of "
            f"numba on all {p['cores']} CPU cores ({fmt_num(plain['segments_per_s'] / 1e6)} M against "
            f"{fmt_num(allc['segments_per_s'] / 1e6, 1)} M segments per second; the CPU renders "
            f"{allc['width']} x {allc['height']} pixels at {allc['spp']} samples, the GPU "
            f"{plain['width']} x {plain['height']} at {plain['spp']}, both with "
            f"{fmt_num(plain['segments_per_sample'], 2)} segments per sample).")
    if "shared" in by:
        text += (f" The same hit test with the spheres in shared memory is {fmt_ratio(_vs(by['shared'], allc), 0)} "
                 "the CPU")
    text += (f"; with the BVH on both sides, the GPU is {fmt_ratio(p['bvh_vs_all_cores_bvh'], 0)} the speed of "
             f"the CPU. Each ratio is against the CPU as measured ({cpu_note(p)}): a vectorised CPU "
             "tracer, or one that used its cores fully, would shrink them.")
    return text


@pages.renderer("graphics", "agreement")
def agreement(slug: str, data: dict) -> str:
    a = data["gpu"]["agreement"]
    share = a.get("max_share")
    rows = [[f"{a['width']} x {a['height']}, {a['spp']} spp", f"{a['max_abs']:.2g}", f"{a['mean_abs']:.2g}",
             f"{100 * a['pixels_over_atol']:.3f} %"
             + ("" if share is None else f" (at most {100 * share:g} %: {'passed' if a['ok'] else '**failed**'})")]]
    return table(["image", "largest difference", "mean difference", f"pixels off by more than {a['atol']:g}"], rows)


@pages.renderer("graphics", "furnace")
def furnace(slug: str, data: dict) -> str:
    runs = data["gpu"].get("furnace")
    if not runs:                                # recorded before the check existed
        raise pages.NotRecorded("furnace")
    return table(["backend", "image", "paths that hit the sphere", "of them, not returning its albedo"],
                 [[f"`{f['backend']}`", f"{f['width']} x {f['height']}", f"{f['paths_on_sphere']:,}",
                   str(f["paths_off"])] for f in runs])


@pages.renderer("graphics", "variants")
def variants(slug: str, data: dict) -> str:
    p = data["gpu"]
    order = list(VARIANTS)
    rows = sorted(gpu_rows(p), key=lambda r: order.index(r["name"]))
    plain = next(r for r in rows if r["name"] == BASE)
    body = [[short(r["name"]), fmt_num(r["segments_per_s"] / 1e9, 2), _x(_vs(r, plain)),
             fmt_time(r["median_s"]), fmt_num(1 / r["median_s"], 1), str(r["spp"]),
             fmt_num(r["pct_fp32_peak"], 1) + " %"
             if "pct_fp32_peak" in r and VARIANTS[r["name"]].every_sphere else "-"]
            for r in rows]
    return (f"**numba CUDA on the {data['machine']['gpu']['name']}**, {plain['width']} x "
            f"{plain['height']} pixels, up to {plain['depth']} segments per path; "
            f"{p['flops_per_test']} FLOPs per ray-sphere test\n\n"
            + table(["kernel", "G segments/s", "vs every sphere", "frame", "frames/s", "spp",
                     "of FP32 peak"], body, "lrrrrrr"))


@pages.renderer("graphics", "shared")
def shared(slug: str, data: dict) -> str:
    by = {r["name"]: r for r in data["gpu"]["rows"]}
    if "shared" not in by:
        return ""
    plain, sh = by["plain"], by["shared"]
    return (f"Measured: staging the spheres in shared memory makes the frame "
            f"**{_faster(plain['median_s'], sh['median_s'])}** ({fmt_time(plain['median_s'])} against "
            f"{fmt_time(sh['median_s'])}), with {_same_image(data['gpu']['max_abs_vs_plain']['shared'])} and "
            "the same four loads per test, from shared memory instead of through the L1 cache.")


@pages.renderer("graphics", "divergence")
def divergence(slug: str, data: dict) -> str:
    by = {r["name"]: r for r in data["gpu"]["rows"]}
    plain, diffuse, grouped = by["plain"], by["all diffuse"], by["sorted"]
    gains = [_vs(diffuse, plain) > 1, _vs(grouped, plain) > 1]
    verdict = ("Neither change raised the rate." if not any(gains) else
               "Both changes raised the rate." if all(gains) else "One of the two changes raised the rate.")
    return (f"{verdict} With every sphere diffuse the kernel traces "
            f"{fmt_num(diffuse['segments_per_s'] / 1e6)} M segments per second, "
            f"**{_x(_vs(diffuse, plain))}** the rate of the mixed scene "
            f"({fmt_num(plain['segments_per_s'] / 1e6)} M), with "
            f"{fmt_num(diffuse['segments_per_sample'], 2)} segments per sample against "
            f"{fmt_num(plain['segments_per_sample'], 2)}. Grouping the pixels by first-hit material takes "
            f"{fmt_time(grouped['median_s'])} against {fmt_time(plain['median_s'])} "
            f"(**{_x(_vs(grouped, plain))}** the rate, its two extra kernels included), for "
            f"{_same_image(data['gpu']['max_abs_vs_plain']['sorted'])}.")


@pages.renderer("graphics", "bvh")
def bvh(slug: str, data: dict) -> str:
    p = _part(data)
    by = {r["name"]: r for r in p["rows"]}
    cpu_plain, cpu_bvh = by["numba-cpu"], by["numba-cpu-bvh"]
    text = (f"On {p['cores']} CPU cores the BVH makes the {cpu_plain['width']} x {cpu_plain['height']} image "
            f"{_faster(cpu_plain['median_s'], cpu_bvh['median_s'])} ({fmt_time(cpu_plain['median_s'])} "
            f"against {fmt_time(cpu_bvh['median_s'])}), with the same image bit for bit (the benchmark checks it)")
    if "bvh" not in by:
        return text + "."
    plain, tree = by["plain"], by["bvh"]
    return text + (f". On the GPU it makes the {plain['width']} x {plain['height']} frame "
                   f"**{_faster(plain['median_s'], tree['median_s'])}** ({fmt_time(plain['median_s'])} "
                   f"against {fmt_time(tree['median_s'])}, {fmt_num(tree['segments_per_s'] / 1e9, 2)} G segments "
                   "per second), " + ("and draws exactly the brute-force kernel's image."
                                      if p["max_abs_vs_plain"]["bvh"] == 0 else
                                      f"its image differs from the brute-force kernel's by at most "
                                      f"{p['max_abs_vs_plain']['bvh']:.2g}."))


@pages.renderer("graphics", "leak")
def leak(slug: str, data: dict) -> str:
    p = _part(data)
    rows = [["CPU: LLVM IR of the tracer (`double`)", str(p["cpu_llvm_f64_clean"]), str(p["cpu_llvm_f64_leaky"])]]
    if "ptx_f64" in p:
        f = p["ptx_f64"]
        rows.append(["GPU: PTX of the kernel (`.f64`), all", str(f["plain"]["all"]), str(f["leaky"]["all"])])
        rows.append(["GPU: the same, outside libdevice's sin/cos", str(f["plain"]["outside_sincos"]),
                     str(f["leaky"]["outside_sincos"])])
        by = {r["name"]: r for r in p["rows"]}
        w, lk = by["plain"], by["leaky"]
        rows.append([f"GPU: frame at {w['width']} x {w['height']}, {w['spp']} spp", fmt_time(w["median_s"]),
                     fmt_time(lk["median_s"]) + f" ({fmt_ratio(lk['median_s'] / w['median_s'], 2)})"])
        rows.append(["GPU: largest difference from the float32 image", "0",
                     f"{p['max_abs_vs_plain']['leaky']:.2g}"])
    return table(["", "float32 hit test", "leaky hit test"], rows, "lrr")


#: the chapter's targets on the GPU: frame time and segment rate of the 1080p, 16-spp frame,
#: frames per second at 1 spp, and the GPU's rate per segment over all CPU cores'
GOALS = {"frame_s": 0.040, "segments_per_s": 2e9, "fps_1spp": 100, "vs_cpu": 100}


@pages.targets("graphics")
def chapter_targets(data: dict) -> list[pages.Target]:
    """Each target for each way of finding the nearest sphere, judged on the recorded rows."""
    p = data["gpu"]
    by = {r["name"]: r for r in p["rows"]}
    out = []
    for name, v in VARIANTS.items():
        if v.judged is None or name not in by:
            continue
        r, label, one_name = by[name], v.judged, v.one_spp
        size = f"{r['width']} x {r['height']}, {r['spp']} spp"
        out.append(pages.Target(f"frame time, {size}, {label}", f"<= {GOALS['frame_s'] * 1e3:g} ms",
                                fmt_time(r["median_s"]), r["median_s"] <= GOALS["frame_s"]))
        out.append(pages.Target(f"ray segments per second, {size}, {label}", ">= 2 G/s",
                                f"{fmt_num(r['segments_per_s'] / 1e9, 2)} G/s",
                                r["segments_per_s"] >= GOALS["segments_per_s"]))
        if one_name:                            # no 1-spp frame is timed for shared memory
            one = by.get(one_name)
            fps = 1 / one["median_s"] if one else None
            out.append(pages.Target(f"1 spp at {r['width']} x {r['height']}, {label}",
                                    f">= {GOALS['fps_1spp']} frames/s",
                                    f"{fmt_num(fps, 1)} frames/s" if one else "not recorded",
                                    fps >= GOALS["fps_1spp"] if one else None))
        x = _vs(r, by[v.cpu_row])
        out.append(pages.Target(f"GPU / all CPU cores per segment, {label} ({cpu_note(p)})",
                                f">= {GOALS['vs_cpu']}x", fmt_ratio(x, 0), x >= GOALS["vs_cpu"]))
    return out


def _log_ticks(ax, values: list[float]) -> None:
    """Labelled ticks at 1, 2 and 5 times the powers of ten inside the data's range (a phone
    needs more than one label per decade, and none outside the axis)."""
    from matplotlib.ticker import FixedLocator, NullLocator
    low, high = min(values), max(values)
    ax.set_ylim(low / 1.3, high * 1.3)
    marks = [m * 10.0 ** k for k in range(math.floor(math.log10(low)) - 1,
                                          math.ceil(math.log10(high)) + 1) for m in (1, 2, 5)]
    marks = [t for t in marks if low / 1.3 <= t <= high * 1.3]
    if len(marks) > 5:
        marks = [t for t in marks if str(t).lstrip("0.").startswith(("1", "5"))] or marks
    ax.yaxis.set_major_locator(FixedLocator(marks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_yticklabels([f"{t:g}" for t in marks])


@pages.renderer("graphics", "progressive")
def progressive(slug: str, data: dict) -> str:
    from matplotlib.ticker import FixedLocator, NullLocator
    p = _part(data)
    g = p["progressive"]
    rows = g["rows"]
    spp = [r["spp"] for r in rows]
    fig, (a, b) = pages.figure(2, 1, height=4.8, sharex=True)
    first = rows[0]["rmse"]
    a.loglog(spp, [first / s ** 0.5 for s in spp], "--", color="grey")
    a.loglog(spp, [r["rmse"] for r in rows], "o-")
    a.set_ylabel("RMSE")
    a.set_title("noise: measured, and 1/√spp (dashed)")
    b.loglog(spp, [r["median_s"] * 1e3 for r in rows], "o-", color="C1")
    b.set_ylabel("ms per frame")
    b.set_xlabel("samples per pixel")
    ticks = spp if len(spp) <= 6 else spp[::2]
    for ax, ys in ((a, [r["rmse"] for r in rows] + [first / spp[-1] ** 0.5]),
                   (b, [r["median_s"] * 1e3 for r in rows])):
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([str(s) for s in ticks])
        _log_ticks(ax, ys)
        ax.tick_params(labelsize=12)
    fig.tight_layout()
    # how much the RMSE falls per doubling of the samples, between each two measured counts
    steps = [(r0["rmse"] / r1["rmse"]) ** (1 / math.log2(r1["spp"] / r0["spp"])) for r0, r1 in zip(rows, rows[1:])]
    last = rows[-1]
    text = (f"{g['width']} x {g['height']} pixels, `{g['backend']}`. From {rows[0]['spp']} to "
            f"{last['spp']} samples per pixel the RMSE against the {g['ref_spp']}-spp "
            f"reference falls from {rows[0]['rmse']:.3f} to {last['rmse']:.4f}, "
            f"{fmt_ratio(rows[0]['rmse'] / last['rmse'], 1)} (1/√spp predicts "
            f"{fmt_ratio((last['spp'] / rows[0]['spp']) ** 0.5, 1)})")
    if steps:
        text += (f"; each doubling of the samples divides it by {min(steps):.2f} to {max(steps):.2f} "
                 f"(√2 = 1.41), first {steps[0]:.2f}, last {steps[-1]:.2f}")
    text += (f". A {rows[0]['spp']}-spp frame of {g['width']} x {g['height']} pixels takes "
             f"{fmt_time(rows[0]['median_s'])}, the {last['spp']}-spp one {fmt_time(last['median_s'])}.")
    strip = "".join(
        f'<figure style="margin:0;flex:1 1 96px;min-width:0">'
        f'<img src="{s["image"]}" style="width:100%;image-rendering:pixelated" alt="{s["spp"]} sample{"s" if s["spp"] > 1 else ""} per pixel">'
        f'<figcaption>{s["spp"]} spp{", reference" if s.get("reference") else ""}</figcaption></figure>'
        for s in g["strip"])
    return (pages.svg(fig) + "\n\n" + text + '\n\n<div style="display:flex;flex-wrap:wrap;gap:0.5em">' + strip
            + "</div>")


#: NVIDIA's H100 Tensor Core GPU Architecture whitepaper: of GH100's TPCs (two SMs each), only
#: two run vertex, geometry and pixel shaders, and the chip has no RT cores
GH100_GRAPHICS_TPCS = 2
GH100_WHITEPAPER = "https://resources.nvidia.com/en-us-tensor-core"


def _sliver(data: dict, r: dict) -> str:
    """On a GH100 (H100, H200), what part of the chip each pipeline runs on."""
    if not any(name in r["renderer"] for name in ("H100", "H200")):
        return ""
    sms = (data["machine"].get("gpu") or {}).get("multiprocessors")
    return (f" The comparison is not chip against chip: on GH100 only {GH100_GRAPHICS_TPCS} TPCs "
            f"({2 * GH100_GRAPHICS_TPCS} SMs) can run vertex and pixel shaders and there are no RT cores "
            f"([H100 whitepaper]({GH100_WHITEPAPER})), so the raster frame runs on a sliver of the chip"
            + (f", the path tracer on all {sms} SMs." if sms else ", the path tracer on all its SMs."))


@pages.renderer("graphics", "raster")
def raster(slug: str, data: dict) -> str:
    p = _part(data)
    r = p["raster"]
    if r.get("status") != "ok":
        return f"Raster comparison on this machine: {r['status']}."
    software = "llvmpipe" in r["renderer"]
    rows = [[f"OpenGL: {r['triangles']:,} triangles ({r['renderer']})", fmt_time(r["median_s"]),
             fmt_num(1 / r["median_s"]), fmt_time(r["gpu_median_s"]), fmt_time(r["first_frame_s"]),
             f"{r['width']} x {r['height']}"]]
    traced = {}
    for name in ("1 spp", "1 spp, BVH", "plain", "bvh"):
        t = next((x for x in p["rows"] if x["name"] == name), None)
        if t:
            traced[name] = t
            kind = "every sphere" if VARIANTS[name].every_sphere else "BVH"
            rows.append([f"path tracer, {t['spp']} spp, {kind}", fmt_time(t["median_s"]),
                         fmt_num(1 / t["median_s"]), "-", fmt_time(t["first_call_s"]),
                         f"{t['width']} x {t['height']}"])
    text = ""
    if "1 spp" in traced and (traced["1 spp"]["width"], traced["1 spp"]["height"]) == (r["width"], r["height"]):
        one, tree = traced["1 spp"], traced.get("1 spp, BVH")
        text = (f"\n\nAt {r['width']} x {r['height']} the rasterized frame takes {fmt_time(r['median_s'])}: "
                f"{fmt_ratio(one['median_s'] / r['median_s'], 1)} less than one path-traced sample per pixel "
                f"testing every sphere ({fmt_time(one['median_s'])})"
                + (f" and {fmt_ratio(tree['median_s'] / r['median_s'], 1)} less than one with the BVH "
                   f"({fmt_time(tree['median_s'])})." if tree else "; a 1-spp frame with the BVH is not in this record.")
                + _sliver(data, r))
    elif software:
        text = ("\n\nThis is Mesa's software rasterizer on the CPU. Its GL timer query reports far "
                "less than the host's time per frame (see the open questions).")
    pictures = [(r["image"], "rasterized: albedo, one light, the sky; no reflections")]
    if "hero" in p:
        pictures.append((p["hero"]["image"], f"path-traced, {p['hero']['spp']} spp"))
    else:
        c = cpu_rows(p)[0]
        pictures.append((p["cpu_image"], f"path-traced, {c['spp']} spp"))
    figs = "".join(f'<div style="flex:1 1 0;min-width:0">{_figure(u, c)}</div>' for u, c in pictures)
    return (table(["pipeline", "frame (host)", "frames/s", "frame (GL timer)", "first frame",
                   "image"], rows, "lrrrrr") + text + '\n\n<div style="display:flex;flex-wrap:wrap;gap:0.5em">' + figs + "</div>")
