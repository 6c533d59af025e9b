"""The chapter's tables and plot, drawn from ``results/<machine>/llm_inference.json``."""

from __future__ import annotations

from gpukit import pages
from gpukit.pages import fmt_num, fmt_pct, fmt_ratio, fmt_time, table

from .meta import (NAME, TARGET_ADVISE_DECODE, TARGET_ADVISE_MEMORY, TARGET_DECODE_SHARE,
                   TARGET_INT4_SPEEDUP, TARGET_INT8_SPEEDUP, TARGET_PREFILL_SHARE,
                   VARIANT_LABELS, advisor_checks)

GB = 1e9


def _gpu(data: dict) -> dict:
    return data["gpu"]


def _gb(x: float | None) -> str:
    return "-" if x is None else f"{x / GB:,.2f} GB"


def _roofs(g: dict) -> str:
    c = g["ceilings"]
    return (f"device copy {fmt_num(c['copy_gbs'])} GB/s, cuBLAS bf16 8192³ "
            f"{fmt_num(c['matmul_tflops'])} TFLOP/s, both measured in this run")


def _best(g: dict) -> list[dict]:
    return [r for r in g["decode"] if r["variant"] == g["best_variant"]]


@pages.renderer(NAME, "decode")
def decode(slug: str, data: dict) -> str:
    g = _gpu(data)
    rows = []
    for r in _best(g):
        rows.append([str(r["batch"]), fmt_num(r["tokens_per_s"], 1), fmt_time(r["median_s"]),
                     fmt_num(r["gbs"]), fmt_pct(r.get("share_of_copy"), fraction=True),
                     fmt_num(r.get("memory_roof_tokens_per_s")),
                     fmt_num(r.get("compute_roof_tokens_per_s"))])
    head = (f"{g['model']} shape, bf16, {g['best_variant']} "
            f"({VARIANT_LABELS[g['best_variant']]}), {g['decode'][0]['context']:,} cached "
            f"tokens per sequence; {_roofs(g)}.\n\n")
    return head + table(["batch", "tokens/s", "one step", "GB/s read", "of copy",
                         "memory roof, tokens/s", "compute roof, tokens/s"], rows)


