"""The measured number under each glossary entry, drawn from the other chapters' results files.

Each view is ``glossary-<term>`` of the results file that measured the term (``gpu_anatomy``,
``vector_add``, ``timing``, ``mandelbrot``, ``ladder``, ``matmul`` or ``tensor_cores``). It shows the reference
machine only (the glossary, like the chapters' prose, is written around that machine) and returns
one sentence; a view that also needs another file reads it with
:meth:`gpukit.pages.Record.other`, from the results folder the page is rendered from.
"""

from __future__ import annotations

from .. import catalogue, pages, results
from . import meta
from ..pages import fmt_num, fmt_time


def term(name: str, view: str):
    """Register ``fn(data) -> sentence`` as view ``glossary-<view>`` of results ``name``,
    rendered for the reference machine only, after the machine's name in bold."""
    def deco(fn):
        def wrapped(slug: str, data: dict) -> str:
            if slug != results.reference_machine():
                raise pages.NotRecorded(slug)
            return f"**{pages.machine_title(data)}:** {fn(data)}"
        pages.renderer(name, f"glossary-{view}")(wrapped)
        return fn
    return deco


def other(data: dict, name: str) -> dict:
    """The reference machine's record of results ``name``, read from the folder ``data`` came
    from; NotRecorded where it has none."""
    found = data.other(name)
    if found is None:
        raise pages.NotRecorded(name)
    return found


def _size(b: float) -> str:
    return f"{b / 2**30:,.0f} GiB" if b >= 2**30 else f"{b / 2**20:,.0f} MiB" if b >= 2**20 else f"{b / 2**10:,.0f} KiB"


def _gpu(data: dict) -> dict:
    g = data["machine"].get("gpu")
    if not g:
        raise pages.NotRecorded("gpu")
    return g


def _latency_row(data: dict, word: str) -> dict | None:
    return next((r for r in data["latency"]["rows"] if word in r["name"]), None)


def _ns(row: dict) -> str:
    return f"{row['latency_ns']:,.0f} ns ({row['latency_cycles']:,.0f} SM clock cycles)"


def _best_by_warps(data: dict, variant: str) -> dict[int, float]:
    best: dict[int, float] = {}
    for r in data["occupancy"]["rows"]:
        if r.get("variant") == variant:
            best[r["warps_per_sm"]] = max(best.get(r["warps_per_sm"], 0.0), r["gbs"])
    return best


# ------------------------------------------------------------------ what a GPU is made of

@term("gpu_anatomy", "sm")
def sm(data: dict) -> str:
    g = _gpu(data)
    return (f"{g['multiprocessors']} SMs; each keeps up to {g['max_threads_per_multiprocessor']:,} threads "
            f"({g['max_threads_per_multiprocessor'] // g['warp_size']} warps) resident in up to "
            f"{g['max_blocks_per_multiprocessor']} blocks, with {g['registers_per_multiprocessor']:,} "
            f"registers and up to {_size(g['shared_memory_per_multiprocessor_bytes'])} of shared memory "
            "(device query).")


@term("gpu_anatomy", "warp")
def warp(data: dict) -> str:
    g = _gpu(data)
    warps = g["max_threads_per_multiprocessor"] // g["warp_size"]
    return (f"{g['warp_size']} threads per warp, up to {warps} warps resident per SM: "
            f"{warps * g['multiprocessors']:,} warps ({g['max_threads_per_multiprocessor'] * g['multiprocessors']:,} "
            "threads) on the whole GPU at once (device query).")


@term("gpu_anatomy", "thread-block")
def thread_block(data: dict) -> str:
    g = _gpu(data)
    return (f"up to {g['max_threads_per_block']:,} threads per block, and up to "
            f"{g['max_blocks_per_multiprocessor']} blocks resident on one SM (device query).")


@term("gpu_anatomy", "registers")
def registers(data: dict) -> str:
    g = _gpu(data)
    regs = g["registers_per_multiprocessor"]
    used = sorted({r["registers"] for r in data["occupancy"]["rows"] if r.get("registers")})
    text = (f"{regs:,} 32-bit registers per SM ({_size(regs * 4)}), {_size(regs * 4 * g['multiprocessors'])} "
            "on the whole GPU (device query)")
    if used:
        text += (f"; the read kernels of the occupancy sweep were compiled to {used[0]} to {used[-1]} "
                 "registers per thread")
    return text + "."


