"""Your progress through the puzzles: a small JSON file in your cache folder.

``$GPUKIT_EXERCISES_STATE`` names the file; otherwise it is ``gpukit/exercises.json`` under
``$XDG_CACHE_HOME`` (``~/.cache`` when unset). Only the checker's own process writes it, after
it has judged a check. A file that cannot be read as progress (not UTF-8, not JSON, entries
of the wrong types, a folder in its place) is kept beside it as ``<name>.corrupt-<time>``
(never deleted), with a one-line warning, and progress starts again from nothing. Writes are
atomic; a write that fails is a warning, never a crash.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import sys
from pathlib import Path

from ..files import atomic_write

VERSION = 1


def path() -> Path:
    env = os.environ.get("GPUKIT_EXERCISES_STATE")
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "gpukit" / "exercises.json"


def _warn(text: str) -> None:
    print(f"gpukit exercises: warning: {text}", file=sys.stderr)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _valid_entry(e) -> bool:
    if not isinstance(e, dict):
        return False
    for key in ("passed", "at_minimum", "simulator"):
        if key in e and not isinstance(e[key], bool):
            return False
    if "percent_of_roof" in e and not _number(e["percent_of_roof"]):
        return False
    score = e.get("score")
    if score is not None and not (isinstance(score, dict)
                                  and all(_number(v) for v in score.values())):
        return False
    return "last" not in e or isinstance(e["last"], dict)


def _valid(data) -> bool:
    return (isinstance(data, dict) and isinstance(data.get("puzzles"), dict)
            and all(isinstance(k, str) and _valid_entry(v) for k, v in data["puzzles"].items()))


def _keep_aside(p: Path, why: str) -> None:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    backup = p.with_name(f"{p.name}.corrupt-{stamp}")
    try:
        os.replace(p, backup)
        kept = f"kept as {backup}"
    except OSError:
        kept = "left where it is"
    _warn(f"{p} is not a progress file ({why}; {kept}); starting afresh")


def load() -> dict:
    """``{"version": 1, "puzzles": {"1": {...}, ...}}``; empty progress when there is no file
    or it is damaged (never raises)."""
    empty = {"version": VERSION, "puzzles": {}}
    p = path()
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        return empty
    except IsADirectoryError:
        _keep_aside(p, "a folder")
        return empty
    except OSError as exc:
        _warn(f"cannot read {p} ({exc.strerror}); progress not shown")
        return empty
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError:
        _keep_aside(p, "not JSON text")
        return empty
    if not _valid(data):
        _keep_aside(p, "entries of the wrong kind")
        return empty
    return data


def solved(data: dict, numbers) -> int:
    """How many of the puzzles ``numbers`` are solved in ``data`` (other keys do not count)."""
    return sum(1 for n in numbers if data["puzzles"].get(str(n), {}).get("passed") is True)


def record(num: int, result: dict, *, solved_now: bool, base: dict | None = None) -> None:
    """Remember a check judged by the checker: the last try, and "passed" (solved) only when
    ``solved_now``. ``base``: the progress read before the check (what a submission may have
    written meanwhile is overwritten)."""
    data = base if base is not None else load()
    entry = dict(data["puzzles"].get(str(num), {}))
    entry["last"] = {"ok": bool(result.get("ok")), "seed": result.get("seed"),
                     "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    if result.get("ok"):
        entry["simulator"] = True
    if solved_now:
        entry["passed"] = True
        entry["at_minimum"] = bool(entry.get("at_minimum") or result.get("at_minimum"))
        entry["score"] = result.get("score")
        pct = (result.get("gpu") or {}).get("percent_of_roof")
        if _number(pct):
            entry["percent_of_roof"] = max(entry.get("percent_of_roof", 0), pct)
    data = {**data, "puzzles": {**data["puzzles"], str(num): entry}}
    try:
        atomic_write(path(), lambda fh: json.dump(data, fh, indent=1, sort_keys=True))
    except OSError as exc:
        _warn(f"cannot write {path()} ({exc.strerror or exc}); this check is not remembered")
