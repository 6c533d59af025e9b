"""The cloud chapter's advisor as plain data and arithmetic, with no GPU library: the model
presets, the memory and speed formulas, the machines that hold a workload and their ranking, and
the advisor's report. The chapter's views, card and command read it here.

What each part means is documented where its names have always been imported from:
:mod:`gpukit.cloud.models` (the presets), :mod:`gpukit.cloud.advisor` (the formulas, term by
term), :mod:`gpukit.cloud.machines` (the speed model and which rows are offered); ``gpukit
advise`` (:mod:`gpukit.cloud.cli`) parses the command line and prints the report.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from .. import catalogue as data

NAME = "cloud"


# ---------------------------------------------------------------- the model presets
#: Meta's own list of Llama architectures (dim, n_layers, n_heads, n_kv_heads, vocab, MLP rule),
#: at a fixed commit of github.com/meta-llama/llama-models
LLAMA_SKUS = ("https://github.com/meta-llama/llama-models/blob/364ed4ec2bdcc13ab3acb08e364e843b6322b9ae/"
              "models/sku_list.py")
LLAMA_SKUS_DATE = "2025-02-02"


@dataclass(frozen=True)
class Preset:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    source: str
    params: float | None = None          # a published total, where the preset has no counting fields
    intermediate: int | None = None      # SwiGLU MLP width (three hidden x intermediate matrices)
    vocab: int | None = None
    experts: int = 1                     # mixture of experts: MLPs per layer ...
    active_experts: int = 1              # ... and how many each token uses
    qkv_bias: bool = False
    tied_embeddings: bool = False
    sliding_window: int | None = None
    source_date: str | None = None
    context: int | None = None           # the longest sequence the model was built for, in tokens
    context_source: str | None = None

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def _hf(repo: str) -> str:
    return f"https://huggingface.co/{repo}/blob/main/config.json"


PRESETS: dict[str, Preset] = {
    "llama-2-7b": Preset(32, 4096, 32, 32, _hf("meta-llama/Llama-2-7b-hf"), intermediate=11008,
                         vocab=32000, context=4096),
    "llama-2-70b": Preset(80, 8192, 64, 8, LLAMA_SKUS, intermediate=28672, vocab=32000,
                          source_date=LLAMA_SKUS_DATE, context=4096,
                          context_source=_hf("meta-llama/Llama-2-70b-hf")),
    "llama-3-8b": Preset(32, 4096, 32, 8, _hf("meta-llama/Meta-Llama-3-8B"), intermediate=14336,
                         vocab=128256, context=8192),
    "llama-3-70b": Preset(80, 8192, 64, 8, _hf("meta-llama/Meta-Llama-3-70B"), intermediate=28672,
                          vocab=128256, context=8192),
    "llama-3.1-8b": Preset(32, 4096, 32, 8, LLAMA_SKUS, intermediate=14336, vocab=128256,
                           source_date=LLAMA_SKUS_DATE, context=131072,
                           context_source=_hf("meta-llama/Llama-3.1-8B")),
    "llama-3.1-70b": Preset(80, 8192, 64, 8, LLAMA_SKUS, intermediate=28672, vocab=128256,
                            source_date=LLAMA_SKUS_DATE, context=131072,
                            context_source=_hf("meta-llama/Llama-3.1-70B")),
    "llama-3.1-405b": Preset(126, 16384, 128, 8, LLAMA_SKUS, intermediate=53248, vocab=128256,
                             source_date=LLAMA_SKUS_DATE, context=131072,
                             context_source=_hf("meta-llama/Llama-3.1-405B")),
    "mistral-7b": Preset(32, 4096, 32, 8, _hf("mistralai/Mistral-7B-v0.1"), intermediate=14336, vocab=32000,
                         sliding_window=4096, context=32768),
    "mixtral-8x7b": Preset(32, 4096, 32, 8, "https://huggingface.co/mistralai/Mixtral-8x7B-Instruct-v0.1/blob/"
                           "eba92302a2861cdc0098cc54bc9f17cb2c47eb61/config.json",
                           intermediate=14336, vocab=32000, experts=8, active_experts=2,
                           context=32768),
    "qwen2.5-7b": Preset(28, 3584, 28, 4, _hf("Qwen/Qwen2.5-7B"), intermediate=18944, vocab=152064,
                         qkv_bias=True, context=131072),
    "qwen2.5-72b": Preset(80, 8192, 64, 8, _hf("Qwen/Qwen2.5-72B"), intermediate=29568, vocab=152064,
                          qkv_bias=True, context=131072),
}

#: Parameter counts the model makers publish, to check :func:`count_params` against.
PUBLISHED = {
    "mixtral-8x7b": dict(total=46.7e9, active=12.9e9, source="https://mistral.ai/news/mixtral-of-experts/",
                         date="2023-12-11"),
    "llama-3-8b": dict(total=8.03e9, source=_hf("meta-llama/Meta-Llama-3-8B")),
}


def count_params(p: Preset) -> tuple[float, float]:
    """(total, active) parameters of a decoder-only transformer with SwiGLU MLPs.

    Per layer: q and o projections ``2 h (a d)``, k and v ``2 h (kv d)`` (plus their biases where the
    config has them), two norms ``2 h``, ``experts x 3 h i`` for the MLPs and ``h experts`` for the
    router; then the embedding and output matrices ``vocab x h`` (once if tied) and the final norm.
    A token uses ``active_experts`` of the MLPs. A preset without counting fields returns its
    published total for both.
    """
    if p.intermediate is None or p.vocab is None:
        return float(p.params), float(p.params)
    h, d = p.hidden, p.head_dim
    attn = 2 * h * p.heads * d + 2 * h * p.kv_heads * d
    if p.qkv_bias:
        attn += p.heads * d + 2 * p.kv_heads * d
    mlp = 3 * h * p.intermediate
    router = h * p.experts if p.experts > 1 else 0
    embed = p.vocab * h * (1 if p.tied_embeddings else 2) + h
    total = p.layers * (attn + 2 * h + p.experts * mlp + router) + embed
    active = p.layers * (attn + 2 * h + p.active_experts * mlp + router) + embed
    return float(total), float(active)


# ---------------------------------------------------------------- memory and speed formulas
BYTES = {"fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
KV_CHOICES = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")   # what a KV cache can be stored in
TASKS = ("inference", "lora", "full")
QUANTISED = ("int8", "int4")   # weight-only: the embedding table stays in 16 bits
QUANT_GROUP = 128              # int4 weights per 16-bit scale
ADAM_MIXED_BYTES = 18          # per trainable parameter in mixed precision, see the module docstring
ADAM_FP32_BYTES = 16
ADAPTER_BYTES = 16             # per LoRA parameter: fp32 weight, gradient, two Adam moments
LAYER_WORKING_SET = 34         # bytes per s x b x h of one layer's activations (16-bit)
LOGIT_BYTES_TRAINING = 4
HEADROOM = 1.10                # a machine fits when memory >= need x HEADROOM
KV_BYTES_16 = 2.0              # the KV cache's default: 16-bit values
MIN_PARAMS = 1e6               # below a million parameters the count was most likely typed in billions
MAX_PARAMS = 1e13              # 10 trillion: anything above is a typo, not a model
MAX_SEQ = 10_000_000           # tokens: the longest context windows published are of this order
MAX_BATCH = 65_536             # sequences in one batch
MAX_LAYERS = 1_000
MAX_HIDDEN = 131_072
DEFAULT_HEAD_DIM = 128         # heads = hidden / 128 when --heads is not given
PRESET_TOLERANCE = 0.10        # --params may round a preset's count (7B for 6.74e9), not replace it
GB = 1e9
GIB = 2**30


class AdviceError(ValueError):
    """Input the advisor cannot work with (the CLI turns it into a one-line error)."""


def shown(text, limit: int = 40) -> str:
    """``text`` as an error message quotes it: cut to ``limit`` characters."""
    text = str(text)
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text):,} characters)"


def _choice(value: str, choices, what: str) -> str:
    key = str(value).strip().lower()
    if key not in choices:
        raise AdviceError(f"unknown {what} {shown(value)} (choose from {', '.join(choices)})")
    return key


def preset_name(name: str) -> str:
    """The preset key for ``name`` (any case), or :class:`AdviceError`."""
    key = str(name).strip().lower()
    if key not in PRESETS:
        raise AdviceError(f"unknown model {shown(name)} (presets: {', '.join(PRESETS)})")
    return key


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
    intermediate: int | None = None     # MLP width (presets); None: 4 x hidden is assumed
    vocab: int | None = None            # vocabulary (presets); None: no logits term
    prefill: int | None = None          # tokens per sequence in the largest forward pass (None: seq)

    def __post_init__(self):
        self.precision = _choice(self.precision, BYTES, "precision")
        if self.kv_precision is not None:
            self.kv_precision = _choice(self.kv_precision, KV_CHOICES, "KV-cache precision")
        self.task = _choice(self.task, TASKS, "task")
        if self.kv_precision is not None and self.task != "inference":
            raise AdviceError("a KV-cache precision applies to inference only (training keeps no KV cache)")
        if not self.checkpointing and self.task == "inference":
            raise AdviceError("activation checkpointing is a training setting; inference keeps no activations "
                              "for a backward pass")
        if not (isinstance(self.params, (int, float)) and math.isfinite(self.params)) or self.params <= 0:
            raise AdviceError(f"parameters must be a positive, finite number, got {shown(self.params)}")
        if self.params > MAX_PARAMS:
            raise AdviceError(f"{self.params:.3g} parameters is beyond any model that exists (limit {MAX_PARAMS:.0e})")
        if self.params < MIN_PARAMS:
            raise AdviceError(f"{self.params:.3g} parameters is below {MIN_PARAMS:.0e}: give the count itself "
                              "(7e9 or 7B), not billions")
        if self.active_params is None:
            self.active_params = self.params
        elif not 0 < self.active_params <= self.params:
            raise AdviceError(f"active parameters ({self.active_params:.3g}) must be > 0 and at most the total")
        limits = dict(seq=MAX_SEQ, batch=MAX_BATCH, lora_rank=MAX_HIDDEN, layers=MAX_LAYERS,
                      hidden=MAX_HIDDEN, heads=MAX_HIDDEN, kv_heads=MAX_HIDDEN, intermediate=8 * MAX_HIDDEN,
                      vocab=10**7, prefill=MAX_SEQ)
        for name, limit in limits.items():
            value = getattr(self, name)
            if value is None and name not in ("seq", "batch", "lora_rank"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise AdviceError(f"{name.replace('_', '-')} must be a whole number > 0, got {shown(value)}")
            window = PRESETS[self.model].context if self.model and name == "seq" else None
            if window and value > window:
                raise AdviceError(f"{self.model} reads at most {window:,} tokens; a sequence of {value:,} is "
                                  "longer than its context window")
            if value > limit:
                raise AdviceError(f"{name.replace('_', '-')} {value:,} is more than {limit:,}, beyond any model "
                                  "or batch the advisor is built for")
        if self.prefill is not None and self.prefill > self.seq:
            raise AdviceError(f"a prefill of {self.prefill:,} tokens is longer than the sequence ({self.seq:,})")
        if self.heads is None and self.hidden:
            if self.hidden % DEFAULT_HEAD_DIM:
                raise AdviceError(f"hidden size {self.hidden:,} is not a multiple of {DEFAULT_HEAD_DIM}, the head "
                                  "size assumed without --heads: give --heads")
            self.heads = self.hidden // DEFAULT_HEAD_DIM
        if self.kv_heads is None:
            self.kv_heads = self.heads
        if self.heads and self.hidden and (self.heads > self.hidden or self.hidden % self.heads):
            raise AdviceError(f"hidden size {self.hidden:,} does not split into {self.heads:,} heads")
        if self.heads and self.kv_heads:
            if self.kv_heads > self.heads:
                raise AdviceError(f"{self.kv_heads:,} key/value heads is more than the {self.heads:,} attention "
                                  "heads")
            if self.heads % self.kv_heads:
                raise AdviceError(f"{self.heads:,} attention heads do not split into {self.kv_heads:,} key/value "
                                  "groups (kv-heads must divide heads)")
        if self.task == "lora" and self.hidden and self.lora_rank > self.hidden:
            raise AdviceError(f"a LoRA rank of {self.lora_rank:,} is more than the hidden size ({self.hidden:,}): "
                              "an adapter that wide is no low-rank adapter")
        if self.layers and self.hidden:
            least = 4 * self.layers * self.hidden ** 2 * (1 + (self.kv_heads or 1) / (self.heads or 1)) / 2
            if self.params < 0.5 * least:
                raise AdviceError(f"{self.params:.3g} parameters cannot fill {self.layers:,} layers of hidden size "
                                  f"{self.hidden:,} (their attention alone has {least:.3g})")
        if self.task == "inference" and not (self.layers and self.hidden):
            raise AdviceError("inference needs the architecture for the KV cache: --model NAME or --layers and --hidden")

    @property
    def kv_bytes(self) -> float:
        if self.kv_precision:
            return BYTES[self.kv_precision]
        return BYTES[self.precision] if self.precision in ("fp32", "tf32") else KV_BYTES_16

    @property
    def act_bytes(self) -> float:
        """Bytes of one activation value: 4 with fp32/tf32 weights, else 2."""
        return 4.0 if self.precision in ("fp32", "tf32") else 2.0

    @classmethod
    def from_preset(cls, name: str, **kw) -> "Workload":
        """A workload with a preset's architecture; ``params`` may round the preset's count (within
        :data:`PRESET_TOLERANCE`) but not replace it: an 8B architecture with 70B parameters is no
        model. The architecture is the preset's: a different one is another model, not this one."""
        name = preset_name(name)
        pre = PRESETS[name]
        total, active = count_params(pre)
        given = kw.pop("params", None)
        if given is not None and not (isinstance(given, (int, float)) and math.isfinite(given) and given > 0):
            raise AdviceError(f"parameters must be a positive, finite number, got {shown(given)}")
        if given is not None and abs(given - total) > PRESET_TOLERANCE * total:
            raise AdviceError(f"{given:.3g} parameters does not match {name} ({total:.3g}); drop --params, or "
                              "describe another model with --layers/--hidden/--heads/--kv-heads instead of --model")
        arch = dict(layers=pre.layers, hidden=pre.hidden, heads=pre.heads, kv_heads=pre.kv_heads)
        for key, value in arch.items():
            if kw.get(key) is not None and kw[key] != value:
                raise AdviceError(f"{name} has {key.replace('_', '-')} {value:,}, not {kw[key]:,}: drop --model "
                                  "to describe another architecture (with --params)")
            kw.pop(key, None)
        params = given or total
        active = params if active == total else min(params, active * params / total)
        return cls(model=name, params=params, active_params=active, intermediate=pre.intermediate,
                   vocab=pre.vocab, **arch, **kw)


