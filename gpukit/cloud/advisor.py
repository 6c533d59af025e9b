"""How much accelerator memory a model needs, which machines fit, and what a run costs.

The formulas (bytes; P = parameters, L = layers, h = hidden size, s = sequence
length, b = batch, a = attention heads):

* weights               = P x bytes_per_param(precision)
* full training, Adam,  = P x 16: 16-bit weights (2) + 16-bit gradients (2) + fp32 master
  mixed precision         copy (4) + two fp32 Adam moments (4 + 4). With fp32 training the
                          master copy disappears and weights and gradients are 4 bytes: also 16.
                          (EleutherAI, "Transformer Math 101"; Hugging Face "Model memory anatomy".)
* LoRA fine-tune        = frozen base P x bytes + adapters r x (h + h) per adapted matrix
                          (q and v projections of every layer) x 16 bytes (weights, gradients,
                          fp32 master and Adam moments, as above).
* activations (training)= with activation checkpointing: 2 x s x b x h x L (the 16-bit input of
                          each layer is kept); without: s x b x h x L x (34 + 5 a s / h)
                          (Korthikanti et al. 2022, "Reducing Activation Recomputation").
* KV cache (inference)  = 2 (K and V) x L x kv_heads x head_dim x s x b x bytes_per_value
* inference overhead    = 20 % of the weights for the runtime and temporary buffers (the
                          Transformer Math 101 rule of thumb: total ~ 1.2 x weights).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from . import data

BYTES = {"fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
TASKS = ("inference", "lora", "full")
ADAM_MIXED_BYTES = 16          # per trainable parameter, see the module docstring
INFERENCE_OVERHEAD = 0.20      # fraction of the weights
HEADROOM = 1.10                # a machine fits when memory >= need x HEADROOM
DEFAULT_EFFICIENCY = 0.5       # fraction of dense peak assumed when no measurement exists
MAX_PARAMS = 1e13              # 10 trillion: anything above is a typo, not a model
MAX_GPUS = 8                   # more than one 8-GPU server is a cluster question
GB = 1e9
GIB = 2**30

#: Architecture presets from each model's config.json on Hugging Face.
PRESETS = {
    "llama-2-7b": dict(params=6.74e9, layers=32, hidden=4096, heads=32, kv_heads=32,
                       source="https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json"),
    "llama-3-8b": dict(params=8.03e9, layers=32, hidden=4096, heads=32, kv_heads=8,
                       source="https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json"),
    "llama-3-70b": dict(params=70.6e9, layers=80, hidden=8192, heads=64, kv_heads=8,
                        source="https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json"),
}


class AdviceError(ValueError):
    """Input the advisor cannot work with (the CLI turns it into a one-line error)."""


@dataclass
class Workload:
    params: float
    precision: str = "bf16"
    task: str = "inference"
    seq: int = 2048
    batch: int = 1
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    lora_rank: int = 16
    checkpointing: bool = True
    model: str | None = None

    def __post_init__(self):
        if self.precision not in BYTES:
            raise AdviceError(f"unknown precision {self.precision!r} (choose from {', '.join(BYTES)})")
        if self.task not in TASKS:
            raise AdviceError(f"unknown task {self.task!r} (choose from {', '.join(TASKS)})")
        if not (isinstance(self.params, (int, float)) and math.isfinite(self.params)) or self.params <= 0:
            raise AdviceError(f"parameters must be a positive number, got {self.params!r}")
        if self.params > MAX_PARAMS:
            raise AdviceError(f"{self.params:.3g} parameters is beyond any model that exists (limit {MAX_PARAMS:.0e})")
        for name in ("seq", "batch", "lora_rank"):
            if getattr(self, name) <= 0:
                raise AdviceError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("layers", "hidden", "heads", "kv_heads"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise AdviceError(f"{name} must be > 0, got {value}")
        if self.heads is None and self.hidden:
            self.heads = max(1, self.hidden // 128)
        if self.kv_heads is None:
            self.kv_heads = self.heads
        if self.heads and self.hidden and self.hidden % self.heads:
            raise AdviceError(f"hidden size {self.hidden} is not a multiple of {self.heads} heads")
        if self.task == "inference" and not (self.layers and self.hidden):
            raise AdviceError("inference needs the architecture for the KV cache: --model NAME or --layers and --hidden")

    @classmethod
    def from_preset(cls, name: str, **kw) -> "Workload":
        if name not in PRESETS:
            raise AdviceError(f"unknown model {name!r} (presets: {', '.join(PRESETS)})")
        p = {k: v for k, v in PRESETS[name].items() if k != "source"}
        p.update({k: v for k, v in kw.items() if v is not None})
        return cls(model=name, **p)


@dataclass
class Term:
    name: str
    formula: str
    bytes: float

    @property
    def gb(self) -> float:
        return self.bytes / GB


@dataclass
class Estimate:
    workload: Workload
    terms: list[Term] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def total_bytes(self) -> float:
        return sum(t.bytes for t in self.terms)

    @property
    def total_gb(self) -> float:
        return self.total_bytes / GB


def _n(x: float) -> str:
    return f"{x:.3g}" if x >= 1e6 else f"{x:,.0f}"


def weights_bytes(params: float, precision: str) -> float:
    return params * BYTES[precision]


def kv_cache_bytes(layers: int, kv_heads: int, head_dim: int, seq: int, batch: int, bytes_per: float) -> float:
    return 2 * layers * kv_heads * head_dim * seq * batch * bytes_per


def activation_bytes(seq: int, batch: int, hidden: int, layers: int, heads: int, checkpointing: bool) -> float:
    if checkpointing:
        return 2.0 * seq * batch * hidden * layers
    return seq * batch * hidden * layers * (34 + 5 * heads * seq / hidden)


def lora_params(layers: int, hidden: int, rank: int, matrices: int = 2) -> float:
    return matrices * layers * rank * (hidden + hidden)


def estimate(w: Workload) -> Estimate:
    """Memory needed by workload ``w``, term by term, each with its formula."""
    e = Estimate(w)
    bpp = BYTES[w.precision]
    P = w.params
    arch = bool(w.layers and w.hidden)
    if w.task == "inference":
        e.terms.append(Term("weights", f"{_n(P)} params x {bpp:g} B", weights_bytes(P, w.precision)))
        head_dim = w.hidden // w.heads
        kv_b = min(bpp, 2.0) if w.precision in ("int8", "int4", "fp8") else bpp
        if kv_b != bpp:
            e.notes.append("KV cache kept in 16-bit even with quantised weights (the usual default)")
        e.terms.append(Term("KV cache", f"2 x {w.layers} layers x {w.kv_heads} kv_heads x {head_dim} head_dim x "
                                        f"{w.seq} seq x {w.batch} batch x {kv_b:g} B",
                            kv_cache_bytes(w.layers, w.kv_heads, head_dim, w.seq, w.batch, kv_b)))
        e.terms.append(Term("runtime overhead", f"{INFERENCE_OVERHEAD:.0%} of weights (rule of thumb)",
                            INFERENCE_OVERHEAD * weights_bytes(P, w.precision)))
        return e
    if w.task == "full":
        if w.precision not in ("bf16", "fp16", "fp32", "tf32"):
            raise AdviceError(f"full training in {w.precision} is not a standard recipe; use bf16, fp16 or fp32")
        e.terms.append(Term("weights + grads + Adam", f"{_n(P)} params x {ADAM_MIXED_BYTES} B "
                            "(2 weights + 2 grads + 4 fp32 master + 4 + 4 Adam moments)", P * ADAM_MIXED_BYTES))
    else:  # lora
        if not arch:
            raise AdviceError("a LoRA estimate needs the architecture: --model NAME or --layers and --hidden")
        e.terms.append(Term("frozen base weights", f"{_n(P)} params x {bpp:g} B", weights_bytes(P, w.precision)))
        lp = lora_params(w.layers, w.hidden, w.lora_rank)
        e.terms.append(Term("LoRA adapters + grads + Adam",
                            f"2 matrices x {w.layers} layers x r={w.lora_rank} x ({w.hidden}+{w.hidden}) "
                            f"= {_n(lp)} params x {ADAM_MIXED_BYTES} B", lp * ADAM_MIXED_BYTES))
    if arch:
        how = "2 x s x b x h x L (activation checkpointing)" if w.checkpointing else \
            "s x b x h x L x (34 + 5 a s / h) (no checkpointing)"
        e.terms.append(Term("activations", f"{how}, s={w.seq} b={w.batch} h={w.hidden} L={w.layers}",
                            activation_bytes(w.seq, w.batch, w.hidden, w.layers, w.heads, w.checkpointing)))
    else:
        e.notes.append("activations not counted: give --model or --layers/--hidden to include them")
    return e


# ---------------------------------------------------------------- efficiency from our own results

def _peak_key(precision: str) -> str:
    return "fp32_tflops" if precision in ("fp32",) else "tf32_tflops" if precision == "tf32" else "bf16_tflops"


def _row_matches(row: dict, precision: str, want: str) -> bool:
    dtype = str(row.get("dtype", "")).replace("torch.", "")
    if precision == "tf32":
        return row.get("tf32") is True
    if precision == "fp32":
        return dtype == "float32" and not row.get("tf32")
    return dtype in (want, precision)


def measured_efficiency(precision: str, root: Path | None = None) -> tuple[float, str]:
    """Fraction of dense peak reached by our own matmul benchmark, or the documented default.

    Looks for ``results/*/matmul*.json`` rows with ``tflops`` and a ``dtype`` matching
    ``precision``, on a GPU that gpus.yaml knows; returns (ratio, where it came from).
    """
    from .. import results
    root = Path(root or results.results_dir())
    want = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "tf32": "tf32"}.get(precision, "bfloat16")
    for path in sorted(root.glob("*/matmul*.json")):
        try:
            doc = json.loads(path.read_text())
            name = doc["machine"]["gpu"]["name"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        g = next((g for g in data.gpus() if g["name"].replace(" SXM", "") in name
                  or name.replace("NVIDIA ", "") in g["name"]), None)
        if not g or not g.get(_peak_key(precision)):
            continue
        best = 0.0
        for part in doc.values():
            if not isinstance(part, dict):
                continue
            # hand-written kernels ("rows") and the library's tensor-core products ("tensor_cores")
            for row in part.get("rows", []) + part.get("tensor_cores", []):
                if _row_matches(row, precision, want) and row.get("tflops"):
                    best = max(best, float(row["tflops"]))
        if best:
            ratio = best / g[_peak_key(precision)]
            return ratio, (f"measured: {best:.0f} TFLOP/s = {ratio:.0%} of dense peak "
                           f"({g[_peak_key(precision)]:g}) on {name} "
                           f"({path.parent.name}/{path.name})")
    return DEFAULT_EFFICIENCY, (f"ASSUMPTION: {DEFAULT_EFFICIENCY:.0%} of dense peak (no matmul results file "
                                f"for {precision} under {root})")


# ---------------------------------------------------------------- what fits

@dataclass
class Option:
    kind: str            # "aws" or "gpu"
    name: str
    count: int
    memory_gb: float
    price_per_hour: float | None
    peak_tflops: float | None
    note: str = ""
    buy_usd: float | None = None
    hours: float | None = None
    cost: float | None = None


def options(e: Estimate, flops: float | None = None, efficiency: float = DEFAULT_EFFICIENCY,
            headroom: float = HEADROOM) -> list[Option]:
    """AWS instances and GPUs that hold ``e`` with ``headroom``, cheapest per hour first."""
    need = e.total_gb * headroom
    peak_key = _peak_key(e.workload.precision)
    out = []
    for inst in data.instances():
        mem = inst.get("accelerator_memory_gib")
        if not mem or mem * GIB / GB < need:
            continue
        g = data.gpu(inst["gpu"]) if inst.get("gpu") else None
        peak = g[peak_key] * inst["accelerator_count"] if g and g.get(peak_key) else None
        out.append(Option("aws", inst["name"], inst["accelerator_count"], mem * GIB / GB,
                          inst.get("price_per_hour"), peak, inst["accelerator"]))
    for g in data.gpus():
        count = math.ceil(need / g["memory_gb"])
        if count > MAX_GPUS:
            continue
        peak = g[peak_key] * count if g.get(peak_key) else None
        price = g["price_usd"] * count if g.get("price_usd") else None
        out.append(Option("gpu", g["name"], count, g["memory_gb"] * count, None, peak,
                          g.get("price_kind", ""), buy_usd=price))
    if flops:
        for o in out:
            if o.peak_tflops:
                o.hours = flops / (o.peak_tflops * 1e12 * efficiency) / 3600
                if o.price_per_hour:
                    o.cost = o.hours * o.price_per_hour
    def order(o):
        price = o.price_per_hour if o.kind == "aws" else o.buy_usd
        return (o.kind != "aws", price is None, price or 0, o.count, o.name)
    out.sort(key=order)
    return out


def describe(w: Workload) -> str:
    what = w.model or f"{w.params:.3g}-parameter model"
    return f"{what}, {w.precision}, {w.task}, seq {w.seq}, batch {w.batch}"
