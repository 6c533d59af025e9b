"""The chapter's tables and plots, drawn from its results files."""

from __future__ import annotations

from .. import pages
from ..pages import fmt_num, fmt_ratio, fmt_time, table


def _part(data: dict) -> dict:
    return data["gpu"] if "gpu" in data else data["cpu"]


def cpu_rows(p: dict) -> list[dict]:
    """The CPU rows: all cores first, then one core."""
    return [r for r in p["rows"] if r["backend"] != "numba-cuda"]


def gpu_rows(p: dict) -> list[dict]:
    rows = [r for r in p["rows"] if r["backend"] == "numba-cuda"]
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
        text = (f"The final scene, {h['width']} x {h['height']} pixels, {h['spp']} samples per pixel, "
                f"up to {p['depth']} segments per path, path-traced by the GPU kernel of this page "
                f"({p['scene']['spheres']} spheres); shown here scaled down")
        return _figure(h["image"], text)
    r = cpu_rows(p)[0]
    return _figure(p["cpu_image"], f"The final scene, {r['width']} x {r['height']} pixels, {r['spp']} samples "
                   f"per pixel, rendered on all CPU cores ({p['scene']['spheres']} spheres)", 480)


def _speed_row(r: dict, label: str) -> list:
    return [label, f"{r['width']} x {r['height']}", str(r["spp"]), fmt_time(r["first_call_s"]),
            fmt_time(r["median_s"]), fmt_num(r["segments_per_s"] / 1e6, 1),
            fmt_num(r["samples_per_s"] / 1e6, 2),
            fmt_num(r["tests_per_s"] / 1e9, 2) if "tests_per_s" in r else "-",
            fmt_num(r["pct_fp32_peak"], 1) + " %" if "pct_fp32_peak" in r else "-"]


LABELS = {"numba-cpu": "numba, all CPU cores", "numba-cpu-1core": "numba, one CPU core",
          "numba-cpu-bvh": "numba, all CPU cores, BVH", "bvh": "numba CUDA, BVH",
          "sorted": "numba CUDA, pixels grouped by first-hit material",
          "plain": "numba CUDA", "shared": "numba CUDA, spheres in shared memory",
          "leaky": "numba CUDA, leaky float64 hit test", "1 spp": "numba CUDA, 1 sample per pixel",
          "all diffuse": "numba CUDA, every sphere diffuse"}


@pages.renderer("graphics", "speed")
def speed(slug: str, data: dict) -> str:
    p = _part(data)
    rows = [_speed_row(r, LABELS[r["name"]]) for r in p["rows"]
            if r["name"] in ("numba-cpu", "numba-cpu-1core", "numba-cpu-bvh", "plain", "bvh")]
    head = (f"**{_where(data)}**, the final scene ({p['scene']['spheres']} spheres), up to {p['depth']} "
            "segments per path, float32\n\n")
    return head + table(["backend", "image", "spp", "first call", "steady state", "M segments/s",
                         "M samples/s", "G ray-sphere tests/s", "of FP32 peak"], rows, "lrrrrrrrr")


@pages.renderer("graphics", "cpu")
def cpu(slug: str, data: dict) -> str:
    p = _part(data)
    by = {r["name"]: r for r in cpu_rows(p)}
    allc, one = by["numba-cpu"], by["numba-cpu-1core"]
    return (f"On {p['cores']} cores the all-cores version traces {fmt_ratio(p['cpu_speedup'], 1)} as many "
            f"segments per second as one core ({fmt_num(allc['segments_per_s'] / 1e6, 2)} M against "
            f"{fmt_num(one['segments_per_s'] / 1e6, 2)} M): a parallel efficiency of "
            f"{fmt_num(100 * p['cpu_efficiency'])} %. Its compiled code has "
            f"{p['cpu_llvm_vector_ops']} instructions on vector types in LLVM's IR: each core traces one "
            "path at a time, with scalar instructions; it does not vectorise.")