@dataclass
class Term:
    name: str
    formula: str
    bytes: float

    @property
    def gb(self) -> float:
        return self.bytes / GB

    @property
    def gib(self) -> float:
        return self.bytes / GIB


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

    @property
    def total_gib(self) -> float:
        return self.total_bytes / GIB


def _n(x: float) -> str:
    return f"{x:.3g}" if x >= 1e6 else f"{x:,.0f}"


def weights_bytes(params: float, precision: str, embedding: float = 0.0, hidden: int | None = None) -> float:
    """Bytes of ``params`` weights stored in ``precision``; with weight-only int8/int4, the
    ``embedding`` parameters stay 16-bit and the scales are added (see the module docstring)."""
    if precision not in QUANTISED:
        return params * BYTES[precision]
    linear = params - embedding
    scales = linear / QUANT_GROUP if precision == "int4" else linear / (hidden or QUANT_GROUP)
    return linear * BYTES[precision] + 2.0 * (embedding + scales)


def kv_cache_bytes(layers: int, kv_heads: int, head_dim: int, seq: int, batch: int, bytes_per: float) -> float:
    return 2 * layers * kv_heads * head_dim * seq * batch * bytes_per


def activation_bytes(seq: int, batch: int, hidden: int, layers: int, heads: int, checkpointing: bool,
                     act_bytes: float = 2.0) -> float:
    """Training activations kept for the backward pass (``heads`` is kept for the signature: with a
    fused attention kernel no term depends on it)."""
    scale = act_bytes / 2.0
    if checkpointing:
        return scale * 2.0 * seq * batch * hidden * layers
    return scale * LAYER_WORKING_SET * seq * batch * hidden * layers


