"""The checker: it decides, in its own process, whether a submitted kernel solves its puzzle.

A check never runs the submission in the checker's process:

* the file is read as a syntax tree first (:mod:`gpukit.exercises.policy`): imports, private
  attributes, built-ins that reach other objects and state outside the kernel are refused;
* the checker draws the seed, each trial's sizes and block shapes (a different block size in
  each trial), makes the inputs and computes the answers with NumPy in float64;
* a child process (:mod:`gpukit.exercises.child`) gets only each trial's inputs and launch,
  runs the kernel on numba's simulator with every access counted, and sends back the outputs
  and the counts over a pipe only the checker holds; its printing and exit status are ignored;
* at the same time another child compiles the kernel for a GPU target (PTX) with the
  full-size constants and each trial's: a kernel that is not CUDA fails;
* the checker compares the outputs within a tolerance in float32 ulps suited to the puzzle,
  and applies the rules: limits on accesses per thread, shared memory required or forbidden,
  coalesced accesses and bank conflicts judged from the addresses each warp touches, the
  index rule, and scores below what the task needs reported as suspect.
"""

from __future__ import annotations

import ast
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from . import policy
from .child import decode, encode
from .spec import SCORES

#: a submitted FILE that cannot be checked at all (exit status 2)
BAD = "bad_input"
#: the most threads a simulator trial may start (they are Python threads)
MAX_SIM_THREADS = 4096
#: one float32 ulp at 1.0
EPS32 = float(np.finfo(np.float32).eps)
#: the smallest normal float32: differences below it count as equal
TINY32 = float(np.finfo(np.float32).tiny)
#: the most ulps any tolerance allows (about 1e-3 relative): a sum's bound of one ulp per
#: term grows with its length, and at full size it would allow answers far off
MAX_ULPS = 2**13
TRIALS = 2
ROOT = Path(__file__).resolve().parents[2]


def new_seed() -> int:
    return int(time.time() * 1000) % 2**31


# ---------------------------------------------------------------- the children

