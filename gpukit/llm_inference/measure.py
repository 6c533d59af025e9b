"""The language-model benchmark: what ``gpukit bench llm-inference --save`` records.

On a GPU, the 8B shape in bf16, every number next to a ceiling measured in the same run (a
device-to-device copy for bytes per second, cuBLAS bf16 8192^3 for FLOP/s):

* decode at several batch sizes, launched op by op (eager), replayed from a CUDA graph, and
  with torch.compile's fused steps replayed from a graph (compile time apart); bytes per step
  are the weights one step reads plus the KV cache of the context;
* prefill (a prompt of 1K, 8K, 32K tokens): TFLOP/s and the time to the first token;
* attention written out (the score matrix materialised) against PyTorch's flash path;
* the peak memory of each decode configuration, next to ``gpukit advise``'s estimate;
* weight-only int8 and int4 at batch 1 (the Triton kernels of :mod:`.quant`), with the
  error of their logits against bf16.

Without a GPU, the tiny configuration runs on the CPU (part ``"cpu"``).
"""

from __future__ import annotations

import gc
import time
from dataclasses import replace

from .. import bench, device
from . import meta

SEED = 0
#: the whole GPU run must stay within this (seconds); later optional steps are skipped past it
BUDGET_S = 220.0


#: the share fields of a row: key -> (the row's rate, the ceiling of ``roofs`` it is set against)
SHARES = {"share_of_copy": ("gbs", "copy_gbs"), "share_of_matmul": ("tflops", "matmul_tflops")}
#: the fields of a decode step's timing that its row keeps
DECODE_FIELDS = ("median_s", "min_s", "max_s", "repeats", "gbs", "tflops", *bench.FLAGS)


def _roofs(roofs: dict) -> dict:
    """The ceilings measured in this run (``roofs``), as fractions of each."""
    return {key: bench.Roof(rate, roofs[name], percent=False)
            for key, (rate, name) in SHARES.items() if roofs.get(name)}


def _free():
    import torch
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


# ------------------------------------------------------------------ one decode step

def decode_inputs(model, batch: int, context: int, seed: int = SEED):
    """A cache of ``context`` tokens per sequence (random values: as if read already) and
    one new token per sequence, at the last position."""
    import torch
    from .model import KVCache
    cache = KVCache.empty(model.cfg, batch, context, model.device, model.dtype, fill_seed=seed)
    g = torch.Generator(device=model.device).manual_seed(seed + 1)
    tokens = torch.randint(0, model.cfg.vocab, (batch, 1), device=model.device, generator=g)
    pos = torch.tensor([context - 1], device=model.device)
    return tokens, pos, cache


def capture(fn):
    """``fn`` captured in a CUDA graph (after warm-up calls on a side stream); returns the
    graph's replay and the captured output."""
    import torch
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph.replay, out


def decode_row(model, batch, context, variant, roofs, *, repeat=10, timer="torch",
               inputs=None) -> dict:
    """Time one decode step of ``model`` and express it as rates and shares of the roofs."""
    tokens, pos, cache = inputs or decode_inputs(model, batch, context)
    step = lambda: model(tokens, pos, cache)  # noqa: E731
    first_s = None
    if variant in ("graph", "compile"):
        t0 = time.perf_counter()
        step, _ = capture(step)
        first_s = time.perf_counter() - t0
    nbytes = model.read_bytes(batch) + cache.nbytes
    flops = model.cfg.decode_flops(batch, context)
    t = bench.bench(step, timer=timer, name=f"decode {variant} b{batch}", warmup=2,
                    repeat=repeat, bytes=nbytes, flops=flops)
    row = bench.row(t, only=DECODE_FIELDS, roofs=_roofs(roofs), per_s={"tokens_per_s": batch},
                    name=f"decode {model.precision} {variant} batch {batch}", variant=variant,
                    precision=model.precision, batch=batch, context=context, capture_s=first_s,
                    bytes_per_step=nbytes, kv_bytes=cache.nbytes, flops_per_step=flops)
    if roofs.get("copy_gbs"):
        row["memory_roof_tokens_per_s"] = batch * roofs["copy_gbs"] * 1e9 / nbytes
    if roofs.get("matmul_tflops"):
        row["compute_roof_tokens_per_s"] = batch * roofs["matmul_tflops"] * 1e12 / flops
    return row