def lora_params(layers: int, hidden: int, rank: int, matrices: int = 2) -> float:
    return matrices * layers * rank * (hidden + hidden)


def _embedding(w: Workload) -> float:
    """Parameters of the input embedding table (16-bit under weight-only quantisation)."""
    return float(w.vocab * w.hidden) if w.vocab and w.hidden else 0.0


def _workspace(w: Workload, tokens: int, all_logits: bool) -> tuple[float, str]:
    """Bytes of the largest forward pass over ``tokens`` per sequence, and its formula."""
    b = w.act_bytes
    n = w.batch * tokens
    width = w.intermediate or 4 * w.hidden
    mlp = 3 * n * width * b
    rows = n if all_logits else w.batch
    logits = rows * (w.vocab or 0) * (b + 4)
    what = f"I={width}" + ("" if w.intermediate else " (4 h assumed)")
    formula = (f"2 n h + max(3 n I, {'n' if all_logits else 'b'} V x {b + 4:g} B), n = {w.batch} x {tokens}, "
               f"h={w.hidden}, {what}, V={w.vocab or 0}, {b:g} B")
    return 2 * n * w.hidden * b + max(mlp, logits), formula


def estimate(w: Workload, *, all_logits: bool = False) -> Estimate:
    """Memory needed by workload ``w``, term by term, each with its formula."""
    e = Estimate(w)
    bpp = BYTES[w.precision]
    P = w.params
    arch = bool(w.layers and w.hidden)
    if w.task == "inference":
        emb = _embedding(w)
        wb = weights_bytes(P, w.precision, emb, w.hidden)
        if w.precision in QUANTISED:
            how = (f"({_n(P - emb)} linear x {bpp:g} B + {_n(emb)} embedding x 2 B + 16-bit scales, "
                   + (f"one per {QUANT_GROUP})" if w.precision == "int4" else "one per row)"))
        else:
            how = f"{_n(P)} params x {bpp:g} B"
        e.terms.append(Term("weights", how, wb))
        head_dim = w.hidden // w.heads
        kv_b = w.kv_bytes
        if w.kv_precision is None and kv_b != bpp:
            e.notes.append(f"KV cache kept in 16-bit with {w.precision} weights (runtimes quantise weights, not the "
                           "cache, unless told to: --kv-precision)")
        e.terms.append(Term("KV cache", f"2 x {w.layers} layers x {w.kv_heads} kv_heads x {head_dim} head_dim x "
                                        f"{w.seq} seq x {w.batch} batch x {kv_b:g} B",
                            kv_cache_bytes(w.layers, w.kv_heads, head_dim, w.seq, w.batch, kv_b)))
        space, formula = _workspace(w, w.prefill or w.seq, all_logits)
        e.terms.append(Term("workspace", formula, space))
        if not w.vocab:
            e.notes.append("logits not counted: the vocabulary is known for presets only (--model)")
        window = PRESETS[w.model].sliding_window if w.model else None
        if window and w.seq > window:
            e.notes.append(f"{w.model} attends over a {window}-token sliding window; a runtime that uses it keeps "
                           f"at most {window} tokens of KV cache, so this cache is an upper bound")
        return e
    if w.task == "full":
        if w.precision not in ("bf16", "fp16", "fp32", "tf32"):
            raise AdviceError(f"full training in {w.precision} is not a standard recipe; use bf16, fp16 or fp32")
        if w.precision in ("fp32", "tf32"):
            e.terms.append(Term("weights + grads + Adam", f"{_n(P)} params x {ADAM_FP32_BYTES} B "
                                "(4 weights + 4 grads + 4 + 4 Adam moments)", P * ADAM_FP32_BYTES))
        else:
            e.terms.append(Term("weights + grads + Adam", f"{_n(P)} params x {ADAM_MIXED_BYTES} B "
                                "(2 weights + 4 fp32 grads + 4 fp32 master + 4 + 4 Adam moments)",
                                P * ADAM_MIXED_BYTES))
    else:  # lora
        if not arch:
            raise AdviceError("a LoRA estimate needs the architecture: --model NAME or --layers and --hidden")
        e.terms.append(Term("frozen base weights", f"{_n(P)} params x {bpp:g} B", weights_bytes(P, w.precision)))
        lp = lora_params(w.layers, w.hidden, w.lora_rank)
        e.terms.append(Term("LoRA adapters + grads + Adam",
                            f"2 matrices x {w.layers} layers x r={w.lora_rank} x ({w.hidden}+{w.hidden}) "
                            f"= {_n(lp)} params x {ADAPTER_BYTES} B", lp * ADAPTER_BYTES))
    if arch:
        s, b, h, L = w.seq, w.batch, w.hidden, w.layers
        scale = w.act_bytes / 2.0
        how = "2 x s x b x h x L (activation checkpointing)" if w.checkpointing else \
            f"{LAYER_WORKING_SET} x s x b x h x L (no checkpointing)"
        e.terms.append(Term("activations", f"{how}, s={s} b={b} h={h} L={L}" + (", fp32: x 2" if scale > 1 else ""),
                            activation_bytes(s, b, h, L, w.heads, w.checkpointing, w.act_bytes)))
        if w.checkpointing:
            e.terms.append(Term("one layer recomputed", f"{LAYER_WORKING_SET} x s x b x h"
                                + (" x 2 (fp32)" if scale > 1 else ""), scale * LAYER_WORKING_SET * s * b * h))
        if w.vocab:
            e.terms.append(Term("logits", f"s x b x V x {LOGIT_BYTES_TRAINING} B (fp32 for the loss), V={w.vocab}",
                                float(s * b * w.vocab * LOGIT_BYTES_TRAINING)))
        else:
            e.notes.append("logits not counted: the vocabulary is known for presets only (--model)")
    else:
        e.notes.append("activations not counted: give --model or --layers/--hidden to include them")
    return e


