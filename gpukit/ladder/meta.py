"""The ladder chapter's name, its table of levels and their lines of code (no heavy imports:
the views read these without importing the levels' code)."""

from __future__ import annotations

from pathlib import Path

NAME = "ladder"
#: the file holding each level's code, and the CUDA C kernels of the ``cuda-c`` level
LEVELS_SOURCE = Path(__file__).resolve().with_name("levels.py")
CU_SOURCE = Path(__file__).resolve().with_name("ladder.cu")

#: The levels, in the order of the chapter: key -> (label, library, snippet sections counted as
#: its lines of code, array passes over memory read off the code: 2 means read x once and
#: write y once, the minimum; None: decided by a compiler).
LEVELS = {
    "torch-eager": ("PyTorch eager, written out", "PyTorch", [("py", "torch_eager")], 12),
    "torch-softmax": ("PyTorch eager, torch.softmax", "PyTorch", [("py", "torch_softmax")], 6),
    "torch-compile": ("torch.compile", "PyTorch",
                      [("py", "torch_eager"), ("py", "torch_compile")], None),
    "cupy-array": ("CuPy array code", "CuPy", [("py", "cupy_array")], 12),
    "cupy-kernels": ("CuPy ReductionKernel + ElementwiseKernel", "CuPy",
                     [("py", "cupy_kernels")], 4),
    "numba-cuda": ("numba.cuda kernel", "numba", [("py", "numba_kernel")], 3),
    "cuda-c": ("CUDA C (cupy.RawModule)", "CUDA C",
               [("cu", "reduce"), ("cu", "regs"), ("py", "cuda_c")], 2),
    "triton": ("Triton", "Triton", [("py", "triton")], 2),
    "jax": ("JAX jax.jit", "JAX", [("py", "jax")], None),
}

#: What the pass counts above mean, for the page.
PASSES = {
    12: "multiply, add, max, subtract, exp, sum, divide: 7 kernels, each a full pass",
    6: "multiply, add, then one softmax kernel",
    4: "max pass, sum pass, then read x and write y",
    3: "reads x twice and writes y",
    2: "reads x once, writes y once",
}


# ================================================================== lines of code

def section(path: Path, name: str) -> list[str]:
    """The lines between ``--8<-- [start:name]`` and ``[end:name]`` in ``path``."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    starts = [i for i, ln in enumerate(lines) if ln.strip().endswith(f"[start:{name}]")]
    ends = [i for i, ln in enumerate(lines) if ln.strip().endswith(f"[end:{name}]")]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise KeyError(f"no single snippet section {name!r} in {path}")
    return lines[starts[0] + 1:ends[0]]


def count_loc(lines: list[str]) -> int:
    """Lines of code: not blank, not a comment (``#`` or ``//``), not a docstring."""
    count, in_doc = 0, False
    for line in lines:
        s = line.strip()
        if in_doc:
            in_doc = not s.endswith(('"""', "'''"))
            continue
        if s.startswith(('"""', "'''")):
            quote = s[:3]
            in_doc = not (len(s) >= 6 and s.endswith(quote))
            continue
        if s and not s.startswith(("#", "//")):
            count += 1
    return count


def level_loc(level: str) -> int:
    """Lines of code of one level, summed over its snippet sections."""
    files = {"py": LEVELS_SOURCE, "cu": CU_SOURCE}
    return sum(count_loc(section(files[kind], name)) for kind, name in LEVELS[level][2])