def peak_memory(model, batch, context) -> dict:
    """Peak bytes allocated while a cache for ``batch`` x ``context`` is made and one decode
    step runs, plus the model's weights (``peak_bytes``); what else was allocated before
    (another model kept for comparison) is left out, and recorded apart.

    A first step over a short cache comes before: the kernels compile and autotune there, and
    Triton's autotuner allocates a scratch buffer of its own (256 MiB, to flush the L2 cache
    between trials) that is no part of the model's memory."""
    import torch
    warm = decode_inputs(model, batch, min(context, 16))
    model(*warm)
    del warm
    _free()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    tokens, pos, cache = decode_inputs(model, batch, context)
    model(tokens, pos, cache)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    weights = model.weight_bytes()
    out = {"batch": batch, "context": context, "precision": model.precision,
           "allocated_before": before, "device_peak_bytes": peak, "kv_bytes": cache.nbytes,
           "weight_bytes": weights, "peak_bytes": weights + peak - before,
           "other_bytes": peak - before - cache.nbytes}
    del tokens, pos, cache
    return out


def enable_fast_decode(model, batch: int = 2, context: int = 300) -> dict:
    """Switch ``model`` to the fused Triton kernels of .attention for decoding (rotation,
    cache write and split-cache attention in one) if, on a random projection over a partly
    filled cache, they match the steps they replace computed in float32 (rotation, cache
    write, PyTorch's attention) and write the cache where those do; what was compared, and
    the verdict."""
    import torch
    from .attention import rope_decode_attention
    from .model import grouped_attention, split_rotate
    cfg, dev = model.cfg, model.device
    d = cfg.head_dim
    model.fast_decode = False
    if not (dev.type == "cuda" and model.dtype == torch.bfloat16 and d >= 16 and d & (d - 1) == 0):
        return {"enabled": False, "error": "needs a GPU, bf16 and a power-of-two head size >= 16"}
    g = torch.Generator(device=dev).manual_seed(SEED + 11)
    qkv = torch.randn(batch, 1, cfg.qkv_rows, device=dev, generator=g).to(model.dtype)
    k, v = (torch.randn(batch, cfg.kv_heads, context, d, device=dev, generator=g)
            .to(model.dtype) for _ in range(2))
    pos = torch.tensor([context - 37 if context > 40 else context - 1], device=dev)
    cos, sin = model.cos[pos].float(), model.sin[pos].float()
    q1, k1, v1 = (y.transpose(1, 2) for y in split_rotate(qkv.float(), cos, sin, cfg.heads,
                                                          cfg.kv_heads))
    rk, rv = k.float().index_copy_(2, pos, k1), v.float().index_copy_(2, pos, v1)
    mask = torch.arange(context, device=dev)[None, :] <= pos[:, None]
    ref = grouped_attention(q1, rk, rv, mask).transpose(1, 2).reshape(batch, 1, -1)
    try:
        got = rope_decode_attention(qkv, model.cos, model.sin, k, v, pos, cfg.heads).float()
    except Exception as exc:
        return {"enabled": False, "error": f"{type(exc).__name__}: {exc}"}
    err = ((got - ref).abs().max() / ref.abs().max()).item()
    cache_err = (max((k.float() - rk).abs().max(), (v.float() - rv).abs().max())
                 / rk.abs().max()).item()
    ok = (bool(torch.isfinite(got).all()) and got.shape == ref.shape and err < 2e-2
          and cache_err < 2 ** -8)
    model.fast_decode = ok
    return {"enabled": ok, "max_rel_err_vs_float32": err, "cache_max_rel_err": cache_err,
            "batch": batch, "context": context, "matvec": enable_fast_matvec(model)}


