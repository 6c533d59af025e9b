"""``gpukit exercises``: twenty GPU puzzles, a checker that cannot be fooled, your progress."""

from __future__ import annotations

import os
import shutil
import sys

from ..cli import UserError

BAR = 30


def register(sub) -> None:
    p = sub.add_parser("exercises", help="twenty GPU puzzles with a checker",
                       description="Write small CUDA kernels in numba; the checker runs them on "
                                   "numba's simulator (and, on a GPU, at full size).")
    cmds = p.add_subparsers(dest="action", metavar="ACTION")
    cmds.add_parser("list", help="the puzzles and your progress").set_defaults(func=_list)
    for name, helptext, fn in (("show", "the task, the rules and the starter", _show),
                               ("solution", "print the reference solution", _solution),
                               ("start", "copy the starter file into the current folder", _start)):
        q = cmds.add_parser(name, help=helptext)
        q.add_argument("N", help="puzzle number or name")
        q.set_defaults(func=fn)
    q = cmds.add_parser("hint", help="a hint (level 1, or 2 for a stronger one)")
    q.add_argument("N")
    q.add_argument("--level", type=int, choices=(1, 2), default=1)
    q.set_defaults(func=_hint)
    q = cmds.add_parser("check", help="check your kernel")
    q.add_argument("N")
    q.add_argument("FILE", nargs="?", help="your file (default: ./pNN_name.py)")
    q.add_argument("--seed", type=int, help="repeat a check with the inputs of this seed")
    q.add_argument("--no-gpu", action="store_true", help="only the simulator, even on a GPU")
    q.set_defaults(func=_check)
    p.set_defaults(func=lambda args: _list(args))


def _puzzle(token):
    from .puzzles import find
    try:
        return find(token)
    except LookupError as exc:
        raise UserError(str(exc)) from None


def _list(args) -> int:
    from . import state
    from .puzzles import PUZZLES
    data = state.load()
    done = data["puzzles"]
    print(f"{'':2} {'#':>2}  {'puzzle':<28} {'teaches':<38} status")
    for p in PUZZLES:
        e = done.get(str(p.num), {})
        solved = e.get("passed") is True
        mark = "★" if solved and e.get("at_minimum") else ("✓" if solved else " ")
        status = ("passed, score at the minimum" if solved and e.get("at_minimum")
                  else "passed" if solved else "passed on the simulator" if e.get("simulator")
                  else "tried" if e else "")
        if solved and e.get("percent_of_roof") is not None:
            status += f", {e['percent_of_roof']:.0f} % of roof"
        print(f"{mark:2} {p.num:>2}  {p.title:<28} {p.teaches:<38} {status}")
    count = state.solved(data, [p.num for p in PUZZLES])
    print(f"\n{count} of {len(PUZZLES)} solved. `gpukit exercises show 1` to begin.")
    return 0


def _show(args) -> int:
    from .puzzles import starter
    from .spec import SCORES
    p = _puzzle(args.N)
    print(f"Puzzle {p.num}: {p.title}\n\n{p.task}\n\nRules:")
    for r in p.rules:
        print(f"  - {r}")
    print(f"\nYour kernel: `{p.kernel}({', '.join(p.args)})`, scored on " + ", ".join(SCORES.values())
          + " per thread (the most any one thread made).")
    print(f"Starter: {starter(p)}\n  copy it here with `gpukit exercises start {p.num}`, then "
          f"`gpukit exercises check {p.num}`.")
    return 0


def _hint(args) -> int:
    p = _puzzle(args.N)
    print(f"Puzzle {p.num}, hint {args.level}: {p.hints[args.level - 1]}")
    return 0


def _solution(args) -> int:
    from .puzzles import solution
    p = _puzzle(args.N)
    print(solution(p).read_text(encoding="utf-8"), end="")
    return 0


