"""The why-GPUs chapter's name and its tables of backends and labels (no heavy imports)."""

NAME = "why_gpus"
#: Degree of the polynomial (DEGREE multiply-adds per element).
DEGREE = 128
BACKENDS = {
    "saxpy": ["python", "numpy", "numba-1core", "numba-parallel"],
    "poly": ["python", "numpy", "numba-1core-naive", "numba-1core", "numba-parallel"],
}
GPU_BACKENDS = ["gpu-kernel", "gpu-pageable", "gpu-pinned"]
LABELS = {
    "python": "pure Python (lists)",
    "numpy": "NumPy (SIMD, 1 core)",
    "numba-1core-naive": "numba, 1 core, per-element loop",
    "numba-1core": "numba, 1 core (SIMD)",
    "numba-parallel": "numba, all cores (SIMD + prange)",
    "gpu-kernel": "GPU kernel alone",
    "gpu-pageable": "GPU with copies (pageable)",
    "gpu-pinned": "GPU with copies (pinned)",
}
CPU_NAMES = ("python", "numpy", "numba-1core-naive", "numba-1core", "numba-parallel")