def enable_fast_matvec(model, shape=(1000, 520)) -> dict:
    """Switch ``model``'s one-token bf16 matrix products to the Triton kernel of .matvec if
    it matches a float32 product on a random matrix whose sizes fit no tile exactly."""
    import torch
    from .matvec import matvec
    dev = model.device
    model.fast_matvec = False
    if not (dev.type == "cuda" and model.dtype == torch.bfloat16):
        return {"enabled": False, "error": "needs a GPU and bf16"}
    g = torch.Generator(device=dev).manual_seed(SEED + 12)
    w = torch.randn(shape, device=dev, generator=g).to(model.dtype)
    x = torch.randn(1, 1, shape[1], device=dev, generator=g).to(model.dtype)
    ref = x.float() @ w.float().T
    try:
        got = matvec(x, w).float()
    except Exception as exc:
        return {"enabled": False, "error": f"{type(exc).__name__}: {exc}"}
    err = ((got - ref).abs().max() / ref.abs().max()).item()
    ok = bool(torch.isfinite(got).all()) and got.shape == ref.shape and err < 1e-2
    model.fast_matvec = ok
    return {"enabled": ok, "max_rel_err_vs_float32": err, "shape": list(shape)}


#: kernel names (as the profiler gives them) by what they do in a decode step
KERNEL_KINDS = (("matrix products", ("matvec", "gemv", "gemm", "nvjet", "splitk", "cutlass")),
                ("attention", ("partial", "combine", "attention", "flash")),
                ("cache writes", ("index_copy", "index_put")))


def kernel_kind(name: str) -> str:
    low = name.lower()
    for kind, words in KERNEL_KINDS:
        if any(w in low for w in words):
            return kind
    return "other"


def matrix_bytes(model) -> int:
    """Bytes of every matrix one decode step multiplies by (scales included)."""
    mats = [model.output] + [w for L in model.layers for w in (L.wqkv, L.wo, L.w13, L.w2)]
    return sum(w.nbytes for w in mats)


def step_profile(model, inputs, roofs, steps: int = 5) -> dict:
    """Where the time of one decode step goes: PyTorch's profiler over ``steps`` steps
    launched one by one (the kernels a CUDA graph replays are the same), kernel time per
    step by kind; the matrix products as a share of the copy bandwidth for the matrices'
    bytes."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        model(*inputs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            model(*inputs)
        torch.cuda.synchronize()
    kinds: dict[str, dict] = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        k = kinds.setdefault(kernel_kind(e.name), {"us": 0.0, "kernels": 0})
        k["us"] += e.device_time_total / steps
        k["kernels"] += 1
    for k in kinds.values():
        k["kernels"] = round(k["kernels"] / steps)
    out = {"precision": model.precision, "kinds": kinds, "steps": steps,
           "matrix_bytes": matrix_bytes(model),
           "kernel_us": sum(k["us"] for k in kinds.values())}
    mm = kinds.get("matrix products")
    if mm and mm["us"] and roofs.get("copy_gbs"):
        out["matrix_share_of_copy"] = out["matrix_bytes"] / (mm["us"] * 1e-6) / 1e9 / roofs["copy_gbs"]
    return out


# ------------------------------------------------------------------ the GPU run

def _ceilings() -> dict:
    copy = bench.copy_ceiling("torch")
    mm = bench.matmul_ceiling(8192, "bfloat16")
    return {"copy_gbs": copy.gbs, "matmul_tflops": mm.tflops,
            "copy": bench.row(copy, drop=("samples_s",)),
            "matmul": bench.row(mm, drop=("samples_s",))}


def attention_rows(contexts, heads=32, head_dim=128, repeat=5) -> list[dict]:
    """Causal attention of one layer (batch 1): written out against the flash path."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from .model import naive_attention
    rows = []
    for t in contexts:
        g = torch.Generator(device="cuda").manual_seed(SEED)
        q, k, v = (torch.randn(1, heads, t, head_dim, device="cuda", dtype=torch.bfloat16,
                               generator=g) for _ in range(3))
        flops = 2.0 * heads * head_dim * t * t           # causal: half of 4 T^2 d per head
        ref = None
        for impl in ("flash", "naive"):
            if impl == "flash":
                def fn():
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                def fn():
                    return naive_attention(q, k, v)
            score_bytes = heads * t * t * 2
            row = {"name": f"attention {impl} {t}", "impl": impl, "context": t,
                   "heads": heads, "head_dim": head_dim, "score_matrix_bytes": score_bytes}
            _free()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            try:
                out = fn()
                torch.cuda.synchronize()
                row["extra_peak_bytes"] = torch.cuda.max_memory_allocated() - base
                if impl == "flash":
                    ref = out.float()
                elif ref is not None:
                    row["max_abs_diff_vs_flash"] = (out.float() - ref).abs().max().item()
                del out
                tm = bench.bench(fn, timer="torch", name=row["name"], warmup=1,
                                 repeat=repeat, flops=flops)
                row.update(median_s=tm.median_s, tflops=tm.tflops, oom=False)
            except torch.cuda.OutOfMemoryError:
                row.update(oom=True, median_s=None, tflops=None,
                           free_bytes=torch.cuda.mem_get_info()[0])
            _free()
            rows.append(row)
        del q, k, v, ref
    return rows


