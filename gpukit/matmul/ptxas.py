"""The compiler's register report of the matmul kernels (``ptxas -v``), recorded where nvcc runs.

``nvcc -Xptxas -v`` compiles ``matmul.cu`` and reports, per CUDA C kernel, registers per
thread, shared memory and spills; the numba kernels' PTX goes through ``ptxas -v`` too. The
report is saved as ``results/<machine>/matmul_ptxas.json`` (:data:`PTXAS_NAME`).

Command line (needs the CUDA toolkit, not a GPU)::

    python -m gpukit.matmul.ptxas --ptxas
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .meta import PTXAS_NAME  # the report's results-file name, shared with the views

_PTXAS_FUNC = re.compile(r"Compiling entry function '(\w+)' for '(\w+)'")
_PTXAS_USED = re.compile(r"Used (\d+) registers.*?(?:(\d+) bytes smem)?$")
_PTXAS_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_ptxas(text: str) -> dict:
    """{function: {registers, shared_bytes, stack_bytes, spill_stores, spill_loads}}."""
    out: dict = {}
    current = None
    for line in text.splitlines():
        if m := _PTXAS_FUNC.search(line):
            current = out.setdefault(m.group(1), {"arch": m.group(2)})
        elif current is not None and (m := _PTXAS_SPILL.search(line)):
            current.update(stack_bytes=int(m.group(1)), spill_stores=int(m.group(2)),
                           spill_loads=int(m.group(3)))
        elif current is not None and (m := _PTXAS_USED.search(line)):
            current.update(registers=int(m.group(1)), shared_bytes=int(m.group(2) or 0))
    return out


def ptxas_report(arch: str = "sm_90") -> dict:
    """``ptxas -v`` for the CUDA C kernels (nvcc) and the numba kernels (their PTX)."""
    import tempfile
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise RuntimeError("nvcc not found: the compiler report needs the CUDA toolkit")
    src = Path(__file__).with_name("matmul.cu")
    cmd = [nvcc, f"-arch={arch}", "-std=c++17", "-Xptxas", "-v", "-c", str(src), "-o", os.devnull]
    text = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    report_ = {"arch": arch, "nvcc": version.strip().splitlines()[-1],
               "command": f"nvcc -arch={arch} -std=c++17 -Xptxas -v -c gpukit/matmul/matmul.cu",
               "cuda_c": parse_ptxas(text)}
    # numba kernels: numba writes PTX for float32 2-D C-contiguous arrays, ptxas reports
    try:
        from numba import cuda, float32

        from . import kernels as mm
        ptxas = shutil.which("ptxas") or str(Path(nvcc).with_name("ptxas"))
        sig = (float32[:, ::1], float32[:, ::1], float32[:, ::1])
        numba_rep = {}
        for name in mm.NUMBA_KERNELS:
            fn = mm.numba_launch(name, 1, 1)[0]
            bounds = fn.targetoptions.get("launch_bounds")
            ptx, _ = cuda.compile_ptx(fn.py_func, sig, cc=(int(arch[3]), int(arch[4:])),
                                      launch_bounds=bounds)
            with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as fh:
                fh.write(ptx)
            try:
                out = subprocess.run([ptxas, f"-arch={arch}", "-v", fh.name, "-o", os.devnull],
                                     capture_output=True, text=True, check=True).stderr
            finally:
                os.unlink(fh.name)
            parsed = parse_ptxas(out)
            numba_rep[name] = next(iter(parsed.values())) if parsed else {}
        report_["numba"] = numba_rep
    except Exception as exc:
        report_["numba_error"] = f"{type(exc).__name__}: {exc}"
    return report_


def write_ptxas_report(root: Path | None = None) -> Path:
    """Record the register report under ``results/<machine>/matmul_ptxas.json``."""
    from gpukit import results
    return results.save(PTXAS_NAME, ptxas_report(), root=root)


def main(argv=None) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="python -m gpukit.matmul.ptxas",
                                description="the compiler's register report of the matmul kernels")
    p.add_argument("--ptxas", action="store_true", required=True,
                   help="record the ptxas register report under results/<machine>/ (needs nvcc)")
    p.parse_args(argv)
    path = write_ptxas_report()
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
