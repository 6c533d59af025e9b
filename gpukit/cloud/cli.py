"""``gpukit advise``: memory needed by a model, the machines that hold it, how fast and at what price."""

from __future__ import annotations

import json
import math
import os
import re
import sys

from ..cli import UserError, positive_int

_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}
MAX_FLOPS = 1e28     # about a hundred times the largest training runs reported so far: beyond is a typo
#: argparse reads "-7e9" as an option name unless the parser knows it for a negative number
_NEGATIVE = re.compile(r"^-((\d+\.?\d*|\.\d+)(e[-+]?\d+)?[kmbt]?|inf(inity)?|nan)$", re.I)


def parse_params(text: str) -> float:
    """'7e9', '7B', '70b', '1.5T' -> a number of parameters."""
    from .advisor import MAX_PARAMS, shown
    m = re.fullmatch(r"\s*([-+]?[0-9]*\.?[0-9]+(?:e[-+]?\d+)?)\s*([kmbt]?)\s*", text.lower())
    if not m:
        raise UserError(f"cannot read a parameter count from {shown(text)} (try 7e9 or 7B)")
    value = float(m.group(1)) * _SUFFIX.get(m.group(2), 1)
    if not math.isfinite(value):
        raise UserError(f"--params {shown(text)} is beyond any model that exists (limit {MAX_PARAMS:.0e})")
    return value


def _shown(text: str) -> str:
    from .advisor import shown
    return shown(text)


def parse_flops(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"--flops expects a number such as 1e21, got {_shown(text)}") from None
    if value == float("inf"):
        raise UserError(f"--flops {_shown(text)} is beyond any training run (limit {MAX_FLOPS:.0e})")
    if not value > 0 or value != value:
        raise UserError(f"--flops must be a positive number, got {_shown(text)}")
    if value > MAX_FLOPS:
        raise UserError(f"--flops {value:.3g} is beyond any training run (limit {MAX_FLOPS:.0e})")
    return value