class Child:
    """A process that runs the submission, with a private pipe for its answers."""

    def __init__(self, mode: str, env: dict, workdir: str):
        read, write = os.pipe()
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("GPUKIT_")}
        full_env.update(env)
        full_env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
        full_env["GPUKIT_EXERCISES_STATE"] = os.path.join(workdir, "progress.json")
        full_env["XDG_CACHE_HOME"] = workdir
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "gpukit.exercises.child", mode, str(write)],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                pass_fds=(write,), env=full_env, cwd=workdir, start_new_session=True)
        finally:
            os.close(write)
        self.lines: queue.Queue = queue.Queue()
        self.err = b""
        threading.Thread(target=self._read, args=(os.fdopen(read, "rb"),), daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    def _read(self, fh) -> None:
        with fh:
            for line in fh:
                self.lines.put(line)
        self.lines.put(None)

    def _drain(self) -> None:
        for chunk in iter(lambda: self.proc.stderr.read(4096), b""):
            self.err = (self.err + chunk)[-4000:]

    def send(self, job: dict) -> None:
        try:
            self.proc.stdin.write((json.dumps(job) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            pass

    def receive(self, timeout: float) -> dict:
        """The child's answer to the last job, or ``{"lost": why}``."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            return {"lost": f"it did not finish within {timeout:.0f} s"}
        if line is None:
            code = self.proc.wait()
            last = [ln for ln in self.err.decode(errors="replace").splitlines() if ln.strip()]
            why = f"exit status {code}" + (f"; its last words: {last[-1][:200]}" if last else "")
            return {"lost": f"the submission's process ended without an answer ({why})"}
        try:
            answer = json.loads(line)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            return {"lost": "the submission's process sent something that is not an answer"}
        return answer

    def ask(self, job: dict, timeout: float) -> dict:
        self.send(job)
        return self.receive(timeout)

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.kill()
        self.proc.wait()


SIM_ENV = {"NUMBA_ENABLE_CUDASIM": "1", "CUDA_VISIBLE_DEVICES": ""}
PTX_ENV = {"NUMBA_ENABLE_CUDASIM": "0", "CUDA_VISIBLE_DEVICES": ""}
GPU_ENV = {"NUMBA_ENABLE_CUDASIM": "0"}


# ---------------------------------------------------------------- reading the file

def read_submission(puzzle, path: str) -> tuple[str, str | None]:
    """(its text, None) when the file may run; (its text, why it fails) when the rules refuse
    it. The children run this text, not the file again. Raises :class:`LookupError` with a
    one-line message when it cannot be checked at all."""
    if not os.path.isfile(path):
        raise LookupError(f"{path}: no such file")
    try:
        source = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise LookupError(f"{path}: not a UTF-8 text file") from None
    except OSError as exc:
        raise LookupError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise LookupError(f"{path}, line {exc.lineno}: syntax error: {exc.msg}") from None
    except ValueError as exc:
        raise LookupError(f"{path}: cannot be parsed ({exc})") from None
    try:
        why = policy.check(tree, puzzle.kernel)
    except LookupError as exc:
        text = str(exc)
        if text.startswith("defines no"):
            text = f"{path} {text}: puzzle {puzzle.num}'s kernel must have that name"
        else:
            text = f"{path}: {text}"
        raise LookupError(text) from None
    return source, (f"not allowed in a submission: {why}" if why else None)


# ---------------------------------------------------------------- the trials

def _choices(puzzle, rng) -> list[dict]:
    """Each trial's module constants: different values in each trial where there is a choice."""
    picks = {}
    for name, (sim, _) in puzzle.consts.items():
        options = list(sim) if isinstance(sim, (tuple, list)) else [sim]
        order = [options[int(i)] for i in rng.permutation(len(options))]
        picks[name] = [order[t % len(order)] for t in range(TRIALS)]
    return [{k: int(v[t]) for k, v in picks.items()} for t in range(TRIALS)]


def plan(puzzle, seed: int) -> list[dict]:
    """The trials of a check: sizes, launch, inputs and answers, all drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    trials, before = [], None
    for t, consts in enumerate(_choices(puzzle, rng)):
        for _ in range(20):
            p = {k.lower(): v for k, v in consts.items()}
            p.update(puzzle.sizes(rng, consts, False))
            if p != before:
                break
        before = dict(p)
        if puzzle.gpu is not None:
            p["gpu"] = puzzle.gpu
        if t == 1 and puzzle.fixed_grid is not None:
            p["fixed"] = puzzle.fixed_grid(rng, p)
        inputs = puzzle.make(np.random.default_rng(int(rng.integers(2**31))), p)
        launch = puzzle.launch(p, consts, None)
        trials.append({"consts": consts, "p": p, "inputs": inputs, "want": puzzle.ref(inputs, p),
                       "launch": launch})
    return trials


def tolerance(puzzle, inputs: dict, p: dict, want: dict) -> dict:
    """Per output, the largest difference allowed at each element (0 for whole numbers)."""
    ulps = min(puzzle.ulps(p) if callable(puzzle.ulps) else puzzle.ulps, MAX_ULPS)
    scale = puzzle.scale(inputs, p) if puzzle.scale else {}
    out = {}
    for name, w in want.items():
        s = np.abs(np.asarray(scale.get(name, w), dtype=np.float64))
        out[name] = ulps * EPS32 * s + (ulps > 0) * TINY32
    return out


def first_wrong(name: str, got: np.ndarray, want: np.ndarray, tol) -> str | None:
    """None when ``got`` matches ``want`` within ``tol`` (an array or a number); else where
    the first wrong element is."""
    want = np.asarray(want)
    if got.shape != want.shape:
        return f"`{name}` has shape {got.shape}, expected {want.shape}"
    if got.dtype.kind in "iu":
        ok = got == want
    else:
        g = got.astype(np.float64)
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(g) & (np.abs(g - want) <= tol)
    if ok.all():
        return None
    k = int(np.flatnonzero(~ok.reshape(-1))[0])
    idx = np.unravel_index(k, got.shape)
    where = f"{name}[{', '.join(str(int(i)) for i in idx)}]"
    g = got[idx]
    unwritten = (np.isnan(g) if got.dtype.kind == "f" else g == -123456789)
    shown = "never written (still the poison value)" if unwritten else f"{g.item():.9g}"
    extra = ""
    if got.dtype.kind == "f" and not unwritten and np.isfinite(g):
        t = float(np.broadcast_to(tol, got.shape)[idx])
        ulp = float(np.spacing(np.float32(abs(want[idx])))) or TINY32
        extra = (f" ({abs(float(g) - float(want[idx])) / ulp:.0f} float32 ulps off; "
                 f"the tolerance is {t / ulp:.1f})")
    return f"first wrong element: {where} = {shown}, expected {float(want[idx]):.9g}{extra}"


def _threads(grid, block) -> int:
    import math
    return (math.prod(grid if isinstance(grid, (tuple, list)) else (grid,))
            * math.prod(block if isinstance(block, (tuple, list)) else (block,)))


def _sim_job(puzzle, path: str, trials: list, source: str | None = None) -> dict:
    jobs = []
    for tr in trials:
        p = tr["p"]
        outs = {k: [list(v[0]), np.dtype(v[1]).str, v[2]] for k, v in puzzle.outs(p).items()}
        job = {"consts": tr["consts"], "inputs": {k: encode(v) for k, v in tr["inputs"].items()},
               "outs": outs, "track": sorted(set(puzzle.coalesced) | set(puzzle.x_picks)),
               "banks": tr["consts"].get(puzzle.banks) if puzzle.banks else None,
               "p": {k: v for k, v in p.items() if k in ("n", "gpu")},
               "max_threads": MAX_SIM_THREADS}
        if tr["launch"] is not None:
            job["grid"], job["block"] = tr["launch"]
        jobs.append(job)
    job = {"num": puzzle.num, "path": path, "trials": jobs, "source": source}
    if puzzle.probe:
        job["probe"] = puzzle.probe
    return job


def _judge(puzzle, tr: dict, answer: dict) -> dict:
    """One trial's verdict from what the child sent back."""
    p, consts = tr["p"], tr["consts"]
    if answer.get("error"):
        return {"ok": False, "message": answer["error"]}
    if "grid" in answer:
        tr["launch"] = (int(answer["grid"]), int(answer["block"]))
    grid, block = tr["launch"]
    p["threads_total"] = _threads(grid, block)
    if p["threads_total"] > MAX_SIM_THREADS:
        return {"ok": False, "message": f"{p['threads_total']} threads is too many for the "
                                        f"simulator (at most {MAX_SIM_THREADS})"}
    sizes = {k: v for k, v in p.items() if k not in ("gpu", "fixed", "threads_total")}
    result = {"ok": True, "sizes": sizes, "seconds": answer.get("seconds"),
              "minimum": puzzle.minimum(p, consts)}
    try:
        score = {k: int(answer["score"][k]) for k in SCORES}
        specs = puzzle.outs(p)
        outs = {k: decode(answer["outputs"][k], specs[k][1], specs[k][0]) for k in specs}
        changed = list(answer.get("changed", []))
    except (KeyError, TypeError, ValueError) as exc:
        return {"ok": False, "message": f"the submission's process sent a malformed answer ({exc})"}
    result["score"] = score
    if changed:
        return {**result, "ok": False, "message": f"the kernel changed its input `{changed[0]}`"}
    tol = tolerance(puzzle, tr["inputs"], p, tr["want"])
    for name, expected in tr["want"].items():
        wrong = first_wrong(name, outs[name], expected, tol[name])
        if wrong:
            return {**result, "ok": False, "message": wrong}
    message = _rules(puzzle, consts, p, answer, score)
    if message:
        return {**result, "ok": False, "message": message}
    return result


def _rules(puzzle, consts, p, answer, score) -> str | None:
    for key, cap in puzzle.caps(p, consts).items():
        if score[key] > cap:
            return f"a thread made {score[key]} {SCORES[key]}; the rules allow at most {cap}"
    floor = puzzle.floor(p, consts) if puzzle.floor else {"gr": 1, "gw": 1}
    for key, least in floor.items():
        if score[key] < least:
            return (f"suspect: the busiest thread made {score[key]} {SCORES[key]}, fewer than "
                    f"the task needs ({least}); the counts cannot be trusted")
    if puzzle.shared == "required" and score["sh"] == 0:
        return "the rules say: use shared memory (no thread touched any)"
    if puzzle.shared == "forbidden" and score["sh"] > 0:
        return "the rules say: no shared memory"
    strides = answer.get("strides") or {}
    for name in puzzle.x_picks:
        worst = strides.get(name)
        if worst:
            return (f"the rules say threadIdx.x picks the column: threads with neighbouring "
                    f"threadIdx.x touch elements of `{name}` {worst[0]} apart (line {worst[1]})")
    for name in puzzle.coalesced:
        worst = strides.get(name)
        if worst:
            return (f"`{name}` is not coalesced: threads with neighbouring threadIdx.x touch "
                    f"elements {worst[0]} apart in one access (line {worst[1]}; they should be "
                    "1 apart)")
    for name, ways, line in answer.get("banks") or []:
        return (f"{ways}-way bank conflict in the shared array of line {name.split('@')[1]} "
                f"(an access at line {line}, modelling {consts[puzzle.banks]} banks)")
    return None


def _fail(out: dict, message: str, t0: float) -> dict:
    return {**out, "ok": False, "message": message, "seconds": time.perf_counter() - t0}


class Children:
    """The two children of a check (simulator and compiler), kept for several checks in a
    row; a child that ended is started again for the next check."""

    def __init__(self):
        self._dir = tempfile.TemporaryDirectory(prefix="gpukit-check-")
        self.sim = self.ptx = None

    def get(self) -> tuple[Child, Child]:
        if self.sim is None or self.sim.proc.poll() is not None:
            if self.sim is not None:
                self.sim.close()
            self.sim = Child("sim", SIM_ENV, self._dir.name)
        if self.ptx is None or self.ptx.proc.poll() is not None:
            if self.ptx is not None:
                self.ptx.close()
            self.ptx = Child("ptx", PTX_ENV, self._dir.name)
        return self.sim, self.ptx

    def close(self) -> None:
        for c in (self.sim, self.ptx):
            if c is not None:
                c.close()
        self._dir.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def check_sim(num: int, path: str, seed: int, children: Children | None = None) -> dict:
    """Check ``path`` for puzzle ``num`` with the inputs of ``seed``: a dict with ``ok``,
    ``message``, ``trials``, ``seed``, ``at_minimum``, ``score``, ``minimum``, ``ptx``; or
    ``{"bad_input": why}`` when the file cannot be checked at all. ``children``: processes
    to reuse (fresh ones by default)."""
    if children is None:
        with Children() as fresh:
            return check_sim(num, path, seed, fresh)
    from .puzzles import find
    puzzle = find(num)
    t0 = time.perf_counter()
    sim, ptx = children.get()         # they start up while the file is read and judged
    path = os.path.abspath(path)
    out = {"puzzle": puzzle.num, "seed": seed, "file": path, "trials": []}
    try:
        source, refused = read_submission(puzzle, path)
    except LookupError as exc:
        return {BAD: str(exc)}
    if refused:
        return _fail(out, refused, t0)
    trials = plan(puzzle, seed)
    ptx.send({"num": puzzle.num, "path": path, "source": source,
              "consts": [{k: v[1] for k, v in puzzle.consts.items()}]
              + [tr["consts"] for tr in trials]})
    answer = sim.ask(_sim_job(puzzle, path, trials, source), timeout=120)
    compiled = ptx.receive(timeout=120)
    if "import_error" in answer:
        return {BAD: answer["import_error"]}
    if compiled.get("ok") is False or "lost" in compiled or "error" in compiled:
        why = compiled.get("message") or compiled.get("lost") or compiled.get("error")
        if not str(why).startswith("does not compile"):
            why = f"the GPU compile step failed: {why}"
        return _fail(out, why, t0)
    out["ptx"] = "skipped: " + compiled["skipped"] if "skipped" in compiled else "compiled"
    if "lost" in answer or "error" in answer:
        return _fail(out, answer.get("lost") or answer["error"], t0)
    if puzzle.extra_rule:
        try:
            message = puzzle.extra_rule(answer.get("probe"))
        except (TypeError, ValueError) as exc:
            message = f"the submission's process sent a malformed answer ({type(exc).__name__})"
        if message:
            return _fail(out, message, t0)
    answers = answer.get("trials") or []
    for k, tr in enumerate(trials):
        if k >= len(answers) or not isinstance(answers[k], dict):
            return _fail(out, f"trial {k + 1}: the submission's process sent no result", t0)
        try:
            result = _judge(puzzle, tr, answers[k])
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            result = {"ok": False, "message": "the submission's process sent a malformed "
                                              f"answer ({type(exc).__name__})"}
        out["trials"].append(result)
        if not result["ok"]:
            return _fail(out, f"trial {k + 1}: {result['message']}", t0)
    scores = [(t["score"], t["minimum"]) for t in out["trials"]]
    at_min = all(s[k] <= m[k] for s, m in scores for k in SCORES)
    below = sorted({SCORES[k] for s, m in scores for k in SCORES if s[k] < m[k]})
    return {**out, "ok": True, "message": "passed", "at_minimum": at_min, "below": below,
            "score": out["trials"][0]["score"], "minimum": out["trials"][0]["minimum"],
            "seconds": time.perf_counter() - t0}


def check_many(items: list) -> list:
    """:func:`check_sim` for each ``[num, path, seed]``, one pair of children for all."""
    with Children() as children:
        return [check_sim(*item, children=children) for item in items]


def run_check(num: int, path: str, seed: int, timeout: float = 60) -> dict:
    """:func:`check_sim`: the submission runs in child processes on the simulator, even where
    a GPU exists; the verdict is made here."""
    return check_sim(num, path, seed)


if __name__ == "__main__":  # python -m gpukit.exercises.grader N FILE SEED
    print(check_sim(int(sys.argv[1]), sys.argv[2], int(sys.argv[3])))