@term("gpu_anatomy", "shared-memory")
def shared_memory(data: dict) -> str:
    g = _gpu(data)
    return (f"up to {_size(g['shared_memory_per_multiprocessor_bytes'])} per SM, "
            f"{_size(g['shared_memory_per_block_optin_bytes'])} for one block that asks for it "
            "(device query).")


@term("gpu_anatomy", "latency")
def latency(data: dict) -> str:
    parts = [f"{_ns(r)} {r['name'].replace('load latency, ', 'from ')}" for r in data["latency"]["rows"]]
    return "one dependent load takes " + "; ".join(parts) + "."


@term("gpu_anatomy", "l2")
def l2(data: dict) -> str:
    g = _gpu(data)
    text = f"{_size(g['l2_cache_bytes'])}, shared by all {g['multiprocessors']} SMs"
    row = _latency_row(data, "L2")
    if row:
        text += f"; a load that hits it takes {_ns(row)}"
    timing = other(data, "timing")
    hot = [h for h in timing["cache"].get("hot_cold", []) if h["working_set_bytes"] < g["l2_cache_bytes"]]
    if hot:
        h = hot[0]
        text += (f". SAXPY on a {_size(h['working_set_bytes'])} working set that stays in it ran at "
                 f"{h['hot_gbs']:,.0f} GB/s, and at {h['cold_gbs']:,.0f} GB/s with the L2 flushed before each "
                 "run")
    return text + "."


@term("gpu_anatomy", "hbm")
def hbm(data: dict) -> str:
    g = _gpu(data)
    text = (f"{_size(g['memory_bytes'])} of device memory; its peak from the memory clock and bus width is "
            f"{fmt_num(g['theoretical_bandwidth_gbs'])} GB/s")
    ceiling = other(data, "vector_add")["gpu"].get("ceiling_gbs")
    if ceiling:
        text += (f"; a device-to-device copy moved {fmt_num(ceiling)} GB/s "
                 f"({100 * ceiling / g['theoretical_bandwidth_gbs']:.0f} % of it)")
    row = _latency_row(data, "device memory")
    if row:
        text += f"; one load from it takes {_ns(row)}"
    return text + "."


@term("gpu_anatomy", "littles-law")
def littles_law(data: dict) -> str:
    g = _gpu(data)
    dram = data["latency"]["rows"][-1]["latency_ns"]
    best = max(r["gbs"] for r in data["occupancy"]["rows"])
    law = meta.littles_law(best, dram, g["multiprocessors"], 4, g["warp_size"])
    return (f"{fmt_num(best)} GB/s x {dram:,.0f} ns = {law['bytes_in_flight'] / 2**20:,.1f} MiB in flight, "
            f"{law['bytes_per_sm'] / 1024:,.0f} KiB per SM: {law['warps_per_sm_one_load_each']:,.0f} warps per SM "
            f"if each thread has one 4-byte load in flight, more than the "
            f"{g['max_threads_per_multiprocessor'] // g['warp_size']} an SM holds.")


@term("gpu_anatomy", "latency-hiding")
def latency_hiding(data: dict) -> str:
    one, four = (_best_by_warps(data, v) for v in (meta.READ_VARIANTS[0], meta.READ_VARIANTS[2]))
    if not one:
        raise pages.NotRecorded("occupancy")
    lo, hi = min(one), max(one)
    text = (f"with one load in flight per thread, reading memory ran at {fmt_num(one[lo])} GB/s with "
            f"{lo} warp{'s' if lo > 1 else ''} per SM and at {fmt_num(one[hi])} GB/s with {hi}")
    if four:
        text += f"; with four loads in flight per thread, at up to {fmt_num(max(four.values()))} GB/s"
    return text + "."