def describe(w: Workload) -> str:
    what = w.model or f"{w.params:.3g}-parameter model"
    if w.active_params < w.params:
        what += f" ({w.params:.3g} parameters, {w.active_params:.3g} active per token)"
    kv = f", KV cache {w.kv_precision}" if w.kv_precision else ""
    return f"{what}, {w.precision}{kv}, {w.task}, seq {w.seq}, batch {w.batch}"


# ------------------------------------------------------------------ the public functions

def inference_memory(model: str, batch: int, context: int, precision: str = "bf16", *,
                     prefill: int | None = None, all_logits: bool = False) -> int:
    """Peak bytes of generating with ``model`` (a preset name) for ``batch`` sequences with a
    static KV cache of ``context`` tokens, weights in ``precision`` (``"bf16"``, ``"int8"``,
    ``"int4"``, ...): weights + KV cache + the workspace of the largest forward pass, a prefill of
    ``prefill`` tokens per sequence (default: the whole context at once; 0 is not allowed, 1 is a
    decode step alone). ``all_logits``: the prefill keeps logits for every position, not only the
    last. Raises :class:`AdviceError` on bad input."""
    w = Workload.from_preset(model, precision=precision, task="inference", seq=context, batch=batch,
                             prefill=prefill)
    return int(round(estimate(w, all_logits=all_logits).total_bytes))


def decode_step(w: Workload) -> tuple[float, float]:
    """(bytes read, FLOPs) of one decode step of workload ``w`` at its full context ``w.seq``:
    the weights as stored except the embedding table, of which a step reads one row per
    sequence (a mixture of experts reads ``min(total, active x batch)`` of its weights), plus
    the KV cache; 2 x active parameters x batch plus attention over the context."""
    emb = _embedding(w)
    emb_bytes = emb * w.act_bytes
    stored = weights_bytes(w.params, w.precision, emb, w.hidden) - emb_bytes
    read = stored * min(1.0, w.active_params * w.batch / w.params)
    if emb:
        read += min(w.batch, w.vocab) * w.hidden * w.act_bytes
    head_dim = w.hidden // w.heads
    kv = kv_cache_bytes(w.layers, w.kv_heads, head_dim, w.seq, w.batch, w.kv_bytes)
    flops = 2 * w.active_params * w.batch + 4 * w.layers * w.heads * head_dim * w.seq * w.batch
    return read + kv, flops


def decode_rate(w: Workload, bandwidth_gbs: float, peak_tflops: float | None,
                compute_efficiency: float) -> float:
    """Tokens per second (over the batch) of one decode step: the slower of the memory roof at
    ``bandwidth_gbs`` (already times any efficiency) and the compute roof."""
    moved, flops = decode_step(w)
    seconds = moved / (bandwidth_gbs * GB)
    if peak_tflops:
        seconds = max(seconds, flops / (peak_tflops * 1e12 * compute_efficiency))
    return w.batch / seconds


def decode_shares(part: dict) -> dict[str, dict[int, float]]:
    """Share of the copy bandwidth at which decode read its bytes, by precision and batch: the
    rows of one ``llm_inference.json`` (its part ``gpu``) launched the fastest way measured at
    every batch (``best_variant``). Malformed rows are skipped."""
    best = part.get("best_variant")
    out: dict[str, dict[int, float]] = {}
    for r in (part.get("decode") or []) + (part.get("quant") or []):
        if not isinstance(r, dict) or r.get("variant") != best:
            continue
        prec, b, share = r.get("precision"), r.get("batch"), r.get("share_of_copy")
        if (isinstance(prec, str) and isinstance(b, int) and not isinstance(b, bool) and b > 0
                and isinstance(share, (int, float)) and not isinstance(share, bool)
                and 0 < share <= 1.5):
            out.setdefault(prec, {})[b] = float(share)
    return out


