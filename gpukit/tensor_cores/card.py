"""The three measured takeaways of the card at the top of the chapter (what it teaches
and what to read first are in the front matter of its page)."""

from __future__ import annotations

from gpukit import pages

from .meta import FP8_LIBRARY, LIBRARY, PRECISIONS, SLUG
from .views import fp8_rows, ladder_rows, roof


@pages.card_renderer(SLUG)
def card(data: dict) -> str:
    gpu = data["gpu"]
    bf16, fp32 = roof(gpu, "bf16"), roof(gpu, "fp32")
    rows = ladder_rows(gpu)
    lib = rows[LIBRARY]
    mine = [r for k, r in rows.items() if k != LIBRARY]
    best = max(mine, key=lambda r: r["tflops"])
    slow = min(mine, key=lambda r: r["tflops"])
    takeaways = [
        f"The same GPU multiplies {gpu['n']:,}-sized matrices at "
        f"{pages.fmt_num(bf16['tflops'])} TFLOP/s in bf16 on its tensor cores and at "
        f"{pages.fmt_num(fp32['tflops'])} TFLOP/s in fp32 without them: "
        f"{pages.fmt_ratio(bf16['tflops'] / fp32['tflops'])}.",
        f"Of the {len(mine)} kernels of the ladder recorded, the slowest, "
        f"`{slow['kernel']}`, reaches {100 * slow['tflops'] / lib['tflops']:.0f} % of "
        f"cuBLAS and the fastest, `{best['kernel']}`, "
        f"{100 * best['tflops'] / lib['tflops']:.0f} %.",
    ]
    fp8 = fp8_rows(gpu)
    lt = fp8.get(FP8_LIBRARY)
    if lt:
        takeaways.append(
            f"fp8 raises the rate again: cuBLASLt reaches {pages.fmt_num(lt['tflops'])} "
            f"TFLOP/s, {pages.fmt_ratio(lt['tflops'] / lib['tflops'])} bf16, at the price "
            f"of {PRECISIONS['e4m3'][1]} significant bits instead of "
            f"{PRECISIONS['bf16'][1]}.")
    return pages.takeaways(takeaways, source=f"measured on {pages.plot_title(data)}")