@pages.renderer(NAME, "roofline")
def roofline(slug: str, data: dict) -> str:
    """Decode tokens/s against batch, with the memory and compute roofs of the same run."""
    g = _gpu(data)
    best = _best(g)
    b = [r["batch"] for r in best]
    fig, ax = pages.figure(height=4.6)
    ax.plot(b, [r["memory_roof_tokens_per_s"] for r in best], color="#1565c0", lw=2,
            label="memory roof")
    ax.plot(b, [r["compute_roof_tokens_per_s"] for r in best], color="#b71c1c", lw=2,
            label="compute roof")
    ax.plot(b, [r["tokens_per_s"] for r in best], "o-", color="black", ms=6,
            label="measured")
    cross = g.get("crossover_batch_weights_only")
    if cross:
        ax.axvline(cross, color="#777", ls=":", lw=1.5,
                   label=f"roofs meet, weights alone: {cross:.0f}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(b, [str(x) for x in b])
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel("batch (sequences decoded together)")
    ax.set_ylabel("tokens/s")
    ax.grid(alpha=0.3, which="major")
    lo = min(r["tokens_per_s"] for r in best)
    hi = max(r["compute_roof_tokens_per_s"] for r in best)
    ax.set_ylim(lo / 2, hi * 60)                # room above the compute roof for the legend
    ax.legend(loc="upper left", frameon=False)
    ax.set_title(f"8B shape, bf16, {g['decode'][0]['context']:,}-token context\n"
                 f"{pages.plot_title(data)}")
    fig.tight_layout()
    fig.canvas.draw()                         # place the legend before its labels are checked
    return pages.svg(fig)


@pages.renderer(NAME, "variants")
def variants(slug: str, data: dict) -> str:
    g = _gpu(data)
    by = {(r["variant"], r["batch"]): r for r in g["decode"]}
    batches = sorted({r["batch"] for r in g["decode"]})
    names = [v for v in VARIANT_LABELS if any(k[0] == v for k in by)]
    rows = []
    for b in batches:
        line = [str(b)]
        for v in names:
            r = by.get((v, b))
            line.append("-" if r is None else
                        f"{fmt_num(r['tokens_per_s'], 1)} ({fmt_pct(r.get('share_of_copy'), fraction=True)})"
                        + pages.dagger(r))
        rows.append(line)
    compile_s = g.get("compile_s", {})
    note = ""
    if compile_s:
        note = ("\n\ntorch.compile's first call (tracing and compiling the small steps), per "
                "batch size: " + ", ".join(f"batch {b}: {fmt_time(s)}" for b, s in compile_s.items())
                + ". It is paid once per shape and is not in the rates above.")
    sdpa, fast = g.get("decode_sdpa"), g.get("fast_decode") or {}
    if isinstance(sdpa, dict) and "tokens_per_s" in sdpa:
        mine = by.get(("compile", 1))
        # records since the attention kernel also rotates and writes the cache say so
        fused = "cache_max_rel_err" in fast
        note += (f"\n\nAttention at batch 1: the split-cache Triton kernels"
                 f"{' (rotation and cache write included)' if fused else ''} give "
                 f"{fmt_num(mine['tokens_per_s'], 1)} tokens/s; "
                 f"{'the rotation, two cache writes and ' if fused else ''}PyTorch's "
                 f"`scaled_dot_product_attention` over the masked cache, in the same step, "
                 f"{fmt_num(sdpa['tokens_per_s'], 1)} tokens/s.") if mine else ""
    cublas = g.get("decode_cublas")
    if isinstance(cublas, dict) and "tokens_per_s" in cublas and by.get(("compile", 1)):
        note += (f"\n\nMatrix products at batch 1: the Triton matrix-vector kernel gives "
                 f"{fmt_num(by[('compile', 1)]['tokens_per_s'], 1)} tokens/s; cuBLAS, in the "
                 f"same step, {fmt_num(cublas['tokens_per_s'], 1)} tokens/s.")
    if fast and not fast.get("enabled"):
        note += ("\n\nThe split-cache attention kernels were not used on this machine: "
                 f"{fast.get('error', 'they did not match PyTorch attention')}.")
    note += pages.flag_note(g["decode"])
    return table(["batch"] + [f"{VARIANT_LABELS[v]}: tokens/s (of copy)" for v in names],
                 rows) + note


STEP_KINDS = ("matrix products", "attention", "cache writes", "other")


@pages.renderer(NAME, "steps")
def steps(slug: str, data: dict) -> str:
    g = _gpu(data)
    prof = g.get("step_profile")
    if not isinstance(prof, dict) or not prof:
        raise pages.NotRecorded(slug)
    timed = {r["precision"]: r for r in g["decode"] + g.get("quant", [])
             if r["batch"] == 1 and r["variant"] == "compile"}
    rows, shares = [], []
    # a kind no step has (the cache writes, where the attention kernel does them) gets no column
    kinds = [kind for kind in STEP_KINDS
             if any(kind in p["kinds"] for p in prof.values() if isinstance(p, dict) and "kinds" in p)]
    for prec, p in prof.items():
        if not isinstance(p, dict) or "kinds" not in p:
            continue
        k, step = p["kinds"], timed.get(prec)
        cells = [prec, fmt_time(step["median_s"]) if step else "-"]
        for kind in kinds:
            e = k.get(kind)
            cells.append("-" if e is None else f"{fmt_num(e['us'], 0)} µs ({e['kernels']})")
        cells.insert(3, fmt_pct(p.get("matrix_share_of_copy"), fraction=True))
        idle = step["median_s"] * 1e6 - p["kernel_us"] if step else None
        cells.append("-" if idle is None else f"{fmt_num(idle, 0)} µs")
        rows.append(cells)
        if step and k.get("matrix products"):
            shares.append(k["matrix products"]["us"] * 1e-6 / step["median_s"])
    lead = ""
    if shares:
        lo, hi = min(shares), max(shares)
        span = fmt_pct(lo, fraction=True) if len(shares) == 1 else \
            f"{fmt_pct(lo, fraction=True)} to {fmt_pct(hi, fraction=True)}"
        reads = ", ".join(f"{prec} {fmt_pct(p.get('matrix_share_of_copy'), fraction=True)}"
                          for prec, p in prof.items() if isinstance(p, dict) and "kinds" in p)
        lead = (f"The matrix products take {span} of a step; the rest is spent in the small "
                f"kernels around them and between kernels. The products read their matrices "
                f"at these shares of the copy bandwidth: {reads}.\n\n")
    heads = {"matrix products": "matrix products (kernels)", "other": "everything else"}
    head = [heads.get(kind, kind) for kind in kinds]
    head.insert(1, "their bytes, of copy")
    return lead + table(["precision", "one step (graph)", *head, "between kernels"], rows)


@pages.renderer(NAME, "prefill")
def prefill(slug: str, data: dict) -> str:
    g = _gpu(data)
    if isinstance(g["prefill"], dict):
        return f"!!! failure \"Prefill failed on this machine\"\n    `{g['prefill']['error']}`"
    rows = []
    for r in g["prefill"]:
        if r.get("oom"):
            rows.append([f"{r['tokens']:,}", "out of memory", "-", "-", "-"])
            continue
        rows.append([f"{r['tokens']:,}", fmt_time(r["time_to_first_token_s"]),
                     fmt_num(r["flops"] / 1e12, 1), fmt_num(r["tflops"]),
                     fmt_pct(r["share_of_matmul"], fraction=True)])
    return (f"Batch 1, bf16; {_roofs(g)}.\n\n"
            + table(["prompt tokens", "time to first token", "TFLOP", "TFLOP/s",
                     "of cuBLAS"], rows))


@pages.renderer(NAME, "attention")
def attention(slug: str, data: dict) -> str:
    g = _gpu(data)
    if isinstance(g["attention"], dict):
        return f"!!! failure \"The attention comparison failed\"\n    `{g['attention']['error']}`"
    rows = []
    for r in g["attention"]:
        name = "flash (scaled_dot_product_attention)" if r["impl"] == "flash" else "written out"
        if r["oom"]:
            rows.append([f"{r['context']:,}", name, "out of memory", "-",
                         f"needs more than the {_gb(r['free_bytes'])} free"])
        else:
            rows.append([f"{r['context']:,}", name, fmt_time(r["median_s"]),
                         fmt_num(r["tflops"]), _gb(r["extra_peak_bytes"])])
    r0 = g["attention"][0]
    return (f"One layer's attention, batch 1, {r0['heads']} heads of {r0['head_dim']}, causal, "
            f"bf16. The score matrix alone takes heads x context² x 2 bytes.\n\n"
            + table(["context", "attention", "time", "TFLOP/s", "memory beyond q, k, v"], rows))


@pages.renderer(NAME, "memory")
def memory(slug: str, data: dict) -> str:
    g = _gpu(data)
    # the advisor's estimate, recomputed now by its code, for every configuration measured
    checks = {(c["precision"], c["batch"]): c for c in advisor_checks(data)}
    rows = []
    for m in g["memory"]:
        c = checks.get((m["precision"], m["batch"]), {})
        adv = c.get("estimate_memory_bytes")
        rows.append([m["precision"], str(m["batch"]), _gb(m["weight_bytes"]), _gb(m["kv_bytes"]),
                     _gb(m["other_bytes"]), _gb(m["peak_bytes"]), _gb(adv),
                     "-" if not adv else f"{100 * (adv / m['peak_bytes'] - 1):+.1f} %"
                     .replace("-0.0 %", "+0.0 %")])                 # no minus on a zero
    return (f"{g['memory'][0]['context']:,} cached tokens per sequence; peak = weights + what "
            f"the cache and one decode step allocate (`torch.cuda.max_memory_allocated`).\n\n"
            + table(["precision", "batch", "weights", "KV cache", "other", "peak",
                     "`gpukit advise`", "advise vs peak"], rows))


@pages.renderer(NAME, "quant")
def quant(slug: str, data: dict) -> str:
    g = _gpu(data)
    base = next(r for r in g["decode"] if r["batch"] == 1 and r["variant"] == g["best_variant"])
    mine = [r for r in g["quant"] if r["variant"] == g["best_variant"]]
    matrix = any("matrix_rel_err" in r for r in mine)
    rows = [["bf16", fmt_num(base["tokens_per_s"], 1), "1.0x", _gb(base["bytes_per_step"]),
             fmt_num(base["gbs"]), fmt_pct(base.get("share_of_copy"), fraction=True)] + ["-"] * (2 + matrix)]
    for r in mine:
        err = [f"{100 * r['matrix_rel_err']:.1f} %"] if matrix else []
        rows.append([r["precision"], fmt_num(r["tokens_per_s"], 1),
                     fmt_ratio(r.get("speedup_vs_bf16"), 2), _gb(r["bytes_per_step"]),
                     fmt_num(r["gbs"]), fmt_pct(r.get("share_of_copy"), fraction=True)] + err
                    + [f"{100 * r['logits_rel_err']:.1f} %", fmt_pct(r["top1_agreement"], fraction=True)])
    head = (f"Batch 1, {base['context']:,} cached tokens, {g['best_variant']}; errors against "
            f"bf16: " + ("one MLP matrix times random vectors, and " if matrix else "")
            + "the logits of one decode step (same cache, same tokens).\n\n")
    return head + table(["precision", "tokens/s", "vs bf16", "read per step", "GB/s",
                         "of copy"] + (["one matrix's error"] if matrix else [])
                        + ["logits error", "same top token"], rows)


def interpolated(c: dict) -> bool:
    """A check whose efficiency lies between two other measured batches of its precision: the
    use the advisor is built for (ends and unmeasured precisions are extrapolations)."""
    return c.get("between") is True


@pages.renderer(NAME, "advisor")
def advisor(slug: str, data: dict) -> str:
    rows = []
    for c in advisor_checks(data):
        adv = c["estimate_tokens_per_s"]
        rows.append([c["precision"], str(c["batch"]), fmt_num(c["measured_tokens_per_s"], 1),
                     fmt_num(adv, 1), f"{100 * (adv / c['measured_tokens_per_s'] - 1):+.1f} %",
                     c["basis"]])
    if not rows:
        raise pages.NotRecorded("advisor_check")
    return ("Each estimate leaves its own measurement out: the advisor's efficiency for that row "
            "comes from the other rows (last column), so every row tests the estimate.\n\n"
            + table(["precision", "batch", "measured tokens/s", "`gpukit advise` tokens/s",
                     "advise vs measured", "efficiency from"], rows, align="lrrrrl"))


# ------------------------------------------------------------------ targets

@pages.targets(NAME)
def targets(data: dict) -> list[pages.Target]:
    g = data.get("gpu")
    if not g:
        return []
    out = []
    share = g.get("decode_efficiency")
    out.append(pages.Target("batch-1 bf16 decode, bytes read per second",
                            f">= {TARGET_DECODE_SHARE:.0%} of the copy bandwidth",
                            fmt_pct(share, fraction=True), None if share is None else share >= TARGET_DECODE_SHARE))
    for prec, goal in (("int8", TARGET_INT8_SPEEDUP), ("int4", TARGET_INT4_SPEEDUP)):
        r = next((r for r in g.get("quant", []) if r["precision"] == prec
                  and r.get("speedup_vs_bf16")), None)
        s = r and r["speedup_vs_bf16"]
        out.append(pages.Target(f"weight-only {prec}, batch 1", f">= {goal}x the bf16 tokens/s",
                                fmt_ratio(s, 2), None if s is None else s >= goal))
    p8 = next((r for r in g["prefill"] if r.get("tokens") == 8192 and not r.get("oom")), None) \
        if isinstance(g.get("prefill"), list) else None
    out.append(pages.Target("prefill at 8K tokens", f">= {TARGET_PREFILL_SHARE:.0%} of cuBLAS bf16",
                            fmt_pct(p8 and p8["share_of_matmul"], fraction=True),
                            None if p8 is None else p8["share_of_matmul"] >= TARGET_PREFILL_SHARE))
    checks = advisor_checks(data)
    mem = [abs(c["estimate_memory_bytes"] / c["measured_peak_bytes"] - 1) for c in checks]
    gap = {id(c): abs(c["estimate_tokens_per_s"] / c["measured_tokens_per_s"] - 1) for c in checks}
    dec = [gap[id(c)] for c in checks if interpolated(c)]
    out.append(pages.Target(f"`gpukit advise` memory, {len(mem)} configurations",
                            f"within {TARGET_ADVISE_MEMORY:.0%} of measured peak",
                            f"worst {max(mem):.1%}" if mem else "-",
                            None if len(mem) < 3 else max(mem) <= TARGET_ADVISE_MEMORY))
    rest = [gap[id(c)] for c in checks if not interpolated(c)]
    out.append(pages.Target(f"`gpukit advise` decode, {len(dec)} configurations between two "
                            "measured batches, each left out of what the advisor uses",
                            f"within {TARGET_ADVISE_DECODE:.0%} of measured",
                            (f"worst {max(dec):.1%}" if dec else "-")
                            + (f" (the {len(rest)} others, extrapolated: worst {max(rest):.0%})"
                               if rest else ""),
                            None if len(dec) < 3 else max(dec) <= TARGET_ADVISE_DECODE))
    return out


@pages.renderer(NAME + "_profiles", "kernels")
def kernels(slug: str, data: dict) -> str:
    rows = []
    for r in data["gpu"]["rows"]:
        stall = (r.get("top_stalls") or [{}])[0]
        mix = ((r.get("sass") or {}).get("mix") or [])[:2]
        per_kb = _per_kb(r)
        rows.append([r["label"].split()[0], _tile(r["label"]), fmt_time(r["duration_s"]),
                     f"{fmt_num(r['counted_bytes'] / r['duration_s'] / GB)} GB/s",
                     fmt_pct(r.get("dram_pct")), "-" if per_kb is None else fmt_num(per_kb),
                     fmt_pct(r.get("issue_active_pct")), fmt_pct(r.get("achieved_occupancy_pct")),
                     f"`{stall['reason']}` {stall['cycles_per_issue']:.1f}" if stall else "-",
                     ", ".join(f"{op} {fmt_pct(share, fraction=True)}" for op, share in mix) or "-"])
    if not rows:
        raise pages.NotRecorded("profiles")
    n = data["gpu"]["rows"][0]["n"]
    by = {r["label"].split()[0]: r for r in data["gpu"]["rows"]}
    lead = ""
    if "bf16" in by and _per_kb(by["bf16"]):
        parts = [f"{p} {_per_kb(by[p]) / _per_kb(by['bf16']):.1f} times the instructions "
                 f"of bf16, with the issue slots {fmt_pct(by[p].get('issue_active_pct'))} busy"
                 for p in ("int8", "int4") if p in by and _per_kb(by[p])]
        if parts:
            lead = ("Per byte of the matrix, the kernels that unpack small integers execute "
                    + "; ".join(parts) + " (bf16: "
                    f"{fmt_pct(by['bf16'].get('issue_active_pct'))}).\n\n")
    head = lead + (f"**{pages.machine_title(data)}**, Nsight Compute on one product of a "
            f"{n:,} x 4,096 matrix with one vector per kernel (after a warm-up); GB/s: the "
            "bytes the product needs over its time; tile: rows x columns (or groups) of the "
            "matrix per program; warp instructions: instructions executed by whole warps; the "
            "top stall in cycles per issued instruction.\n\n")
    return head + table(["kernel", "tile", "duration", "needed bytes", "DRAM busy",
                         "warp instructions per KB", "issue slots busy",
                         "achieved occupancy", "top stall", "most executed"], rows,
                        align="llrrrrrrll")


def _tile(label: str) -> str:
    """"BLOCK_N 2, BLOCK_K 2048, num_warps 8" (in a target's label) as "2 x 2,048, 8 warps"."""
    kv = dict(part.rsplit(" ", 1) for part in label.split(", ")[1:])
    cols = (f"{int(kv['BLOCK_K']):,}" if "BLOCK_K" in kv
            else f"{kv.get('BLOCK_G', '?')} groups")
    return f"{kv.get('BLOCK_N', '?')} x {cols}, {kv.get('num_warps', '?')} warps"


def _per_kb(r: dict) -> float | None:
    """Warp instructions executed per 1,000 bytes the product needs."""
    n = (r.get("sass") or {}).get("instructions")
    return 1000 * n / r["counted_bytes"] if n else None