def decode_share(shares: dict, precision: str,
                 batch: int) -> tuple[float | None, str, bool]:
    """The share of the copy bandwidth to assume for decoding ``batch`` sequences in
    ``precision``, from a table of measured shares (:func:`decode_shares`); how it was found, in
    words: measured at that batch; between two measured batches (straight line in log2 of the
    batch); the nearest measured batch beyond the measured range; a precision with no
    measurement of its own takes bf16's; and whether it lies between two measured batches of
    its own precision (the use the table is built for: the others extrapolate).
    ``(None, ..., False)`` for an empty table."""
    own = shares.get(precision)
    table, whose = (own, "") if own else (shares.get("bf16"), "bf16's, ")
    if not table:
        return None, "no measurement", False
    bs = sorted(table)
    if batch in table:
        return table[batch], f"{whose}measured at batch {batch}", False
    if batch < bs[0] or batch > bs[-1]:
        near = bs[0] if batch < bs[0] else bs[-1]
        return table[near], f"{whose}from batch {near}", False
    lo = max(b for b in bs if b < batch)
    hi = min(b for b in bs if b > batch)
    t = (math.log2(batch) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
    return (table[lo] + t * (table[hi] - table[lo]), f"{whose}between batches {lo} and {hi}",
            bool(own))


def _decode_efficiency(m: "Measured | None", precision: str, batch: int) -> float | None:
    """What a record says about decoding ``batch`` sequences in ``precision`` on its GPU: the
    share of :func:`decode_share`, else the one recorded ``decode_efficiency``."""
    if not m:
        return None
    share, _, _ = decode_share(m.decode_shares, precision, batch)
    return share or m.decode_efficiency


def decode_tokens_per_s(model: str, gpu: str, batch: int, context: int, precision: str = "bf16",
                        efficiency: float | None = None, *, bandwidth_gbs: float | None = None,
                        root: str | Path | None = None) -> float:
    """Decode tokens per second (summed over the batch) of ``model`` (a preset name) on one
    ``gpu`` (a ``gpus.yaml`` key such as ``"h200-sxm"``, or the driver's name, ``"NVIDIA H200"``)
    at ``batch`` sequences and ``context`` tokens of KV cache, weights in ``precision``.

    ``bandwidth_gbs`` (default: the copy bandwidth measured under ``root``, else the data
    sheet's peak) times ``efficiency`` is the rate bytes are read at. ``efficiency`` defaults to
    the share of the copy bandwidth that GPU's ``llm_inference.json`` under ``root`` measured for
    this precision and batch (:func:`decode_share`: between measured batches, a straight line),
    else its recorded ``decode_efficiency``, else 1. The compute roof uses the measured matmul
    efficiency, else :data:`DEFAULT_EFFICIENCY`."""
    g = gpu_row(gpu)
    if g is None:
        raise AdviceError(f"unknown GPU {shown(gpu)}: give a key of gpukit/data/gpus.yaml or the name the "
                          "driver reports")
    if efficiency is not None and not (isinstance(efficiency, (int, float)) and 0 < efficiency <= 1.5):
        raise AdviceError(f"efficiency must be a fraction > 0, got {shown(efficiency)}")
    if bandwidth_gbs is not None and not (isinstance(bandwidth_gbs, (int, float)) and bandwidth_gbs > 0):
        raise AdviceError(f"bandwidth must be a positive number of GB/s, got {shown(bandwidth_gbs)}")
    w = Workload.from_preset(model, precision=precision, task="inference", seq=context, batch=batch)
    meas = measurements(root).get(g["key"])
    if bandwidth_gbs is None:
        bandwidth_gbs = ((meas.decode_copy_gbs or meas.copy_gbs) if meas else None) or g.get("bandwidth_gbs")
    if not bandwidth_gbs:
        raise AdviceError(f"no memory bandwidth is known for {g['name']}")
    if efficiency is None:
        efficiency = _decode_efficiency(meas, w.precision, batch) or 1.0
    compute, _, _ = efficiencies(g, precision if precision in WANT else "bf16",
                                 {g["key"]: meas} if meas else {})
    return decode_rate(w, bandwidth_gbs * efficiency, g.get(peak_key(w.precision)), compute)


# ---------------------------------------------------------------- machines that hold it
DEFAULT_EFFICIENCY = 0.5       # fraction of dense compute peak assumed where nothing was measured
MAX_GPUS = 8                   # more than one 8-GPU server is a cluster question
WANT = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "tf32": "float32"}


@dataclass
class Measured:
    """What this project measured on one GPU model."""
    gpu: str                     # key in gpus.yaml
    device: str                  # the name the machine record gives
    path: str                    # results file, relative to the results folder
    tflops: dict = field(default_factory=dict)   # precision -> best tensor-core matmul TFLOP/s
    copy_gbs: float | None = None
    decode_efficiency: float | None = None       # from llm_inference.json
    advisor_check: list = field(default_factory=list)
    llm_path: str | None = None
    #: precision -> batch -> share of the copy bandwidth decode read at (llm_inference.json)
    decode_shares: dict = field(default_factory=dict)
    decode_copy_gbs: float | None = None         # the copy bandwidth those shares are of


@dataclass
class Option:
    kind: str                    # "aws" or "gpu"
    name: str
    count: float
    memory_gib: float
    label: str                   # the accelerator, as the table shows it
    gpu: str | None = None
    price_per_hour: float | None = None
    buy_usd: float | None = None
    unit: str = "instance"
    decode_tps: float | None = None
    prefill_s: float | None = None
    hours: float | None = None
    cost: float | None = None
    usd_per_mtok: float | None = None
    measured: bool = False
    note: str = ""

    @property
    def price(self) -> float | None:
        return self.price_per_hour if self.kind == "aws" else self.buy_usd


def peak_key(precision: str) -> str:
    return {"fp32": "fp32_tflops", "tf32": "tf32_tflops"}.get(precision, "bf16_tflops")


def _gpu_for(device: str) -> dict | None:
    for g in data.gpus():
        if device in g.get("device_names", ()) or device == g["name"]:
            return g
    return None


def gpu_row(name: str) -> dict | None:
    """The ``gpus.yaml`` row for a key (``"h200-sxm"``), a name as the data or the driver gives it
    (``"NVIDIA H200"``), in any case."""
    text = str(name).strip().lower()
    for g in data.gpus():
        names = [g["key"], g["name"], *g.get("device_names", ())]
        if text in (n.lower() for n in names):
            return g
    return None


def _row_precision(row: dict) -> str | None:
    dtype = str(row.get("dtype", "")).replace("torch.", "")
    if row.get("tf32") is True:
        return "tf32"
    return next((p for p, d in WANT.items() if d == dtype and p != "tf32"), None)


