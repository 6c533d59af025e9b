"""Which machines hold a workload, how fast they would run it, and what that costs.

The speed model, stated with every report:

* **decode** (inference, one new token per sequence per step) is the slower of a memory roof and a
  compute roof (:func:`gpukit.cloud.advisor.decode_rate`): a step reads the weights as stored and
  the whole KV cache at the full context (the slowest step), ``tokens/s = batch x bandwidth x
  efficiency / bytes``, and does ``2 x active parameters x batch`` FLOPs plus attention. A mixture of
  experts reads the experts its tokens use: ``min(total, active x batch)`` parameters.
* **prefill** (reading the prompt) is bound by compute: ``2 x active parameters x prompt tokens x batch``
  FLOPs at the dense tensor peak times an efficiency. Weights stored in int8, int4 or fp8 are counted at
  the bf16 rate (the data holds no fp8 peaks).
* **training** (``full``, ``lora``) with a FLOP count: ``FLOPs / (dense peak x efficiency)``.
* **efficiency**: what this project measured on a GPU applies to that GPU only: the best tensor-core
  matmul of the precision and the copy bandwidth (``results/<machine>/matmul*.json``), and the decode
  efficiency, bytes read per second over the copy bandwidth for each weight precision and batch
  measured (``results/<machine>/llm_inference.json``; between two measured batches a straight line
  in log2 of the batch, see :func:`decode_share`). Any other GPU gets its peak bandwidth (so decode
  is an upper bound) and :data:`DEFAULT_EFFICIENCY` of its dense compute peak (an assumption).
* several accelerators add up their bandwidth and compute (perfect tensor parallelism: an upper bound).

Which rows are offered depends on the software a task can run on: CUDA by default, AWS Neuron
(Trainium, and Inferentia for inference only) with ``neuron=True``, ROCm GPUs with ``rocm=True``;
Qualcomm's accelerators and parts without an ML stack (the G4ad graphics GPU) never. UltraServers appear only when no single
instance holds the workload.
"""

# The fit, the speed model and the ranking live in gpukit.cloud.meta, where the views read them.
from .meta import (CHECK_FIELDS, DEFAULT_EFFICIENCY, MAX_GPUS, Measured, Option, WANT,
                   compare_records, decode_share, decode_shares, describe_measurements,
                   efficiencies, gpu_row, held_out, measurements, options, peak_key, ranked,
                   record_checks, refusal)

__all__ = ["CHECK_FIELDS", "DEFAULT_EFFICIENCY", "MAX_GPUS", "Measured", "Option", "WANT",
           "compare_records", "decode_share", "decode_shares", "describe_measurements",
           "efficiencies", "gpu_row", "held_out", "measurements", "options", "peak_key", "ranked",
           "record_checks", "refusal"]
