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
  efficiency, bytes read per second at batch 1 over the copy bandwidth
  (``results/<machine>/llm_inference.json``). Any other GPU gets its peak bandwidth (so decode is an
  upper bound) and :data:`DEFAULT_EFFICIENCY` of its dense compute peak (an assumption).
* several accelerators add up their bandwidth and compute (perfect tensor parallelism: an upper bound).

Which rows are offered depends on the software a task can run on: CUDA by default, AWS Neuron
(Trainium, and Inferentia for inference only) with ``neuron=True``, ROCm GPUs with ``rocm=True``;
Qualcomm's accelerators and parts without an ML stack (the G4ad graphics GPU) never. UltraServers appear only when no single
instance holds the workload.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from .. import catalogue as data
from .advisor import HEADROOM, Estimate, decode_rate

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
    rows = part.get("advisor_check") or []
    good = [r for r in rows if isinstance(r, dict) and all(
        isinstance(r.get(k), t) and not isinstance(r.get(k), bool) for k, t in CHECK_FIELDS.items())]
    if good or m.decode_efficiency:
        m.advisor_check, m.llm_path = good, where


def efficiencies(g: dict, precision: str, meas: dict[str, Measured]) -> tuple[float, float, bool]:
    """(compute fraction of dense peak, bandwidth fraction of peak, measured?) for GPU row ``g``:
    the bandwidth fraction is the copy bandwidth over the peak, times the decode efficiency where
    an ``llm_inference`` record has one."""
    m = meas.get(g["key"])
    compute, bandwidth, measured = DEFAULT_EFFICIENCY, 1.0, False
    prec = precision if precision in WANT else "bf16"
    peak = g.get(peak_key(prec))
    if m and peak and m.tflops.get(prec):
        compute, measured = m.tflops[prec] / peak, True
    if m and m.copy_gbs and g.get("bandwidth_gbs"):
        bandwidth, measured = m.copy_gbs / g["bandwidth_gbs"], True
    if m and m.decode_efficiency:
        bandwidth, measured = bandwidth * m.decode_efficiency, True
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
        if m.decode_efficiency:
            parts.append(f"decode reads at {m.decode_efficiency:.0%} of the copy bandwidth")
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
    compute, bandwidth, o.measured = efficiencies(g, w.precision, meas)
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


def compare_records(meas: dict[str, Measured], model: str | None = None,
                    precision: str | None = None) -> list[dict]:
    """Every recorded ``advisor_check`` row (of ``model`` and ``precision`` where given) beside
    the advisor's estimate for the same GPU, batch and context, recomputed now with that GPU's
    measured copy bandwidth and decode efficiency. The memory estimate is that of one decode step
    over a full cache (how the language-model chapter measures its peak), unless the row adds
    ``prefill`` (tokens per sequence in the run's largest forward pass) and ``all_logits`` (that
    pass kept every position's logits)."""
    from . import advisor
    out = []
    for key, m in sorted(meas.items()):
        g = data.gpu(key)
        for row in m.advisor_check:
            name, prec = str(row["model"]).strip().lower(), str(row["precision"]).strip().lower()
            if (model and name != model) or (precision and prec != precision):
                continue
            try:
                tps = advisor.decode_tokens_per_s(name, key, row["batch"], row["context"], prec,
                                                  efficiency=m.decode_efficiency or 1.0,
                                                  bandwidth_gbs=m.copy_gbs or g.get("bandwidth_gbs"))
                prefill = row.get("prefill") if isinstance(row.get("prefill"), int) else 1
                mem = advisor.inference_memory(name, row["batch"], row["context"], prec, prefill=prefill,
                                               all_logits=row.get("all_logits") is True)
            except advisor.AdviceError:
                continue
            out.append({"gpu": m.device, "model": name, "precision": prec, "batch": row["batch"],
                        "context": row["context"], "measured_tokens_per_s": float(row["measured_tokens_per_s"]),
                        "estimate_tokens_per_s": tps, "measured_peak_bytes": int(row["measured_peak_bytes"]),
                        "estimate_memory_bytes": mem, "record": m.llm_path})
    return out