def register(sub) -> None:
    from .advisor import BYTES, KV_CHOICES, TASKS
    from .models import PRESETS
    p = sub.add_parser("advise", help="memory a model needs, the AWS instances and GPUs that hold it, speed and cost",
                       description="Estimate accelerator memory with the formulas written out, then list the "
                                   "AWS instances and GPUs that hold it, cheapest first, with speed estimates.")
    p._negative_number_matcher = _NEGATIVE  # so that --params -7e9 reaches the positive-number check
    p.add_argument("--model", help=f"architecture preset (any case): {', '.join(PRESETS)}")
    p.add_argument("--params", help="parameter count, e.g. 7e9 or 7B (with --model: may only round the preset's)")
    p.add_argument("--precision", default="bf16", help=f"weights: one of {', '.join(BYTES)} (default bf16)")
    p.add_argument("--kv-precision", help=f"KV cache: one of {', '.join(KV_CHOICES)} "
                                          "(default 16-bit; fp32 with fp32/tf32 weights)")
    p.add_argument("--task", default="inference", help=f"one of {', '.join(TASKS)} (default inference)")
    p.add_argument("--seq", type=positive_int, default=2048,
                   help="sequence length in tokens, at most the model's context window (default 2048)")
    p.add_argument("--batch", type=positive_int, default=1, help="batch size (default 1)")
    p.add_argument("--layers", type=positive_int)
    p.add_argument("--hidden", type=positive_int)
    p.add_argument("--heads", type=positive_int)
    p.add_argument("--kv-heads", type=positive_int)
    p.add_argument("--lora-rank", type=positive_int, default=16)
    p.add_argument("--no-checkpointing", action="store_true",
                   help="training: count activations without checkpointing")
    p.add_argument("--flops", help="training (full, lora): total FLOPs of the job, for a time and cost (e.g. 1e21)")
    p.add_argument("--neuron", action="store_true", help="also offer AWS Trainium/Inferentia (Neuron SDK, not CUDA)")
    p.add_argument("--rocm", action="store_true", help="also offer ROCm GPUs (AMD Instinct; not CUDA)")
    p.add_argument("--top", type=positive_int, default=10, help="rows per table (default 10)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def build(args):
    from .advisor import AdviceError, Workload
    params = parse_params(args.params) if args.params else None
    common = dict(precision=args.precision, task=args.task, seq=args.seq, batch=args.batch,
                  layers=args.layers, hidden=args.hidden, heads=args.heads, kv_heads=args.kv_heads,
                  lora_rank=args.lora_rank, checkpointing=not args.no_checkpointing,
                  kv_precision=getattr(args, "kv_precision", None))
    try:
        if args.model:
            return Workload.from_preset(args.model, params=params, **common)
        if params is None:
            raise UserError("give --model NAME or --params N")
        return Workload(params=params, **common)
    except AdviceError as exc:
        raise UserError(str(exc)) from None


def _n(x: float | None, fmt: str = "{:,.0f}") -> str:
    return "-" if x is None else fmt.format(x)


def _tps(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}" if x >= 10 else f"{x:.2g}"


def _secs(x: float | None) -> str:
    return "-" if x is None else f"{x:.2g}" if x < 10 else f"{x:,.0f}"


def report(w, flops: float | None = None, top: int = 10, root=None, neuron: bool = False,
           rocm: bool = False) -> tuple[str, dict]:
    """The advisor's text report and the same content as a dict."""
    from .. import catalogue as data
    from . import advisor, machines
    from ..pages import table
    if flops and w.task == "inference":
        raise UserError("--flops is for --task full or lora; inference is estimated from memory bandwidth "
                        "(decode) and compute (prefill) instead")
    try:
        e = advisor.estimate(w)
    except advisor.AdviceError as exc:
        raise UserError(str(exc)) from None
    meas = machines.measurements(root)
    opts, left_out = machines.options(e, flops=flops, neuron=neuron, rocm=rocm, meas=meas)
    lines = [f"Workload: {advisor.describe(w)}", "", "Memory estimate:"]
    width = max(len(t.name) for t in e.terms)
    for t in e.terms:
        lines.append(f"  {t.name:<{width}} = {t.formula} = {t.gib:,.2f} GiB")
    lines.append(f"  {'total':<{width}} = {e.total_gib:,.2f} GiB; a machine fits with >= "
                 f"{advisor.HEADROOM:.2f} x total = {e.total_gib * advisor.HEADROOM:,.1f} GiB")
    lines += [f"  note: {n}" for n in e.notes]
    lines += ["", "Speed model:"]
    if w.task == "inference":
        lines += ["  decode tok/s = batch x bandwidth x efficiency / (weights as stored + KV cache at the full "
                  "context),",
                  "                 or the compute roof if slower: (2 x active params + attention) x batch FLOPs",
                  "  prefill s    = 2 x active params x prompt tokens x batch / (dense peak x efficiency)"]
    else:
        lines.append("  hours = FLOPs / (dense peak x efficiency)" if flops else
                     "  give --flops (the job's total) for a time and cost")
    measured = machines.describe_measurements(w.precision, meas)
    lines += [f"  measured, applied to that GPU only: {m}" for m in measured]
    lines.append(f"  any other GPU: peak bandwidth (an upper bound) and {machines.DEFAULT_EFFICIENCY:.0%} of dense "
                 "compute peak (an assumption); several GPUs add up (an upper bound)")
    doc_i = data.instances_doc()
    lines += ["", f"Prices: AWS on-demand, {doc_i['region']}, USD/h, from the price list generated "
                  f"{data.prices_generated()} ({data.price_age_text()}); GPUs: launch list prices."]
    if w.task == "inference":
        extra, cols = ["decode tok/s", "prefill s"], lambda o: [_tps(o.decode_tps), _secs(o.prefill_s)]
    elif flops:
        extra, cols = ["hours"], lambda o: [_n(o.hours, "{:,.1f}")]
    else:
        extra, cols = [], lambda o: []
    mark = lambda o: "*" if o.measured else ""  # noqa: E731
    aws, aws_unpriced = machines.ranked(opts, "aws")
    gpus, gpu_unpriced = machines.ranked(opts, "gpu")
    money = (["USD per 1M tokens"] if w.task == "inference" else ["USD"] if flops else [])
    lines += ["", "AWS instances that fit, cheapest per hour first:"]
    lines.append(table(["instance", "accelerators", "memory GiB", "USD/h"] + extra + money,
                       [[o.name + mark(o), o.label, _n(o.memory_gib), f"{o.price_per_hour:,.2f}"] + cols(o)
                        + ([_n(o.usd_per_mtok, "{:,.2f}")] if w.task == "inference" else
                           [_n(o.cost)] if flops else []) for o in aws[:top]])
                 if aws else "  none with an on-demand price")
    if aws_unpriced:
        lines.append("  also fit, no on-demand price in the data: " + ", ".join(
            o.name + (f" ({o.unit})" if o.unit != "instance" else "") for o in aws_unpriced))
    lines += ["", "GPUs to buy (how many of each), cheapest list price first:"]
    lines.append(table(["GPU", "count", "memory GiB", "list price USD"] + extra,
                       [[o.name + mark(o), o.count, _n(o.memory_gib), _n(o.buy_usd)] + cols(o) for o in gpus[:top]])
                 if gpus else f"  none with a list price and {machines.MAX_GPUS} or fewer cards")
    if gpu_unpriced:
        lines.append("  also fit, no list price in the data: " + ", ".join(
            f"{o.count} x {o.name}" for o in gpu_unpriced))
    if not (aws or aws_unpriced or gpus or gpu_unpriced):
        lines.append("  nothing holds it: it needs more than one instance or more than "
                     f"{machines.MAX_GPUS} GPUs")
    if any(o.measured for o in aws[:top] + gpus[:top]):
        lines.append("  * speed from this project's measurements on that GPU")
    lines += [f"  not offered: {n}" for n in left_out]
    checks = measured_checks(w, meas)
    if checks:
        lines += ["", "Measured by this project against this estimate (same model, precision and GPU; the "
                      "estimate recomputed now, its memory for one decode step over a full cache):"]
        lines.append(table(["GPU", "batch", "context", "measured tok/s", "estimate tok/s", "measured peak GiB",
                            "estimate GiB", "record"],
                           [[c["gpu"], c["batch"], c["context"], _tps(c["measured_tokens_per_s"]),
                             _tps(c["estimate_tokens_per_s"]), f"{c['measured_peak_bytes'] / advisor.GIB:,.2f}",
                             f"{c['estimate_memory_bytes'] / advisor.GIB:,.2f}", c["record"]] for c in checks]))
    doc = {"workload": dict(vars(w)),
           "terms": [{"name": t.name, "formula": t.formula, "gib": t.gib} for t in e.terms],
           "total_gib": e.total_gib, "headroom": advisor.HEADROOM, "notes": e.notes, "measured_checks": checks,
           "measured": measured, "default_efficiency": machines.DEFAULT_EFFICIENCY,
           "prices_generated": data.prices_generated(), "data_as_of": data.data_as_of(),
           "options": [dict(vars(o), priced=bool(o.price)) for o in aws + aws_unpriced + gpus + gpu_unpriced],
           "not_offered": left_out}
    return "\n".join(lines), doc


def measured_checks(w, meas: dict) -> list[dict]:
    """The ``advisor_check`` rows recorded for ``w``'s model and precision (inference only), each
    with the advisor's estimate for its batch and context recomputed now."""
    from . import machines
    if w.task != "inference" or not w.model:
        return []
    return machines.compare_records(meas, model=w.model, precision=w.precision)


def _emit(text: str) -> None:
    """Print ``text``; a reader that stops early (``| head``) ends the output quietly."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def run(args) -> int:
    w = build(args)
    flops = parse_flops(args.flops) if args.flops else None
    text, doc = report(w, flops=flops, top=args.top, neuron=args.neuron, rocm=args.rocm)
    _emit(json.dumps(doc, indent=1) if args.json else text)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m gpukit.cloud.cli advise ...``: the same as ``gpukit advise ...``."""
    from .. import cli as _cli
    return _cli.main(argv)


if __name__ == "__main__":
    import sys
    sys.exit(main())
