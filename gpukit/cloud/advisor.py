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
share of the copy bandwidth that GPU's ``results/*/llm_inference.json`` measured for the same weight
precision and batch (between measured batches a straight line in log2 of the batch; a precision
not measured takes bf16's), or else 1 (an upper bound).
"""

# The formulas live in gpukit.cloud.meta, where the views read them.
from .meta import (ADAM_FP32_BYTES, ADAM_MIXED_BYTES, ADAPTER_BYTES, AdviceError, BYTES,
                   DEFAULT_HEAD_DIM, Estimate, GB, GIB, HEADROOM, KV_BYTES_16, KV_CHOICES,
                   LAYER_WORKING_SET, LOGIT_BYTES_TRAINING, MAX_BATCH, MAX_HIDDEN, MAX_LAYERS,
                   MAX_PARAMS, MAX_SEQ, MIN_PARAMS, PRESET_TOLERANCE, QUANTISED, QUANT_GROUP,
                   TASKS, Term, Workload, activation_bytes, decode_rate, decode_step,
                   decode_tokens_per_s, describe, estimate, inference_memory, kv_cache_bytes,
                   lora_params, preset_name, shown, weights_bytes)

__all__ = ["ADAM_FP32_BYTES", "ADAM_MIXED_BYTES", "ADAPTER_BYTES", "AdviceError", "BYTES",
           "DEFAULT_HEAD_DIM", "Estimate", "GB", "GIB", "HEADROOM", "KV_BYTES_16", "KV_CHOICES",
           "LAYER_WORKING_SET", "LOGIT_BYTES_TRAINING", "MAX_BATCH", "MAX_HIDDEN", "MAX_LAYERS",
           "MAX_PARAMS", "MAX_SEQ", "MIN_PARAMS", "PRESET_TOLERANCE", "QUANTISED", "QUANT_GROUP",
           "TASKS", "Term", "Workload", "activation_bytes", "decode_rate", "decode_step",
           "decode_tokens_per_s", "describe", "estimate", "inference_memory", "kv_cache_bytes",
           "lora_params", "preset_name", "shown", "weights_bytes"]
