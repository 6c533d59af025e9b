"""The chapter's names as plain data (no heavy imports): shared by the benchmark and the views."""

NAME = "stencil_demo"
#: the row of the numba kernel and of the NumPy version on the host
GPU_ROW = "numba.cuda 3-point average"
CPU_ROW = "NumPy 3-point average"
#: bytes moved per element: one float32 read (neighbours come from cache) and one written
BYTES_PER_ELEMENT = 8
