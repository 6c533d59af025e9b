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


def report(w, flops: float | None = None, top: int = 10, root=None, neuron: bool = False,
           rocm: bool = False) -> tuple[str, dict]:
    """The advisor's text report and the same content as a dict (:func:`gpukit.cloud.meta.report`),
    with the command's errors for input it cannot work with."""
    from .meta import AdviceError
    from .meta import report as advice
    if flops and w.task == "inference":
        raise UserError("--flops is for --task full or lora; inference is estimated from memory bandwidth "
                        "(decode) and compute (prefill) instead")
    try:
        return advice(w, flops=flops, top=top, root=root, neuron=neuron, rocm=rocm)
    except AdviceError as exc:
        raise UserError(str(exc)) from None


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
