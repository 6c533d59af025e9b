"""The gpu-anatomy chapter's names and tables, with no GPU library: what its measurement, views
and card share (importing this imports no numba, CuPy or torch)."""

from __future__ import annotations

NAME = "gpu_anatomy"

#: Block sizes and blocks per multiprocessor of the occupancy sweep.
BLOCK_SIZES = (32, 64, 128, 256, 512, 1024)
BLOCKS_PER_SM = (1, 2, 4, 8, 16, 32)
#: Strides of the coalescing experiment (in elements of 4 bytes).
STRIDES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
#: Number of different paths inside one warp.
PATHS = (1, 2, 4, 8, 16, 32)
#: The read kernels of the occupancy sweep: (label, kernel); defined below.
READ_VARIANTS = ("1 load in flight per thread", "plain loop, as compiled",
                 "4 independent loads per iteration")
DIVERGENCE_MODES = ("lane % k: paths differ inside each warp",
                    "warp % k: one path per warp",
                    "no branch: the path only picks constants")


# --8<-- [start:little]
def littles_law(bandwidth_gbs: float, latency_ns: float, multiprocessors: int,
                bytes_per_load: int = 4, warp_size: int = 32) -> dict:
    """Bytes that must be in flight to sustain a bandwidth when each load takes a latency."""
    if bandwidth_gbs <= 0 or latency_ns <= 0 or multiprocessors < 1:
        raise ValueError("bandwidth, latency and multiprocessors must be positive")
    in_flight = bandwidth_gbs * 1e9 * latency_ns * 1e-9          # bytes, whole GPU
    per_sm = in_flight / multiprocessors
    return {"bytes_in_flight": in_flight, "bytes_per_sm": per_sm,
            "loads_per_sm": per_sm / bytes_per_load,
            "warps_per_sm_one_load_each": per_sm / (bytes_per_load * warp_size)}
# --8<-- [end:little]
