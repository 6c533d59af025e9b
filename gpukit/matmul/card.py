"""The card at the top of the chapter: what it teaches and three measured takeaways."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num

LEARN = [
    "count a matrix multiplication's FLOPs and bytes, and read its place on the roofline",
    "build a numbered progression of fp32 kernels: coalescing, shared memory, register tiles, "
    "16-byte loads, warp tiles",
    "measure each against cuBLAS in the same run, and check each with compute-sanitizer",
    "when to stop writing kernels: the library, and tensor cores",
]


@pages.card_renderer("matmul")
def card(data: dict) -> str:
    g = data["gpu"]
    rows = {r["name"]: r for r in g["rows"]}
    cublas = rows["cublas"]
    naive = rows["01-naive-numba"]
    best = rows[g["best_kernel"]]
    plain = next(r for r in g["tensor_cores"] if r["dtype"] == "float32" and not r["tf32"])
    fastest = max(g["tensor_cores"], key=lambda r: r["tflops"])
    cpu = data["cpu"]["rows"][0]
    takeaways = [
        f"At {g['n']:,} x {g['n']:,}, the naive kernel runs at {fmt_num(naive['tflops'], 2)} TFLOP/s, "
        f"{naive['pct_of_cublas']:.1f} % of cuBLAS ({fmt_num(cublas['tflops'], 1)} TFLOP/s); the best kernel of "
        f"the chapter, `{best['name']}`, at {fmt_num(best['tflops'], 1)} TFLOP/s, {best['pct_of_cublas']:.0f} %.",
        f"{cpu['name']} on the host's CPU reaches {fmt_num(cpu['tflops'], 2)} TFLOP/s: cuBLAS in fp32 is "
        f"{cublas['tflops'] / cpu['tflops']:.0f}x faster.",
        f"Tensor cores change the scale: *{fastest['name']}* reach {fmt_num(fastest['tflops'])} TFLOP/s, "
        f"{fastest['tflops'] / plain['tflops']:.1f}x fp32 without them.",
    ]
    return pages.card(LEARN, ["vector_add", "gpu_anatomy", "timing"], takeaways,
                      source=f"measured on {pages.plot_title(data)}")