@term("gpu_anatomy", "occupancy")
def occupancy(data: dict) -> str:
    g = _gpu(data)
    enough: dict[int, list[str]] = {}            # fewest warps per SM for 90 % of the best -> kernels
    for variant in meta.READ_VARIANTS:
        best = _best_by_warps(data, variant)
        if best:
            top = max(best.values())
            enough.setdefault(min(w for w, v in best.items() if v >= 0.9 * top), []).append(variant)
    if not enough:
        raise pages.NotRecorded("occupancy")
    parts = [f"{w} warps per SM ({', '.join(vs) if len(enough) > 1 else 'every read kernel of the sweep'})"
             for w, vs in sorted(enough.items())]
    return (f"at most {g['max_threads_per_multiprocessor'] // g['warp_size']} warps per SM; 90 % of the best "
            "read bandwidth took " + ", ".join(parts) + ".")


@term("gpu_anatomy", "coalescing")
def coalescing(data: dict) -> str:
    rows = {r["stride"]: r for r in data["strided"]["rows"]}
    first = rows[min(rows)]
    later = [s for s in (8, max(rows)) if s in rows and s != min(rows)]
    return (f"a copy where thread i reads element i x stride moved {fmt_num(first['gbs'])} useful GB/s at "
            f"stride {min(rows)}, "
            + " and ".join(f"{100 * rows[s]['fraction_of_stride1']:.0f} % of that at stride {s}" for s in later)
            + ".")


@term("gpu_anatomy", "divergence")
def divergence(data: dict) -> str:
    t = {(r["mode"], r["k"]): r["median_s"] for r in data["divergence"]["rows"]}
    kmax = max(k for _, k in t)
    base = t[(2, 1)]
    return (f"with {kmax} different paths inside every warp, the kernel took {t[(0, kmax)] / base:.1f} times "
            f"as long as without a branch; with the same {kmax} paths, one per warp, "
            f"{t[(1, kmax)] / base:.2f} times.")


@term("gpu_anatomy", "kernel-launch")
def kernel_launch(data: dict) -> str:
    rows = data["launch"]["rows"]
    hosts = ", ".join(f"{r['name'].split(':')[0]} {fmt_time(r['host_submit_s'])}" for r in rows)
    gpu = [r["gpu_per_kernel_s"] for r in rows]
    trips = [r["round_trip_s"] for r in rows]
    return (f"the host's time to launch an empty kernel: {hosts}; the GPU's time per queued kernel: "
            f"{fmt_time(min(gpu))} to {fmt_time(max(gpu))}; launch and wait: {fmt_time(min(trips))} to "
            f"{fmt_time(max(trips))}.")


@term("gpu_anatomy", "cuda-graph")
def cuda_graph(data: dict) -> str:
    c = data["launch"]["chain"]
    graph = next((r for r in c["rows"] if "capture_s" in r), None)
    if graph is None:
        raise pages.NotRecorded("chain")
    one = c["rows"][0]
    return (f"{c['kernels']:,} small dependent kernels: {fmt_time(one['per_kernel_s'])} per kernel "
            f"launched one by one ({one['name'].split(',')[0]}), {fmt_time(graph['per_kernel_s'])} per "
            f"kernel replayed from a graph; recording the graph took {fmt_time(graph['capture_s'])}.")


@term("gpu_anatomy", "simd")
def simd(data: dict) -> str:
    h = data["host"]["facts"]
    g = data["machine"].get("gpu") or {}
    text = f"the host CPU ({h['model']}) works on {h['float32_lanes']} float32 numbers per SIMD instruction"
    if g:
        text += f"; a warp runs one instruction for {g['warp_size']} threads"
    return text + "."


# ------------------------------------------------------------------ vector add

def _kernels(g: dict) -> list[dict]:
    return [r for r in g["rows"] if r.get("backend")]


@term("vector_add", "grid-stride-loop")
def grid_stride_loop(data: dict) -> str:
    g = data["gpu"]
    rows = {r.get("impl"): r for r in _kernels(g) if r.get("backend") == "numba-cuda"}
    if "grid-stride" not in rows:
        raise pages.NotRecorded("grid-stride")
    r = rows["grid-stride"]
    text = (f"numba's grid-stride vector add moved {fmt_num(r['gbs'])} GB/s, "
            f"{r['pct_of_copy']:.0f} % of a device copy")
    if "grid-stride-x4" in rows:
        x4 = rows["grid-stride-x4"]
        text += f"; with four elements per step of the loop, {fmt_num(x4['gbs'])} GB/s ({x4['pct_of_copy']:.0f} %)"
    return text + "."


