"""The twenty puzzles, in order of difficulty, and where their files live."""

from __future__ import annotations

from pathlib import Path

from .puzzles_basic import PUZZLES as _BASIC
from .puzzles_more import PUZZLES as _MORE
from .spec import Puzzle

PUZZLES: list[Puzzle] = _BASIC + _MORE
HERE = Path(__file__).resolve().parent
STARTERS = HERE / "starters"
SOLUTIONS = HERE / "solutions"


def find(token) -> Puzzle:
    """A puzzle by number (``7``, ``"07"``) or name (``"shared"``); LookupError otherwise."""
    text = str(token).strip().lower()
    for p in PUZZLES:
        if text.isdigit() and int(text) == p.num or text in (p.slug, p.slug.replace("_", "-")):
            return p
    raise LookupError(f"no puzzle {token!r}: choose a number from 1 to {len(PUZZLES)} "
                      "(`gpukit exercises list` shows them)")


def starter(p: Puzzle) -> Path:
    return STARTERS / p.file


def solution(p: Puzzle) -> Path:
    return SOLUTIONS / p.file
