"""The GPU and instance catalogue (``gpukit/data/gpus.yaml``, ``aws_instances.yaml``): load the
files, check their schema, and say how old the prices are. The cloud chapter's advisor, the site's
build and any chapter that needs a GPU's facts read them here.

Every row must say where it came from (``source``, an http(s) URL) and when it was read
(``retrieved``, YYYY-MM-DD); a price also says where (``price_source``) and, for AWS, when the
price list was generated (``price_date``). Every required number is either positive or null, and a
null must be explained by the row's ``note``: nothing is guessed.

:func:`staleness_warning` returns a warning once the price list is older than
:data:`STALE_AFTER_MONTHS`; :func:`warn_if_stale` logs it, and doubles as an MkDocs
``on_pre_build`` hook (it logs outside the ``mkdocs`` logger, so a strict build warns and goes on).
"""

from __future__ import annotations

import datetime as _dt
import logging
import re
from functools import lru_cache
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"

INSTANCE_NUMBERS = ("accelerator_count", "accelerator_memory_gib", "vcpus", "memory_gib", "price_per_hour")
GPU_NUMBERS = ("memory_gib", "bandwidth_gbs", "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp64_ratio",
               "power_w", "price_usd")
CATEGORIES = ("training", "inference", "graphics")
STACKS = ("cuda", "rocm", "neuron", "qualcomm", "none")
UNITS = ("instance", "ultraserver")
SEGMENTS = ("consumer", "workstation", "data-centre", "cloud-only")
STALE_AFTER_MONTHS = 6
LOGGER = "gpukit.cloud"          # not under "mkdocs": a strict site build counts only its own warnings
_DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")   # a day, or a month where only the month is known


class DataError(ValueError):
    """A data file breaks the schema."""


def _is_date(value, month_ok: bool = False) -> bool:
    text = str(value)
    if month_ok and re.fullmatch(r"\d{4}-\d{2}", text):
        text += "-01"
    try:
        _dt.date.fromisoformat(text)
        return True
    except ValueError:
        return False


def _url(value) -> bool:
    return isinstance(value, str) and value.startswith(("http://", "https://"))


def _check_rows(rows: list[dict], numbers: tuple[str, ...], ident: str) -> list[str]:
    problems = []
    for row in rows:
        who = row.get(ident, "?")
        if not _url(row.get("source")):
            problems.append(f"{who}: source must be an http(s) URL")
        if not _is_date(row.get("retrieved")):
            problems.append(f"{who}: retrieved must be a date YYYY-MM-DD")
        for key in ("source_date", "price_date", "checked_date", "network_date"):
            if row.get(key) is not None and not _is_date(row[key], month_ok=True):
                problems.append(f"{who}: {key} must be a date YYYY-MM-DD (or YYYY-MM)")
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
    if not _is_date(doc.get("prices_generated")):
        problems.append("prices_generated must be the date the price list was generated")
    problems += _check_rows(rows, INSTANCE_NUMBERS, "name")
    for row in rows:
        who = row.get("name")
        if row.get("category") not in CATEGORIES:
            problems.append(f"{who}: category must be one of {CATEGORIES}")
        if row.get("stack") not in STACKS:
            problems.append(f"{who}: stack must be one of {STACKS}")
        if row.get("unit", "instance") not in UNITS:
            problems.append(f"{who}: unit must be one of {UNITS}")
        if row.get("price_per_hour") is not None:
            if not _url(row.get("price_source")):
                problems.append(f"{who}: a price needs a price_source URL")
            if not _is_date(row.get("price_date")):
                problems.append(f"{who}: a price needs the date its price list was generated (price_date)")
        fraction = row.get("gpu_fraction")
        if fraction is not None and not (isinstance(fraction, (int, float)) and 0 < fraction < 1):
            problems.append(f"{who}: gpu_fraction must be between 0 and 1")
    return problems