@term("vector_add", "memory-bound")
def memory_bound(data: dict) -> str:
    g = data["gpu"]
    best = min(_kernels(g), key=lambda r: r["median_s"])
    return (f"the fastest vector add ({best['name']}) moved {fmt_num(best['gbs'])} GB/s, "
            f"{best['pct_of_copy']:.0f} % of a device copy, while doing {g['n'] / best['median_s'] / 1e9:,.0f} "
            "GFLOP/s: one addition per 12 bytes, so memory sets its time.")


def _copies(g: dict) -> dict[str, dict]:
    copies = {c["name"]: c for c in g.get("copies", [])}
    if not copies:
        raise pages.NotRecorded("copies")
    return copies


@term("vector_add", "pinned-memory")
def pinned_memory(data: dict) -> str:
    c = _copies(data["gpu"])
    parts = []
    for way in ("host to device", "device to host"):
        pinned, pageable = c.get(f"{way}, pinned"), c.get(f"{way}, pageable")
        if pinned and pageable:
            parts.append(f"{way}, {fmt_num(pinned['gbs'], 1)} GB/s from pinned memory and "
                         f"{fmt_num(pageable['gbs'], 1)} GB/s from pageable memory" if way == "host to device"
                         else f"{way}, {fmt_num(pinned['gbs'], 1)} and {fmt_num(pageable['gbs'], 1)} GB/s")
    return "copies " + "; ".join(parts) + "."


@term("vector_add", "host-and-device")
def host_and_device(data: dict) -> str:
    g = data["gpu"]
    c = _copies(g).get("host to device, pinned")
    if c is None:
        raise pages.NotRecorded("copies")
    kernel = min(_kernels(g), key=lambda r: r["median_s"])
    return (f"copying one {_size(c['bytes'])} array to the GPU took {fmt_time(c['median_s'])} from pinned "
            f"memory ({fmt_num(c['gbs'], 1)} GB/s over PCIe), {c['median_s'] / kernel['median_s']:.0f} times "
            f"as long as adding two such arrays on the GPU ({fmt_time(kernel['median_s'])}), where a device copy "
            f"moves {fmt_num(g['ceiling_gbs'])} GB/s.")


# ------------------------------------------------------------------ timing

@term("timing", "cuda-event")
def cuda_event(data: dict) -> str:
    rows = data["nosync"]["rows"]
    events = next((r for r in rows if "CUDA events" in r["name"]), None)
    nosync = next((r for r in rows if "no sync (1 call)" in r["name"]
                   and events and r["name"].split(":")[0] == events["name"].split(":")[0]), None)
    if not (events and nosync):
        raise pages.NotRecorded("nosync")
    lib = events["name"].split(":")[0]
    return (f"{lib}'s SAXPY took {fmt_time(events['median_s'])} timed with CUDA events; a host clock stopped "
            f"without synchronising read {fmt_time(nosync['median_s'])}, "
            f"{events['median_s'] / nosync['median_s']:.0f} times too little.")


@term("timing", "jit")
def jit(data: dict) -> str:
    rows = data["first_call"]["rows"]
    parts = [f"{r['name']} {fmt_time(r['first_call_s'])} against {fmt_time(r['median_s'])}" for r in rows]
    return "first call against steady state, in a fresh process with empty kernel caches: " + "; ".join(parts) + "."


@term("timing", "cuda-context")
def cuda_context(data: dict) -> str:
    rows = [r for r in data["first_call"]["rows"] if r["name"] != "numba-cpu" and r.get("context_s")]
    if not rows:
        raise pages.NotRecorded("first_call")
    ctx = [r["context_s"] for r in rows]
    return (f"creating the context took {fmt_time(min(ctx))} to {fmt_time(max(ctx))} in a fresh process "
            f"({', '.join(r['name'] for r in rows)}).")


# ------------------------------------------------------------------ the other chapters

@term("mandelbrot", "kernel-cache")
def kernel_cache(data: dict) -> str:
    cases = {c["case"]: c for c in data["gpu"].get("cache", [])}
    empty = next((c for k, c in cases.items() if k.startswith("empty")), None)
    warm = next((c for k, c in cases.items() if k.startswith("warm")), None)
    if not (empty and warm):
        raise pages.NotRecorded("cache")
    return (f"the first call of numba's Mandelbrot kernel in a fresh process took {fmt_time(empty['first_call_s'])} "
            f"with an empty cache (it compiles) and {fmt_time(warm['first_call_s'])} with a warm one (it loads); "
            f"a later call takes {fmt_time(warm['median_s'])}.")