def prefill_rows(model, lengths, roofs, repeat=3) -> list[dict]:
    import torch
    rows = []
    for t in lengths:
        try:
            rows.append(_prefill_row(model, t, roofs, repeat))
        except torch.cuda.OutOfMemoryError:
            rows.append({"name": f"prefill {t} tokens", "tokens": t, "oom": True})
        _free()
    return rows


def _prefill_row(model, t, roofs, repeat) -> dict:
    """One prompt of ``t`` tokens at batch 1: its time is the time to the first token."""
    import torch
    from .model import KVCache
    g = torch.Generator(device="cuda").manual_seed(SEED + t)
    tokens = torch.randint(0, model.cfg.vocab, (1, t), device="cuda", generator=g)
    pos = torch.arange(t, device="cuda")
    cache = KVCache.empty(model.cfg, 1, t, "cuda", model.dtype)
    flops = model.cfg.prefill_flops(t)
    tm = bench.bench(lambda: model(tokens, pos, cache, prefill=True), timer="torch",
                     name=f"prefill {t}", warmup=1, repeat=repeat, flops=flops)
    return bench.row(tm, only=("first_call_s", "flops", "median_s", "tflops"),
                     roofs=_roofs(roofs), name=f"prefill {t} tokens", tokens=t,
                     time_to_first_token_s=tm.median_s)


def output_error(model, other, batch=8, context=128) -> dict:
    """One decode step of ``other`` (a quantised copy) against ``model``: the same random
    cache and tokens, the logits compared."""
    tokens, pos, cache = decode_inputs(model, batch, context, seed=SEED + 7)
    ref = model(tokens, pos, cache).float()
    got = other(tokens, pos, cache).float()
    rel = ((got - ref).norm() / ref.norm()).item()
    agree = (got.argmax(-1) == ref.argmax(-1)).float().mean().item()
    return {"logits_rel_err": rel, "top1_agreement": agree, "error_batch": batch,
            "error_context": context}


def matrix_error(w, q, rows: int = 8) -> float:
    """Relative error of one quantised matrix's product with random vectors."""
    import torch
    g = torch.Generator(device=w.device).manual_seed(SEED + 13)
    x = torch.randn(rows, w.shape[1], device=w.device, dtype=w.dtype, generator=g)
    ref = (x.float() @ w.float().T)
    return ((q(x).float() - ref).norm() / ref.norm()).item()


