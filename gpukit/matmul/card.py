"""The three measured takeaways of the card at the top of the chapter (what it teaches
and what to read first are in the front matter of its page)."""

from __future__ import annotations

from gpukit import pages


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
        f"The naive kernel runs at {naive['pct_of_cublas']:.0f} % of the vendor library's speed; "
        f"the chapter's best kernel reaches {best['pct_of_cublas']:.0f} %.",
        f"In fp32 the GPU's library multiplies {cublas['tflops'] / cpu['tflops']:.0f}x faster "
        "than NumPy on every core of the host's CPU.",
        f"Allowed to use tensor cores, the same library call runs "
        f"{fastest['tflops'] / plain['tflops']:.0f}x faster than plain fp32.",
    ]
    return pages.takeaways(takeaways, source=f"measured on {pages.plot_title(data)}")