def measurements(root: Path | None = None) -> dict[str, Measured]:
    """This project's measurements by GPU key, from every ``*/matmul*.json`` and
    ``*/llm_inference.json`` under ``root``."""
    from .. import results
    root = Path(root or results.results_dir())
    out: dict[str, Measured] = {}
    for path in sorted(root.glob("*/matmul*.json")) + sorted(root.glob("*/llm_inference.json")):
        try:
            doc = json.loads(path.read_text())
            device = doc["machine"]["gpu"]["name"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        g = _gpu_for(device)
        if not g:
            continue
        where = f"{path.parent.name}/{path.name}"
        m = out.setdefault(g["key"], Measured(g["key"], device, where))
        if path.name == "llm_inference.json":
            _read_llm(m, doc, where)
            continue
        for part in doc.values():
            if not isinstance(part, dict):
                continue
            if part.get("copy_ceiling_gbs"):
                m.copy_gbs = max(m.copy_gbs or 0.0, float(part["copy_ceiling_gbs"]))
            # hand-written kernels ("rows") and the library's tensor-core products ("tensor_cores")
            for row in part.get("rows", []) + part.get("tensor_cores", []):
                prec = _row_precision(row)
                if prec and row.get("tflops"):
                    m.tflops[prec] = max(m.tflops.get(prec, 0.0), float(row["tflops"]))
    return out


CHECK_FIELDS = {"model": str, "batch": int, "context": int, "precision": str,
                "measured_tokens_per_s": (int, float), "measured_peak_bytes": (int, float)}


def _read_llm(m: Measured, doc: dict, where: str) -> None:
    """The decode efficiency and the advisor checks of one ``llm_inference.json`` (part ``gpu``);
    rows without the agreed fields are skipped."""
    part = doc.get("gpu")
    if not isinstance(part, dict):
        return
    eff = part.get("decode_efficiency")
    if isinstance(eff, (int, float)) and not isinstance(eff, bool) and 0 < eff <= 1.5:
        m.decode_efficiency = float(eff)
    m.decode_shares = decode_shares(part)
    ceilings = part.get("ceilings")
    copy = ceilings.get("copy_gbs") if isinstance(ceilings, dict) else None
    if isinstance(copy, (int, float)) and not isinstance(copy, bool) and copy > 0:
        m.decode_copy_gbs = float(copy)
    rows = _measured_configurations(part) or part.get("advisor_check") or []
    good = [r for r in rows if isinstance(r, dict) and all(
        isinstance(r.get(k), t) and not isinstance(r.get(k), bool) for k, t in CHECK_FIELDS.items())]
    if good or m.decode_efficiency or m.decode_shares:
        m.advisor_check, m.llm_path = good, where


def _measured_configurations(part: dict) -> list[dict]:
    """Every configuration a record measured both the decode speed (fastest launch) and the
    peak memory of, in the fields of an ``advisor_check`` row."""
    model = part.get("model")
    mem = {(r.get("precision"), r.get("batch")): r for r in part.get("memory") or []
           if isinstance(r, dict)}
    out = []
    for r in (part.get("decode") or []) + (part.get("quant") or []):
        if not isinstance(r, dict) or r.get("variant") != part.get("best_variant"):
            continue
        row = mem.get((r.get("precision"), r.get("batch")), {})
        peak = row.get("peak_bytes")
        if model and peak and r.get("context") == row.get("context"):
            out.append({"model": model, "batch": r["batch"], "context": r["context"],
                        "precision": r["precision"], "measured_tokens_per_s": r.get("tokens_per_s"),
                        "measured_peak_bytes": peak})
    return out


def efficiencies(g: dict, precision: str, meas: dict[str, Measured],
                 batch: int = 1) -> tuple[float, float, bool]:
    """(compute fraction of dense peak, bandwidth fraction of peak, measured?) for GPU row ``g``:
    the bandwidth fraction is the copy bandwidth over the peak, times the decode efficiency of
    ``precision`` at ``batch`` where an ``llm_inference`` record has one."""
    m = meas.get(g["key"])
    compute, bandwidth, measured = DEFAULT_EFFICIENCY, 1.0, False
    prec = precision if precision in WANT else "bf16"
    peak = g.get(peak_key(prec))
    if m and peak and m.tflops.get(prec):
        compute, measured = m.tflops[prec] / peak, True
    if m and (m.decode_copy_gbs or m.copy_gbs) and g.get("bandwidth_gbs"):
        bandwidth, measured = (m.decode_copy_gbs or m.copy_gbs) / g["bandwidth_gbs"], True
    decode = _decode_efficiency(m, precision, batch)
    if decode:
        bandwidth, measured = bandwidth * decode, True
    return compute, bandwidth, measured


def describe_measurements(precision: str, meas: dict[str, Measured]) -> list[str]:
    """One line per measured GPU: what was measured, as a fraction of the data sheet's peak."""
    lines = []
    prec = precision if precision in WANT else "bf16"
    for key, m in sorted(meas.items()):
        g = data.gpu(key)
        parts = []
        if m.tflops.get(prec) and g.get(peak_key(prec)):
            parts.append(f"{prec} matmul {m.tflops[prec]:,.0f} TFLOP/s = {m.tflops[prec] / g[peak_key(prec)]:.0%} "
                         f"of dense peak")
        if m.copy_gbs and g.get("bandwidth_gbs"):
            parts.append(f"copy {m.copy_gbs:,.0f} GB/s = {m.copy_gbs / g['bandwidth_gbs']:.0%} of peak bandwidth")
        where = m.path
        if m.decode_shares:
            spans = []
            for p, t in sorted(m.decode_shares.items()):
                lo, hi = min(t.values()), max(t.values())
                spans.append(f"{p} {lo:.0%}" if len(t) == 1 or f"{lo:.0%}" == f"{hi:.0%}"
                             else f"{p} {lo:.0%} to {hi:.0%} (batch {min(t)} to {max(t)})")
            parts.append("decode reads at these shares of the copy bandwidth: " + ", ".join(spans))
        elif m.decode_efficiency:
            parts.append(f"decode reads at {m.decode_efficiency:.0%} of the copy bandwidth")
        if m.decode_shares or m.decode_efficiency:
            where = f"{m.path}, {m.llm_path}" if m.llm_path != m.path else m.path
        if parts:
            lines.append(f"{m.device}: " + ", ".join(parts) + f" ({where})")
    return lines


def refusal(stack: str, gpu_key: str | None, task: str, neuron: bool, rocm: bool) -> str | None:
    """Why a row's software stack cannot be offered for ``task`` (``None``: it can)."""
    if stack == "cuda" or (stack == "rocm" and rocm):
        return None
    if stack == "neuron":
        if not neuron:
            return "neuron"
        return "inferentia" if gpu_key in ("inferentia", "inferentia2") and task != "inference" else None
    return stack  # "rocm" without --rocm, "qualcomm", or "none"


def _speed(o: Option, g: dict | None, e: Estimate, flops: float | None, meas: dict[str, Measured],
           fraction: float = 1.0) -> None:
    """Fill ``o``'s time estimates (left None where the data has no peak or the GPU is fractional)."""
    w = e.workload
    if not g or fraction < 1:
        if fraction < 1:
            o.note = "fractional GPU: no speed estimate"
        return
    compute, bandwidth, o.measured = efficiencies(g, w.precision, meas, w.batch)
    peak = g.get(peak_key(w.precision))
    n = o.count
    if w.task == "inference":
        if g.get("bandwidth_gbs"):
            o.decode_tps = decode_rate(w, n * g["bandwidth_gbs"] * bandwidth, n * peak if peak else None, compute)
            if o.price_per_hour:
                o.usd_per_mtok = o.price_per_hour / 3600 / o.decode_tps * 1e6
        if peak:
            o.prefill_s = 2 * w.active_params * w.seq * w.batch / (n * peak * 1e12 * compute)
    elif flops and peak:
        o.hours = flops / (n * peak * 1e12 * compute) / 3600
        if o.price_per_hour:
            o.cost = o.hours * o.price_per_hour


def options(e: Estimate, flops: float | None = None, headroom: float = HEADROOM, neuron: bool = False,
            rocm: bool = False, meas: dict[str, Measured] | None = None) -> tuple[list[Option], list[str]]:
    """The AWS instances and GPUs that hold ``e`` with ``headroom`` and can run its task, with speed
    estimates; and one line per kind of row left out, saying why."""
    w = e.workload
    need = e.total_gib * headroom
    meas = measurements() if meas is None else meas
    aws: list[Option] = []
    ultra: list[Option] = []
    skipped: dict[str, int] = {}
    for inst in data.instances():
        mem = inst.get("accelerator_memory_gib")
        if not mem or mem < need:
            continue
        why = refusal(inst["stack"], inst.get("gpu"), w.task, neuron, rocm)
        if why:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        o = Option("aws", inst["name"], inst["accelerator_count"], mem,
                   f"{inst['accelerator_count']} x {inst['accelerator']}", inst.get("gpu"),
                   price_per_hour=inst.get("price_per_hour"), unit=inst.get("unit", "instance"))
        _speed(o, data.gpu(inst["gpu"]) if inst.get("gpu") else None, e, flops, meas, inst.get("gpu_fraction", 1.0))
        (ultra if o.unit == "ultraserver" else aws).append(o)
    out = aws or ultra
    for g in data.gpus():
        if g["segment"] == "cloud-only" or not g.get("memory_gib"):
            continue
        why = refusal(g["stack"], g["key"], w.task, neuron, rocm)
        if why:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        count = math.ceil(need / g["memory_gib"])
        if count > MAX_GPUS:
            continue
        o = Option("gpu", g["name"], count, g["memory_gib"] * count, g["name"], g["key"],
                   buy_usd=g["price_usd"] * count if g.get("price_usd") else None)
        _speed(o, g, e, flops, meas)
        out.append(o)
    notes = []
    if skipped.get("neuron"):
        notes.append(f"{_rows(skipped['neuron'])} with AWS Trainium or Inferentia: they run the Neuron SDK, not "
                     "CUDA (add --neuron; Inferentia serves inference only)")
    if skipped.get("inferentia"):
        notes.append(f"{_rows(skipped['inferentia'])} with AWS Inferentia: built for inference, not training")
    if skipped.get("rocm"):
        notes.append(f"{_rows(skipped['rocm'])} with AMD Instinct GPUs: they run ROCm, not CUDA (add --rocm)")
    if skipped.get("qualcomm"):
        notes.append(f"{_rows(skipped['qualcomm'])} with Qualcomm Cloud AI 100 accelerators: they run Qualcomm's AI "
                     "SDK, not CUDA")
    if skipped.get("none"):
        notes.append(f"{_rows(skipped['none'])} without an ML software stack (G4ad's Radeon Pro V520)")
    if aws and ultra:
        notes.append(f"{_rows(len(ultra), 'UltraServer')} also holding it: shown only when no single instance does")
    return out, notes


def _rows(n: int, what: str = "row") -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def ranked(opts: list[Option], kind: str) -> tuple[list[Option], list[Option]]:
    """Options of ``kind``: those with a price, cheapest first, and those without one, apart."""
    mine = [o for o in opts if o.kind == kind]
    priced = sorted((o for o in mine if o.price), key=lambda o: (o.price, o.count, o.name))
    unpriced = sorted((o for o in mine if not o.price), key=lambda o: (o.memory_gib, o.name))
    return priced, unpriced


def record_checks(doc: dict, where: str = "") -> list[dict]:
    """:func:`compare_records` for one ``llm_inference`` record (a parsed results file), on the
    GPU it names; [] where the GPU or the measurements are missing."""
    try:
        device = doc["machine"]["gpu"]["name"]
    except (KeyError, TypeError):
        return []
    g = _gpu_for(device)
    if not g:
        return []
    m = Measured(g["key"], device, where)
    _read_llm(m, doc, where)
    return compare_records({g["key"]: m})


def held_out(m: Measured, precision: str, batch: int) -> tuple[float, str, bool]:
    """The decode efficiency the advisor would use for ``precision`` at ``batch`` on ``m``'s GPU
    had that configuration not been measured (its own share left out of the table), how it was
    found and whether between two measured batches (as :func:`decode_share`): so that a check
    against that measurement tests the estimate, not its input."""
    rest = {p: {b: v for b, v in t.items() if (p, b) != (precision, batch)}
            for p, t in m.decode_shares.items()}
    share, basis, between = decode_share({p: t for p, t in rest.items() if t}, precision, batch)
    if share:
        return share, basis, between
    return m.decode_efficiency or 1.0, "the one recorded efficiency", False


def compare_records(meas: dict[str, Measured], model: str | None = None,
                    precision: str | None = None) -> list[dict]:
    """Every measured configuration of a record (of ``model`` and ``precision`` where given)
    beside the advisor's estimate for the same GPU, batch and context, recomputed now with that
    GPU's measured copy bandwidth and the decode efficiency :func:`held_out` gives (``basis``
    says how, ``between`` whether between two measured batches). The memory estimate is that of one decode step over a full cache (how the
    language-model chapter measures its peak), unless the row adds ``prefill`` (tokens per
    sequence in the run's largest forward pass) and ``all_logits`` (that pass kept every
    position's logits)."""
    out = []
    for key, m in sorted(meas.items()):
        g = data.gpu(key)
        for row in m.advisor_check:
            name, prec = str(row["model"]).strip().lower(), str(row["precision"]).strip().lower()
            if (model and name != model) or (precision and prec != precision):
                continue
            eff, basis, between = held_out(m, prec, row["batch"])
            try:
                tps = decode_tokens_per_s(name, key, row["batch"], row["context"], prec,
                                          efficiency=eff, bandwidth_gbs=m.decode_copy_gbs
                                          or m.copy_gbs or g.get("bandwidth_gbs"))
                prefill = row.get("prefill") if isinstance(row.get("prefill"), int) else 1
                mem = inference_memory(name, row["batch"], row["context"], prec, prefill=prefill,
                                       all_logits=row.get("all_logits") is True)
            except AdviceError:
                continue
            out.append({"gpu": m.device, "model": name, "precision": prec, "batch": row["batch"],
                        "context": row["context"], "measured_tokens_per_s": float(row["measured_tokens_per_s"]),
                        "estimate_tokens_per_s": tps, "measured_peak_bytes": int(row["measured_peak_bytes"]),
                        "estimate_memory_bytes": mem, "record": m.llm_path, "basis": basis,
                        "between": between})
    return out


# ---------------------------------------------------------------- the report
def _cell(x: float | None, fmt: str = "{:,.0f}") -> str:
    return "-" if x is None else fmt.format(x)


def _tps(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}" if x >= 10 else f"{x:.2g}"


def _secs(x: float | None) -> str:
    return "-" if x is None else f"{x:.2g}" if x < 10 else f"{x:,.0f}"


def report(w: Workload, flops: float | None = None, top: int = 10, root=None, neuron: bool = False,
           rocm: bool = False) -> tuple[str, dict]:
    """The advisor's text report and the same content as a dict (raises
    :class:`AdviceError` on a workload it cannot estimate)."""
    from ..pages import table
    e = estimate(w)
    meas = measurements(root)
    opts, left_out = options(e, flops=flops, neuron=neuron, rocm=rocm, meas=meas)
    lines = [f"Workload: {describe(w)}", "", "Memory estimate:"]
    width = max(len(t.name) for t in e.terms)
    for t in e.terms:
        lines.append(f"  {t.name:<{width}} = {t.formula} = {t.gib:,.2f} GiB")
    lines.append(f"  {'total':<{width}} = {e.total_gib:,.2f} GiB; a machine fits with >= "
                 f"{HEADROOM:.2f} x total = {e.total_gib * HEADROOM:,.1f} GiB")
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
    measured = describe_measurements(w.precision, meas)
    lines += [f"  measured, applied to that GPU only: {m}" for m in measured]
    lines.append(f"  any other GPU: peak bandwidth (an upper bound) and {DEFAULT_EFFICIENCY:.0%} of dense "
                 "compute peak (an assumption); several GPUs add up (an upper bound)")
    doc_i = data.instances_doc()
    lines += ["", f"Prices: AWS on-demand, {doc_i['region']}, USD/h, from the price list generated "
                  f"{data.prices_generated()} ({data.price_age_text()}); GPUs: launch list prices."]
    if w.task == "inference":
        extra, cols = ["decode tok/s", "prefill s"], lambda o: [_tps(o.decode_tps), _secs(o.prefill_s)]
    elif flops:
        extra, cols = ["hours"], lambda o: [_cell(o.hours, "{:,.1f}")]
    else:
        extra, cols = [], lambda o: []
    mark = lambda o: "*" if o.measured else ""  # noqa: E731
    aws, aws_unpriced = ranked(opts, "aws")
    gpus, gpu_unpriced = ranked(opts, "gpu")
    money = (["USD per 1M tokens"] if w.task == "inference" else ["USD"] if flops else [])
    lines += ["", "AWS instances that fit, cheapest per hour first:"]
    lines.append(table(["instance", "accelerators", "memory GiB", "USD/h"] + extra + money,
                       [[o.name + mark(o), o.label, _cell(o.memory_gib), f"{o.price_per_hour:,.2f}"] + cols(o)
                        + ([_cell(o.usd_per_mtok, "{:,.2f}")] if w.task == "inference" else
                           [_cell(o.cost)] if flops else []) for o in aws[:top]])
                 if aws else "  none with an on-demand price")
    if aws_unpriced:
        lines.append("  also fit, no on-demand price in the data: " + ", ".join(
            o.name + (f" ({o.unit})" if o.unit != "instance" else "") for o in aws_unpriced))
    lines += ["", "GPUs to buy (how many of each), cheapest list price first:"]
    lines.append(table(["GPU", "count", "memory GiB", "list price USD"] + extra,
                       [[o.name + mark(o), o.count, _cell(o.memory_gib), _cell(o.buy_usd)] + cols(o) for o in gpus[:top]])
                 if gpus else f"  none with a list price and {MAX_GPUS} or fewer cards")
    if gpu_unpriced:
        lines.append("  also fit, no list price in the data: " + ", ".join(
            f"{o.count} x {o.name}" for o in gpu_unpriced))
    if not (aws or aws_unpriced or gpus or gpu_unpriced):
        lines.append("  nothing holds it: it needs more than one instance or more than "
                     f"{MAX_GPUS} GPUs")
    if any(o.measured for o in aws[:top] + gpus[:top]):
        lines.append("  * speed from this project's measurements on that GPU")
    lines += [f"  not offered: {n}" for n in left_out]
    checks = measured_checks(w, meas)
    if checks:
        lines += ["", "Measured by this project against this estimate (same model, precision and GPU; the "
                      "estimate recomputed now, its memory for one decode step over a full cache, its "
                      "speed without that measurement: the efficiency from the others):"]
        lines.append(table(["GPU", "batch", "context", "measured tok/s", "estimate tok/s", "efficiency from",
                            "measured peak GiB", "estimate GiB", "record"],
                           [[c["gpu"], c["batch"], c["context"], _tps(c["measured_tokens_per_s"]),
                             _tps(c["estimate_tokens_per_s"]), c.get("basis", "-"),
                             f"{c['measured_peak_bytes'] / GIB:,.2f}",
                             f"{c['estimate_memory_bytes'] / GIB:,.2f}", c["record"]] for c in checks]))
    doc = {"workload": dict(vars(w)),
           "terms": [{"name": t.name, "formula": t.formula, "gib": t.gib} for t in e.terms],
           "total_gib": e.total_gib, "headroom": HEADROOM, "notes": e.notes, "measured_checks": checks,
           "measured": measured, "default_efficiency": DEFAULT_EFFICIENCY,
           "prices_generated": data.prices_generated(), "data_as_of": data.data_as_of(),
           "options": [dict(vars(o), priced=bool(o.price)) for o in aws + aws_unpriced + gpus + gpu_unpriced],
           "not_offered": left_out}
    return "\n".join(lines), doc


def measured_checks(w, meas: dict) -> list[dict]:
    """The ``advisor_check`` rows recorded for ``w``'s model and precision (inference only), each
    with the advisor's estimate for its batch and context recomputed now."""
    if w.task != "inference" or not w.model:
        return []
    return compare_records(meas, model=w.model, precision=w.precision)