@pages.renderer("graphics", "ratio")
def ratio(slug: str, data: dict) -> str:
    p = data["gpu"]
    plain = next(r for r in p["rows"] if r["name"] == "plain")
    allc = cpu_rows(p)[0]
    return (f"Per ray segment, the GPU kernel is **{fmt_ratio(p['vs_all_cores'], 0)}** the speed of numba "
            f"on all {p['cores']} CPU cores ({fmt_num(plain['segments_per_s'] / 1e6)} M against "
            f"{fmt_num(allc['segments_per_s'] / 1e6, 1)} M segments per second; the CPU renders "
            f"{allc['width']} x {allc['height']} pixels at {allc['spp']} samples, the GPU "
            f"{plain['width']} x {plain['height']} at {plain['spp']}). With the BVH on both sides, the GPU "
            f"is {fmt_ratio(p['bvh_vs_all_cores_bvh'], 0)} the speed of the CPU.")


@pages.renderer("graphics", "agreement")
def agreement(slug: str, data: dict) -> str:
    a = data["gpu"]["agreement"]
    return table(["image", "largest difference", "mean difference", f"pixels off by more than {a['atol']:g}"],
                 [[f"{a['width']} x {a['height']}, {a['spp']} spp", f"{a['max_abs']:.2g}",
                   f"{a['mean_abs']:.2g}", f"{100 * a['pixels_over_atol']:.3f} %"]])


@pages.renderer("graphics", "variants")
def variants(slug: str, data: dict) -> str:
    p = data["gpu"]
    rows = [[LABELS[r["name"]], str(r["spp"]), fmt_time(r["first_call_s"]), fmt_time(r["median_s"]),
             fmt_num(1 / r["median_s"], 1), fmt_num(r["segments_per_s"] / 1e9, 2),
             fmt_num(r["segments_per_sample"], 2),
             fmt_num(r["pct_fp32_peak"], 1) + " %" if "pct_fp32_peak" in r else "-"]
            for r in gpu_rows(p)]
    return (f"**{data['machine']['gpu']['name']}**, {gpu_rows(p)[0]['width']} x {gpu_rows(p)[0]['height']} pixels; "
            f"{p['flops_per_test']} FLOPs per ray-sphere test\n\n"
            + table(["kernel", "spp", "first call", "steady state", "frames/s", "G segments/s",
                     "segments per sample", "of FP32 peak"], rows, "lrrrrrrr"))


@pages.renderer("graphics", "leak")
def leak(slug: str, data: dict) -> str:
    p = _part(data)
    rows = [["CPU: LLVM IR of the tracer", str(p["cpu_llvm_f64_clean"]), str(p["cpu_llvm_f64_leaky"])]]
    if "ptx_f64" in p:
        f = p["ptx_f64"]
        rows.append(["GPU: PTX of the kernel (`.f64`), all", str(f["plain"]["all"]), str(f["leaky"]["all"])])
        rows.append(["GPU: the same, outside libdevice's sin/cos", str(f["plain"]["outside_sincos"]),
                     str(f["leaky"]["outside_sincos"])])
        by = {r["name"]: r for r in p["rows"]}
        w = by["plain"]
        rows.append([f"GPU: time at {w['width']} x {w['height']}, {w['spp']} spp", fmt_time(by["plain"]["median_s"]),
                     fmt_time(by["leaky"]["median_s"]) + f" ({fmt_ratio(by['leaky']['median_s'] / by['plain']['median_s'], 2)})"])
    return table(["", "float32 hit test", "leaky hit test"], rows, "lrr")


