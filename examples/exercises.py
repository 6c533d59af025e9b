"""Exercises: check a puzzle's reference solution the way `gpukit exercises check` does.

Runs anywhere: the checker runs the kernel on numba's CUDA simulator in a fresh
process, with fresh random inputs, every memory access counted; on a GPU the kernel
then runs at full size, verified and timed against its roof. Usage:

    python examples/exercises.py [--puzzle N] [--json PATH]

Exits non-zero when the reference solution does not pass at its minimum score.
"""

# %%
import argparse
import json
import sys

from gpukit import device
from gpukit.exercises import find, new_seed, run_check, run_full_size, solution


# %%
# --8<-- [start:check]
def check(number) -> tuple[bool, dict, dict | None]:
    puzzle = find(number)
    path = str(solution(puzzle))
    # fresh random inputs; the seed is printed so that a check can be repeated
    seed = new_seed()
    result = run_check(puzzle.num, path, seed)
    print(f"puzzle {puzzle.num} ({puzzle.title}), seed {seed}: {result['message']}")
    for t in result["trials"]:
        print(f"  sizes {t['sizes']}: score {t['score']}, minimum {t['minimum']}")
    ok = result["ok"] and result["at_minimum"]
    full = None
    if device.has_gpu():
        # full size: verified again, timed, and compared with its roof
        full = run_full_size([[puzzle.num, path, seed]])
        row = full["rows"][0]
        ok = ok and row["ok"]
        if not row["ok"]:
            print(f"full size: {row['message']}")
        else:
            pct = row.get("percent_of_roof")
            roof = "no roof (one block)" if pct is None else f"{pct:.1f} % of its roof"
            print(f"full size {row['sizes']}: first call {row['first_call_s']:.3f} s "
                  f"(compiles), then {row['median_s'] * 1e3:.3f} ms a call, {roof}")
    return ok, result, full
# --8<-- [end:check]


# %%
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check one puzzle's reference solution.")
    parser.add_argument("--puzzle", default="7", help="number or name (default: 7)")
    parser.add_argument("--json", metavar="PATH", help="write the results record here")
    args = parser.parse_args(argv)
    try:
        find(args.puzzle)
    except LookupError as exc:
        parser.error(str(exc))
    ok, result, full = check(args.puzzle)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"example": "exercises", "machine": device.machine_record(), "result": result,
                       "full_size": full}, fh, indent=1)
    print("the reference passes at its minimum score" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(None if "ipykernel" not in sys.modules else []))