def run_gpu(repeat: int = 10, budget_s: float = BUDGET_S, log=print) -> dict:
    import torch
    from .model import PRESETS, random_model
    from .quant import quantized
    start = time.perf_counter()
    elapsed = lambda: time.perf_counter() - start  # noqa: E731
    cfg = PRESETS[meta.ADVISOR_MODEL]
    out = {"n": cfg.params(), "model": meta.ADVISOR_MODEL, "config": cfg.__dict__.copy(),
           "seed": SEED, "skipped": []}

    roofs = _ceilings()
    out["ceilings"] = roofs
    log(f"[{elapsed():6.1f}s] copy {roofs['copy_gbs']:.0f} GB/s, "
        f"bf16 matmul {roofs['matmul_tflops']:.0f} TFLOP/s")

    out["attention"] = _guard(lambda: attention_rows(meta.ATTENTION_CONTEXTS), log)
    log(f"[{elapsed():6.1f}s] attention done")

    t0 = time.perf_counter()
    with torch.inference_mode():
        model = random_model(cfg, seed=SEED, device="cuda", max_context=max(meta.PREFILL_TOKENS))
        torch.cuda.synchronize()
        out["init_s"] = time.perf_counter() - t0
        out["weight_bytes"] = model.weight_bytes()
        out["read_bytes_batch1"] = model.read_bytes(1)
        log(f"[{elapsed():6.1f}s] model: {model.weight_bytes() / 1e9:.2f} GB in {out['init_s']:.1f} s")

        out["fast_decode"] = enable_fast_decode(model)
        log(f"[{elapsed():6.1f}s] split-cache decode attention: {out['fast_decode']}")
        cmodel = model.with_compiled_steps()

        # prefill with the compiled small steps (each prompt length compiles once)
        out["prefill"] = _guard(lambda: prefill_rows(cmodel, meta.PREFILL_TOKENS, roofs), log)
        log(f"[{elapsed():6.1f}s] prefill done")

        # decode: memory, eager, graph, compiled
        decode, memory, compile_s = [], [], {}
        for b in meta.BATCHES:
            memory.append(peak_memory(model, b, meta.DECODE_CONTEXT))
            inputs = decode_inputs(model, b, meta.DECODE_CONTEXT)
            for variant in meta.VARIANTS:
                if variant == "compile" and elapsed() > budget_s * 0.55:
                    out["skipped"].append(f"compile at batch {b}: time budget")
                    continue
                try:
                    if variant == "compile":
                        t0 = time.perf_counter()
                        cmodel(*inputs)
                        torch.cuda.synchronize()
                        compile_s[b] = time.perf_counter() - t0
                    m = cmodel if variant == "compile" else model
                    decode.append(decode_row(m, b, meta.DECODE_CONTEXT, variant, roofs,
                                             repeat=repeat, inputs=inputs))
                except Exception as exc:
                    out["skipped"].append(f"{variant} at batch {b}: {type(exc).__name__}: {exc}")
                    log(out["skipped"][-1])
                    continue
                log(f"[{elapsed():6.1f}s] {decode[-1]['name']}: "
                    f"{decode[-1]['tokens_per_s']:.1f} tok/s, "
                    f"{decode[-1].get('share_of_copy', 0):.1%} of copy")
            del inputs
            _free()
        out["decode"], out["memory"] = decode, memory
        out["compile_s"] = {str(b): s for b, s in compile_s.items()}
        if model.fast_decode and compile_s:
            # the same step with PyTorch's attention, for the comparison
            sdpa = replace(cmodel, fast_decode=False)
            out["decode_sdpa"] = _guard(lambda: decode_row(
                sdpa, 1, meta.DECODE_CONTEXT, "compile", roofs, repeat=repeat), log)
        if model.fast_matvec and compile_s:
            # the same step with cuBLAS for the matrix products
            cublas = replace(cmodel, fast_matvec=False)
            out["decode_cublas"] = _guard(lambda: decode_row(
                cublas, 1, meta.DECODE_CONTEXT, "compile", roofs, repeat=repeat), log)
        profiles = {}
        if compile_s:
            inputs = decode_inputs(model, 1, meta.DECODE_CONTEXT)
            profiles["bf16"] = _guard(lambda: step_profile(cmodel, inputs, roofs), log)
            del inputs

        # weight-only int8 and int4 at batch 1
        quant = []
        for bits, name in ((8, "int8"), (4, "int4")):
            qm = qc = None
            try:
                t0 = time.perf_counter()
                qm = quantized(model, bits)
                torch.cuda.synchronize()
                q_s = time.perf_counter() - t0
                err = output_error(model, qm)
                err["matrix_rel_err"] = matrix_error(model.layers[0].w13, qm.layers[0].w13)
                qc = qm.with_compiled_steps() if compile_s else qm
                memory.append(peak_memory(qm, 1, meta.DECODE_CONTEXT))
            except Exception as exc:
                out["skipped"].append(f"{name}: {type(exc).__name__}: {exc}")
                log(out["skipped"][-1])
                del qm, qc
                _free()
                continue
            for variant in ("graph", "compile") if compile_s else ("graph",):
                m = qc if variant == "compile" else qm
                try:
                    row = decode_row(m, 1, meta.DECODE_CONTEXT, variant, roofs, repeat=repeat)
                except Exception as exc:
                    out["skipped"].append(f"{name} {variant}: {type(exc).__name__}: {exc}")
                    log(out["skipped"][-1])
                    continue
                row.update(quantize_s=q_s, **err)
                quant.append(row)
                if variant == "compile":
                    inputs = decode_inputs(qc, 1, meta.DECODE_CONTEXT)
                    profiles[name] = _guard(lambda: step_profile(qc, inputs, roofs), log)
                    del inputs
                log(f"[{elapsed():6.1f}s] {row['name']}: {row['tokens_per_s']:.1f} tok/s, "
                    f"{row.get('share_of_copy', 0):.1%} of copy, logits err "
                    f"{err['logits_rel_err']:.3g}")
            del qm, qc
            _free()
        out["quant"] = quant
        out["step_profile"] = profiles

    best = _best_variant(decode)
    base = {r["batch"]: r for r in decode if r["variant"] == best}
    for r in quant:
        if r["variant"] == best:
            r["speedup_vs_bf16"] = r["tokens_per_s"] / base[1]["tokens_per_s"]
    out["best_variant"] = best
    out["decode_efficiency"] = base[1]["share_of_copy"]
    kv1 = cfg.kv_bytes_per_token() * meta.DECODE_CONTEXT
    out["crossover_batch"] = meta.crossover_batch(
        model.read_bytes(1), kv1, cfg.decode_flops(1, meta.DECODE_CONTEXT),
        roofs["copy_gbs"] * 1e9, roofs["matmul_tflops"] * 1e12)
    out["crossover_batch_weights_only"] = meta.crossover_batch(
        model.read_bytes(1), 0.0, cfg.decode_flops(1, meta.DECODE_CONTEXT),
        roofs["copy_gbs"] * 1e9, roofs["matmul_tflops"] * 1e12)
    out["advisor_check"] = advisor_check(decode + quant, memory, best)
    prefill = out["prefill"] if isinstance(out["prefill"], list) else []
    out["rows"] = [_summary(r) for r in decode + quant + prefill]
    out["elapsed_s"] = elapsed()
    return out


