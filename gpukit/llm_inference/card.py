"""The three measured takeaways of the card at the top of the chapter (what it teaches
and what to read first are in the front matter of its page)."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_ratio, fmt_time

from .meta import NAME


@pages.card_renderer(NAME)
def card(data: dict) -> str:
    g = data["gpu"]
    best = [r for r in g["decode"] if r["variant"] == g["best_variant"]]
    one = next(r for r in best if r["batch"] == 1)
    top = max(best, key=lambda r: r["tokens_per_s"])
    q4 = next((r for r in g["quant"] if r["precision"] == "int4"
               and r.get("speedup_vs_bf16")), None)
    p8 = next((r for r in g["prefill"] if r.get("tokens") == 8192 and not r.get("oom")), None)
    takeaways = [
        f"One sequence decodes {fmt_num(one['tokens_per_s'])} tokens/s: each step reads "
        f"{one['bytes_per_step'] / 1e9:.1f} GB, at {fmt_num(100 * one['share_of_copy'])} % of "
        f"the speed of a plain memory copy.",
        f"{top['batch']} sequences together reach {fmt_num(top['tokens_per_s'])} tokens/s, "
        f"{fmt_ratio(top['tokens_per_s'] / one['tokens_per_s'], 0)} as many: the weights are read "
        f"once per step, whatever the batch.",
    ]
    third = []
    if q4:
        third.append(f"4-bit weights decode at {fmt_ratio(q4['speedup_vs_bf16'], 2)} the bf16 "
                     f"speed")
    if p8:
        third.append(f"an 8K-token prompt takes {fmt_time(p8['time_to_first_token_s'])} "
                     f"before the first new token appears")
    if not third:
        third.append(f"the KV cache of {top['batch']} sequences takes "
                     f"{top['kv_bytes'] / 1e9:.1f} GB next to the weights")
    text = "; ".join(third)
    takeaways.append(text[0].upper() + text[1:] + ".")
    return pages.takeaways(takeaways, source=f"measured on {pages.plot_title(data)}")