@pages.renderer("graphics", "targets")
def targets(slug: str, data: dict) -> str:
    p = data["gpu"]
    by = {r["name"]: r for r in p["rows"]}
    best = min((by[n] for n in ("plain", "shared", "bvh") if n in by), key=lambda r: r["median_s"])
    one = by["1 spp"]
    rows = [[f"{best['width']} x {best['height']}, {best['spp']} spp, up to {best['depth']} segments",
             "at most 40 ms at 1920 x 1080, 16 spp", fmt_time(best["median_s"])],
            ["ray segments per second", "at least 2 G", fmt_num(best["segments_per_s"] / 1e9, 2) + " G"],
            [f"1 spp at {one['width']} x {one['height']}", "at least 100 frames/s at 1920 x 1080",
             fmt_num(1 / one["median_s"], 0) + " frames/s"],
            ["GPU / all CPU cores, per segment", "at least 100x", fmt_ratio(p["vs_all_cores"], 0)]]
    return table(["target", "goal", f"measured ({LABELS[best['name']]})"], rows, "lrr")


@pages.renderer("graphics", "progressive")
def progressive(slug: str, data: dict) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    p = _part(data)
    g = p["progressive"]
    spp = [r["spp"] for r in g["rows"]]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
    a.loglog(spp, [r["rmse"] for r in g["rows"]], "o-", label="measured")
    first = g["rows"][0]["rmse"]
    a.loglog(spp, [first / s ** 0.5 for s in spp], "--", color="grey", label="1/√spp")
    a.set_xlabel("samples per pixel")
    a.set_ylabel(f"RMSE vs {g['ref_spp']} spp")
    a.legend(frameon=False)
    b.loglog(spp, [r["median_s"] * 1e3 for r in g["rows"]], "o-", color="C1")
    b.set_xlabel("samples per pixel")
    b.set_ylabel("time per frame (ms)")
    fig.suptitle(f"{g['width']} x {g['height']} pixels on {pages.plot_title(data)} ({g['backend']})", fontsize=10)
    fig.tight_layout()
    strip = "".join(
        f'<figure style="margin:0;flex:1 1 0;min-width:0">'
        f'<img src="{s["image"]}" style="width:100%;image-rendering:pixelated" alt="{s["spp"]} samples per pixel">'
        f'<figcaption>{s["spp"]} spp{" (reference)" if s.get("reference") else ""}</figcaption></figure>'
        for s in g["strip"])
    return pages.svg(fig) + '\n\n<div style="display:flex;flex-wrap:wrap;gap:0.5em">' + strip + "</div>"


@pages.renderer("graphics", "raster")
def raster(slug: str, data: dict) -> str:
    p = _part(data)
    r = p["raster"]
    if r.get("status") != "ok":
        return f"Raster comparison on this machine: {r['status']}."
    rows = [[f"OpenGL: {r['triangles']:,} triangles ({r['renderer']})", f"{r['width']} x {r['height']}",
             fmt_time(r["first_frame_s"]), fmt_time(r["median_s"]), fmt_time(r["gpu_median_s"]),
             fmt_num(1 / r["median_s"])]]
    for name in ("1 spp", "plain"):
        t = next((x for x in p["rows"] if x["name"] == name), None)
        if t:
            rows.append([f"path tracer, {t['spp']} spp", f"{t['width']} x {t['height']}", fmt_time(t["first_call_s"]),
                         fmt_time(t["median_s"]), "-", fmt_num(1 / t["median_s"])])
    pictures = [(r["image"], "rasterized: albedo, one light, the sky; no reflections")]
    if "hero" in p:
        pictures.append((p["hero"]["image"], f"path-traced, {p['hero']['spp']} spp"))
    else:
        c = cpu_rows(p)[0]
        pictures.append((p["cpu_image"], f"path-traced, {c['spp']} spp"))
    figs = "".join(f'<div style="flex:1 1 0;min-width:0">{_figure(u, c)}</div>' for u, c in pictures)
    return (table(["pipeline", "image", "first frame", "frame (host)", "frame (GL timer query)", "frames/s"], rows,
                  "lrrrrr") + '\n\n<div style="display:flex;flex-wrap:wrap;gap:0.5em">' + figs + "</div>")