def _guard(fn, log):
    """``fn()``, or on an error its one-line description (and the traceback in the log)."""
    try:
        return fn()
    except Exception as exc:
        import traceback
        log(traceback.format_exc())
        return {"error": f"{type(exc).__name__}: {exc}"}


def _best_variant(decode) -> str:
    """The fastest launch variant measured at every batch (compile where it ran throughout)."""
    batches = {r["batch"] for r in decode}
    for v in ("compile", "graph", "eager"):
        if {r["batch"] for r in decode if r["variant"] == v} == batches:
            return v
    return "eager"


def advisor_check(rows, memory, variant) -> list[dict]:
    """The measurements ``gpukit advise`` is checked against (:data:`meta.ADVISOR_CONFIGS`,
    launched as ``variant``): tokens/s and peak memory. The advisor's estimates are not stored:
    the chapter's views and ``gpukit advise`` recompute them from the measured rows, each with
    its own measurement left out."""
    checks = []
    for precision, b in meta.ADVISOR_CONFIGS:
        r = next((r for r in rows if r["precision"] == precision and r["batch"] == b
                  and r["variant"] == variant), None)
        mem = next((m for m in memory if m["precision"] == precision and m["batch"] == b), None)
        if r is None or mem is None:
            continue
        checks.append({"model": meta.ADVISOR_MODEL, "batch": b, "context": r["context"],
                       "precision": precision, "measured_tokens_per_s": r["tokens_per_s"],
                       "measured_peak_bytes": mem["peak_bytes"], "variant": variant})
    return checks