@term("ladder", "kernel-fusion")
def kernel_fusion(data: dict) -> str:
    rows = data["gpu"]["rows"]
    first = {}
    for r in rows:
        first.setdefault(r["level"], r)
    wanted = [lv for lv in ("torch-eager", "torch-softmax", "torch-compile") if lv in first]
    if len(wanted) < 2:
        raise pages.NotRecorded("rows")
    return ("softmax over a float32 matrix: " + "; ".join(
        f"{first[lv]['name']} {fmt_num(first[lv]['gbs'])} GB/s" for lv in wanted) + ".")


def _cublas(g: dict) -> dict:
    row = next((r for r in g["rows"] if r["name"] == "cublas"), None)
    if row is None:
        raise pages.NotRecorded("cublas")
    return row


@term("matmul", "cublas")
def cublas(data: dict) -> str:
    g = data["gpu"]
    row = _cublas(g)
    text = f"cuBLAS multiplied two {g['n']:,} x {g['n']:,} fp32 matrices at {row['tflops']:.1f} TFLOP/s"
    if g.get("best_kernel"):
        text += f"; the best kernel of the matmul chapter, `{g['best_kernel']}`, reached {g['best_pct_of_cublas']:.0f} % of it"
    return text + "."


@term("matmul", "roofline")
def roofline(data: dict) -> str:
    g = data["gpu"]
    peak = catalogue.fp32_peak(_gpu(data))
    if peak is None or not g.get("copy_ceiling_gbs"):
        raise pages.NotRecorded("fp32 peak or copy_ceiling_gbs")
    ridge = peak["tflops"] * 1e12 / (g["copy_ceiling_gbs"] * 1e9)
    text = (f"the fp32 roofs are {peak['tflops']:.1f} TFLOP/s (the FP32 peak) and "
            f"{fmt_num(g['copy_ceiling_gbs'])} GB/s (a device copy measured in the same run); "
            f"they meet at {ridge:.1f} FLOP per byte")
    row = next((r for r in g["rows"] if r["name"] == "cublas"), None)
    if row is not None:
        text += f". cuBLAS, a measured speed under the roof, reached {row['tflops']:.1f} TFLOP/s"
    return text + "."


@term("matmul", "tensor-core")
def tensor_core(data: dict) -> str:
    rows = data["gpu"].get("tensor_cores") or []
    if not rows:
        raise pages.NotRecorded("tensor_cores")
    return (f"the same {rows[0]['n']:,} x {rows[0]['n']:,} matrix product: "
            + "; ".join(f"{r['name']} {r['tflops']:,.0f} TFLOP/s" for r in rows) + ".")


@term("tensor_cores", "fp8")
def fp8(data: dict) -> str:
    rows = {r["precision"]: r for r in data["gpu"].get("roofs") or [] if r.get("tflops")}
    if "e4m3" not in rows or "bf16" not in rows:
        raise pages.NotRecorded("roofs")
    n = data["gpu"]["n"]
    e4m3, bf16 = rows["e4m3"], rows["bf16"]
    return (f"a product of two {n:,} x {n:,} matrices ran at {fmt_num(e4m3['tflops'])} TFLOP/s in e4m3 "
            f"({e4m3['library']}) and {fmt_num(bf16['tflops'])} TFLOP/s in bf16 ({bf16['library']}), "
            f"{e4m3['tflops'] / bf16['tflops']:.1f} times as fast.")


@term("matmul", "fp32-peak")
def fp32_peak(data: dict) -> str:
    peak = catalogue.fp32_peak(_gpu(data))
    if peak is None:
        raise pages.NotRecorded("gpu")
    row = _cublas(data["gpu"])
    return (f"{peak['sms']} SMs x {peak['lanes']} FP32 lanes x 2 FLOP x {peak['mhz']:,.0f} MHz = "
            f"{peak['tflops']:.1f} TFLOP/s; cuBLAS reached {row['tflops']:.1f} TFLOP/s, "
            f"{100 * row['tflops'] / peak['tflops']:.0f} % of it.")
