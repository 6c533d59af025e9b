"""``gpukit advise``: memory needed by a model, the machines that hold it, and what a run costs."""

from __future__ import annotations

import json
import re

from ..cli import UserError, positive_int

_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


def parse_params(text: str) -> float:
    """'7e9', '7B', '70b', '1.5T' -> a number of parameters."""
    m = re.fullmatch(r"\s*([-+]?[0-9]*\.?[0-9]+(?:e[-+]?\d+)?)\s*([kmbt]?)\s*", text.lower())
    if not m:
        raise UserError(f"cannot read a parameter count from {text!r} (try 7e9 or 7B)")
    return float(m.group(1)) * _SUFFIX.get(m.group(2), 1)


def parse_flops(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"--flops expects a number such as 1e21, got {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise UserError(f"--flops must be a positive number, got {text!r}")
    return value


def register(sub) -> None:
    from .advisor import BYTES, PRESETS, TASKS
    p = sub.add_parser("advise", help="memory a model needs, the AWS instances and GPUs that fit, cost of a run",
                       description="Estimate accelerator memory with the formulas written out, then list the "
                                   "AWS instances and GPUs that hold it, cheapest first.")
    p.add_argument("--model", help=f"architecture preset: {', '.join(PRESETS)}")
    p.add_argument("--params", help="parameter count, e.g. 7e9 or 7B (overrides the preset)")
    p.add_argument("--precision", default="bf16", help=f"one of {', '.join(BYTES)} (default bf16)")
    p.add_argument("--task", default="inference", help=f"one of {', '.join(TASKS)} (default inference)")
    p.add_argument("--seq", type=positive_int, default=2048, help="sequence length in tokens (default 2048)")
    p.add_argument("--batch", type=positive_int, default=1, help="batch size (default 1)")
    p.add_argument("--layers", type=positive_int)
    p.add_argument("--hidden", type=positive_int)
    p.add_argument("--heads", type=positive_int)
    p.add_argument("--kv-heads", type=positive_int)
    p.add_argument("--lora-rank", type=positive_int, default=16)
    p.add_argument("--no-checkpointing", action="store_true", help="count activations without checkpointing")
    p.add_argument("--flops", help="total FLOPs of the job, for a time and cost estimate (e.g. 1e21)")
    p.add_argument("--top", type=positive_int, default=10, help="rows per table (default 10)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def build(args):
    from .advisor import AdviceError, Workload
    params = parse_params(args.params) if args.params else None
    common = dict(precision=args.precision, task=args.task, seq=args.seq, batch=args.batch,
                  layers=args.layers, hidden=args.hidden, heads=args.heads, kv_heads=args.kv_heads,
                  lora_rank=args.lora_rank, checkpointing=not args.no_checkpointing)
    try:
        if args.model:
            return Workload.from_preset(args.model, params=params, **common)
        if params is None:
            raise UserError("give --model NAME or --params N")
        return Workload(params=params, **common)
    except AdviceError as exc:
        raise UserError(str(exc)) from None


def report(w, flops: float | None = None, top: int = 10, root=None) -> tuple[str, dict]:
    """The advisor's text report and the same content as a dict."""
    from . import advisor, data
    from ..pages import table
    try:
        e = advisor.estimate(w)
    except advisor.AdviceError as exc:
        raise UserError(str(exc)) from None
    eff, eff_src = advisor.measured_efficiency(w.precision, root=root)
    opts = advisor.options(e, flops=flops, efficiency=eff)
    lines = [f"Workload: {advisor.describe(w)}", "", "Memory estimate:"]
    width = max(len(t.name) for t in e.terms)
    for t in e.terms:
        lines.append(f"  {t.name:<{width}} = {t.formula} = {t.gb:,.1f} GB")
    lines.append(f"  {'total':<{width}} = {e.total_gb:,.1f} GB; a machine fits with >= "
                 f"{advisor.HEADROOM:.2f} x total = {e.total_gb * advisor.HEADROOM:,.1f} GB")
    lines += [f"  note: {n}" for n in e.notes]
    lines += ["", f"Efficiency for time estimates: {eff_src}",
              f"Data as of {data.data_as_of()}; AWS prices: on-demand, {data.instances_doc()['region']}, USD/h."]
    aws = [o for o in opts if o.kind == "aws"][:top]
    gpu = [o for o in opts if o.kind == "gpu"][:top]

    def t_cols(o):
        return [f"{o.hours:,.1f}" if o.hours is not None else "-",
                f"{o.cost:,.0f}" if o.cost is not None else "-"] if flops else []
    extra = ["hours", "USD"] if flops else []
    lines += ["", "AWS instances that fit (cheapest first):"]
    lines.append(table(["instance", "accelerators", "memory GB", "USD/h"] + extra,
                       [[o.name, f"{o.count} x {o.note}", f"{o.memory_gb:,.0f}",
                         f"{o.price_per_hour:,.2f}" if o.price_per_hour else "not recorded"] + t_cols(o)
                        for o in aws]) if aws else "  none: the model needs more than one instance")
    lines += ["", "GPUs to buy (how many of each, cheapest first):"]
    lines.append(table(["GPU", "count", "memory GB", "list price USD"] + extra,
                       [[o.name, o.count, f"{o.memory_gb:,.0f}",
                         f"{o.buy_usd:,.0f}" if o.buy_usd else "not recorded"] + t_cols(o) for o in gpu])
                 if gpu else f"  none with {advisor.MAX_GPUS} or fewer cards")
    doc = {"workload": {k: v for k, v in vars(w).items()},
           "terms": [{"name": t.name, "formula": t.formula, "gb": t.gb} for t in e.terms],
           "total_gb": e.total_gb, "headroom": advisor.HEADROOM, "notes": e.notes,
           "efficiency": eff, "efficiency_source": eff_src, "data_as_of": data.data_as_of(),
           "options": [vars(o) for o in opts]}
    return "\n".join(lines), doc


def run(args) -> int:
    w = build(args)
    flops = parse_flops(args.flops) if args.flops else None
    text, doc = report(w, flops=flops, top=args.top)
    print(json.dumps(doc, indent=1) if args.json else text)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m gpukit.cloud.cli advise ...``: the same as ``gpukit advise ...``."""
    from .. import cli as _cli
    return _cli.main(argv)


if __name__ == "__main__":
    import sys
    sys.exit(main())
