"""``gpukit llm bench``: decode speed of a Llama-shaped model against the memory and compute
roofs of this machine, for any size, batch, context and precision."""

from __future__ import annotations

from ..cli import UserError, positive_int

#: memory kept free beyond weights and cache (activations, the CUDA graph, the allocator)
SLACK = 0.10


def _list(kind, choices=None):
    def parse(text: str):
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise UserError(f"expected a comma-separated list, got {text!r}")
        if choices:
            bad = [t for t in items if t not in choices]
            if bad:
                raise UserError(f"unknown {bad[0]!r} (choose from {', '.join(choices)})")
            return tuple(items)
        return tuple(positive_int(t) for t in items)
    return parse


def register(sub) -> None:
    from .meta import PRECISIONS
    p = sub.add_parser("llm", help="run a Llama-shaped language model and measure its decode speed",
                       description="Decode tokens with a Llama-shaped model whose weights are drawn "
                                   "from a seed, and compare the speed with the memory and compute "
                                   "roofs measured in the same run.")
    s = p.add_subparsers(dest="action", metavar="ACTION")
    b = s.add_parser("bench", help="decode tokens/s against the roofs, per batch and precision")
    b.add_argument("--preset", default="llama-3.1-8b", help="llama-3.1-8b (default) or tiny")
    for name, what in (("layers", "decoder layers"), ("hidden", "hidden size"),
                       ("heads", "query heads"), ("kv-heads", "key/value heads"),
                       ("ffn", "MLP width"), ("vocab", "vocabulary size")):
        b.add_argument(f"--{name}", type=positive_int, help=f"{what} (default: the preset's)")
    b.add_argument("--batch", type=_list(int), default=(1, 8), help="batch sizes, e.g. 1,8,32")
    b.add_argument("--context", type=positive_int, default=1024, help="cached tokens per sequence")
    b.add_argument("--precision", type=_list(str, PRECISIONS), default=("bf16",),
                   help=f"weights: any of {', '.join(PRECISIONS)}, comma-separated")
    b.add_argument("--repeat", type=positive_int, default=10, help="timed steps")
    b.set_defaults(func=_bench)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def config_from(args):
    """The configuration the options describe (a one-line error for an impossible one)."""
    from dataclasses import replace

    from .model import PRESETS, ConfigError
    if args.preset not in PRESETS:
        raise UserError(f"unknown preset {args.preset!r} (choose from {', '.join(PRESETS)})")
    given = {k: getattr(args, k) for k in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")
             if getattr(args, k) is not None}
    try:
        cfg = replace(PRESETS[args.preset], **given)
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    if any(p == "int4" for p in args.precision):
        from .quant import GROUP
        for name, size in (("hidden", cfg.hidden), ("ffn", cfg.ffn),
                           ("heads x head size", cfg.heads * cfg.head_dim)):
            if size % GROUP:
                raise UserError(f"int4 needs {name} ({size}) to be a multiple of {GROUP}")
    return cfg


def needed_bytes(cfg, batch: int, context: int, precision: str) -> int:
    """Weights, the largest batch's KV cache and :data:`SLACK` of both."""
    per = {"bf16": 2.0, "int8": 1.0, "int4": 0.5}[precision]
    weights = cfg.vocab * cfg.hidden * 2 + (cfg.params() - cfg.vocab * cfg.hidden) * per
    return int((weights + cfg.kv_bytes_per_token() * context * batch) * (1 + SLACK))


def _available(on_gpu: bool) -> int:
    if on_gpu:
        import torch
        return torch.cuda.mem_get_info()[0]
    import os
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _bench(args) -> int:
    from .. import device
    cfg = config_from(args)
    on_gpu = device.has_gpu()
    if on_gpu:
        import torch
        on_gpu = torch.cuda.is_available()
    precisions = args.precision
    if not on_gpu:
        from .model import PRESETS
        print("no NVIDIA GPU found: running the tiny configuration on the CPU "
              "(float32, op by op; int8 and int4 need a GPU)")
        cfg, precisions = PRESETS["tiny"], ("bf16",)
    need = max(needed_bytes(cfg, max(args.batch), args.context, p) for p in precisions)
    free = _available(on_gpu)
    where = "GPU" if on_gpu else "machine"
    if need > free:
        raise UserError(f"this configuration needs about {need / 1e9:,.1f} GB (weights, KV cache "
                        f"of {max(args.batch)} x {args.context} tokens, {SLACK:.0%} slack); "
                        f"the {where} has {free / 1e9:,.1f} GB free")
    from . import measure
    print(f"{cfg.layers} layers, hidden {cfg.hidden}, {cfg.heads} heads ({cfg.kv_heads} key/value), "
          f"MLP {cfg.ffn}, vocabulary {cfg.vocab}: {cfg.params() / 1e9:.3g} B parameters")
    try:
        out = measure.bench_config(cfg, args.batch, args.context, precisions, repeat=args.repeat,
                                   on_gpu=on_gpu)
    except Exception as exc:
        if type(exc).__name__ == "OutOfMemoryError":
            raise UserError(f"out of GPU memory: this configuration needs about {need / 1e9:,.1f} "
                            f"GB, the GPU had {free / 1e9:,.1f} GB free") from None
        raise
    print(table(out))
    return 0


def table(out: dict) -> str:
    """The rows as a text table, with the ceilings measured in the same run."""
    roofs = out["ceilings"]
    lines = [f"device: {out['device']}; copy {roofs['copy_gbs']:,.0f} GB/s"
             + (f", bf16 matmul {roofs['matmul_tflops']:,.0f} TFLOP/s" if roofs.get("matmul_tflops") else "")]
    head = ("precision", "batch", "context", "how", "ms/step", "tokens/s", "GB/s", "% copy",
            "memory roof", "compute roof")
    rows = [head]
    for r in out["rows"]:
        rows.append((r["precision"], str(r["batch"]), str(r["context"]), r["variant"],
                     f"{r['median_s'] * 1e3:.3f}", f"{r['tokens_per_s']:,.1f}", f"{r['gbs']:,.1f}",
                     f"{r['share_of_copy']:.1%}" if "share_of_copy" in r else "-",
                     f"{r['memory_roof_tokens_per_s']:,.0f}" if "memory_roof_tokens_per_s" in r else "-",
                     f"{r['compute_roof_tokens_per_s']:,.0f}" if "compute_roof_tokens_per_s" in r else "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    for row in rows:
        lines.append("  ".join(c.rjust(w) for c, w in zip(row, widths)))
    lines.append("memory roof: batch x copy bandwidth / bytes per step (weights read + KV cache); "
                 "compute roof: batch x bf16 matmul rate / FLOPs per step")
    return "\n".join(lines)
