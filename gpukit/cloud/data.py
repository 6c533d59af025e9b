"""Load the chapter's data files and check their schema.

Every row must say where it came from (``source``, an http(s) URL) and when
(``retrieved``, YYYY-MM-DD). Every required number is either positive or null,
and a null must be explained by the row's ``note``: nothing is guessed.
"""

from __future__ import annotations

import datetime as _dt
from functools import lru_cache
from pathlib import Path

import yaml

DATA_DIR = Path(__file__).resolve().parents[1] / "data"

INSTANCE_NUMBERS = ("accelerator_count", "accelerator_memory_gib", "vcpus", "memory_gib", "price_per_hour")
GPU_NUMBERS = ("memory_gb", "bandwidth_gbs", "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp64_ratio",
               "power_w", "price_usd")
CATEGORIES = ("training", "inference", "graphics")


class DataError(ValueError):
    """A data file breaks the schema."""


def _check_rows(rows: list[dict], numbers: tuple[str, ...], ident: str) -> list[str]:
    problems = []
    for row in rows:
        who = row.get(ident, "?")
        src = row.get("source")
        if not isinstance(src, str) or not src.startswith(("http://", "https://")):
            problems.append(f"{who}: source must be an http(s) URL")
        try:
            _dt.date.fromisoformat(str(row.get("retrieved")))
        except ValueError:
            problems.append(f"{who}: retrieved must be a date YYYY-MM-DD")
        for key in numbers:
            if key not in row:
                problems.append(f"{who}: missing {key}")
                continue
            value = row[key]
            if value is None:
                if not str(row.get("note") or "").strip():
                    problems.append(f"{who}: {key} is null without a note saying why")
            elif isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                problems.append(f"{who}: {key} must be a positive number or null, got {value!r}")
    return problems


def validate_instances(doc: dict) -> list[str]:
    rows = doc.get("instances") or []
    problems = [] if rows else ["no instances"]
    problems += _check_rows(rows, INSTANCE_NUMBERS, "name")
    for row in rows:
        if row.get("category") not in CATEGORIES:
            problems.append(f"{row.get('name')}: category must be one of {CATEGORIES}")
        if row.get("price_per_hour") is not None and not str(row.get("price_source", "")).startswith("http"):
            problems.append(f"{row.get('name')}: a price needs a price_source URL")
    return problems


def validate_gpus(doc: dict) -> list[str]:
    rows = doc.get("gpus") or []
    problems = [] if rows else ["no gpus"]
    problems += _check_rows(rows, GPU_NUMBERS, "key")
    for row in rows:
        if row.get("fp64_ratio") is not None and row["fp64_ratio"] > 1:
            problems.append(f"{row['key']}: fp64_ratio is FP64/FP32 and cannot exceed 1")
    return problems


def _load(name: str, check) -> dict:
    path = DATA_DIR / name
    doc = yaml.safe_load(path.read_text())
    problems = check(doc)
    if problems:
        raise DataError(f"{path.name}: " + "; ".join(problems))
    return doc


@lru_cache(maxsize=None)
def instances_doc() -> dict:
    return _load("aws_instances.yaml", validate_instances)


@lru_cache(maxsize=None)
def gpus_doc() -> dict:
    return _load("gpus.yaml", validate_gpus)


def instances() -> list[dict]:
    return instances_doc()["instances"]


def gpus() -> list[dict]:
    return gpus_doc()["gpus"]


def gpu(key: str) -> dict | None:
    return next((g for g in gpus() if g["key"] == key), None)


def data_as_of() -> str:
    """The newest ``retrieved`` date over both files."""
    dates = [r["retrieved"] for r in instances()] + [g["retrieved"] for g in gpus()]
    return max(str(d) for d in dates)
