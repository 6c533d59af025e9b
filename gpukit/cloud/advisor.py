"""How much accelerator memory a model needs, and how fast it decodes: the formulas, term by term.

Which machines hold it and what that costs is :mod:`gpukit.cloud.machines`.

Two public functions answer the two questions a measurement can check (``model`` is a preset name
from :mod:`gpukit.cloud.models`, e.g. ``"llama-3.1-8b"``; ``precision`` is ``"bf16"``, ``"int8"``
or ``"int4"``, or any other key of :data:`BYTES`)::

    inference_memory(model: str, batch: int, context: int, precision: str = "bf16", *,
                     prefill: int | None = None, all_logits: bool = False) -> int
    decode_tokens_per_s(model: str, gpu: str, batch: int, context: int, precision: str = "bf16",
                        efficiency: float | None = None, *, bandwidth_gbs: float | None = None,
                        root: str | Path | None = None) -> float

``inference_memory`` gives the peak bytes of generating with a static KV cache of ``context``
tokens for ``batch`` sequences; ``decode_tokens_per_s`` the tokens per second (over the batch) of
one decode step at that context on ``gpu`` (a key of ``gpus.yaml`` or the name the driver gives,
e.g. ``"NVIDIA H200"``). Both raise :class:`AdviceError` on input they cannot work with.

The formulas (bytes; P = parameters, L = layers, h = hidden size, I = MLP width, V = vocabulary,
s = sequence length or context, b = batch, n = b x tokens in one forward pass; memory in GiB,
2^30 bytes, the unit AWS lists accelerator memory in):

* weights               = P x bytes_per_param(precision). Weight-only int8 and int4 quantise the
                          linear layers (the output projection too) and keep the embedding table and
                          the norms in 16 bits; int8 adds one 16-bit scale per output row, int4 one
                          per group of :data:`QUANT_GROUP` weights.
* KV cache (inference)  = 2 (K and V) x L x kv_heads x head_dim x s x b x bytes_per_value, where
                          bytes_per_value is 2 (16-bit) whatever the weights are stored in (int8, int4
                          and fp8 weights keep a 16-bit cache unless ``kv_precision`` says otherwise),
                          and 4 with fp32/tf32 weights.
* workspace (inference) = the live tensors of the largest forward pass (the prefill of the prompt,
                          ``prefill`` tokens per sequence, the whole context unless told otherwise):
                          the residual stream and its normalised copy 2 n h, plus the larger of the
                          MLP's three I-wide tensors (3 n I) and the logits (b x V, or n x V with
                          ``all_logits``) in 16 bits plus an fp32 copy for sampling. Attention is a
                          fused kernel: no s x s scores are kept.
* full training, Adam   = P x 18 in mixed precision: 16-bit weights (2) + fp32 gradients (4) + fp32
                          master copy (4) + two fp32 Adam moments (4 + 4), the count of Hugging Face's
                          "Model memory anatomy" (Rajbhandari et al. 2019, "ZeRO", count 16: their
                          gradients are 16-bit). In fp32: 4 + 4 + 8 = 16.
* LoRA fine-tune        = frozen base P x bytes + adapters r x (h + h) per adapted matrix (q and v
                          projections of every layer) x 16 bytes (fp32 weights, gradients, two Adam
                          moments).
* activations (training)= with activation checkpointing: 2 x s x b x h x L (the 16-bit input of each
                          layer is kept) plus one layer recomputed in the backward pass, 34 x s x b x h;
                          without: 34 x s x b x h x L (Korthikanti et al. 2022, "Reducing Activation
                          Recomputation", with a fused attention kernel, which drops their 5 a s / h
                          term of attention scores). fp32 training doubles both.
* logits (training)     = s x b x V x 4: the output layer's logits, in fp32 for the loss.

Decode, one step for the whole batch, is the slower of two roofs: reading
``weights (as stored, but only b rows of the embedding table) + KV cache at the context`` at
``bandwidth x efficiency``, and
``2 x active parameters x b + 4 x L x heads x head_dim x s x b`` FLOPs at the dense tensor peak
times the measured (or assumed) matmul efficiency. ``bandwidth`` is the copy bandwidth this project
measured on that GPU (``results/*/matmul*.json``) or else its data-sheet peak; ``efficiency`` is the
``decode_efficiency`` of that GPU's ``results/*/llm_inference.json`` (bytes read per second at
batch 1 over the copy bandwidth) or else 1 (an upper bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from .models import PRESETS, count_params

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


def decode_tokens_per_s(model: str, gpu: str, batch: int, context: int, precision: str = "bf16",
                        efficiency: float | None = None, *, bandwidth_gbs: float | None = None,
                        root: str | Path | None = None) -> float:
    """Decode tokens per second (summed over the batch) of ``model`` (a preset name) on one
    ``gpu`` (a ``gpus.yaml`` key such as ``"h200-sxm"``, or the driver's name, ``"NVIDIA H200"``)
    at ``batch`` sequences and ``context`` tokens of KV cache, weights in ``precision``.

    ``bandwidth_gbs`` (default: the copy bandwidth measured under ``root``, else the data
    sheet's peak) times ``efficiency`` (default: the ``decode_efficiency`` recorded for that GPU
    in ``llm_inference.json`` under ``root``, else 1) is the rate bytes are read at; the compute
    roof uses the measured matmul efficiency, else ``machines.DEFAULT_EFFICIENCY``."""
    from . import machines
    g = machines.gpu_row(gpu)
    if g is None:
        raise AdviceError(f"unknown GPU {shown(gpu)}: give a key of gpukit/data/gpus.yaml or the name the "
                          "driver reports")
    if efficiency is not None and not (isinstance(efficiency, (int, float)) and 0 < efficiency <= 1.5):
        raise AdviceError(f"efficiency must be a fraction > 0, got {shown(efficiency)}")
    if bandwidth_gbs is not None and not (isinstance(bandwidth_gbs, (int, float)) and bandwidth_gbs > 0):
        raise AdviceError(f"bandwidth must be a positive number of GB/s, got {shown(bandwidth_gbs)}")
    w = Workload.from_preset(model, precision=precision, task="inference", seq=context, batch=batch)
    meas = machines.measurements(root).get(g["key"])
    if bandwidth_gbs is None:
        bandwidth_gbs = (meas.copy_gbs if meas and meas.copy_gbs else None) or g.get("bandwidth_gbs")
    if not bandwidth_gbs:
        raise AdviceError(f"no memory bandwidth is known for {g['name']}")
    if efficiency is None:
        efficiency = meas.decode_efficiency if meas and meas.decode_efficiency else 1.0
    compute, _, _ = machines.efficiencies(g, precision if precision in machines.WANT else "bf16",
                                          {g["key"]: meas} if meas else {})
    return decode_rate(w, bandwidth_gbs * efficiency, g.get(machines.peak_key(w.precision)), compute)