def _summary(r: dict) -> dict:
    keep = ("name", "median_s", "gbs", "tflops", "tokens_per_s", "share_of_copy",
            "share_of_matmul")
    return {k: r[k] for k in keep if k in r}


# ------------------------------------------------------------------ the CPU run

def run_cpu(repeat: int = 5) -> dict:
    """The tiny configuration on the CPU: the same steps, no ceilings of a GPU."""
    import torch
    from .model import PRESETS, random_model
    cfg = PRESETS["tiny"]
    context = 64
    copy = bench.copy_ceiling("cpu", 2**28)
    roofs = {"copy_gbs": copy.gbs}
    with torch.inference_mode():
        model = random_model(cfg, seed=SEED, device="cpu", dtype=torch.float32,
                             max_context=context)
        decode = [decode_row(model, b, context, "eager", roofs, repeat=repeat, timer="cpu")
                  for b in (1, 8)]
    return {"n": cfg.params(), "model": "tiny", "config": cfg.__dict__.copy(),
            "ceilings": {"copy_gbs": copy.gbs, "copy": bench.row(copy, drop=("samples_s",))},
            "decode": decode, "rows": [_summary(r) for r in decode]}


def run(n: int | None = None, repeat: int = 10) -> dict:
    """What ``gpukit bench llm-inference`` records: part ``"gpu"`` on an NVIDIA GPU, part
    ``"cpu"`` (the tiny model) without one. ``n`` is not used: the sizes are the chapter's."""
    repeat = max(3, min(int(repeat or 10), 20))
    if device.has_gpu():
        import torch
        if torch.cuda.is_available():
            return {"gpu": run_gpu(repeat)}
    return {"cpu": run_cpu(min(repeat, 5))}


def coverage(data: dict) -> int:
    """How much a stored file covers (``gpukit bench --save`` keeps the larger)."""
    part = data.get("gpu") or {}
    return len(part.get("decode", [])) + len(part.get("quant", []))


# ------------------------------------------------------------------ any configuration

def bench_config(cfg, batches, context: int, precisions, *, repeat: int = 10,
                 variant: str = "graph", on_gpu: bool = True, log=print) -> dict:
    """Decode of ``cfg`` at each batch and precision, with the roofs measured in the same run:
    what ``gpukit llm bench`` prints. Without a GPU the model runs on the CPU in float32."""
    import torch
    from .model import random_model
    from .quant import quantized
    if on_gpu:
        roofs = _ceilings()
        dev, dtype, timer = "cuda", torch.bfloat16, "torch"
    else:
        copy = bench.copy_ceiling("cpu", 2**28)
        roofs = {"copy_gbs": copy.gbs}
        dev, dtype, timer, variant = "cpu", torch.float32, "cpu", "eager"
    rows = []
    with torch.inference_mode():
        base = random_model(cfg, seed=SEED, device=dev, dtype=dtype, max_context=context)
        fast = enable_fast_decode(base, context=min(context, 300)) if on_gpu else None
        for precision in precisions:
            model = base if precision == "bf16" else quantized(base, 8 if precision == "int8" else 4)
            for b in batches:
                mem = peak_memory(model, b, context) if on_gpu else None
                row = decode_row(model, b, context, variant, roofs, repeat=repeat, timer=timer)
                if mem:
                    row["peak_bytes"] = mem["peak_bytes"]
                rows.append(row)
                log(f"  {row['name']}: {row['tokens_per_s']:,.1f} tokens/s")
            del model
            _free()
    return {"config": cfg.__dict__.copy(), "ceilings": roofs, "rows": rows, "fast_decode": fast,
            "device": torch.cuda.get_device_name() if on_gpu else "cpu"}
