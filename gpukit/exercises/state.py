"""Your progress through the puzzles: a small JSON file in your cache folder.

``$GPUKIT_EXERCISES_STATE`` names the file; otherwise it is ``gpukit/exercises.json`` under
``$XDG_CACHE_HOME`` (``~/.cache`` when unset). A file that cannot be read as progress is kept
beside it as ``<name>.corrupt-<time>`` (never deleted), with a one-line warning, and progress
starts again from nothing. Writes are atomic.
"""

from __future__ import annotations

import datetime as _dt
import json
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


def load() -> dict:
    """``{"version": 1, "puzzles": {"1": {...}, ...}}``; empty progress when there is no file."""
    p = path()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {"version": VERSION, "puzzles": {}}
    except OSError as exc:
        print(f"gpukit exercises: warning: cannot read {p} ({exc.strerror}); progress not shown", file=sys.stderr)
        return {"version": VERSION, "puzzles": {}}
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("puzzles"), dict):
            raise ValueError("not a progress record")
        return data
    except ValueError:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        backup = p.with_name(f"{p.name}.corrupt-{stamp}")
        try:
            os.replace(p, backup)
            kept = f"kept as {backup}"
        except OSError:
            kept = "left where it is"
        print(f"gpukit exercises: warning: {p} is not a progress file ({kept}); starting afresh",
              file=sys.stderr)
        return {"version": VERSION, "puzzles": {}}


def record(num: int, result: dict) -> None:
    """Remember a check: passed (ever), best score, last seed and date."""
    data = load()
    entry = data["puzzles"].get(str(num), {})
    entry["last"] = {"ok": bool(result.get("ok")), "seed": result.get("seed"),
                     "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    if result.get("ok"):
        entry["passed"] = True
        entry["at_minimum"] = bool(entry.get("at_minimum") or result.get("at_minimum"))
        entry["score"] = result.get("score")
        if result.get("gpu", {}).get("percent_of_roof") is not None:
            entry["percent_of_roof"] = max(entry.get("percent_of_roof", 0), result["gpu"]["percent_of_roof"])
    data["puzzles"][str(num)] = entry
    atomic_write(path(), lambda fh: json.dump(data, fh, indent=1, sort_keys=True))