def _start(args) -> int:
    from .puzzles import starter
    p = _puzzle(args.N)
    target = os.path.join(os.getcwd(), p.file)
    if os.path.exists(target):
        raise UserError(f"{p.file} already exists here; check it with `gpukit exercises check {p.num}`")
    try:
        shutil.copyfile(starter(p), target)
    except OSError as exc:
        raise UserError(f"cannot write {target}: {exc.strerror or exc}") from None
    print(f"wrote {p.file}: write the body of `{p.kernel}`, then `gpukit exercises check {p.num}`")
    return 0


def _bar(percent: float) -> str:
    filled = max(0, min(BAR, round(BAR * percent / 100)))
    return "[" + "#" * filled + "." * (BAR - filled) + f"] {percent:.1f} %"


def _check(args) -> int:
    from .. import device
    from . import grader, state
    from .spec import SCORES
    p = _puzzle(args.N)
    path = args.FILE or p.file
    if not os.path.isfile(path):
        hint = "" if args.FILE else f" (copy the starter with `gpukit exercises start {p.num}`)"
        raise UserError(f"{path}: no such file{hint}")
    before = state.load()
    seed = args.seed if args.seed is not None else grader.new_seed()
    print(f"puzzle {p.num} ({p.title}), {path}, seed {seed} (repeat with --seed {seed})",
          flush=True)
    result = grader.run_check(p.num, path, seed)
    if grader.BAD in result:
        raise UserError(result[grader.BAD])
    if not result["ok"]:
        print(f"FAIL: {result['message']}")
        state.record(p.num, result, solved_now=False, base=before)
        return 1
    for i, t in enumerate(result["trials"], 1):
        sizes = ", ".join(f"{k}={v}" for k, v in t["sizes"].items() if k != "threads_total")
        parts = [f"{SCORES[k]} {t['score'][k]} (minimum {t['minimum'][k]})" for k in SCORES]
        print(f"  trial {i} ({sizes}): " + "; ".join(parts))
    if result.get("ptx", "").startswith("skipped"):
        print(f"  (the GPU compile step was {result['ptx']})")
    if result.get("below"):
        verdict = (": correct, with fewer " + " and ".join(result["below"])
                   + " than the reference solution")
    elif result["at_minimum"]:
        verdict = ", and the score is at the minimum"
    else:
        verdict = ": correct, but some thread makes more accesses than it needs"
    print("PASS" + verdict)
    gpu_here = device.has_gpu()
    if gpu_here and not args.no_gpu:
        result["gpu"] = _full_size(p, path, seed)
    solved = result.get("gpu", {}).get("ok", not gpu_here)
    if args.seed is not None:
        solved = False
        print("  (a check with --seed repeats known inputs: run it without --seed to mark the "
              "puzzle solved)")
    elif gpu_here and args.no_gpu:
        print("  (checked with --no-gpu on a machine with a GPU: the full-size run decides "
              "whether it is solved)")
    state.record(p.num, result, solved_now=solved, base=before)
    return 0 if result.get("gpu", {}).get("ok", True) else 1


def _full_size(p, path: str, seed: int) -> dict:
    from . import gpu
    print("on the GPU, at full size (first call compiles) ...", flush=True)
    out = gpu.run_many([[p.num, os.path.abspath(path), seed]], 20, quiet=True)
    row = out["rows"][0]
    if not row["ok"]:
        print(f"FAIL on the GPU: {row['message']}")
        return row
    rate = (f"{row['gbs']:,.0f} GB/s" if "gbs" in row else f"{row['tflops']:,.2f} TFLOP/s" if "tflops" in row
            else "")
    print(f"  first call {row['first_call_s'] * 1e3:.1f} ms (compiles), then {row['median_s'] * 1e3:.3f} ms "
          f"a call, {rate}")
    if row.get("percent_of_roof") is not None:
        what = "device copy bandwidth" if row["roof"] == "copy" else "FP32 peak"
        print(f"  {_bar(row['percent_of_roof'])} of the {what}")
    elif p.roof is None:
        print("  one block by the rules: no roof to compare with")
    sys.stdout.flush()
    return row