def validate_gpus(doc: dict) -> list[str]:
    rows = doc.get("gpus") or []
    problems = [] if rows else ["no gpus"]
    problems += _check_rows(rows, GPU_NUMBERS, "key")
    for row in rows:
        who = row.get("key")
        if row.get("fp64_ratio") is not None and row["fp64_ratio"] > 1:
            problems.append(f"{who}: fp64_ratio is FP64/FP32 and cannot exceed 1")
        if row.get("stack") not in STACKS:
            problems.append(f"{who}: stack must be one of {STACKS}")
        if row.get("segment") not in SEGMENTS:
            problems.append(f"{who}: segment must be one of {SEGMENTS}")
        for c in row.get("conflicts") or []:
            if c.get("field") not in GPU_NUMBERS or not _url(c.get("source")) or not c.get("note"):
                problems.append(f"{who}: a conflict names a number field, its source URL and a note")
    return problems


def _load(name: str, check) -> dict:
    path = DATA_DIR / name
    import yaml   # on first use: a command that reads no data file does not load it
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


# ---------------------------------------------------------------- architecture facts

def fp32_lanes_per_sm(compute_capability: str | None) -> int | None:
    """FP32 lanes per multiprocessor (not in the device query; NVIDIA's architecture
    whitepapers): 64 on Volta, Turing and A100 (7.x, 8.0), 128 on GA10x, Ada, Hopper and
    Blackwell. None for an unknown or missing compute capability."""
    try:
        major, minor = (int(v) for v in str(compute_capability).split("."))
    except ValueError:
        return None
    if major < 7:
        return None
    return 64 if major == 7 or (major, minor) == (8, 0) else 128


def fp32_peak(gpu: dict) -> dict | None:
    """The FP32 peak from a machine record's GPU: SMs x FP32 lanes x 2 FLOP x SM clock.

    ``{"tflops", "sms", "lanes", "mhz"}``, or None when the record lacks the SM count or the
    clock, or the lanes per SM of its compute capability are not known.
    """
    lanes = fp32_lanes_per_sm(gpu.get("compute_capability"))
    sms, mhz = gpu.get("multiprocessors"), gpu.get("sm_clock_mhz")
    if not (lanes and sms and mhz):
        return None
    return {"tflops": sms * lanes * 2 * mhz * 1e6 / 1e12, "sms": sms, "lanes": lanes, "mhz": mhz}


def data_as_of() -> str:
    """The newest ``retrieved`` date over both files."""
    dates = [r["retrieved"] for r in instances()] + [g["retrieved"] for g in gpus()]
    return max(str(d) for d in dates)


# ---------------------------------------------------------------- how old the prices are

def prices_generated() -> str:
    """The date the AWS price list behind the prices was generated."""
    return str(instances_doc()["prices_generated"])


def _add_months(day: _dt.date, months: int) -> _dt.date:
    year, month = divmod(day.month - 1 + months, 12)
    year, month = day.year + year, month + 1
    for d in (day.day, 30, 29, 28):
        try:
            return _dt.date(year, month, d)
        except ValueError:
            continue
    raise AssertionError("unreachable")


def price_age_days(today: _dt.date | None = None, generated: str | None = None) -> int:
    today = today or _dt.date.today()
    return (today - _dt.date.fromisoformat(generated or prices_generated())).days


def price_age_text(today: _dt.date | None = None) -> str:
    days = price_age_days(today)
    return f"{days} days old" if days != 1 else "1 day old"


def staleness_warning(today: _dt.date | None = None, generated: str | None = None) -> str | None:
    """A warning once the AWS price list is older than :data:`STALE_AFTER_MONTHS`, else ``None``."""
    today = today or _dt.date.today()
    when = _dt.date.fromisoformat(generated or prices_generated())
    if today <= _add_months(when, STALE_AFTER_MONTHS):
        return None
    return (f"gpukit/data/aws_instances.yaml: the AWS prices come from a price list generated {when} "
            f"({(today - when).days} days ago, more than {STALE_AFTER_MONTHS} months): refresh them "
            "(docs/cloud.md, 'Refreshing the data')")


def warn_if_stale(config=None, today: _dt.date | None = None) -> None:
    """Log :func:`staleness_warning` on the ``gpukit.cloud`` logger. The signature matches MkDocs'
    ``on_pre_build(config)``, so a hook module can import it under that name."""
    message = staleness_warning(today)
    if message:
        logging.getLogger(LOGGER).warning(message)
