"""How much accelerator memory a model needs: the workload, and its memory term by term.

Which machines hold it, how fast they run it and what that costs is :mod:`gpukit.cloud.machines`.

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
* KV cache (inference)  = 2 (K and V) x L x kv_heads x head_dim x s x b x bytes_per_value, where
                          bytes_per_value is 2 (16-bit) whatever the weights are stored in (int8, int4
                          and fp8 weights keep a 16-bit cache unless ``kv_precision`` says otherwise),
                          and 4 with fp32/tf32 weights.
* inference overhead    = 20 % of the weights for the runtime and temporary buffers (the
                          Transformer Math 101 rule of thumb: total ~ 1.2 x weights).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .models import PRESETS, count_params

BYTES = {"fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
KV_CHOICES = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")   # what a KV cache can be stored in
TASKS = ("inference", "lora", "full")
ADAM_MIXED_BYTES = 16          # per trainable parameter, see the module docstring
INFERENCE_OVERHEAD = 0.20      # fraction of the weights
HEADROOM = 1.10                # a machine fits when memory >= need x HEADROOM
KV_BYTES_16 = 2.0              # the KV cache's default: 16-bit values
MIN_PARAMS = 1e6               # below a million parameters the count was most likely typed in billions
MAX_PARAMS = 1e13              # 10 trillion: anything above is a typo, not a model
PRESET_TOLERANCE = 0.10        # --params may round a preset's count (7B for 6.74e9), not replace it
GB = 1e9
GIB = 2**30


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
    kv_precision: str | None = None     # None: 16-bit (fp32 with fp32/tf32 weights)
    active_params: float | None = None  # mixture of experts: parameters one token uses

    def __post_init__(self):
        if self.precision not in BYTES:
            raise AdviceError(f"unknown precision {self.precision!r} (choose from {', '.join(BYTES)})")
        if self.kv_precision is not None and self.kv_precision not in KV_CHOICES:
            raise AdviceError(f"unknown KV-cache precision {self.kv_precision!r} (choose from {', '.join(KV_CHOICES)})")
        if self.task not in TASKS:
            raise AdviceError(f"unknown task {self.task!r} (choose from {', '.join(TASKS)})")
        if not (isinstance(self.params, (int, float)) and math.isfinite(self.params)) or self.params <= 0:
            raise AdviceError(f"parameters must be a positive number, got {self.params:.3g}" if isinstance(self.params, (int, float)) else f"parameters must be a positive number, got {self.params!r}")
        if self.params > MAX_PARAMS:
            raise AdviceError(f"{self.params:.3g} parameters is beyond any model that exists (limit {MAX_PARAMS:.0e})")
        if self.params < MIN_PARAMS:
            raise AdviceError(f"{self.params:.3g} parameters is below {MIN_PARAMS:.0e}: give the count itself "
                              "(7e9 or 7B), not billions")
        if self.active_params is None:
            self.active_params = self.params
        elif not 0 < self.active_params <= self.params:
            raise AdviceError(f"active parameters ({self.active_params:.3g}) must be > 0 and at most the total")
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
        if self.heads and self.kv_heads:
            if self.kv_heads > self.heads:
                raise AdviceError(f"{self.kv_heads} key/value heads is more than the {self.heads} attention heads")
            if self.heads % self.kv_heads:
                raise AdviceError(f"{self.heads} attention heads do not split into {self.kv_heads} key/value "
                                  "groups (kv-heads must divide heads)")
        if self.task == "inference" and not (self.layers and self.hidden):
            raise AdviceError("inference needs the architecture for the KV cache: --model NAME or --layers and --hidden")

    @property
    def kv_bytes(self) -> float:
        if self.kv_precision:
            return BYTES[self.kv_precision]
        return BYTES[self.precision] if self.precision in ("fp32", "tf32") else KV_BYTES_16

    @classmethod
    def from_preset(cls, name: str, **kw) -> "Workload":
        """A workload with a preset's architecture; ``params`` may round the preset's count (within
        :data:`PRESET_TOLERANCE`) but not replace it: an 8B architecture with 70B parameters is no model."""
        if name not in PRESETS:
            raise AdviceError(f"unknown model {name!r} (presets: {', '.join(PRESETS)})")
        pre = PRESETS[name]
        total, active = count_params(pre)
        given = kw.pop("params", None)
        if given is not None and not (isinstance(given, (int, float)) and math.isfinite(given) and given > 0):
            raise AdviceError(f"parameters must be a positive number, got {given!r}")
        if given is not None and abs(given - total) > PRESET_TOLERANCE * total:
            raise AdviceError(f"{given:.3g} parameters does not match {name} ({total:.3g}); drop --params, or "
                              "describe another model with --layers/--hidden/--heads/--kv-heads instead of --model")
        arch = dict(layers=pre.layers, hidden=pre.hidden, heads=pre.heads, kv_heads=pre.kv_heads)
        arch.update({k: v for k, v in kw.items() if v is not None})
        params = given or total
        active = params if active == total else min(params, active * params / total)
        return cls(model=name, params=params, active_params=active, **arch)


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
        kv_b = w.kv_bytes
        if w.kv_precision is None and kv_b != bpp:
            e.notes.append(f"KV cache kept in 16-bit with {w.precision} weights (runtimes quantise weights, not the "
                           "cache, unless told to: --kv-precision)")
        e.terms.append(Term("KV cache", f"2 x {w.layers} layers x {w.kv_heads} kv_heads x {head_dim} head_dim x "
                                        f"{w.seq} seq x {w.batch} batch x {kv_b:g} B",
                            kv_cache_bytes(w.layers, w.kv_heads, head_dim, w.seq, w.batch, kv_b)))
        e.terms.append(Term("runtime overhead", f"{INFERENCE_OVERHEAD:.0%} of weights (rule of thumb)",
                            INFERENCE_OVERHEAD * weights_bytes(P, w.precision)))
        window = PRESETS[w.model].sliding_window if w.model else None
        if window and w.seq > window:
            e.notes.append(f"{w.model} attends over a {window}-token sliding window; a runtime that uses it keeps "
                           f"at most {window} tokens of KV cache, so this cache is an upper bound")
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


def describe(w: Workload) -> str:
    what = w.model or f"{w.params:.3g}-parameter model"
    if w.active_params < w.params:
        what += f" ({w.params:.3g} parameters, {w.active_params:.3g} active per token)"
    kv = f", KV cache {w.kv_precision}" if w.kv_precision else ""
    return f"{what}, {w.precision}{kv}, {w.task}, seq {w.seq}, batch {w.batch}"
