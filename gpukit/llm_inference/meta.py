"""Names, sizes and targets of the language-model chapter, importable without torch."""

from __future__ import annotations

NAME = "llm_inference"
#: the advisor's preset with this chapter's 8B shape (``gpukit advise --model``)
ADVISOR_MODEL = "llama-3.1-8b"

#: decode is measured at these batch sizes, every sequence with this many cached tokens
BATCHES = (1, 8, 32, 128, 256)
DECODE_CONTEXT = 1024
#: prompt lengths for prefill (time to first token)
PREFILL_TOKENS = (1024, 8192, 32768)
#: context lengths of the attention comparison (one layer's 32 heads, batch 1)
ATTENTION_CONTEXTS = (8192, 32768)
#: how a decode step is launched: op by op, replayed from a CUDA graph, or with its small
#: elementwise steps fused by torch.compile and then replayed from a CUDA graph
VARIANTS = ("eager", "graph", "compile")
VARIANT_LABELS = {"eager": "eager (one launch per op)", "graph": "CUDA graph",
                  "compile": "torch.compile + CUDA graph"}
PRECISIONS = ("bf16", "int8", "int4")
#: the configurations checked against ``gpukit advise`` (precision, batch)
ADVISOR_CONFIGS = (("bf16", 1), ("bf16", 32), ("bf16", 256), ("int8", 1), ("int4", 1))

# targets of the chapter (thresholds, not measurements)
TARGET_DECODE_SHARE = 0.90        # batch-1 bf16 bytes/s over the copy bandwidth
TARGET_INT8_SPEEDUP = 1.7
TARGET_INT4_SPEEDUP = 2.5
TARGET_PREFILL_SHARE = 0.70       # prefill at 8K tokens over cuBLAS bf16 TFLOP/s
TARGET_ADVISE_MEMORY = 0.03       # |advise - measured| / measured peak
TARGET_ADVISE_DECODE = 0.10


def crossover_batch(weight_bytes: float, kv_bytes_per_seq: float, flops_per_token: float,
                    copy_bps: float, matmul_flops: float) -> float | None:
    """The batch where one decode step takes as long to compute as to read:
    ``(W + b kv) / bandwidth = b f / peak``. None when reading always takes longer (the
    cache of one more sequence costs more time than its arithmetic)."""
    slope = flops_per_token / matmul_flops - kv_bytes_per_seq / copy_bps
    if slope <= 0:
        return None
    return weight_bytes / copy_bps / slope


def advisor_checks(data: dict) -> list[dict]:
    """Every configuration a record measured (speed and peak memory) beside ``gpukit advise``'s
    estimates, recomputed from the record by the advisor's code: each decode estimate uses the
    efficiencies measured at the other configurations, its own left out."""
    from ..cloud import machines
    return machines.record_checks(data)
